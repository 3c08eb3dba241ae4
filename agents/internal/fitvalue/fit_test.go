package main

import (
	"math"
	"testing"

	"github.com/spiderenv/spider/internal/rng"
)

// TestFitRecoversWeights draws outcomes from a known logistic model and
// checks that fit finds its weights again.
func TestFitRecoversWeights(t *testing.T) {
	var want [nf]float64
	for i := range nf {
		want[i] = float64(i%5-2) * 0.5
	}
	g := rng.New(7)
	var x [][nf]float64
	var y []float64
	for range 40000 {
		var f [nf]float64
		f[0] = 1
		for i := 1; i < nf; i++ {
			f[i] = float64(g.Uint64()%2001)/1000 - 1
		}
		won := 0.0
		if float64(g.Uint64()%1_000_000)/1e6 < sigmoid(dot(&want, &f)) {
			won = 1
		}
		x, y = append(x, f), append(y, won)
	}
	w, err := fit(x, y, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range nf {
		if math.Abs(w[i]-want[i]) > 0.12 {
			t.Errorf("weight %d: %.3f, want %.3f", i, w[i], want[i])
		}
	}
	if l, l0 := logLoss(x, y, w), logLoss(x, y, [nf]float64{}); l >= l0 {
		t.Errorf("log-loss %.4f, no better than all-zero weights' %.4f", l, l0)
	}
	// A penalty pulls the weights (not the bias) towards zero.
	wp, err := fit(x, y, 1e5)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < nf; i++ {
		if math.Abs(wp[i]) >= math.Abs(w[i]) && w[i] != 0 {
			t.Errorf("weight %d: %.3f with a large penalty, %.3f without", i, wp[i], w[i])
		}
	}
}

// TestFitRefusesConstantFeature: a feature that never varies has no
// weight to fit without a penalty, and fit says so.
func TestFitRefusesConstantFeature(t *testing.T) {
	x := make([][nf]float64, 10)
	y := make([]float64, 10)
	for i := range x {
		x[i][0] = 1
		y[i] = float64(i % 2)
	}
	if _, err := fit(x, y, 0); err == nil {
		t.Fatal("fit of all-zero features succeeded")
	}
	if _, err := fit(nil, nil, 1); err == nil {
		t.Fatal("fit of no data succeeded")
	}
}

func TestParseSeeds(t *testing.T) {
	got, err := parseSeeds("3-5,9")
	if err != nil || len(got) != 4 || got[0] != 3 || got[2] != 5 || got[3] != 9 {
		t.Fatalf("parseSeeds: %v, %v", got, err)
	}
	for _, bad := range []string{"", "0-3", "5-3", "a", "1-x"} {
		if _, err := parseSeeds(bad); err == nil {
			t.Errorf("parseSeeds(%q) succeeded", bad)
		}
	}
}

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spiderenv/spider/agents"
)

// TestCSVRoundTrip checks that positions written by -csv read back exactly
// under -from, so a fit from files is the fit from the games.
func TestCSVRoundTrip(t *testing.T) {
	x := make([][agents.NumValueFeatures]float64, 3)
	for i := range x {
		for j := range x[i] {
			x[i][j] = float64(i*j)/7 - 0.1
		}
	}
	y := []float64{1, 0, 1}
	at := [][2]uint64{{2001, 0}, {2001, 2}, {2002, 0}}
	path := filepath.Join(t.TempDir(), "p.csv")
	if err := writeCSV(path, x, y, at); err != nil {
		t.Fatal(err)
	}
	gx, gy, gat, err := readCSVs([]string{path})
	if err != nil {
		t.Fatal(err)
	}
	if len(gx) != 3 || len(gy) != 3 || len(gat) != 3 {
		t.Fatalf("read %d positions, want 3", len(gx))
	}
	for i := range x {
		if gx[i] != x[i] || gy[i] != y[i] || gat[i] != at[i] {
			t.Errorf("position %d: read %v %v %v, wrote %v %v %v", i, gx[i], gy[i], gat[i], x[i], y[i], at[i])
		}
	}
	if n := countGames(gat); n != 2 {
		t.Errorf("countGames = %d, want 2", n)
	}
}

// TestCountGamesTwoPlayers checks that the games of two players on the
// same seed, as -from reads them from two files, count as two games.
func TestCountGamesTwoPlayers(t *testing.T) {
	at := [][2]uint64{{2001, 0}, {2001, 2}, {2001, 4}, {2001, 0}, {2001, 2}, {2002, 0}}
	if n := countGames(at); n != 3 {
		t.Errorf("countGames = %d, want 3", n)
	}
}

// TestReadCSVsRejects checks that a malformed line is an error naming its
// file and line.
func TestReadCSVsRejects(t *testing.T) {
	good := "2001,0,1" + strings.Repeat(",0.5", agents.NumValueFeatures)
	for name, bad := range map[string]string{
		"short":   "2001,0,1,0.5",
		"outcome": "2001,0,2" + strings.Repeat(",0.5", agents.NumValueFeatures),
		"seed":    "x,0,1" + strings.Repeat(",0.5", agents.NumValueFeatures),
		"nan":     "2001,0,1" + strings.Repeat(",NaN", agents.NumValueFeatures),
	} {
		path := filepath.Join(t.TempDir(), name+".csv")
		if err := os.WriteFile(path, []byte(good+"\n"+bad+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, _, _, err := readCSVs([]string{path})
		if err == nil || !strings.Contains(err.Error(), name+".csv:2:") {
			t.Errorf("%s: err = %v, want one naming line 2", name, err)
		}
	}
	empty := filepath.Join(t.TempDir(), "empty.csv")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := readCSVs([]string{empty}); err == nil {
		t.Error("an empty file read without error")
	}
}

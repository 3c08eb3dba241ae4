package stats

import (
	"math"
	"testing"
)

func near(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol {
		t.Errorf("%s = %.6f, want %.6f", what, got, want)
	}
}

// The expected values below were computed by hand from the formulas.
func TestWilson(t *testing.T) {
	// 5 of 10: p = .5, z^2 = 3.8415; centre .5, half = 1.96*sqrt(.025+.0096)/1.384 = .2634.
	lo, hi := Wilson(5, 10)
	near(t, "Wilson(5,10).lo", lo, 0.2366, 1e-4)
	near(t, "Wilson(5,10).hi", hi, 0.7634, 1e-4)
	// 0 of 20: lo = 0, hi = z^2/n / (1 + z^2/n) = .19207/1.19207 = .16113.
	lo, hi = Wilson(0, 20)
	near(t, "Wilson(0,20).lo", lo, 0, 1e-9)
	near(t, "Wilson(0,20).hi", hi, 0.16113, 1e-4)
	if lo, hi := Wilson(0, 0); lo != 0 || hi != 1 {
		t.Error("Wilson(0, 0) should be the whole interval")
	}
}

func TestMean(t *testing.T) {
	// 2, 4, 6: mean 4, sd 2, t(.975, 2) = 4.302653; half = 4.302653*2/sqrt(3) = 4.968275.
	m, h := Mean([]float64{2, 4, 6})
	near(t, "mean", m, 4, 1e-12)
	near(t, "half", h, 4.968275, 1e-5)
	if m, h := Mean([]float64{7}); m != 7 || !math.IsNaN(h) {
		t.Errorf("Mean of one value = %v ± %v, want 7 ± NaN: one value has no interval", m, h)
	}
	if _, h := Mean(nil); !math.IsNaN(h) {
		t.Errorf("Mean of no value: half-width %v, want NaN", h)
	}
}

func TestMcNemar(t *testing.T) {
	// b=10, c=2: 2 * P(X <= 2 | 12, .5) = 2 * (1 + 12 + 66) / 4096 = .038574.
	near(t, "McNemar(10,2)", McNemar(10, 2), 158.0/4096, 1e-9)
	near(t, "McNemar(2,10)", McNemar(2, 10), 158.0/4096, 1e-9)
	// b=c: p is 1 (capped).
	near(t, "McNemar(3,3)", McNemar(3, 3), 1, 1e-9)
	near(t, "McNemar(0,0)", McNemar(0, 0), 1, 0)
	// b=5, c=0: 2 / 32 = .0625.
	near(t, "McNemar(5,0)", McNemar(5, 0), 0.0625, 1e-12)
}

func TestPairedT(t *testing.T) {
	// d = 1, 2, 3, 4: mean 2.5, sd 1.290994, t = 2.5/(1.290994/2) = 3.872983,
	// df 3: two-sided p = .030466.
	diff, p := PairedT([]float64{3, 5, 7, 9}, []float64{2, 3, 4, 5})
	near(t, "diff", diff, 2.5, 1e-12)
	near(t, "p", p, 0.030466, 1e-5)
	// The test is two-sided: B better than A by as much is as unlikely.
	diff, p = PairedT([]float64{2, 3, 4, 5}, []float64{3, 5, 7, 9})
	near(t, "diff, the pairs swapped", diff, -2.5, 1e-12)
	near(t, "p, the pairs swapped", p, 0.030466, 1e-5)
	if _, p := PairedT([]float64{1, 2}, []float64{1, 2}); p != 1 {
		t.Error("identical pairs must give p = 1")
	}
	// A constant difference: the sign test's p, 2^(1-n), not the t-test's 0.
	_, p = PairedT([]float64{2, 3}, []float64{1, 2})
	near(t, "p of a constant difference over 2 pairs (the sign test's)", p, 0.5, 1e-12)
	diff, p = PairedT([]float64{0, 0, 0, 0, 0, 0}, []float64{8, 8, 8, 8, 8, 8})
	near(t, "diff of a constant -8", diff, -8, 0)
	near(t, "p of a constant difference over 6 pairs", p, 1.0/32, 1e-12)
	// Constant up to rounding: k/3 + 1/3 against k/3 over 20 pairs.
	var xs, ys []float64
	for k := range 20 {
		xs, ys = append(xs, float64(k)/3+1.0/3), append(ys, float64(k)/3)
	}
	_, p = PairedT(xs, ys)
	near(t, "p of a difference of 1/3 up to rounding over 20 pairs", p, math.Pow(2, -19), 1e-12)
	if d, p := PairedT([]float64{5}, []float64{1}); d != 4 || p != 1 {
		t.Errorf("one pair: diff %v, p %v; want 4 and 1", d, p)
	}
}

// TestFormatP checks that a p too small for a float64 never prints as 0,
// and that a paired test that far out does underflow (so the case is real).
func TestFormatP(t *testing.T) {
	for _, tc := range []struct {
		p      float64
		digits int
		want   string
	}{
		{0, 3, "< 1e-300"},
		{1e-301, 2, "< 1e-300"},
		{1e-300, 2, "1e-300"},
		{2.5e-7, 2, "2.5e-07"},
		{0.0123456, 3, "0.0123"},
		{1, 2, "1"},
		{0.0496, 2, "0.0496"},
		{0.04996, 2, "0.04996"},
		{0.0504, 2, "0.05"},
		{0.05, 2, "0.05"},
		{0.00999, 3, "0.00999"},
		{0.009996, 3, "0.009996"},
		{0.000996, 2, "0.000996"},
	} {
		if got := FormatP(tc.p, tc.digits); got != tc.want {
			t.Errorf("FormatP(%g, %d) = %q; want %q", tc.p, tc.digits, got, tc.want)
		}
	}
	// Search's score against random's over 1,000 deals: t near 100.
	xs, ys := make([]float64, 1000), make([]float64, 1000)
	for i := range xs {
		xs[i] = 1000 + float64(i%21)
	}
	if _, p := PairedT(xs, ys); p != 0 {
		t.Fatalf("p = %g; the case this guards against no longer underflows", p)
	}
	if _, p := PairedT(xs, ys); FormatP(p, 3) != "< 1e-300" {
		t.Errorf("an underflowed p printed %q", FormatP(p, 3))
	}
}

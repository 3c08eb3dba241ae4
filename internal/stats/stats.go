package stats

import (
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/gonum/stat/distuv"
)

// Wilson returns the 95% Wilson score interval of k successes in n trials.
// With n = 0 it returns (0, 1).
func Wilson(k, n int) (lo, hi float64) {
	if n == 0 {
		return 0, 1
	}
	const z = 1.959963984540054
	p, nf := float64(k)/float64(n), float64(n)
	den := 1 + z*z/nf
	mid := (p + z*z/(2*nf)) / den
	half := z * math.Sqrt(p*(1-p)/nf+z*z/(4*nf*nf)) / den
	return max(0, mid-half), min(1, mid+half)
}

// Mean returns the mean of xs and the half-width of its 95% t interval.
// With fewer than two values the half-width is NaN: one value says nothing
// of the spread, and a width of 0 would read as certainty.
func Mean(xs []float64) (mean, half float64) {
	n := len(xs)
	if n == 0 {
		return 0, math.NaN()
	}
	for _, x := range xs {
		mean += x
	}
	mean /= float64(n)
	if n < 2 {
		return mean, math.NaN()
	}
	ss := 0.0
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	sd := math.Sqrt(ss / float64(n-1))
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(n - 1)}.Quantile(0.975)
	return mean, t * sd / math.Sqrt(float64(n))
}

// McNemar returns the two-sided exact p-value of McNemar's test for paired
// binary outcomes, from the discordant pairs: b where only the first
// succeeded, c where only the second did.
func McNemar(b, c int) float64 {
	n := b + c
	if n == 0 {
		return 1
	}
	k := min(b, c)
	p := 2 * distuv.Binomial{N: float64(n), P: 0.5}.CDF(float64(k))
	return min(1, p)
}

// PairedT returns the mean difference x-y and the two-sided p-value of the
// paired t-test. Pairs that never differ give p = 1; a single pair gives
// p = 1, since one difference says nothing of its spread. A constant
// non-zero difference (search's 8 runs against random's 0 on every
// four-suit deal) leaves the t statistic infinite and its p 0, which
// reads as certainty from any number of pairs: it gives the exact sign
// test's p instead, 2^(1-n) for n pairs that all differ one way.
func PairedT(xs, ys []float64) (diff, p float64) {
	n := min(len(xs), len(ys))
	if n == 0 {
		return 0, 1
	}
	d := make([]float64, n)
	for i := range d {
		d[i] = xs[i] - ys[i]
		diff += d[i]
	}
	diff /= float64(n)
	ss := 0.0
	for _, v := range d {
		ss += (v - diff) * (v - diff)
	}
	if n < 2 {
		return diff, 1
	}
	sd := math.Sqrt(ss / float64(n-1))
	if diff == 0 && sd == 0 {
		return 0, 1
	}
	// Constant up to rounding: a difference of 1/3 on every pair (means
	// of three draws) leaves an sd of 1e-17, and a t that gives p = 1e-296.
	if sd <= 1e-9*math.Abs(diff) {
		return diff, McNemar(n, 0)
	}
	t := diff / (sd / math.Sqrt(float64(n)))
	dist := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(n - 1)}
	return diff, 2 * dist.CDF(-math.Abs(t))
}

// Tiny is the least p-value FormatP prints as a number. A p far below it
// underflows to 0 (a paired t of 100 over 999 pairs has p near 1e-540,
// which the tests here return as 0), and one near a float64's least
// normal value (2.2e-308) has lost digits: no table needs them.
const Tiny = 1e-300

// FormatP returns p with digits significant digits for a table, or
// "< 1e-300" for a p below Tiny, so that a p too small to hold never
// reads as 0 (certainty). A p just below a level tests are read at (0.05,
// 0.01, 0.001) gets the digits that keep it below: 0.0496 is not "0.05".
func FormatP(p float64, digits int) string {
	if p < Tiny {
		return "< 1e-300"
	}
	for {
		s := strconv.FormatFloat(p, 'g', digits, 64)
		v, _ := strconv.ParseFloat(s, 64)
		if digits >= 17 || !slices.ContainsFunc([]float64{0.05, 0.01, 0.001}, func(level float64) bool { return p < level && v >= level }) {
			return s
		}
		digits++
	}
}

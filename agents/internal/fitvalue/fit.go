package main

import (
	"errors"
	"math"

	"github.com/spiderenv/spider/agents"
)

const nf = agents.NumValueFeatures

// fit returns the weights of the logistic regression of y on x that
// minimise the log-loss plus l2/2 times the squared weights other than the
// first (the bias), by Newton's method (iteratively reweighted least
// squares).
func fit(x [][nf]float64, y []float64, l2 float64) ([nf]float64, error) {
	var w [nf]float64
	if len(x) == 0 || len(x) != len(y) {
		return w, errors.New("no data")
	}
	for range 100 {
		var g [nf]float64
		var h [nf][nf + 1]float64 // the Hessian, with -g as its last column
		for n, f := range x {
			p := sigmoid(dot(&w, &f))
			for i := range nf {
				g[i] += (p - y[n]) * f[i]
				for j := range nf {
					h[i][j] += p * (1 - p) * f[i] * f[j]
				}
			}
		}
		for i := 1; i < nf; i++ {
			g[i] += l2 * w[i]
			h[i][i] += l2
		}
		for i := range nf {
			h[i][nf] = g[i]
		}
		step, err := solve(h)
		if err != nil {
			return w, err
		}
		most := 0.0
		for i := range nf {
			w[i] -= step[i]
			most = max(most, math.Abs(step[i]))
		}
		if most < 1e-8 {
			return w, nil
		}
	}
	return w, errors.New("did not converge in 100 steps")
}

// solve solves the linear system of the augmented matrix a by Gaussian
// elimination with partial pivoting.
func solve(a [nf][nf + 1]float64) ([nf]float64, error) {
	var out [nf]float64
	for c := range nf {
		p := c
		for r := c + 1; r < nf; r++ {
			if math.Abs(a[r][c]) > math.Abs(a[p][c]) {
				p = r
			}
		}
		if math.Abs(a[p][c]) < 1e-12 {
			return out, errors.New("singular system: a feature is constant or duplicated")
		}
		a[c], a[p] = a[p], a[c]
		for r := c + 1; r < nf; r++ {
			k := a[r][c] / a[c][c]
			for j := c; j <= nf; j++ {
				a[r][j] -= k * a[c][j]
			}
		}
	}
	for r := nf - 1; r >= 0; r-- {
		v := a[r][nf]
		for j := r + 1; j < nf; j++ {
			v -= a[r][j] * out[j]
		}
		out[r] = v / a[r][r]
	}
	return out, nil
}

func dot(w, f *[nf]float64) float64 {
	z := 0.0
	for i := range nf {
		z += w[i] * f[i]
	}
	return z
}

func sigmoid(z float64) float64 { return 1 / (1 + math.Exp(-z)) }

// logLoss is the mean log-loss of w on x, y.
func logLoss(x [][nf]float64, y []float64, w [nf]float64) float64 {
	sum := 0.0
	for n, f := range x {
		p := min(max(sigmoid(dot(&w, &f)), 1e-12), 1-1e-12)
		sum -= y[n]*math.Log(p) + (1-y[n])*math.Log(1-p)
	}
	return sum / float64(len(y))
}

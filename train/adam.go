package train

import (
	"math"
	"sync"
)

// adam is Adam with a global gradient-norm clip, on float32 weights. It is
// ours rather than gorgonia's solver so its moments go into checkpoints and
// a resumed run continues exactly.
type adam struct {
	LR, Beta1, Beta2, Eps, MaxNorm float64
	M, V                           [][]float32
	T                              int
}

func newAdam(params [][]float32, lr, maxNorm float64) *adam {
	a := &adam{LR: lr, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, MaxNorm: maxNorm}
	for _, p := range params {
		a.M = append(a.M, make([]float32, len(p)))
		a.V = append(a.V, make([]float32, len(p)))
	}
	return a
}

// gradNorm returns the Euclidean norm of all gradients together.
func gradNorm(grads [][]float32) float64 {
	norm := 0.0
	for _, g := range grads {
		for _, v := range g {
			norm += float64(v) * float64(v)
		}
	}
	return math.Sqrt(norm)
}

// step applies one update from grads (the same shapes as params), whose
// norm before clipping is norm.
func (a *adam) step(params, grads [][]float32, norm float64) {
	scale := 1.0
	if a.MaxNorm > 0 && norm > a.MaxNorm {
		scale = a.MaxNorm / norm
	}
	a.T++
	c1 := 1 - math.Pow(a.Beta1, float64(a.T))
	c2 := 1 - math.Pow(a.Beta2, float64(a.T))
	b1, b2 := float32(a.Beta1), float32(a.Beta2)
	lr := float32(a.LR / c1)
	c2s, eps, sc := float32(math.Sqrt(c2)), float32(a.Eps), float32(scale)
	// Each element's update depends on that element alone, so the two
	// halves of every array go to two goroutines with the same result as
	// one loop.
	half := func(part int) {
		for i, p := range params {
			lo, hi := part*len(p)/2, (part+1)*len(p)/2
			m, v, g := a.M[i][lo:hi], a.V[i][lo:hi], grads[i][lo:hi]
			p = p[lo:hi]
			for j := range p {
				gj := g[j] * sc
				m[j] = b1*m[j] + (1-b1)*gj
				v[j] = b2*v[j] + (1-b2)*gj*gj
				p[j] -= lr * m[j] / (float32(math.Sqrt(float64(v[j])))/c2s + eps)
			}
		}
	}
	var wg sync.WaitGroup
	wg.Go(func() { half(1) })
	half(0)
	wg.Wait()
}

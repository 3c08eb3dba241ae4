package train

import (
	"fmt"
	"math"

	"gorgonia.org/tensor"

	"github.com/spiderenv/spider/agents/nn"
)

// learner updates a Net from minibatches: a gorgonia loss graph whose
// weights share the Net's slices, input buffers it fills in place, and Adam.
type learner struct {
	net                     *nn.Net
	gr                      *graph
	opt                     *adam
	rows                    int
	x                       []float32
	mask                    []float32 // additive: 0 legal, -1e9 illegal
	onehot                  []float32
	adv, oldLP, ret, lo, hi []float32
	params, grads           [][]float32
}

// newLearner builds the graph of kind for minibatches of rows rows.
func newLearner(net *nn.Net, opt *adam, rows int, kind Loss, c coefs, clip float64) (*learner, error) {
	spec := net.Spec
	var w, b []tensor.Tensor
	dims := spec.Dims()
	for i, d := range dims {
		w = append(w, tensor.New(tensor.WithShape(d[0], d[1]), tensor.WithBacking(net.W[i])))
		b = append(b, tensor.New(tensor.WithShape(1, d[1]), tensor.WithBacking(net.B[i])))
	}
	gr, err := newGraph(spec, w, b, rows, kind, c)
	if err != nil {
		return nil, fmt.Errorf("train: building the loss graph: %w", err)
	}
	A := spec.NumActions
	l := &learner{net: net, gr: gr, opt: opt, rows: rows,
		x: make([]float32, rows*spec.ObsLen), mask: make([]float32, rows*A), onehot: make([]float32, rows*A),
		adv: make([]float32, rows), oldLP: make([]float32, rows), ret: make([]float32, rows),
		lo: make([]float32, rows), hi: make([]float32, rows)}
	for i := range rows {
		l.lo[i], l.hi[i] = float32(1-clip), float32(1+clip)
	}
	mat := func(v []float32, c int) tensor.Tensor {
		return tensor.New(tensor.WithShape(rows, c), tensor.WithBacking(v))
	}
	binds := []error{
		gr.set(gr.x, mat(l.x, spec.ObsLen)), gr.set(gr.mask, mat(l.mask, A)), gr.set(gr.onehot, mat(l.onehot, A)),
		gr.set(gr.adv, mat(l.adv, 1)), gr.set(gr.oldLP, mat(l.oldLP, 1)), gr.set(gr.ret, mat(l.ret, 1)),
		gr.set(gr.lo, mat(l.lo, 1)), gr.set(gr.hi, mat(l.hi, 1)),
	}
	for _, err := range binds {
		if err != nil {
			gr.close()
			return nil, err
		}
	}
	l.params = net.Params()
	return l, nil
}

// setRow fills minibatch row r: observation, legal mask (bytes) and the
// chosen action.
func (l *learner) setRow(r int, obs []float32, mask []uint8, action int) {
	D, A := l.net.Spec.ObsLen, l.net.Spec.NumActions
	copy(l.x[r*D:(r+1)*D], obs)
	m := l.mask[r*A : (r+1)*A]
	for i, b := range mask {
		if b != 0 {
			m[i] = 0
		} else {
			m[i] = -1e9
		}
	}
	oh := l.onehot[r*A : (r+1)*A]
	clear(oh)
	oh[action] = 1
}

// losses are one update's loss parts.
type losses struct {
	Policy, Value, Entropy, GradNorm float64
}

// update runs the graph on the filled minibatch and applies one Adam step.
func (l *learner) update() (losses, error) {
	if err := l.gr.run(); err != nil {
		return losses{}, err
	}
	gs, err := l.gr.grads()
	if err != nil {
		return losses{}, err
	}
	l.grads = l.grads[:0]
	for _, g := range gs {
		l.grads = append(l.grads, g.([]float32))
	}
	out := losses{
		Policy:  float64(l.gr.pLoss.Value().Data().(float32)),
		Value:   float64(l.gr.vLoss.Value().Data().(float32)),
		Entropy: float64(l.gr.entropy.Value().Data().(float32)),
	}
	out.GradNorm = gradNorm(l.grads)
	if bad(out.Policy) || bad(out.Value) || bad(out.Entropy) || bad(out.GradNorm) {
		// Checked before the update, so the weights stay as they were.
		return out, fmt.Errorf("train: the loss or its gradient is not finite (policy %v, value %v, entropy %v, gradient norm %v)",
			out.Policy, out.Value, out.Entropy, out.GradNorm)
	}
	l.opt.step(l.params, l.grads, out.GradNorm)
	return out, l.gr.zeroGrads()
}

func (l *learner) close() { l.gr.close() }

func bad(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) }

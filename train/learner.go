package train

import (
	"fmt"
	"math"
	"sync"

	"gorgonia.org/tensor"

	"github.com/spiderenv/spider/agents/nn"
	"github.com/spiderenv/spider/env"
)

// shards is how many graphs share a minibatch (a variable only so a test
// can compare one graph with two). Each graph computes the loss
// and gradients of its own rows in its own goroutine: gorgonia runs a graph
// on one goroutine, so one graph leaves the second core idle for everything
// but the multiplies. The number is fixed, not the machine's core count, so
// a run's numbers do not depend on the machine.
var shards = 2

// learner updates a Net from minibatches: gorgonia loss graphs whose
// weights share the Net's slices, input buffers it fills in place, and Adam.
// The minibatch's rows are split among up to shards graphs; their gradients
// are combined, weighted by rows, into the gradient of the whole minibatch.
type learner struct {
	net                     *nn.Net
	parts                   []shard
	opt                     *adam
	rows                    int
	x                       []float32
	xc, xg                  []float32 // a columns network's inputs, from x
	layout                  nn.ColumnLayout
	mask                    []float32 // additive: 0 legal, -1e9 illegal
	onehot                  []float32
	adv, oldLP, ret, lo, hi []float32
	params, grads           [][]float32
	errs                    []error
}

// shard is one graph and the share of the minibatch it computes.
type shard struct {
	gr     *graph
	weight float32 // its rows / the minibatch's rows
}

// newLearner builds the graphs of kind for minibatches of rows rows.
func newLearner(net *nn.Net, opt *adam, rows int, kind Loss, c coefs, clip float64) (*learner, error) {
	spec := net.Spec
	A := spec.NumActions
	l := &learner{net: net, opt: opt, rows: rows,
		x: make([]float32, rows*spec.ObsLen), mask: make([]float32, rows*A), onehot: make([]float32, rows*A),
		adv: make([]float32, rows), oldLP: make([]float32, rows), ret: make([]float32, rows),
		lo: make([]float32, rows), hi: make([]float32, rows)}
	for i := range rows {
		l.lo[i], l.hi[i] = float32(1-clip), float32(1+clip)
	}
	if spec.Arch == nn.Columns {
		l.xc, l.xg = make([]float32, rows*env.NumColumns*spec.ColumnIn()), make([]float32, rows*nn.Globals)
		l.layout = spec.Layout()
	}
	n := min(shards, rows)
	for s := range n {
		// Each graph gets tensors of its own over the Net's slices: a
		// multiply transposes its operand's tensor in place for a moment, so
		// graphs running at once must not share tensor headers.
		var w, b []tensor.Tensor
		for i, d := range spec.Dims() {
			w = append(w, tensor.New(tensor.WithShape(d[0], d[1]), tensor.WithBacking(net.W[i])))
			b = append(b, tensor.New(tensor.WithShape(1, d[1]), tensor.WithBacking(net.B[i])))
		}
		lo, hi := rows*s/n, rows*(s+1)/n
		gr, err := l.shardGraph(spec, w, b, lo, hi, kind, c)
		if err != nil {
			l.close()
			return nil, err
		}
		l.parts = append(l.parts, shard{gr: gr, weight: float32(hi-lo) / float32(rows)})
	}
	l.params = net.Params()
	l.errs = make([]error, n)
	if n > 1 {
		for _, p := range l.params {
			l.grads = append(l.grads, make([]float32, len(p)))
		}
	}
	return l, nil
}

// shardGraph builds the graph of rows lo to hi, its inputs bound to those
// rows of the learner's buffers.
func (l *learner) shardGraph(spec nn.Spec, w, b []tensor.Tensor, lo, hi int, kind Loss, c coefs) (*graph, error) {
	rows, D, A := hi-lo, spec.ObsLen, spec.NumActions
	gr, err := newGraph(spec, w, b, rows, kind, c)
	if err != nil {
		return nil, fmt.Errorf("train: building the loss graph: %w", err)
	}
	mat := func(v []float32, c int) tensor.Tensor {
		return tensor.New(tensor.WithShape(rows, c), tensor.WithBacking(v[lo*c:hi*c]))
	}
	var in error
	if spec.Arch == nn.Columns {
		N := env.NumColumns
		in = gr.set(gr.xc, tensor.New(tensor.WithShape(rows*N, spec.ColumnIn()), tensor.WithBacking(l.xc[lo*N*spec.ColumnIn():hi*N*spec.ColumnIn()])))
		if in == nil {
			in = gr.set(gr.xg, mat(l.xg, nn.Globals))
		}
	} else {
		in = gr.set(gr.x, mat(l.x, D))
	}
	binds := []error{
		in, gr.set(gr.mask, mat(l.mask, A)), gr.set(gr.onehot, mat(l.onehot, A)),
		gr.set(gr.adv, mat(l.adv, 1)), gr.set(gr.oldLP, mat(l.oldLP, 1)), gr.set(gr.ret, mat(l.ret, 1)),
		gr.set(gr.lo, mat(l.lo, 1)), gr.set(gr.hi, mat(l.hi, 1)),
	}
	for _, err := range binds {
		if err != nil {
			gr.close()
			return nil, err
		}
	}
	return gr, nil
}

// setRow fills minibatch row r: observation, legal mask (bytes) and the
// chosen action.
func (l *learner) setRow(r int, obs []float32, mask []uint8, action int) {
	spec := &l.net.Spec
	D, A := spec.ObsLen, spec.NumActions
	copy(l.x[r*D:(r+1)*D], obs)
	if l.xc != nil {
		in := env.NumColumns * spec.ColumnIn()
		l.layout.Split(l.xc[r*in:(r+1)*in], l.xg[r*nn.Globals:(r+1)*nn.Globals], obs, 1)
	}
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
	ApproxKL, ClipFrac               float64 // PPO's diagnostics (headOp)
	measured                         int     // epochs: the minibatches summed
}

// update runs the graphs on the filled minibatch and applies one Adam
// step, unless maxKL is positive and the minibatch's ApproxKL exceeds it:
// then it reports false and leaves the weights as they were.
func (l *learner) update(maxKL float64) (losses, bool, error) {
	var out losses
	defer func() {
		for _, p := range l.parts {
			p.gr.zeroGrads()
		}
	}()
	if len(l.parts) == 1 {
		l.errs[0] = l.parts[0].gr.run()
	} else {
		var wg sync.WaitGroup
		for i, p := range l.parts {
			wg.Go(func() { l.errs[i] = p.gr.run() })
		}
		wg.Wait()
	}
	for _, err := range l.errs {
		if err != nil {
			return out, false, err
		}
	}
	for i, p := range l.parts {
		gs, err := p.gr.grads()
		if err != nil {
			return out, false, err
		}
		if len(l.parts) == 1 {
			l.grads = l.grads[:0]
			for _, g := range gs {
				l.grads = append(l.grads, g.([]float32))
			}
		} else {
			// The minibatch's gradient is the row-weighted sum of the shards'
			// mean gradients, added in shard order so a run repeats exactly.
			for j, g := range gs {
				dst, w := l.grads[j], p.weight
				if i == 0 {
					for k, v := range g.([]float32) {
						dst[k] = w * v
					}
				} else {
					for k, v := range g.([]float32) {
						dst[k] += w * v
					}
				}
			}
		}
		w := float64(p.weight)
		out.Policy += w * p.gr.head.policy
		out.Value += w * float64(p.gr.vLoss.Value().Data().(float32))
		out.Entropy += w * p.gr.head.entropy
		out.ApproxKL += w * p.gr.head.approxKL
		out.ClipFrac += w * p.gr.head.clipFrac
	}
	out.GradNorm = gradNorm(l.grads)
	if bad(out.Policy) || bad(out.Value) || bad(out.Entropy) || bad(out.GradNorm) {
		// Checked before the update, so the weights stay as they were.
		return out, false, fmt.Errorf("%w (policy %v, value %v, entropy %v, gradient norm %v)",
			ErrNotFinite, out.Policy, out.Value, out.Entropy, out.GradNorm)
	}
	if maxKL > 0 && out.ApproxKL > maxKL {
		return out, false, nil
	}
	l.opt.step(l.params, l.grads, out.GradNorm)
	return out, true, nil
}

func (l *learner) close() {
	for _, p := range l.parts {
		p.gr.close()
	}
}

func bad(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) }

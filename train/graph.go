package train

import (
	"fmt"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/spiderenv/spider/agents/nn"
	"github.com/spiderenv/spider/env"
)

// Loss selects what a graph minimises.
type Loss uint8

const (
	// PPOLoss is PPO's clipped surrogate plus the value loss minus the
	// entropy bonus.
	PPOLoss Loss = iota
	// CloneLoss is the cross-entropy of a teacher's actions (behaviour
	// cloning), plus the value loss towards the teacher's returns.
	CloneLoss
)

// graph is the network's loss over a minibatch of fixed size, built with
// gorgonia. Its weight nodes share their backing arrays with a set of
// weights (the Net's float32 slices, or float64 copies in the gradient
// check), so an update to those slices is seen by the next run.
//
// The policy's loss (masked log-softmax, surrogate or cross-entropy, and
// entropy) is one fused operation, headOp; the layers and the value loss
// are gorgonia's own operations.
type graph struct {
	g      *G.ExprGraph
	vm     G.VM
	rows   int
	params []*G.Node // W0, B0, W1, B1, ...

	// Inputs, rows x columns. A columns network reads xc (rows*10 x
	// ColumnIn) and xg (rows x Globals) in place of x.
	x, xc, xg       *G.Node
	mask, onehot    *G.Node // additive mask (0 or -1e9), chosen action
	adv, oldLP, ret *G.Node // rows x 1
	lo, hi          *G.Node // rows x 1: 1-clip and 1+clip
	loss, vLoss     *G.Node
	head            *headOp // the policy's loss and entropy
}

// Coefficients of the PPO loss.
type coefs struct {
	Value, Entropy float64
}

// newGraph builds the loss of kind for rows rows over weights w and
// biases b (each a float32 or float64 tensor per layer), with the layer
// sizes of spec.
func newGraph(spec nn.Spec, w, b []tensor.Tensor, rows int, kind Loss, c coefs) (*graph, error) {
	dt := w[0].Dtype()
	g := G.NewGraph()
	gr := &graph{g: g, rows: rows}
	mat := func(r, c int, name string) *G.Node {
		return G.NewMatrix(g, dt, G.WithShape(r, c), G.WithName(name), G.WithInit(G.Zeroes()))
	}
	scalar := func(v float64) *G.Node {
		if dt == tensor.Float32 {
			return G.NewConstant(float32(v))
		}
		return G.NewConstant(v)
	}
	A := spec.NumActions
	if spec.Arch == nn.Columns {
		gr.xc = mat(rows*env.NumColumns, spec.ColumnIn(), "xc")
		gr.xg = mat(rows, nn.Globals, "xg")
	} else {
		gr.x = mat(rows, spec.ObsLen, "x")
	}
	gr.mask = mat(rows, A, "mask")
	gr.onehot = mat(rows, A, "onehot")
	gr.adv = mat(rows, 1, "adv")
	gr.oldLP = mat(rows, 1, "oldlp")
	gr.ret = mat(rows, 1, "ret")
	gr.lo = mat(rows, 1, "lo")
	gr.hi = mat(rows, 1, "hi")
	dims := spec.Dims()
	for i, d := range dims {
		wn := G.NewMatrix(g, dt, G.WithShape(d[0], d[1]), G.WithName(fmt.Sprint("w", i)), G.WithValue(w[i]))
		bn := G.NewMatrix(g, dt, G.WithShape(1, d[1]), G.WithName(fmt.Sprint("b", i)), G.WithValue(b[i]))
		gr.params = append(gr.params, wn, bn)
	}
	dense := func(in *G.Node, i int) (*G.Node, error) {
		m, err := G.Mul(in, gr.params[2*i])
		if err != nil {
			return nil, err
		}
		return G.BroadcastAdd(m, gr.params[2*i+1], nil, []byte{0})
	}
	var err error
	must := func(n *G.Node, e error) *G.Node {
		if e != nil && err == nil {
			err = e
		}
		return n
	}
	var logits, value *G.Node
	if spec.Arch == nn.Columns {
		const N = env.NumColumns
		C := spec.Column
		e := must(G.Tanh(must(dense(gr.xc, 0))))
		flat := must(G.Reshape(e, tensor.Shape{rows, N * C}))
		m := must(G.Tanh(must(dense(must(G.Concat(1, flat, gr.xg)), 1))))
		game := must(G.ApplyOp(&repeatOp{rows: rows, n: N, cols: C}, must(dense(m, 3))))
		z := must(G.Tanh(must(G.Add(must(dense(e, 2)), game))))
		u, v, deal := must(dense(z, 4)), must(dense(z, 5)), must(dense(m, 6))
		logits = must(G.ApplyOp(&pairOp{rows: rows, pair: spec.Pair}, u, v, deal))
		value = must(dense(m, 7))
	} else {
		h := gr.x
		L := len(spec.Hidden)
		for i := range L {
			h = must(G.Tanh(must(dense(h, i))))
		}
		logits = must(dense(h, L))
		value = must(dense(h, L+1))
	}
	if err != nil {
		return nil, err
	}
	gr.head = newHeadOp(kind, c.Entropy, rows, A)
	pLoss := must(G.ApplyOp(gr.head, logits, gr.mask, gr.onehot, gr.adv, gr.oldLP, gr.lo, gr.hi))
	gr.vLoss = must(G.Mean(must(G.Square(must(G.Sub(value, gr.ret))))))
	gr.loss = must(G.Add(pLoss, must(G.HadamardProd(scalar(c.Value), gr.vLoss))))
	if err != nil {
		return nil, err
	}
	if _, err := G.Grad(gr.loss, gr.params...); err != nil {
		return nil, err
	}
	gr.vm = G.NewTapeMachine(g, G.BindDualValues(gr.params...))
	return gr, nil
}

// run computes the loss and accumulates the gradients of a minibatch whose
// inputs were set with set.
func (gr *graph) run() error {
	defer gr.vm.Reset()
	return gr.vm.RunAll()
}

// set binds the input tensors.
func (gr *graph) set(n *G.Node, t tensor.Tensor) error { return G.Let(n, t) }

// grads returns each parameter's gradient backing array (float32 or
// float64), in params order.
func (gr *graph) grads() ([]any, error) {
	out := make([]any, len(gr.params))
	for i, p := range gr.params {
		gv, err := p.Grad()
		if err != nil {
			return nil, err
		}
		out[i] = gv.Data()
	}
	return out, nil
}

// zeroGrads clears the accumulated gradients.
func (gr *graph) zeroGrads() error {
	for _, p := range gr.params {
		gv, err := p.Grad()
		if err != nil || gv == nil {
			continue // no gradient yet: nothing to clear
		}
		switch d := gv.Data().(type) {
		case []float32:
			clear(d)
		case []float64:
			clear(d)
		}
	}
	return nil
}

// close frees the machine.
func (gr *graph) close() { gr.vm.Close() }

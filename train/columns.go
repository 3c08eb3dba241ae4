package train

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/spiderenv/spider/agents/nn"
	"github.com/spiderenv/spider/env"
)

// The columns network (nn.Columns) needs two operations gorgonia lacks: a
// row repeated once per column (the game's view added to each column's
// encoding) and the move logits scored from pairs of columns. Both are
// written here with their gradients; the layers around them are gorgonia's
// own multiplies, additions and tanh.

// repeatOp repeats each row of a rows x cols matrix n times, giving
// rows*n x cols (row r's copies are rows r*n to r*n+n-1).
type repeatOp struct{ rows, n, cols int }

func (op *repeatOp) Arity() int { return 1 }
func (op *repeatOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	t := G.TensorType{Dims: 2, Of: a}
	return hm.NewFnType(t, t)
}
func (op *repeatOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return tensor.Shape{op.rows * op.n, op.cols}, nil
}
func (op *repeatOp) ReturnsPtr() bool      { return false }
func (op *repeatOp) CallsExtern() bool     { return false }
func (op *repeatOp) OverwritesInput() int  { return -1 }
func (op *repeatOp) WriteHash(h hash.Hash) { fmt.Fprint(h, op.String()) }
func (op *repeatOp) Hashcode() uint32      { return hashOf(op) }
func (op *repeatOp) String() string {
	return fmt.Sprintf("SpiderRepeat{%d,%d,%d}", op.rows, op.n, op.cols)
}
func (op *repeatOp) DiffWRT(n int) []bool { return []bool{true} }

// SymDiff returns the input's gradient: the sum of its copies' gradients.
func (op *repeatOp) SymDiff(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	d, err := G.ApplyOp(&groupSumOp{op}, grad)
	return G.Nodes{d}, err
}

func (op *repeatOp) Do(vals ...G.Value) (G.Value, error) {
	return apply(op, vals, 1, []int{op.rows * op.cols}, op.rows*op.n, op.cols, func(out any, in []any) {
		switch o := out.(type) {
		case []float32:
			repeatRows(o, in[0].([]float32), op.n, op.cols)
		case []float64:
			repeatRows(o, in[0].([]float64), op.n, op.cols)
		}
	})
}

func repeatRows[T float32 | float64](out, in []T, n, cols int) {
	for r := range len(in) / cols {
		for k := range n {
			copy(out[(r*n+k)*cols:(r*n+k+1)*cols], in[r*cols:(r+1)*cols])
		}
	}
}

// groupSumOp is repeatOp's gradient: each group of n rows summed into one.
type groupSumOp struct{ fwd *repeatOp }

func (op *groupSumOp) Arity() int { return 1 }
func (op *groupSumOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	t := G.TensorType{Dims: 2, Of: a}
	return hm.NewFnType(t, t)
}
func (op *groupSumOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return tensor.Shape{op.fwd.rows, op.fwd.cols}, nil
}
func (op *groupSumOp) ReturnsPtr() bool      { return false }
func (op *groupSumOp) CallsExtern() bool     { return false }
func (op *groupSumOp) OverwritesInput() int  { return -1 }
func (op *groupSumOp) WriteHash(h hash.Hash) { fmt.Fprint(h, op.String()) }
func (op *groupSumOp) Hashcode() uint32      { return hashOf(op) }
func (op *groupSumOp) String() string        { return "Grad" + op.fwd.String() }

func (op *groupSumOp) Do(vals ...G.Value) (G.Value, error) {
	f := op.fwd
	return apply(op, vals, 1, []int{f.rows * f.n * f.cols}, f.rows, f.cols, func(out any, in []any) {
		switch o := out.(type) {
		case []float32:
			sumGroups(o, in[0].([]float32), f.n, f.cols)
		case []float64:
			sumGroups(o, in[0].([]float64), f.n, f.cols)
		}
	})
}

func sumGroups[T float32 | float64](out, in []T, n, cols int) {
	clear(out)
	for r := range len(out) / cols {
		o := out[r*cols : (r+1)*cols]
		for k := range n {
			for i, v := range in[(r*n+k)*cols : (r*n+k+1)*cols] {
				o[i] += v
			}
		}
	}
}

// pairOp scores every action from the source vectors u (rows*10 x
// 12*(pair+1)), the destination vectors v (rows*10 x pair+1) and the
// deal's logit (rows x 1), as nn.PairLogits does, giving rows x
// NumActions logits.
type pairOp struct{ rows, pair int }

func (op *pairOp) Arity() int { return 3 }
func (op *pairOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	t := G.TensorType{Dims: 2, Of: a}
	return hm.NewFnType(t, t, t, t)
}
func (op *pairOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return tensor.Shape{op.rows, env.NumActions}, nil
}
func (op *pairOp) ReturnsPtr() bool      { return false }
func (op *pairOp) CallsExtern() bool     { return false }
func (op *pairOp) OverwritesInput() int  { return -1 }
func (op *pairOp) WriteHash(h hash.Hash) { fmt.Fprint(h, op.String()) }
func (op *pairOp) Hashcode() uint32      { return hashOf(op) }
func (op *pairOp) String() string        { return fmt.Sprintf("SpiderPairs{%d,%d}", op.rows, op.pair) }
func (op *pairOp) DiffWRT(n int) []bool  { return []bool{true, true, true} }

// sizes returns the lengths of u, v and the deal's logits.
func (op *pairOp) sizes() []int {
	N := op.rows * env.NumColumns
	return []int{N * env.MaxMove * (op.pair + 1), N * (op.pair + 1), op.rows}
}

// SymDiff returns the gradients of u, v and the deal's logits, each its
// own operation over the inputs and the logits' gradient.
func (op *pairOp) SymDiff(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	if len(inputs) != 3 {
		return nil, fmt.Errorf("train: %v takes 3 inputs, got %d", op, len(inputs))
	}
	out := make(G.Nodes, 3)
	for i := range out {
		d, err := G.ApplyOp(&pairGradOp{op, i}, inputs[0], inputs[1], inputs[2], grad)
		if err != nil {
			return nil, err
		}
		out[i] = d
	}
	return out, nil
}

func (op *pairOp) Do(vals ...G.Value) (G.Value, error) {
	return apply(op, vals, 3, op.sizes(), op.rows, env.NumActions, func(out any, in []any) {
		switch o := out.(type) {
		case []float32:
			nn.PairLogits(o, in[0].([]float32), in[1].([]float32), in[2].([]float32), op.rows, op.pair)
		case []float64:
			nn.PairLogits(o, in[0].([]float64), in[1].([]float64), in[2].([]float64), op.rows, op.pair)
		}
	})
}

// pairGradOp is the gradient of pairOp's input wrt (0 u, 1 v, 2 the
// deal's logits). Inputs: u, v, deal and the logits' gradient.
type pairGradOp struct {
	fwd *pairOp
	wrt int
}

func (op *pairGradOp) Arity() int { return 4 }
func (op *pairGradOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	t := G.TensorType{Dims: 2, Of: a}
	return hm.NewFnType(t, t, t, t, t)
}
func (op *pairGradOp) shape() (int, int) {
	n := op.fwd.rows * env.NumColumns
	switch op.wrt {
	case 0:
		return n, env.MaxMove * (op.fwd.pair + 1)
	case 1:
		return n, op.fwd.pair + 1
	}
	return op.fwd.rows, 1
}
func (op *pairGradOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	r, c := op.shape()
	return tensor.Shape{r, c}, nil
}
func (op *pairGradOp) ReturnsPtr() bool      { return false }
func (op *pairGradOp) CallsExtern() bool     { return false }
func (op *pairGradOp) OverwritesInput() int  { return -1 }
func (op *pairGradOp) WriteHash(h hash.Hash) { fmt.Fprint(h, op.String()) }
func (op *pairGradOp) Hashcode() uint32      { return hashOf(op) }
func (op *pairGradOp) String() string        { return fmt.Sprintf("Grad%d%v", op.wrt, op.fwd) }

func (op *pairGradOp) Do(vals ...G.Value) (G.Value, error) {
	r, c := op.shape()
	sizes := append(op.fwd.sizes(), op.fwd.rows*env.NumActions)
	return apply(op, vals, 4, sizes, r, c, func(out any, in []any) {
		switch o := out.(type) {
		case []float32:
			pairGrad(o, in[0].([]float32), in[1].([]float32), in[3].([]float32), op.fwd.rows, op.fwd.pair, op.wrt)
		case []float64:
			pairGrad(o, in[0].([]float64), in[1].([]float64), in[3].([]float64), op.fwd.rows, op.fwd.pair, op.wrt)
		}
	})
}

// pairGrad writes into out the gradient, with respect to u (wrt 0), v (1)
// or the deal's logits (2), of a loss whose gradient with respect to the
// logits is g.
func pairGrad[T float32 | float64](out, u, v, g []T, rows, pair, wrt int) {
	const N, K = env.NumColumns, env.MaxMove
	us, vs := K*(pair+1), pair+1
	clear(out)
	for r := range rows {
		gr := g[r*env.NumActions : (r+1)*env.NumActions]
		if wrt == 2 {
			out[r] = gr[env.Deal]
			continue
		}
		a := 0
		for src := range N {
			for dst := range N {
				if dst == src {
					continue
				}
				for k := range K {
					d := gr[a]
					a++
					if d == 0 {
						continue
					}
					ui := (r*N+src)*us + k*(pair+1)
					vi := (r*N + dst) * vs
					if wrt == 0 {
						o, vr := out[ui:ui+pair+1], v[vi:vi+pair]
						for i, x := range vr {
							o[i] += d * x
						}
						o[pair] += d
					} else {
						o, ur := out[vi:vi+pair+1], u[ui:ui+pair]
						for i, x := range ur {
							o[i] += d * x
						}
						o[pair] += d
					}
				}
			}
		}
	}
}

// apply checks that vals are arity matrices of float32 or float64 of the
// given sizes, and returns a new rows x cols tensor of their type that f
// fills from their data.
func apply(op G.Op, vals []G.Value, arity int, sizes []int, rows, cols int, f func(out any, in []any)) (G.Value, error) {
	if len(vals) != arity {
		return nil, fmt.Errorf("train: %v takes %d inputs, got %d", op, arity, len(vals))
	}
	in := make([]any, arity)
	var dt tensor.Dtype
	for i, v := range vals {
		t, ok := v.(tensor.Tensor)
		n := -1
		switch d := v.Data().(type) {
		case []float32:
			n = len(d)
		case []float64:
			n = len(d)
		}
		if !ok || n != sizes[i] || (i > 0 && t.Dtype() != dt) {
			return nil, fmt.Errorf("train: %v input %d: want %d float32 or float64 values, got %T", op, i, sizes[i], v.Data())
		}
		dt = t.Dtype()
		in[i] = v.Data()
	}
	out := tensor.New(tensor.WithShape(rows, cols), tensor.Of(dt))
	f(out.Data(), in)
	return out, nil
}

var (
	_ G.SDOp = (*repeatOp)(nil)
	_ G.Op   = (*groupSumOp)(nil)
	_ G.SDOp = (*pairOp)(nil)
	_ G.Op   = (*pairGradOp)(nil)
)

package train

import (
	"fmt"
	"hash"
	"hash/fnv"
	"math"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// headOp is the policy's part of the loss as one gorgonia operation: the
// log-softmax of the logits plus the additive mask, the chosen action's
// log-probability, PPO's clipped surrogate (or cloning's cross-entropy),
// and the entropy bonus. Its output is the policy loss minus the entropy
// coefficient times the mean entropy.
//
// Built from gorgonia's element-wise operations the same loss took about
// thirty passes over every row's 1,081 logits (forward and backward, most
// of them allocating a fresh rows x 1,081 tensor, and two broadcasts that
// copy a row's maximum and log-sum across all columns), so they cost more
// than the matrix multiplies. Fused, a row is read twice, only the legal
// actions pay for an exponential, and the gradient with respect to the
// logits is computed in the same pass, in float64, and kept for headGradOp.
// It also sidesteps the two gorgonia operations that give silently wrong
// results here (see graph).
//
// Inputs, in order: logits, mask (rows x A; 0 legal, -1e9 illegal), onehot
// (rows x A, the chosen action), adv, oldLP, lo, hi (rows x 1). It is
// differentiable with respect to the logits only.
type headOp struct {
	kind       Loss
	entCoef    float64
	rows, cols int

	// Set by Do: the loss's parts, for the learner's report, and the
	// gradient of the output with respect to each logit. approxKL and
	// clipFrac (PPO only) are the diagnostics CleanRL logs: the estimate
	// (ratio-1) - log ratio of the KL divergence of the new policy from
	// the rollout's, and the share of rows whose ratio is clipped.
	policy, entropy    float64
	approxKL, clipFrac float64
	dz                 []float64
}

func newHeadOp(kind Loss, entCoef float64, rows, cols int) *headOp {
	return &headOp{kind: kind, entCoef: entCoef, rows: rows, cols: cols, dz: make([]float64, rows*cols)}
}

func (op *headOp) Arity() int { return 7 }

func (op *headOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	t := G.TensorType{Dims: 2, Of: a}
	return hm.NewFnType(t, t, t, t, t, t, t, a)
}

func (op *headOp) InferShape(...G.DimSizer) (tensor.Shape, error) { return tensor.ScalarShape(), nil }
func (op *headOp) ReturnsPtr() bool                               { return false }
func (op *headOp) CallsExtern() bool                              { return false }
func (op *headOp) OverwritesInput() int                           { return -1 }
func (op *headOp) WriteHash(h hash.Hash)                          { fmt.Fprint(h, op.String()) }
func (op *headOp) Hashcode() uint32                               { return hashOf(op) }
func (op *headOp) String() string {
	return fmt.Sprintf("SpiderPolicyHead{%d,%g,%dx%d}", op.kind, op.entCoef, op.rows, op.cols)
}

// DiffWRT says the loss is differentiated with respect to the logits only.
func (op *headOp) DiffWRT(n int) []bool {
	d := make([]bool, n)
	d[0] = true
	return d
}

// SymDiff returns the logits' gradient: the one kept by Do, times the
// gradient flowing into the output.
func (op *headOp) SymDiff(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	if len(inputs) != op.Arity() {
		return nil, fmt.Errorf("train: %v takes %d inputs, got %d", op, op.Arity(), len(inputs))
	}
	dz, err := G.ApplyOp(&headGradOp{op}, inputs[0], grad)
	if err != nil {
		return nil, err
	}
	out := make(G.Nodes, len(inputs))
	out[0] = dz
	return out, nil
}

// Do computes the loss and keeps its gradient.
func (op *headOp) Do(vals ...G.Value) (G.Value, error) {
	if len(vals) != op.Arity() {
		return nil, fmt.Errorf("train: %v takes %d inputs, got %d", op, op.Arity(), len(vals))
	}
	sizes := []int{op.cols, op.cols, op.cols, 1, 1, 1, 1}
	switch vals[0].Data().(type) {
	case []float32:
		in, err := inputsOf[float32](vals, op.rows, sizes)
		if err != nil {
			return nil, err
		}
		return G.NewF32(float32(headForward(op, in))), nil
	case []float64:
		in, err := inputsOf[float64](vals, op.rows, sizes)
		if err != nil {
			return nil, err
		}
		return G.NewF64(headForward(op, in)), nil
	default:
		return nil, fmt.Errorf("train: %v needs float32 or float64 logits, got %T", op, vals[0].Data())
	}
}

// inputsOf checks that each value holds rows x sizes[i] elements of T.
func inputsOf[T float32 | float64](vals []G.Value, rows int, sizes []int) ([][]T, error) {
	out := make([][]T, len(vals))
	for i, v := range vals {
		d, ok := v.Data().([]T)
		if !ok || len(d) != rows*sizes[i] {
			return nil, fmt.Errorf("train: policy head input %d: want %d values of %T, got %T", i, rows*sizes[i], T(0), v.Data())
		}
		out[i] = d
	}
	return out, nil
}

// headForward computes the loss from in (the op's inputs, in order) and
// fills op.dz, op.policy and op.entropy.
func headForward[T float32 | float64](op *headOp, in [][]T) float64 {
	z, mask, onehot, adv, oldLP, lo, hi := in[0], in[1], in[2], in[3], in[4], in[5], in[6]
	A, B := op.cols, float64(op.rows)
	var policy, entropy, kl, clipped float64
	for r := range op.rows {
		zr, mr, oh, dz := z[r*A:(r+1)*A], mask[r*A:(r+1)*A], onehot[r*A:(r+1)*A], op.dz[r*A:(r+1)*A]
		// Pass 1: the row's maximum and the chosen action.
		m, c := math.Inf(-1), 0
		for j := range zr {
			if v := float64(zr[j]) + float64(mr[j]); v > m {
				m = v
			}
			if oh[j] != 0 {
				c = j
			}
		}
		// Pass 2: exponentials of the actions that do not underflow (the
		// masked ones are exactly 0, as in a plain softmax), kept in dz.
		var s, sd float64
		for j := range zr {
			d := float64(zr[j]) + float64(mr[j]) - m
			if d < -745 {
				dz[j] = 0
				continue
			}
			e := math.Exp(d)
			dz[j] = e
			s += e
			sd += e * d
		}
		lse := math.Log(s)
		// H = -sum p log p with p = e/s and log p = d - lse.
		h := lse - sd/s
		entropy += h
		lpc := float64(zr[c]) + float64(mr[c]) - m - lse
		// Cloning may label a row with a set of actions (several ones in
		// onehot: moves equally good): its loss is then minus the log of
		// the set's probability, and ps is that probability (times s).
		// A row of one action keeps the plain formula, so runs without sets
		// compute exactly what they did before sets existed.
		var ps float64
		if op.kind == CloneLoss {
			labels := 0
			for j, e := range dz {
				if oh[j] != 0 {
					ps += e
					labels++
				}
			}
			if labels > 1 && ps > 0 {
				lpc = math.Log(ps) - lse
			} else {
				ps = 0
			}
		}
		var gc float64 // d(policy loss)/d(chosen log-probability)
		switch op.kind {
		case PPOLoss:
			logRatio := lpc - float64(oldLP[r])
			ratio := math.Exp(logRatio)
			kl += klTerm(logRatio)
			if ratio < float64(lo[r]) || ratio > float64(hi[r]) {
				clipped++
			}
			a := float64(adv[r])
			s1 := ratio * a
			s2 := min(max(ratio, float64(lo[r])), float64(hi[r])) * a
			policy -= min(s1, s2)
			if s1 <= s2 {
				// Where the clipped term is the smaller, the ratio is
				// clipped and the gradient is 0.
				gc = -ratio * a / B
			}
		case CloneLoss:
			policy -= lpc
			gc = -1 / B
		}
		// Pass 3: d/dz_j = gc (1[j=c] - p_j) + (entCoef/B) p_j (log p_j + H).
		// With a set, d(-log P_set)/dz_j = p_j - 1[j in set] p_j / P_set.
		ke := op.entCoef / B
		for j, e := range dz {
			if e == 0 {
				continue
			}
			p := e / s
			lp := float64(zr[j]) + float64(mr[j]) - m - lse
			g := -gc*p + ke*p*(lp+h)
			if ps > 0 && oh[j] != 0 {
				g += gc * e / ps
			}
			dz[j] = g
		}
		if ps == 0 {
			dz[c] += gc
		}
	}
	op.policy, op.entropy = policy/B, entropy/B
	op.approxKL, op.clipFrac = kl/B, clipped/B
	return op.policy - op.entCoef*op.entropy
}

// headGradOp is headOp's gradient with respect to the logits: the
// gradient kept by the last Do, scaled by the output's gradient. Inputs:
// the logits (for the shape) and the output's gradient.
type headGradOp struct{ fwd *headOp }

func (op *headGradOp) Arity() int { return 2 }

func (op *headGradOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	t := G.TensorType{Dims: 2, Of: a}
	return hm.NewFnType(t, a, t)
}

func (op *headGradOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	return tensor.Shape{op.fwd.rows, op.fwd.cols}, nil
}
func (op *headGradOp) ReturnsPtr() bool      { return false }
func (op *headGradOp) CallsExtern() bool     { return false }
func (op *headGradOp) OverwritesInput() int  { return -1 }
func (op *headGradOp) WriteHash(h hash.Hash) { fmt.Fprint(h, op.String()) }
func (op *headGradOp) Hashcode() uint32      { return hashOf(op) }
func (op *headGradOp) String() string        { return "Grad" + op.fwd.String() }

// Do returns the gradient in a new tensor.
func (op *headGradOp) Do(vals ...G.Value) (G.Value, error) {
	if len(vals) != 2 {
		return nil, fmt.Errorf("train: %v takes 2 inputs, got %d", op, len(vals))
	}
	t, ok := vals[0].(tensor.Tensor)
	if !ok {
		return nil, fmt.Errorf("train: %v needs a tensor of logits, got %T", op, vals[0])
	}
	return op.UsePreallocDo(tensor.New(tensor.WithShape(op.fwd.rows, op.fwd.cols), tensor.Of(t.Dtype())), vals...)
}

// UsePreallocDo writes the gradient into prealloc.
func (op *headGradOp) UsePreallocDo(prealloc G.Value, vals ...G.Value) (G.Value, error) {
	g, err := scalarOf(vals[1])
	if err != nil {
		return nil, fmt.Errorf("train: %v: %w", op, err)
	}
	switch d := prealloc.Data().(type) {
	case []float32:
		if len(d) == len(op.fwd.dz) {
			scaleInto(d, op.fwd.dz, g)
			return prealloc, nil
		}
	case []float64:
		if len(d) == len(op.fwd.dz) {
			scaleInto(d, op.fwd.dz, g)
			return prealloc, nil
		}
	}
	return nil, fmt.Errorf("train: %v cannot write %d values into %T", op, len(op.fwd.dz), prealloc.Data())
}

func scaleInto[T float32 | float64](dst []T, src []float64, g float64) {
	for i, v := range src {
		dst[i] = T(v * g)
	}
}

// scalarOf reads a one-element value.
func scalarOf(v G.Value) (float64, error) {
	switch d := v.Data().(type) {
	case float32:
		return float64(d), nil
	case float64:
		return d, nil
	case []float32:
		if len(d) == 1 {
			return float64(d[0]), nil
		}
	case []float64:
		if len(d) == 1 {
			return d[0], nil
		}
	}
	return 0, fmt.Errorf("want a scalar gradient, got %T", v.Data())
}

func hashOf(op interface{ WriteHash(hash.Hash) }) uint32 {
	h := fnv.New32a()
	op.WriteHash(h)
	return h.Sum32()
}

var (
	_ G.SDOp            = (*headOp)(nil)
	_ G.Op              = (*headGradOp)(nil)
	_ G.UsePreallocDoer = (*headGradOp)(nil)
)

// klTerm is one sample's approximate KL, (ratio-1) - log ratio, which is
// never negative: written with Expm1, since near a ratio of 1 ratio-1
// cancels to below log ratio (exp(1e-17) is 1, which made it -1e-17, and
// metrics.csv showed approx_kl of -6e-18).
func klTerm(logRatio float64) float64 { return math.Expm1(logRatio) - logRatio }

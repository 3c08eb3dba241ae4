package train

import (
	"math"
	"testing"

	"gorgonia.org/tensor"

	"github.com/spiderenv/spider/agents/nn"
	"github.com/spiderenv/spider/internal/rng"
)

// gradCase is a small float64 problem: a network, a minibatch and a loss.
type gradCase struct {
	spec  nn.Spec
	w, b  []tensor.Tensor
	gr    *graph
	wData [][]float64

	x, mask, onehot, adv, old, ret []float64
	lo, hi                         []float64

	// forward is the network's forward pass for row r, written out
	// without gorgonia or the nn package (mlpForward if nil).
	forward func(r int) (logits []float64, value float64)
}

// newWeights returns a case with weights drawn from u for spec, and its
// float64 graph of rows rows.
func newWeights(t *testing.T, spec nn.Spec, u func() float64, rows int, kind Loss) *gradCase {
	t.Helper()
	c := &gradCase{spec: spec}
	for _, d := range spec.Dims() {
		wd, bd := make([]float64, d[0]*d[1]), make([]float64, d[1])
		for i := range wd {
			wd[i] = u()
		}
		for i := range bd {
			bd[i] = 0.3 * u()
		}
		c.w = append(c.w, tensor.New(tensor.WithShape(d[0], d[1]), tensor.WithBacking(wd)))
		c.b = append(c.b, tensor.New(tensor.WithShape(1, d[1]), tensor.WithBacking(bd)))
		c.wData = append(c.wData, wd, bd)
	}
	gr, err := newGraph(spec, c.w, c.b, rows, kind, coefs{Value: 0.7, Entropy: 0.05})
	if err != nil {
		t.Fatal(err)
	}
	c.gr = gr
	return c
}

// dense computes in·W_i + b_i of c's weights.
func (c *gradCase) dense(in []float64, i int) []float64 {
	d := c.spec.Dims()[i]
	w, b := c.wData[2*i], c.wData[2*i+1]
	n, m := d[0], d[1]
	out := make([]float64, m)
	for k := range m {
		s := b[k]
		for j := range n {
			s += in[j] * w[j*m+k]
		}
		out[k] = s
	}
	return out
}

func tanhAll(h []float64) []float64 {
	for k := range h {
		h[k] = math.Tanh(h[k])
	}
	return h
}

// mlpForward is an MLP's forward pass.
func (c *gradCase) mlpForward(r int) ([]float64, float64) {
	D, L := c.spec.ObsLen, len(c.spec.Hidden)
	h := append([]float64(nil), c.x[r*D:(r+1)*D]...)
	for i := range L {
		h = tanhAll(c.dense(h, i))
	}
	return c.dense(h, L), c.dense(h, L+1)[0]
}

func newGradCase(t *testing.T, kind Loss) *gradCase {
	t.Helper()
	const rows, obs, acts = 6, 7, 5
	spec := nn.Spec{ObsLen: obs, NumActions: acts, Hidden: []int{4, 3}}
	g := rng.New(11)
	u := func() float64 { return float64(g.Uint64()>>11)/(1<<53)*2 - 1 }
	c := newWeights(t, spec, u, rows, kind)
	gr := c.gr
	x := make([]float64, rows*obs)
	for i := range x {
		x[i] = u()
	}
	// Masks: rows with one legal action at the first, a middle and the
	// last position (the case SoftMax gets wrong), and rows with several.
	legal := [][]int{{0}, {2}, {4}, {1, 3}, {0, 2, 4}, {0, 1, 2, 3, 4}}
	chosen := []int{0, 2, 4, 3, 2, 1}
	mask, onehot := make([]float64, rows*acts), make([]float64, rows*acts)
	for r := range rows {
		for a := range acts {
			mask[r*acts+a] = -1e9
		}
		for _, a := range legal[r] {
			mask[r*acts+a] = 0
		}
		onehot[r*acts+chosen[r]] = 1
	}
	if kind == CloneLoss {
		// Two rows labelled with sets of equally good actions.
		onehot[4*acts+4], onehot[5*acts+3], onehot[5*acts+0] = 1, 1, 1
	}
	// Old log-probabilities far from and near the current ones, so some
	// ratios are clipped and some are not.
	adv := []float64{1, -0.5, 2, -1.5, 0.8, -0.3}
	old := []float64{0, 0, 0, -0.2, -2.5, -1.2}
	ret := []float64{0.5, -1, 0.2, 1.5, 0, -0.4}
	lo, hi := make([]float64, rows), make([]float64, rows)
	for i := range lo {
		lo[i], hi[i] = 0.8, 1.2
	}
	col := func(v []float64) tensor.Tensor { return tensor.New(tensor.WithShape(rows, 1), tensor.WithBacking(v)) }
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	c.x, c.mask, c.onehot, c.adv, c.old, c.ret, c.lo, c.hi = x, mask, onehot, adv, old, ret, lo, hi
	must(gr.set(gr.x, tensor.New(tensor.WithShape(rows, obs), tensor.WithBacking(x))))
	must(gr.set(gr.mask, tensor.New(tensor.WithShape(rows, acts), tensor.WithBacking(mask))))
	must(gr.set(gr.onehot, tensor.New(tensor.WithShape(rows, acts), tensor.WithBacking(onehot))))
	must(gr.set(gr.adv, col(adv)))
	must(gr.set(gr.oldLP, col(old)))
	must(gr.set(gr.ret, col(ret)))
	must(gr.set(gr.lo, col(lo)))
	must(gr.set(gr.hi, col(hi)))
	return c
}

func (c *gradCase) loss(t *testing.T) float64 {
	t.Helper()
	if err := c.gr.run(); err != nil {
		t.Fatal(err)
	}
	return c.gr.loss.Value().Data().(float64)
}

// TestLossGradientsMatchFiniteDifferences checks every weight's gradient of
// the whole loss (policy, value and entropy parts, with masks) against
// central finite differences, for both losses.
func TestLossGradientsMatchFiniteDifferences(t *testing.T) {
	for _, kind := range []Loss{PPOLoss, CloneLoss} {
		checkFiniteDifferences(t, newGradCase(t, kind), kind, 1)
	}
}

// checkFiniteDifferences checks the gradient of every stride-th weight of
// c's loss against central finite differences.
func checkFiniteDifferences(t *testing.T, c *gradCase, kind Loss, stride int) {
	t.Helper()
	if err := c.gr.zeroGrads(); err != nil {
		t.Fatal(err)
	}
	base := c.loss(t)
	if math.IsNaN(base) || math.IsInf(base, 0) {
		t.Fatalf("loss %v", base)
	}
	grads, err := c.gr.grads()
	if err != nil {
		t.Fatal(err)
	}
	analytic := make([][]float64, len(grads))
	for i, g := range grads {
		analytic[i] = append([]float64(nil), g.([]float64)...)
	}
	const eps = 1e-6
	checked, nonzero := 0, 0
	for p, data := range c.wData {
		for j := 0; j < len(data); j += stride {
			orig := data[j]
			data[j] = orig + eps
			up := c.loss(t)
			data[j] = orig - eps
			down := c.loss(t)
			data[j] = orig
			num := (up - down) / (2 * eps)
			if diff := math.Abs(num - analytic[p][j]); diff > 1e-6+1e-4*math.Abs(num) {
				t.Fatalf("loss %d, parameter %d[%d]: analytic %.9g, finite difference %.9g", kind, p, j, analytic[p][j], num)
			}
			checked++
			if math.Abs(num) > 1e-6 {
				nonzero++
			}
		}
	}
	if checked < 50 || nonzero < checked/2 {
		t.Fatalf("only %d weights checked, %d of them with a gradient", checked, nonzero)
	}
}

// TestGradientsAccumulateUntilZeroed pins the gorgonia behaviour the
// trainer relies on: two runs without zeroing give twice the gradient.
func TestGradientsAccumulateUntilZeroed(t *testing.T) {
	c := newGradCase(t, PPOLoss)
	c.gr.zeroGrads()
	c.loss(t)
	g1, _ := c.gr.grads()
	first := append([]float64(nil), g1[0].([]float64)...)
	c.loss(t)
	g2, _ := c.gr.grads()
	for i, v := range g2[0].([]float64) {
		if math.Abs(v-2*first[i]) > 1e-9*(1+math.Abs(v)) {
			t.Fatalf("gradient %d: %v after two runs, %v after one", i, v, first[i])
		}
	}
	c.gr.zeroGrads()
	c.loss(t)
	g3, _ := c.gr.grads()
	for i, v := range g3[0].([]float64) {
		if math.Abs(v-first[i]) > 1e-12 {
			t.Fatalf("gradient %d after zeroing: %v, want %v", i, v, first[i])
		}
	}
}

// reference computes the loss of c's minibatch directly from its
// definition, in float64, without gorgonia: the network's forward pass, a
// softmax over the legal actions, the PPO surrogate or cross-entropy, the
// entropy and the value loss.
func (c *gradCase) reference(kind Loss, co coefs) (policy, value, entropy float64) {
	policy, value, entropy, _, _ = c.referenceAll(kind, co)
	return policy, value, entropy
}

// referenceAll is reference with PPO's diagnostics too: the mean of
// (ratio-1) - log ratio, and the share of rows whose ratio is outside
// their clip range.
func (c *gradCase) referenceAll(kind Loss, co coefs) (policy, value, entropy, approxKL, clipFrac float64) {
	rows, A := len(c.adv), c.spec.NumActions
	forward := c.forward
	if forward == nil {
		forward = c.mlpForward
	}
	for r := range rows {
		logits, v := forward(r)
		value += (v - c.ret[r]) * (v - c.ret[r]) / float64(rows)
		var legal []int
		chosen := map[int]bool{}
		for a := range A {
			if c.mask[r*A+a] == 0 {
				legal = append(legal, a)
			}
			if c.onehot[r*A+a] == 1 {
				chosen[a] = true
			}
		}
		var sum float64
		for _, a := range legal {
			sum += math.Exp(logits[a])
		}
		// The chosen action's log-probability; for a set of actions, the
		// log of their total probability.
		var pc, h0 float64
		for _, a := range legal {
			p := math.Exp(logits[a]) / sum
			h0 -= p * math.Log(p)
			if chosen[a] {
				pc += p
			}
		}
		lpc := math.Log(pc)
		entropy += h0 / float64(rows)
		switch kind {
		case PPOLoss:
			ratio := math.Exp(lpc - c.old[r])
			clipped := math.Min(math.Max(ratio, c.lo[r]), c.hi[r])
			policy -= math.Min(ratio*c.adv[r], clipped*c.adv[r]) / float64(rows)
			approxKL += (ratio - 1 - (lpc - c.old[r])) / float64(rows)
			if clipped != ratio {
				clipFrac += 1 / float64(rows)
			}
		case CloneLoss:
			policy -= lpc / float64(rows)
		}
	}
	return policy, value, entropy, approxKL, clipFrac
}

// TestLossMatchesItsDefinition checks the loss's parts, as the graph
// computes them, against reference: the finite-difference test only shows
// the gradients are those of the loss the graph computes.
func TestLossMatchesItsDefinition(t *testing.T) {
	co := coefs{Value: 0.7, Entropy: 0.05}
	for _, kind := range []Loss{PPOLoss, CloneLoss} {
		c := newGradCase(t, kind)
		got := c.loss(t)
		p, v, e, kl, clip := c.referenceAll(kind, co)
		want := p + co.Value*v - co.Entropy*e
		close := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*(1+math.Abs(b)) }
		if !close(c.gr.head.policy, p) || !close(c.gr.head.entropy, e) || !close(got, want) {
			t.Fatalf("loss %d: policy %v entropy %v loss %v; by definition %v, %v, %v",
				kind, c.gr.head.policy, c.gr.head.entropy, got, p, e, want)
		}
		if e <= 0 || p == 0 {
			t.Fatalf("loss %d: a degenerate case (policy %v, entropy %v) proves little", kind, p, e)
		}
		if !close(c.gr.head.approxKL, kl) || !close(c.gr.head.clipFrac, clip) {
			t.Fatalf("loss %d: approx KL %v, clip fraction %v; by definition %v, %v", kind, c.gr.head.approxKL, c.gr.head.clipFrac, kl, clip)
		}
		if kind == PPOLoss && (kl <= 0 || clip <= 0 || clip >= 1) {
			t.Fatalf("PPO: a degenerate case (approx KL %v, clip fraction %v) proves little", kl, clip)
		}
	}
}

// TestLossIgnoresACommonLogitShift: adding the same constant to every
// logit of a row changes no probability, so the loss must not change,
// even when the constant is far beyond what exp can take (a policy head
// whose logits drifted to ±1000). A softmax that does not subtract the
// row's maximum before exponentiating overflows to Inf or underflows to
// 0 there and returns NaN.
func TestLossIgnoresACommonLogitShift(t *testing.T) {
	for _, kind := range []Loss{PPOLoss, CloneLoss} {
		c := newGradCase(t, kind)
		base := c.loss(t)
		policy, entropy := c.gr.head.policy, c.gr.head.entropy
		bias := c.wData[2*len(c.spec.Hidden)+1] // the policy head's biases
		for _, shift := range []float64{1000, -1000} {
			for j := range bias {
				bias[j] += shift
			}
			got := c.loss(t)
			for j := range bias {
				bias[j] -= shift
			}
			close := func(a, b float64) bool { return math.Abs(a-b) <= 1e-6*(1+math.Abs(b)) }
			if !close(got, base) || !close(c.gr.head.policy, policy) || !close(c.gr.head.entropy, entropy) {
				t.Fatalf("loss %d, every logit %+g: loss %v, policy %v, entropy %v; want %v, %v, %v unshifted",
					kind, shift, got, c.gr.head.policy, c.gr.head.entropy, base, policy, entropy)
			}
		}
	}
}

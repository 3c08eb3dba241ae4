package train

import (
	"math"
	"testing"

	"github.com/spiderenv/spider/agents/nn"
	"github.com/spiderenv/spider/internal/rng"
)

// TestLearnerSolvesMaskedBandit trains on a contextual bandit with masked
// actions: in context c the right action is c mod 6, always legal, among
// random other legal ones. A broken loss, mask or optimiser fails it.
func TestLearnerSolvesMaskedBandit(t *testing.T) {
	const contexts, acts, rows = 8, 6, 64
	spec := nn.Spec{ObsLen: contexts, NumActions: acts, Hidden: []int{16}}
	net, err := nn.New(spec, 3)
	if err != nil {
		t.Fatal(err)
	}
	l, err := newLearner(net, newAdam(net.Params(), 0.01, 1), rows, PPOLoss, coefs{Value: 0.5, Entropy: 0.001}, 0.2)
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	g := rng.New(5)
	sc := net.NewScratch(1)
	logits, value := make([]float32, acts), make([]float32, 1)
	draw := func() ([]float32, []uint8, int) {
		c := g.IntN(contexts)
		obs := make([]float32, contexts)
		obs[c] = 1
		mask := make([]uint8, acts)
		for a := range mask {
			if g.IntN(2) == 0 {
				mask[a] = 1
			}
		}
		mask[c%acts] = 1
		return obs, mask, c % acts
	}
	accuracy := func() float64 {
		right := 0
		for range 400 {
			obs, mask, want := draw()
			net.Forward(logits, value, obs, 1, sc)
			if a, _ := nn.Best(logits, mask); int(a) == want {
				right++
			}
		}
		return float64(right) / 400
	}
	before := accuracy()
	for range 300 {
		for r := range rows {
			obs, mask, want := draw()
			net.Forward(logits, value, obs, 1, sc)
			a, lp := sampleMasked(&g, logits, mask)
			reward := float32(0)
			if a == want {
				reward = 1
			}
			l.setRow(r, obs, mask, a)
			l.oldLP[r], l.adv[r], l.ret[r] = lp, reward-value[0], reward
		}
		ls, _, err := l.update(0)
		if err != nil {
			t.Fatal(err)
		}
		if math.IsNaN(ls.Policy) || math.IsNaN(ls.Value) {
			t.Fatalf("loss is NaN: %+v", ls)
		}
	}
	if after := accuracy(); after < 0.95 {
		t.Fatalf("accuracy %.2f after training (%.2f before); want at least 0.95", after, before)
	}
}

// BenchmarkLearnerUpdate times one PPO update on a minibatch of the default
// size, of the default network (mlp: the size the README's training
// figures use) and of a columns network of the widths spider train gives it
// by default (columns), whatever BLAS the build linked (see nn.BLAS).
func BenchmarkLearnerUpdate(b *testing.B) {
	c := DefaultConfig()
	b.Run("mlp", func(b *testing.B) { benchLearner(b, c) })
	c.Arch, c.Hidden, c.Column, c.Pair = nn.Columns, []int{256}, 128, 32
	b.Run("columns", func(b *testing.B) { benchLearner(b, c) })
}

func benchLearner(b *testing.B, c Config) {
	spec, err := c.Spec()
	if err != nil {
		b.Fatal(err)
	}
	net, err := nn.New(spec, 1)
	if err != nil {
		b.Fatal(err)
	}
	// A full minibatch, as the rows/s below count and the docs quote.
	l, err := newLearner(net, newAdam(net.Params(), c.LR, c.MaxNorm), c.Minibatch, PPOLoss,
		coefs{Value: c.ValueCoef, Entropy: c.EntCoef}, c.Clip)
	if err != nil {
		b.Fatal(err)
	}
	defer l.close()
	g := rng.New(1)
	D, A := net.Spec.ObsLen, net.Spec.NumActions
	obs, mask := make([]float32, D), make([]uint8, A)
	for r := range c.Minibatch {
		for i := range obs {
			obs[i] = float32(g.IntN(2))
		}
		for i := range mask {
			mask[i] = uint8(g.IntN(8) / 7)
		}
		a := g.IntN(A)
		mask[a] = 1
		l.setRow(r, obs, mask, a)
		l.oldLP[r], l.adv[r], l.ret[r] = -3, float32(g.IntN(3)-1), 0.5
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, _, err := l.update(0); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*c.Minibatch)/b.Elapsed().Seconds(), "rows/s")
}

// TestShardedUpdateMatchesOneGraph fills the same odd-sized minibatch into
// a learner with one graph and one with two, and checks that one update
// gives the same losses and the same weights: the shards' gradients must be
// weighted by their rows, and the two graphs must not disturb each other.
func TestShardedUpdateMatchesOneGraph(t *testing.T) {
	spec := nn.Spec{ObsLen: 12, NumActions: 9, Hidden: []int{10, 7}}
	const rows = 13
	run := func(n int) (losses, *nn.Net) {
		defer func(old int) { shards = old }(shards)
		shards = n
		net, err := nn.New(spec, 4)
		if err != nil {
			t.Fatal(err)
		}
		l, err := newLearner(net, newAdam(net.Params(), 0.01, 0.5), rows, PPOLoss, coefs{Value: 0.5, Entropy: 0.01}, 0.2)
		if err != nil {
			t.Fatal(err)
		}
		defer l.close()
		if len(l.parts) != n {
			t.Fatalf("%d graphs, want %d", len(l.parts), n)
		}
		g := rng.New(9)
		obs, mask := make([]float32, spec.ObsLen), make([]uint8, spec.NumActions)
		for r := range rows {
			for i := range obs {
				obs[i] = float32(g.IntN(5)) / 4
			}
			for i := range mask {
				mask[i] = uint8(g.IntN(2))
			}
			a := g.IntN(spec.NumActions)
			mask[a] = 1
			l.setRow(r, obs, mask, a)
			l.oldLP[r], l.adv[r], l.ret[r] = -1.5, float32(g.IntN(5)-2), float32(g.IntN(3))
		}
		ls, _, err := l.update(0)
		if err != nil {
			t.Fatal(err)
		}
		return ls, net
	}
	one, netOne := run(1)
	two, netTwo := run(2)
	close := func(a, b float64) bool { return math.Abs(a-b) <= 1e-5*(1+math.Abs(a)) }
	if !close(one.Policy, two.Policy) || !close(one.Value, two.Value) || !close(one.Entropy, two.Entropy) || !close(one.GradNorm, two.GradNorm) {
		t.Fatalf("one graph %+v, two graphs %+v", one, two)
	}
	for i, p := range netOne.Params() {
		q := netTwo.Params()[i]
		for j := range p {
			if !close(float64(p[j]), float64(q[j])) {
				t.Fatalf("parameter %d[%d]: %v with one graph, %v with two", i, j, p[j], q[j])
			}
		}
	}
}

// TestLearnerMasksIllegalActions: the learner's loss sees only the legal
// actions of each row. With a policy head of zeros (every logit equal)
// the policy is uniform over a row's legal actions, so the mean entropy
// an update reports is the mean of log(legal actions), not log(A): a mask
// row left at 0 for the illegal actions would spread the policy over all
// of them, and the learner would push probability to moves the game
// refuses.
func TestLearnerMasksIllegalActions(t *testing.T) {
	const acts, rows = 6, 4
	spec := nn.Spec{ObsLen: 3, NumActions: acts, Hidden: []int{5}}
	net, err := nn.New(spec, 2)
	if err != nil {
		t.Fatal(err)
	}
	clear(net.W[1]) // the policy head
	clear(net.B[1])
	l, err := newLearner(net, newAdam(net.Params(), 1e-3, 1), rows, CloneLoss, coefs{Value: 0.5}, 0.2)
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	legal := [rows][]int{{0}, {1, 4}, {2, 3, 5}, {0, 1, 2, 3, 4, 5}}
	want := 0.0
	for r, ls := range legal {
		mask := make([]uint8, acts)
		for _, a := range ls {
			mask[a] = 1
		}
		l.setRow(r, []float32{1, float32(r), -1}, mask, ls[0])
		want += math.Log(float64(len(ls))) / rows
	}
	ls, _, err := l.update(0)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(ls.Entropy-want) > 1e-5 {
		t.Fatalf("mean entropy %v over rows of 1, 2, 3 and 6 legal actions of 6; want %v (uniform over the legal ones)", ls.Entropy, want)
	}
}

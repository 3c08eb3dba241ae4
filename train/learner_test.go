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
		ls, err := l.update()
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

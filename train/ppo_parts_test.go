package train

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/spiderenv/spider/agents/nn"
	"github.com/spiderenv/spider/env"
	"github.com/spiderenv/spider/internal/rng"
)

// TestGAEMatchesItsDefinition checks gae against GAE written out as a sum:
// A_t = sum_l (gamma*lambda)^l delta_{t+l}, cut at the episode's end, with
// delta_t = r_t + gamma*V(next) - V_t, V(next) the bootstrap value at a
// truncation, 0 at a termination, the next step's value inside the
// rollout and last's after it; and ret = A + V.
func TestGAEMatchesItsDefinition(t *testing.T) {
	const n, T = 3, 6
	c := DefaultConfig()
	c.Games, c.Rollout, c.Gamma, c.Lambda = n, T, 0.9, 0.7
	tr := &Trainer{Config: c}
	tr.rewards, tr.values, tr.boot = make([]float32, n*T), make([]float32, n*T), make([]float32, n*T)
	tr.dones, tr.adv, tr.ret = make([]bool, n*T), make([]float32, n*T), make([]float32, n*T)
	g := rng.New(3)
	for k := range n * T {
		tr.rewards[k] = float32(g.IntN(7)) - 3
		tr.values[k] = float32(g.IntN(11))/5 - 1
	}
	// game 0: truncated at step 2 (bootstrap 1.5); game 1: terminated at
	// step 1 and truncated at step 4; game 2: never ends.
	tr.dones[2*n+0], tr.boot[2*n+0] = true, 1.5
	tr.dones[1*n+1] = true
	tr.dones[4*n+1], tr.boot[4*n+1] = true, -0.75
	last := []float32{0.4, -0.3, 2}
	tr.gae(last)
	gm, lam := c.Gamma, c.Lambda
	for i := range n {
		for s := range T {
			want := 0.0
			for l := s; l < T; l++ {
				k := l*n + i
				var next float64
				switch {
				case tr.dones[k]:
					next = float64(tr.boot[k])
				case l == T-1:
					next = float64(last[i])
				default:
					next = float64(tr.values[k+n])
				}
				delta := float64(tr.rewards[k]) + gm*next - float64(tr.values[k])
				want += math.Pow(gm*lam, float64(l-s)) * delta
				if tr.dones[k] {
					break
				}
			}
			k := s*n + i
			if math.Abs(float64(tr.adv[k])-want) > 1e-4 {
				t.Errorf("game %d step %d: advantage %v, want %v", i, s, tr.adv[k], want)
			}
			if r := want + float64(tr.values[k]); math.Abs(float64(tr.ret[k])-r) > 1e-4 {
				t.Errorf("game %d step %d: return %v, want %v", i, s, tr.ret[k], r)
			}
		}
	}
}

// TestRolloutRecordsWhatTheGamesDid replays one iteration's actions on a
// batch of its own and checks what the rollout kept: rewards scaled by
// RewardScale, a step done where a game terminated or was truncated, and
// the bootstrap value of a truncated step the value (by the network before
// the iteration learned) of the position it was cut at, 0 otherwise. It
// then checks that the last minibatch's advantages were normalised over
// the whole rollout.
func TestRolloutRecordsWhatTheGamesDid(t *testing.T) {
	c := tinyConfig()
	c.Game.MaxSteps, c.ValEvery, c.CloneGames, c.RewardScale = 5, 0, 0, 0.25
	tr, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	before, err := nn.New(tr.Net.Spec, 1)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range tr.Net.Params() {
		copy(before.Params()[i], p)
	}
	if _, err := tr.iteration(context.Background()); err != nil {
		t.Fatal(err)
	}
	n, T, D, A := c.Games, c.Rollout, tr.Net.Spec.ObsLen, env.NumActions
	b, err := env.NewBatch(tr.rules, env.BatchOptions{N: n, Autoreset: env.SameStep})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	b.Reset(c.Seed)
	sc := before.NewScratch(1)
	logits, v := make([]float32, A), make([]float32, 1)
	acts := make([]env.Action, n)
	truncated, terminated := 0, 0
	for s := range T {
		for i := range n {
			acts[i] = env.Action(tr.actions[s*n+i])
		}
		if err := b.Step(acts); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			k := s*n + i
			if want := b.Rewards[i] * float32(c.RewardScale); tr.rewards[k] != want {
				t.Fatalf("step %d game %d: reward %v, want %v", s, i, tr.rewards[k], want)
			}
			if want := b.Terminated[i] || b.Truncated[i]; tr.dones[k] != want {
				t.Fatalf("step %d game %d: done %v, want %v (terminated %v truncated %v)", s, i, tr.dones[k], want, b.Terminated[i], b.Truncated[i])
			}
			want := float32(0)
			if b.Truncated[i] {
				truncated++
				before.Forward(logits, v, b.FinalObsFloat32[i*D:(i+1)*D], 1, sc)
				want = v[0]
			} else if b.Terminated[i] {
				terminated++
			}
			if math.Abs(float64(tr.boot[k]-want)) > 1e-4 {
				t.Fatalf("step %d game %d: bootstrap %v, want %v", s, i, tr.boot[k], want)
			}
		}
	}
	if truncated == 0 {
		t.Fatal("no game was truncated: the test saw nothing")
	}
	mean, std := 0.0, 0.0
	for _, a := range tr.adv {
		mean += float64(a)
	}
	mean /= float64(len(tr.adv))
	for _, a := range tr.adv {
		std += (float64(a) - mean) * (float64(a) - mean)
	}
	std = math.Sqrt(std / float64(len(tr.adv)))
	l := tr.learner
	for r := range c.Minibatch {
		found := false
		for k := range tr.adv {
			if tr.logp[k] == l.oldLP[r] && tr.ret[k] == l.ret[r] {
				found = true
				if want := (float64(tr.adv[k]) - mean) / std; math.Abs(float64(l.adv[r])-want) > 1e-3 {
					t.Fatalf("minibatch row %d: advantage %v, want %v normalised to %v", r, l.adv[r], tr.adv[k], want)
				}
				break
			}
		}
		if !found {
			t.Fatalf("minibatch row %d matches no rollout step", r)
		}
	}
}

// TestSampleMaskedLogProb checks that the log-probability sampleMasked
// returns is that of the action it drew under the softmax over the legal
// actions, and that it draws only legal actions, at their probabilities.
func TestSampleMaskedLogProb(t *testing.T) {
	logits := []float32{3, -1, 0.5, 2, 7, 0}
	mask := []uint8{1, 0, 1, 1, 0, 1}
	var sum float64
	for i, m := range mask {
		if m != 0 {
			sum += math.Exp(float64(logits[i]))
		}
	}
	g := rng.New(9)
	counts := make([]int, len(mask))
	const draws = 20000
	for range draws {
		a, lp := sampleMasked(&g, logits, mask)
		if mask[a] == 0 {
			t.Fatalf("drew illegal action %d", a)
		}
		want := float64(logits[a]) - math.Log(sum)
		if math.Abs(float64(lp)-want) > 1e-5 {
			t.Fatalf("action %d: log-probability %v, want %v", a, lp, want)
		}
		counts[a]++
	}
	for i, m := range mask {
		if m == 0 {
			continue
		}
		p := math.Exp(float64(logits[i])) / sum
		if got := float64(counts[i]) / draws; math.Abs(got-p) > 4*math.Sqrt(p*(1-p)/draws)+1e-3 {
			t.Errorf("action %d drawn %.4f of the time, want %.4f", i, got, p)
		}
	}
}

// TestSampleMaskedIsInverseCDF replays sampleMasked's generator: each
// draw must be the legal action at which the softmax's cumulative
// probability first passes the generator's next uniform number, the
// exact inverse of the distribution (the frequency test above cannot see
// a boundary moved by a thousandth).
func TestSampleMaskedIsInverseCDF(t *testing.T) {
	logits := make([]float32, 100)
	mask := make([]uint8, 100)
	for i := range logits {
		logits[i], mask[i] = float32(i%7)/4, uint8(i%3%2)
	}
	var p []float64
	var legal []int
	sum := 0.0
	for i, m := range mask {
		if m != 0 {
			legal = append(legal, i)
			p = append(p, math.Exp(float64(logits[i])))
			sum += p[len(p)-1]
		}
	}
	g, h := rng.New(3), rng.New(3)
	for k := range 20000 {
		a, _ := sampleMasked(&g, logits, mask)
		u, want := h.Float64()*sum, legal[len(legal)-1]
		for j, q := range p {
			if u -= q; u < 0 {
				want = legal[j]
				break
			}
		}
		if a != want {
			t.Fatalf("draw %d: action %d; the inverse of the distribution at the generator's number is %d", k, a, want)
		}
	}
}

// ratioLearner returns a PPO learner (clip 0.2, value and entropy terms
// off) of a small network, its minibatch of 8 rows filled so that every
// row's probability ratio is ratio and its advantage adv.
func ratioLearner(t *testing.T, ratio, adv float64) (*learner, *nn.Net) {
	t.Helper()
	const obs, acts, rows = 4, 3, 8
	net, err := nn.New(nn.Spec{ObsLen: obs, NumActions: acts, Hidden: []int{5}}, 4)
	if err != nil {
		t.Fatal(err)
	}
	l, err := newLearner(net, newAdam(net.Params(), 0.01, 0), rows, PPOLoss, coefs{}, 0.2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.close)
	sc := net.NewScratch(1)
	logits, value := make([]float32, acts), make([]float32, 1)
	g := rng.New(2)
	for r := range rows {
		x := make([]float32, obs)
		for i := range x {
			x[i] = float32(g.IntN(3)) - 1
		}
		a := r % acts
		net.Forward(logits, value, x, 1, sc)
		mx := max(logits[0], logits[1], logits[2])
		s := 0.0
		for _, z := range logits {
			s += math.Exp(float64(z - mx))
		}
		lp := float64(logits[a]-mx) - math.Log(s)
		l.setRow(r, x, []uint8{1, 1, 1}, a)
		l.oldLP[r], l.adv[r], l.ret[r] = float32(lp-math.Log(ratio)), float32(adv), 0
	}
	return l, net
}

// TestClipRangeIsTheConfigs checks PPO's clip at the learner's clip: with
// the value and entropy terms off, a minibatch whose every ratio lies
// beyond 1+clip with a positive advantage (or below 1-clip with a
// negative one) has no gradient and leaves the weights, while ratios just
// inside the range move them.
func TestClipRangeIsTheConfigs(t *testing.T) {
	for _, tc := range []struct {
		ratio, adv float64
		moves      bool
	}{{1.25, 1, false}, {1.15, 1, true}, {0.75, -1, false}, {0.85, -1, true}} {
		l, net := ratioLearner(t, tc.ratio, tc.adv)
		w0 := weights(net)
		if _, _, err := l.update(0); err != nil {
			t.Fatal(err)
		}
		// The value head's weights move with the value term off only if
		// the policy's gradient reaches the shared layers; compare all.
		if changed := !slices.Equal(w0, weights(net)); changed != tc.moves {
			t.Errorf("ratio %v, advantage %v: weights changed %v, want %v", tc.ratio, tc.adv, changed, tc.moves)
		}
	}
}

// TestUpdateStopsAtTheKLBound checks update's KL bound: a minibatch whose
// every probability ratio is 1.15 has an approximate KL of 0.15 - ln 1.15
// (0.0102); under a bound above it the update is applied, under one below
// it the update is refused and the weights stay, and 0 is no bound.
func TestUpdateStopsAtTheKLBound(t *testing.T) {
	const ratio = 1.15
	wantKL := (ratio - 1) - math.Log(ratio)
	for _, tc := range []struct {
		maxKL   float64
		applied bool
	}{{0.02, true}, {0.005, false}, {0, true}} {
		l, net := ratioLearner(t, ratio, 1)
		w0 := weights(net)
		ls, applied, err := l.update(tc.maxKL)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(ls.ApproxKL-wantKL) > 1e-4 {
			t.Errorf("approximate KL %v, want %v", ls.ApproxKL, wantKL)
		}
		if changed := !slices.Equal(w0, weights(net)); applied != tc.applied || changed != tc.applied {
			t.Errorf("bound %v: applied %v, weights changed %v; want %v", tc.maxKL, applied, changed, tc.applied)
		}
	}
}

// TestAdamFirstStepIsTheLearningRate: bias-corrected Adam moves every
// weight by the learning rate against its gradient's sign on its first
// step, whatever the gradient's size (under the norm clip).
func TestAdamFirstStepIsTheLearningRate(t *testing.T) {
	p := [][]float32{{1, 1, 1}}
	a := newAdam(p, 0.01, 0)
	a.step(p, [][]float32{{0.5, -2, 1e-3}}, gradNorm([][]float32{{0.5, -2, 1e-3}}))
	for i, want := range []float32{0.99, 1.01, 0.99} {
		if math.Abs(float64(p[0][i]-want)) > 1e-4 {
			t.Fatalf("weight %d: %v after one step, want %v", i, p[0][i], want)
		}
	}
}

// ppoOnly is a trainer of tinyConfig that goes straight to PPO: no
// cloning, no validation; closed when the test ends.
func ppoOnly(t *testing.T) *Trainer {
	t.Helper()
	c := tinyConfig()
	c.ValEvery, c.CloneGames = 0, 0
	tr, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.Close)
	return tr
}

// TestEpochsStopAtTheKLBound: a minibatch over the KL bound ends every
// pass left, as Stable-Baselines3 stops its epochs (not only the current
// one): no later row is filled, and its losses are summed but its update is
// not counted. The first minibatch is learnt from whatever its KL.
func TestEpochsStopAtTheKLBound(t *testing.T) {
	tr := ppoOnly(t)
	l := tinyLearner(t, 4)
	fills := 0
	sum, updates, err := tr.epochs(context.Background(), l, 16, 4, 3, passOptions{maxKL: 1e-9}, func(r, idx int) {
		fills++
		l.setRow(r, []float32{0, 1}, []uint8{1, 1}, idx%2)
		// Far from the network's own probabilities: every minibatch's KL
		// is over the bound.
		l.oldLP[r], l.adv[r], l.ret[r] = float32(math.Log(0.05)), 1, 0
	})
	if err != nil {
		t.Fatal(err)
	}
	if fills != 8 || updates != 1 || sum.measured != 2 || !(sum.ApproxKL > 2e-9) {
		t.Fatalf("%d rows filled, %d updates, %d minibatches summed (KL %v); want 8 (two minibatches of 4), 1 and 2",
			fills, updates, sum.measured, sum.ApproxKL)
	}
}

// TestEpochsBeforePass: the hook runs once before each pass, so an
// imitation phase bootstraps each pass from the network as it stands.
func TestEpochsBeforePass(t *testing.T) {
	tr := ppoOnly(t)
	l := tinyLearner(t, 4)
	fills := 0
	var at []int
	_, _, err := tr.epochs(context.Background(), l, 16, 4, 3, passOptions{beforePass: func() { at = append(at, fills) }}, func(r, idx int) {
		fills++
		l.setRow(r, []float32{0, 1}, []uint8{1, 1}, 0)
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(at, []int{0, 16, 32}) {
		t.Fatalf("the hook ran after %v rows; want before each pass of 16", at)
	}
}

// TestEpochsShuffleEveryPass: each pass visits every row once, in an
// order of its own.
func TestEpochsShuffleEveryPass(t *testing.T) {
	tr := ppoOnly(t)
	l := tinyLearner(t, 4)
	var order []int
	_, _, err := tr.epochs(context.Background(), l, 16, 4, 3, passOptions{}, func(r, idx int) {
		order = append(order, idx)
		l.setRow(r, []float32{0, 1}, []uint8{1, 1}, 0)
	})
	if err != nil {
		t.Fatal(err)
	}
	sorted := 0
	for pass := range 3 {
		seen := map[int]bool{}
		inOrder := true
		for i, idx := range order[pass*16 : (pass+1)*16] {
			seen[idx] = true
			inOrder = inOrder && idx == i
		}
		if len(seen) != 16 {
			t.Fatalf("pass %d visits %d rows of 16", pass, len(seen))
		}
		if inOrder {
			sorted++
		}
	}
	if sorted > 0 || slices.Equal(order[:16], order[16:32]) {
		t.Fatalf("passes not shuffled: %v", order)
	}
}

// TestRolloutCountsOnlyWinsAsWins: a game the rules end lost counts as
// finished, not as won, in the iteration's win rate. Every game starts
// where its one legal move leaves no other (the stock dealt): lost at
// the first step.
func TestRolloutCountsOnlyWinsAsWins(t *testing.T) {
	tr := ppoOnly(t)
	c := tr.Config
	snap, err := tr.batch.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	for i := range snap.States {
		snap.States[i] = "1: | 9s\n2: 3s | 8s\n3: | Ks\n4: | Ks\n5: | Ks\n6: | Ks\n7: | Ks\n8: | Ks\n9: | Ks\n10: | Ks\n"
	}
	if err := tr.batch.Restore(snap); err != nil {
		t.Fatal(err)
	}
	m, err := tr.iteration(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if m.Finished < c.Games || m.WinRate != 0 {
		t.Fatalf("%d games finished, win rate %v; want at least %d lost, none won", m.Finished, m.WinRate, c.Games)
	}
}

// TestEpochsShuffleIsUniform: every order of the rows can come out of a
// pass, about equally often. A shuffle that draws the swap from the rows
// below i only (j < i, Sattolo's algorithm) still visits every row once a
// pass, but only in cyclic orders: from one pass to the next the
// permutation's parity never changes, so half the orders of three rows
// never appear and the minibatches keep a pattern.
func TestEpochsShuffleIsUniform(t *testing.T) {
	tr := ppoOnly(t)
	l := tinyLearner(t, 1)
	const passes = 600
	var order []int
	_, _, err := tr.epochs(context.Background(), l, 3, 1, passes, passOptions{}, func(r, idx int) {
		order = append(order, idx)
		l.setRow(r, []float32{0, 1}, []uint8{1, 1}, 0)
	})
	if err != nil {
		t.Fatal(err)
	}
	counts := map[[3]int]int{}
	for p := range passes {
		counts[[3]int(order[3*p:3*p+3])]++
	}
	if len(counts) != 6 {
		t.Fatalf("%d passes over 3 rows gave %d different orders, want all 6: %v", passes, len(counts), counts)
	}
	for o, n := range counts {
		if n < passes/6/2 {
			t.Fatalf("order %v came %d times in %d passes, want about %d: %v", o, n, passes, passes/6, counts)
		}
	}
}

// TestAdamClipsTheGradientNorm: a gradient whose norm (over every array
// together) is above MaxNorm is scaled down to it before Adam sees it, one
// below is not. Adam's first step is the learning rate whatever the scale,
// so the clip shows in the second: two steps of the same clipped gradient
// move each weight by exactly twice the rate, while the raw gradient, 100
// times the second, would leave the second step at about 0.68 of it.
func TestAdamClipsTheGradientNorm(t *testing.T) {
	const lr = 0.01
	p := [][]float32{{1}, {1}}
	a := newAdam(p, lr, 1)
	for _, g := range [][][]float32{{{60}, {80}}, {{0.6}, {0.8}}} {
		a.step(p, g, gradNorm(g))
	}
	for i := range p {
		if want := float32(1 - 2*lr); math.Abs(float64(p[i][0]-want)) > 1e-5 {
			t.Fatalf("weight %d: %v after a gradient of norm 100 clipped to 1 and one of norm 1, want %v", i, p[i][0], want)
		}
	}
}

// tinyLearner returns a learner of a two-input network for tests of
// the passes over a rollout, with minibatches of rows rows; it is closed
// when the test ends.
func tinyLearner(t *testing.T, rows int) *learner {
	t.Helper()
	net, _ := nn.New(nn.Spec{ObsLen: 2, NumActions: 2, Hidden: []int{2}}, 1)
	l, err := newLearner(net, newAdam(net.Params(), 1e-3, 1), rows, PPOLoss, coefs{}, 0.2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.close)
	return l
}

// TestKLTermIsNeverNegative: each sample's approximate KL is at least 0,
// near a ratio of 1 too, where exp(x)-1-x came out negative.
func TestKLTermIsNeverNegative(t *testing.T) {
	for _, x := range []float64{0, 1e-17, -1e-17, 1e-12, -1e-12, 3e-9, -3e-9, 1e-5, -1e-5, 0.5, -0.5, 5, -5} {
		if kl := klTerm(x); !(kl >= 0) {
			t.Errorf("klTerm(%g) = %g", x, kl)
		}
	}
	if kl, want := klTerm(0.5), math.Exp(0.5)-1-0.5; math.Abs(kl-want) > 1e-15 {
		t.Errorf("klTerm(0.5) = %v, want %v", kl, want)
	}
}

// TestPassUpdatesDoesNotWrap: the most passes over the most samples is
// 2^36 updates, past a 32-bit int, where it wrapped to 0 (and a decayed
// learning rate divided by it); it is clamped to the int's range instead.
func TestPassUpdatesDoesNotWrap(t *testing.T) {
	if got, want := passUpdates(1<<20, 1, maxEpochs), int(min(int64(1)<<36, math.MaxInt)); got != want || got <= 0 {
		t.Errorf("passUpdates(2^20, 1, %d) = %d, want %d", maxEpochs, got, want)
	}
	if got := passUpdates(100, 32, 3); got != 9 {
		t.Errorf("passUpdates(100, 32, 3) = %d, want 9", got)
	}
}

package train

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/spiderenv/spider/env"
)

// iteration collects one rollout and learns from it. An ended ctx
// abandons it, between two steps of the rollout or two minibatches.
func (t *Trainer) iteration(ctx context.Context) (Metrics, error) {
	c := t.Config
	start := time.Now()
	n, T, D, A := c.Games, c.Rollout, t.Net.Spec.ObsLen, env.NumActions
	b := t.batch
	var envT, actT time.Duration
	var finished int
	var sumRet, sumRuns float64
	var wins int
	for s := range T {
		if err := ctx.Err(); err != nil {
			return Metrics{}, err
		}
		row := s * n
		t0 := time.Now()
		copy(t.obs[row*D:(row+n)*D], b.ObsFloat32)
		copy(t.masks[row*A:(row+n)*A], b.Masks)
		t.Net.Forward(t.logits, t.vals, b.ObsFloat32, n, t.sc)
		for i := range n {
			a, lp := sampleMasked(&t.g, t.logits[i*A:(i+1)*A], b.Masks[i*A:(i+1)*A])
			t.acts[i] = env.Action(a)
			t.actions[row+i], t.logp[row+i], t.values[row+i] = int32(a), lp, t.vals[i]
		}
		t1 := time.Now()
		if err := b.Step(t.acts); err != nil {
			return Metrics{}, fmt.Errorf("train: %w", err)
		}
		t2 := time.Now()
		// A truncated game is cut by the step limit, not ended by the
		// rules: its return continues past the cut, estimated by the value
		// of the position it was cut at (SameStep keeps it in Final).
		k := 0
		for i := range n {
			t.rewards[row+i] = b.Rewards[i] * float32(c.RewardScale)
			done := b.Terminated[i] || b.Truncated[i]
			t.dones[row+i], t.boot[row+i] = done, 0
			if b.Truncated[i] {
				copy(t.finalX[k*D:(k+1)*D], b.FinalObsFloat32[i*D:(i+1)*D])
				k++
			}
			if done {
				finished++
				// The score's change, not the sum of the rewards: with
				// reward shaping the two differ, and the metric is the score's.
				sumRet += float64(b.FinalScore[i] - env.StartScore)
				sumRuns += float64(b.EpisodeRuns[i])
				if b.EpisodeWon[i] {
					wins++
				}
			}
		}
		if k > 0 {
			t.Net.Forward(t.finalL, t.finalV, t.finalX, k, t.sc)
			k = 0
			for i := range n {
				if b.Truncated[i] {
					t.boot[row+i] = t.finalV[k]
					k++
				}
			}
		}
		actT += t1.Sub(t0) + time.Since(t2)
		envT += t2.Sub(t1)
	}
	t0 := time.Now()
	t.Net.Forward(t.logits, t.vals, b.ObsFloat32, n, t.sc)
	actT += time.Since(t0)
	t.gae(t.vals)
	t.steps += int64(n * T)
	t.eps += int64(finished)

	learnStart := time.Now()
	if t.learner == nil {
		l, err := newLearner(t.Net, t.opt, c.Minibatch, PPOLoss, coefs{Value: c.ValueCoef, Entropy: c.EntCoef}, c.Clip)
		if err != nil {
			return Metrics{}, err
		}
		t.learner = l
	}
	l := t.learner
	// Advantages are normalised over the whole rollout.
	mean, std := meanStd(t.adv)
	// Set from the iteration count each time, so that a resumed run
	// learns at the rate the uninterrupted one would.
	l.opt.LR = c.lrAt(t.iter)
	learn := passOptions{maxKL: 1.5 * c.TargetKL, progress: t.progress("ppo", passUpdates(n*T, c.Minibatch, c.Epochs))}
	sum, updates, err := t.epochs(ctx, l, n*T, c.Minibatch, c.Epochs, learn, func(r, idx int) {
		l.setRow(r, t.obs[idx*D:(idx+1)*D], t.masks[idx*A:(idx+1)*A], int(t.actions[idx]))
		l.adv[r] = (t.adv[idx] - mean) / std
		l.oldLP[r], l.ret[r] = t.logp[idx], t.ret[idx]
	})
	if errors.Is(err, ErrNotFinite) {
		return Metrics{}, fmt.Errorf("iteration %d: %w", t.iter+1, err)
	}
	if err != nil {
		return Metrics{}, err
	}
	learnT := time.Since(learnStart)
	mb := float64(sum.measured)
	t.iter++
	total := time.Since(start)
	t.elapsed += total.Seconds()
	m := Metrics{Iter: t.iter, Phase: "ppo", EnvSteps: t.steps, Episodes: t.eps, Finished: finished,
		// The means count a minibatch TargetKL refused, as SB3's logs do:
		// its approx_kl is what stopped the iteration.
		PolicyLoss: sum.Policy / mb, ValueLoss: sum.Value / mb, Entropy: sum.Entropy / mb,
		ApproxKL: sum.ApproxKL / mb, ClipFrac: sum.ClipFrac / mb, LR: l.opt.LR, Updates: updates,
		EnvStepsPerS: float64(n*T) / total.Seconds(), UpdatesPerS: float64(updates) / learnT.Seconds(),
		EnvSeconds: envT.Seconds(), ActSeconds: actT.Seconds(), LearnSeconds: learnT.Seconds(), ElapsedSecond: t.elapsed}
	if finished > 0 {
		m.MeanReturn, m.MeanRuns, m.WinRate = sumRet/float64(finished), sumRuns/float64(finished), float64(wins)/float64(finished)
	}
	return m, nil
}

// gae fills t.adv and t.ret from the rollout, with last the values of the
// positions after it.
func (t *Trainer) gae(last []float32) {
	c := t.Config
	n, T := c.Games, c.Rollout
	g, lam := float32(c.Gamma), float32(c.Lambda)
	for i := range n {
		var acc float32
		for s := T - 1; s >= 0; s-- {
			k := s*n + i
			var next float32
			if t.dones[k] {
				next, acc = t.boot[k], 0
			} else if s == T-1 {
				next = last[i]
			} else {
				next = t.values[k+n]
			}
			delta := t.rewards[k] + g*next - t.values[k]
			acc = delta + g*lam*acc
			t.adv[k] = acc
			t.ret[k] = acc + t.values[k]
		}
	}
}

func meanStd(v []float32) (float32, float32) {
	var s, ss float64
	for _, x := range v {
		s += float64(x)
	}
	m := s / float64(len(v))
	for _, x := range v {
		ss += (float64(x) - m) * (float64(x) - m)
	}
	return float32(m), float32(math.Sqrt(ss/float64(len(v))) + 1e-8)
}

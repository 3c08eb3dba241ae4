package train

import (
	"context"
	"time"

	"github.com/spiderenv/spider/agents"
	"github.com/spiderenv/spider/env"
	"github.com/spiderenv/spider/internal/rng"
)

// clone is the warm start (behaviour cloning): the teacher plays
// CloneGames games through agents.PlayVisit, and the network imitates its
// moves (its value head learns their discounted returns).
func (t *Trainer) clone(ctx context.Context) (Metrics, error) {
	c := t.Config
	start := time.Now()
	type sample struct {
		s   env.State
		a   env.Action
		ret float32
	}
	teacher, err := agents.New(c.teacher())
	if err != nil {
		return Metrics{}, err
	}
	var data []sample
	var sumRet, sumRuns float64
	wins := 0
	for k := range c.CloneGames {
		if err := ctx.Err(); err != nil {
			return Metrics{}, err
		}
		first := len(data)
		res := agents.PlayVisit(t.rules, rng.Mix(c.Seed^0xc10e, uint64(k)), teacher(), func(s *env.State, _ []env.Action, d agents.Decision) {
			data = append(data, sample{s: *s, a: d.Action})
		})
		// Each move's reward is the score change it made: up to the next
		// position's score, and the final score after the last move.
		var ret float32
		next := res.Score
		for i := len(data) - 1; i >= first; i-- {
			reward := float32(float32(next-data[i].s.Score()) * float32(c.RewardScale))
			ret = reward + float32(c.Gamma)*ret
			data[i].ret = ret
			next = data[i].s.Score()
		}
		sumRet += float64(res.Score - env.StartScore)
		sumRuns += float64(res.Runs)
		if res.Won {
			wins++
		}
	}
	opt := newAdam(t.params(), c.CloneLR, c.MaxNorm)
	rows := min(c.Minibatch, len(data))
	l, err := newLearner(t.Net, opt, rows, CloneLoss, coefs{Value: c.ValueCoef}, c.Clip)
	if err != nil {
		return Metrics{}, err
	}
	defer l.close()
	D, A := t.Net.Spec.ObsLen, env.NumActions
	obs, mask := make([]float32, D), make([]uint8, A)
	learnStart := time.Now()
	sum, updates, err := t.epochs(ctx, l, len(data), rows, c.CloneEpochs, func(r, idx int) {
		d := &data[idx]
		d.s.ObserveFloat32(obs)
		d.s.Mask(mask)
		l.setRow(r, obs, mask, int(d.a))
		l.ret[r] = d.ret
	})
	if err != nil {
		return Metrics{}, err
	}
	total := time.Since(start)
	t.elapsed += total.Seconds()
	m := Metrics{Phase: "clone", Finished: c.CloneGames, MeanReturn: sumRet / float64(c.CloneGames),
		MeanRuns: sumRuns / float64(c.CloneGames), WinRate: float64(wins) / float64(c.CloneGames), ElapsedSecond: t.elapsed}
	if updates > 0 {
		m.PolicyLoss, m.ValueLoss, m.Entropy = sum.Policy/float64(updates), sum.Value/float64(updates), sum.Entropy/float64(updates)
		m.UpdatesPerS = float64(updates) / time.Since(learnStart).Seconds()
		m.LearnSeconds = time.Since(learnStart).Seconds()
	}
	return m, nil
}

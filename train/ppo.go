package train

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/spiderenv/spider/agents"
	"github.com/spiderenv/spider/env"
	"github.com/spiderenv/spider/internal/rng"
	"github.com/spiderenv/spider/train/nn"
)

// Config is a training run's configuration. Start from DefaultConfig and
// change what you need: every field must be set (New validates them).
type Config struct {
	RuleSet  string `msgpack:"rule_set"`
	Suits    int    `msgpack:"suits"`
	MaxSteps int    `msgpack:"max_steps"`
	Slots    int    `msgpack:"slots"` // face-up slots per column the network sees
	Hidden   []int  `msgpack:"hidden"`

	Games     int     `msgpack:"games"`     // games stepped together
	Rollout   int     `msgpack:"rollout"`   // steps per game per iteration
	Epochs    int     `msgpack:"epochs"`    // passes over each rollout
	Minibatch int     `msgpack:"minibatch"` // rows per update
	LR        float64 `msgpack:"lr"`
	Gamma     float64 `msgpack:"gamma"`
	Lambda    float64 `msgpack:"lambda"`
	Clip      float64 `msgpack:"clip"`
	ValueCoef float64 `msgpack:"value_coef"`
	EntCoef   float64 `msgpack:"entropy_coef"`
	MaxNorm   float64 `msgpack:"max_grad_norm"`
	// RewardScale multiplies the score change, so returns stay near 1.
	RewardScale float64 `msgpack:"reward_scale"`

	// CloneGames is the number of the teacher's games whose moves the
	// network imitates before PPO starts (0: no warm start); CloneEpochs
	// passes. Teacher is an agent name: "greedy" (default) or "search".
	CloneGames  int     `msgpack:"clone_games"`
	Teacher     string  `msgpack:"teacher"`
	CloneEpochs int     `msgpack:"clone_epochs"`
	CloneLR     float64 `msgpack:"clone_lr"`

	Seed uint64 `msgpack:"seed"`
}

// DefaultConfig is a one-suit classic run sized for a 2-core machine.
func DefaultConfig() Config {
	return Config{
		RuleSet: "classic", Suits: 1, MaxSteps: env.DefaultMaxSteps, Slots: 8, Hidden: []int{256, 256},
		Games: 64, Rollout: 128, Epochs: 2, Minibatch: 512,
		LR: 2.5e-4, Gamma: 0.99, Lambda: 0.95, Clip: 0.2, ValueCoef: 0.5, EntCoef: 0.01, MaxNorm: 0.5,
		RewardScale: 0.01, CloneGames: 0, Teacher: "greedy", CloneEpochs: 3, CloneLR: 1e-3, Seed: 1,
	}
}

// Rules returns the game configuration the run trains on.
func (c Config) Rules() (env.Rules, error) {
	rs, err := env.ParseRuleSet(c.RuleSet)
	if err != nil {
		return env.Rules{}, err
	}
	return env.NewRules(env.Options{RuleSet: rs, Suits: c.Suits, MaxSteps: c.MaxSteps, FaceUpSlots: c.Slots, Encoding: env.Float32})
}

// validate reports the first unusable setting.
func (c Config) validate() error {
	if _, err := c.Rules(); err != nil {
		return err
	}
	switch {
	case c.Games < 1 || c.Games > 1<<14:
		return fmt.Errorf("train: games %d outside 1 to 16384", c.Games)
	case c.Rollout < 1 || c.Games*c.Rollout > 1<<20:
		return fmt.Errorf("train: rollout %d steps x %d games is outside 1 to 1048576 samples", c.Rollout, c.Games)
	case c.Minibatch < 1 || c.Minibatch > c.Games*c.Rollout:
		return fmt.Errorf("train: minibatch %d must be 1 to games x rollout (%d)", c.Minibatch, c.Games*c.Rollout)
	case c.Epochs < 1:
		return fmt.Errorf("train: epochs must be at least 1")
	case !(c.LR > 0) || !(c.CloneLR > 0):
		return fmt.Errorf("train: learning rates must be positive")
	case !(c.Gamma > 0 && c.Gamma <= 1) || !(c.Lambda >= 0 && c.Lambda <= 1):
		return fmt.Errorf("train: gamma must be in (0, 1] and lambda in [0, 1]")
	case !(c.Clip > 0 && c.Clip < 1):
		return fmt.Errorf("train: clip must be in (0, 1)")
	case !(c.RewardScale > 0) || math.IsInf(c.RewardScale, 0):
		return fmt.Errorf("train: the reward scale must be positive")
	case !(c.ValueCoef >= 0) || !(c.EntCoef >= 0) || !(c.MaxNorm >= 0):
		return fmt.Errorf("train: value and entropy coefficients and the gradient clip must not be negative")
	case c.CloneGames < 0 || c.CloneEpochs < 0:
		return fmt.Errorf("train: clone games and epochs must not be negative")
	}
	for _, h := range c.Hidden {
		if h < 1 || h > 1<<14 {
			return fmt.Errorf("train: hidden width %d outside 1 to 16384", h)
		}
	}
	if c.CloneGames > 0 {
		switch name := c.teacher(); name {
		case "greedy", "search", "random":
		default:
			return fmt.Errorf("train: teacher %q: want greedy, search or random (the oracle sees hidden cards)", name)
		}
	}
	return nil
}

func (c Config) teacher() string {
	if c.Teacher == "" {
		return "greedy"
	}
	return c.Teacher
}

// Metrics is one iteration's line of the training log.
type Metrics struct {
	Iter          int     `msgpack:"iter" json:"iter"`
	Phase         string  `msgpack:"phase" json:"phase"` // "clone" or "ppo"
	EnvSteps      int64   `msgpack:"env_steps" json:"env_steps"`
	Episodes      int64   `msgpack:"episodes" json:"episodes"`
	MeanReturn    float64 `msgpack:"mean_return" json:"mean_return"` // score change per finished episode
	WinRate       float64 `msgpack:"win_rate" json:"win_rate"`
	MeanRuns      float64 `msgpack:"mean_runs" json:"mean_runs"`
	Finished      int     `msgpack:"finished" json:"finished"` // episodes behind the three means
	PolicyLoss    float64 `msgpack:"policy_loss" json:"policy_loss"`
	ValueLoss     float64 `msgpack:"value_loss" json:"value_loss"`
	Entropy       float64 `msgpack:"entropy" json:"entropy"`
	EnvStepsPerS  float64 `msgpack:"env_steps_per_s" json:"env_steps_per_s"`
	UpdatesPerS   float64 `msgpack:"updates_per_s" json:"updates_per_s"`
	EnvSeconds    float64 `msgpack:"env_s" json:"env_s"`     // stepping the games
	ActSeconds    float64 `msgpack:"act_s" json:"act_s"`     // the network choosing actions
	LearnSeconds  float64 `msgpack:"learn_s" json:"learn_s"` // gradients and updates
	ElapsedSecond float64 `msgpack:"elapsed_s" json:"elapsed_s"`
}

// Trainer runs PPO on a Batch. Its whole state (network, optimiser,
// games, random streams, counters and metrics) goes into a checkpoint, so
// a resumed run continues exactly as if it had not stopped.
type Trainer struct {
	Config  Config
	Net     *nn.Net
	History []Metrics

	rules   env.Rules
	batch   *env.Batch
	opt     *adam
	g       rng.Rand
	iter    int
	steps   int64
	eps     int64
	cloned  bool
	elapsed float64

	// rollout buffers, T x N rows
	obs                    []float32
	masks                  []uint8
	actions                []int32
	logp, values, rewards  []float32
	dones                  []bool
	boot                   []float32 // value after a truncated step (0 if terminated)
	adv, ret               []float32
	logits, vals           []float32
	sc                     *nn.Scratch
	acts                   []env.Action
	finalX, finalL, finalV []float32
	learner                *learner // built on the first iteration
	// dirty is set while an iteration or the warm start is under way: a
	// run stopped then is between states, and Save refuses it.
	dirty bool
}

// New starts a run from a freshly initialised network.
func New(c Config) (*Trainer, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	r, _ := c.Rules()
	net, err := nn.New(nn.SpecFor(r, c.Hidden), rng.Mix(c.Seed, 0x6e6574))
	if err != nil {
		return nil, err
	}
	t := &Trainer{Config: c, Net: net, rules: r, g: rng.New(rng.Mix(c.Seed, 0x707070))}
	t.opt = newAdam(t.params(), c.LR, c.MaxNorm)
	if err := t.setup(); err != nil {
		return nil, err
	}
	t.batch.Reset(c.Seed)
	return t, nil
}

func (t *Trainer) params() [][]float32 { return t.Net.Params() }

// setup makes the batch and the buffers.
func (t *Trainer) setup() error {
	c := t.Config
	b, err := env.NewBatch(t.rules, env.BatchOptions{N: c.Games, Autoreset: env.SameStep})
	if err != nil {
		return err
	}
	t.batch = b
	n, T, D, A := c.Games, c.Rollout, t.Net.Spec.ObsLen, env.NumActions
	t.obs = make([]float32, T*n*D)
	t.masks = make([]uint8, T*n*A)
	t.actions = make([]int32, T*n)
	t.logp = make([]float32, T*n)
	t.values = make([]float32, T*n)
	t.rewards = make([]float32, T*n)
	t.dones = make([]bool, T*n)
	t.boot = make([]float32, T*n)
	t.adv = make([]float32, T*n)
	t.ret = make([]float32, T*n)
	t.logits = make([]float32, n*A)
	t.vals = make([]float32, n)
	t.sc = t.Net.NewScratch(n)
	t.acts = make([]env.Action, n)
	t.finalX = make([]float32, n*D)
	t.finalL = make([]float32, n*A)
	t.finalV = make([]float32, n)
	return nil
}

// Close stops the batch's workers and frees the graph.
func (t *Trainer) Close() {
	t.batch.Close()
	if t.learner != nil {
		t.learner.close()
	}
}

// Consistent reports whether the run is between iterations, where Save
// can checkpoint it (false after Run stopped inside one, on an error or a
// cancelled context during the warm start or the learning).
func (t *Trainer) Consistent() bool { return !t.dirty }

// Iterations returns the number of PPO iterations done.
func (t *Trainer) Iterations() int { return t.iter }

// EnvSteps returns the number of environment steps taken in PPO.
func (t *Trainer) EnvSteps() int64 { return t.steps }

// Run trains until stop says so (checked before each iteration, with the
// iterations and environment steps done) or ctx ends, calling after (if not
// nil) after each iteration with its metrics; after may return an error to
// stop the run (a checkpoint that failed to save, say). The warm start, if
// configured and not done yet, runs first.
func (t *Trainer) Run(ctx context.Context, stop func(iter int, steps int64) bool, after func(m Metrics) error) error {
	if !t.cloned && t.Config.CloneGames > 0 {
		t.dirty = true
		m, err := t.clone(ctx)
		if err != nil {
			return err
		}
		t.dirty = false
		t.History = append(t.History, m)
		if after != nil {
			if err := after(m); err != nil {
				return err
			}
		}
	}
	t.cloned = true
	for !stop(t.iter, t.steps) {
		if err := ctx.Err(); err != nil {
			return err
		}
		t.dirty = true
		m, err := t.iteration()
		if err != nil {
			return err
		}
		t.dirty = false
		t.History = append(t.History, m)
		if after != nil {
			if err := after(m); err != nil {
				return err
			}
		}
	}
	return nil
}

// iteration collects one rollout and learns from it.
func (t *Trainer) iteration() (Metrics, error) {
	c := t.Config
	start := time.Now()
	n, T, D, A := c.Games, c.Rollout, t.Net.Spec.ObsLen, env.NumActions
	b := t.batch
	var envT, actT time.Duration
	var finished int
	var sumRet, sumRuns float64
	var wins int
	for s := range T {
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
				sumRet += float64(b.EpisodeReturn[i])
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
	sum, updates, err := t.epochs(context.Background(), l, n*T, c.Minibatch, c.Epochs, func(r, idx int) {
		l.setRow(r, t.obs[idx*D:(idx+1)*D], t.masks[idx*A:(idx+1)*A], int(t.actions[idx]))
		l.adv[r] = (t.adv[idx] - mean) / std
		l.oldLP[r], l.ret[r] = t.logp[idx], t.ret[idx]
	})
	if err != nil {
		return Metrics{}, err
	}
	learnT := time.Since(learnStart)
	t.iter++
	total := time.Since(start)
	t.elapsed += total.Seconds()
	m := Metrics{Iter: t.iter, Phase: "ppo", EnvSteps: t.steps, Episodes: t.eps, Finished: finished,
		PolicyLoss: sum.Policy / float64(updates), ValueLoss: sum.Value / float64(updates), Entropy: sum.Entropy / float64(updates),
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

// clone is the warm start: the network imitates the teacher's moves in
// CloneGames games (its value head learns their discounted returns).
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
		seed := rng.Mix(c.Seed^0xc10e, uint64(k))
		s := env.NewGame(t.rules, seed)
		ag := teacher()
		ag.Begin(seed)
		first := len(data)
		var legal []env.Action
		last, has := env.Action(0), false
		var rewards []float32
		for !s.Over() {
			legal = s.AppendLegal(legal[:0])
			d := ag.Act(agents.NewView(&s, legal, last, has))
			data = append(data, sample{s: s, a: d.Action})
			before := s.Score()
			if _, err := s.Step(d.Action); err != nil {
				return Metrics{}, err
			}
			rewards = append(rewards, float32(s.Score()-before)*float32(c.RewardScale))
			last, has = d.Action, true
		}
		var ret float32
		for i := len(rewards) - 1; i >= 0; i-- {
			ret = rewards[i] + float32(c.Gamma)*ret
			data[first+i].ret = ret
		}
		sumRet += float64(s.Score() - env.StartScore)
		sumRuns += float64(s.Runs())
		if s.Status() == env.Won {
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

// epochs makes passes over n rows, in minibatches of rows rows in an order
// shuffled from t.g (the rows left over that do not fill a minibatch sit
// that pass out), calling fill for each row of a minibatch before updating
// l. It returns the summed losses and the number of updates; a
// NaN loss or an ended ctx stops it with an error.
func (t *Trainer) epochs(ctx context.Context, l *learner, n, rows, passes int, fill func(r, idx int)) (losses, int, error) {
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	var sum losses
	updates := 0
	for range passes {
		for i := len(order) - 1; i > 0; i-- {
			j := t.g.IntN(i + 1)
			order[i], order[j] = order[j], order[i]
		}
		for lo := 0; lo+rows <= len(order); lo += rows {
			if err := ctx.Err(); err != nil {
				return sum, updates, err
			}
			for r, idx := range order[lo : lo+rows] {
				fill(r, idx)
			}
			ls, err := l.update()
			if err != nil {
				return sum, updates, fmt.Errorf("%w, after %d updates", err, updates)
			}
			sum.Policy += ls.Policy
			sum.Value += ls.Value
			sum.Entropy += ls.Entropy
			updates++
		}
	}
	return sum, updates, nil
}

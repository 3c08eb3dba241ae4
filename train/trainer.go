package train

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/spiderenv/spider/agents/nn"
	"github.com/spiderenv/spider/env"
	"github.com/spiderenv/spider/internal/rng"
)

// Trainer runs PPO on a Batch. Its whole state (network, optimiser,
// games, random streams, counters and metrics) goes into a checkpoint, so
// a resumed run continues exactly as if it had not stopped. Make one with
// New or Resume: the zero Trainer has no network or games, and its Run,
// Save and Close panic. Run writes Net's weights as it goes: read Net
// (evaluate or save it) only between Runs or in Run's callbacks, which
// run between updates.
type Trainer struct {
	Config  Config
	Net     *nn.Net
	History []Metrics
	// Progress, if set, hears of the imitation phases' games as they end
	// (phase "clone" or "dagger", games done of total; 0 done as a phase
	// starts; a game cut short by a stop is not counted): a search
	// teacher's games take minutes. Then, phase "learn", of the updates of
	// the passes over the labels that follow each (0 as they start, then
	// each update), which take minutes too on thousands of games; and
	// phase "validate", of the validation deals as they end; and phase
	// "ppo", of each iteration's updates (0 as they start; a target KL
	// can end them before the total), which take minutes with many
	// epochs or wide layers. It is
	// called from one goroutine at a time, not necessarily Run's.
	Progress func(phase string, done, total int)

	rules  env.Rules
	batch  *env.Batch
	opt    *adam
	g      rng.Rand
	iter   int
	steps  int64
	eps    int64
	cloned bool
	rounds int // DAgger rounds done
	// imitation is the labelled games of the warm start and the DAgger
	// rounds so far, kept (and checkpointed) until the last round is done.
	imitation []labelled
	elapsed   float64

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

// New starts a run from a freshly initialised network. The run's Config
// is c with Game's defaults filled in.
func New(c Config) (*Trainer, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	if err := c.checkShaping(); err != nil {
		return nil, err
	}
	r, _ := c.Rules()
	c.Game = r.Options()
	spec, _ := c.Spec()
	net, err := nn.New(spec, rng.Mix(c.Seed, 0x6e6574))
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

// Imitating reports whether imitation phases remain: the warm start or
// DAgger rounds, whose labelled positions (about 1.2 KB a move) no memory
// estimate of the run counts.
func (t *Trainer) Imitating() bool {
	return !t.cloned && t.Config.CloneGames > 0 || t.rounds < t.Config.DaggerRounds
}

// Iterations returns the number of PPO iterations done.
func (t *Trainer) Iterations() int { return t.iter }

// EnvSteps returns the number of environment steps taken in PPO.
func (t *Trainer) EnvSteps() int64 { return t.steps }

// Revalidate runs the validation that a stop cut short after the last
// phase in History (Run keeps such a phase without it: its metrics say
// ValGames 0 where a validation was due) and fills it in, reporting
// whether it ran one. Called on a resumed trainer before Run, it makes
// the history, and with it the best validation, the uninterrupted run's:
// the validation reads only the network, which the checkpoint saved after
// the phase holds. Stopped by ctx again, it changes nothing and returns
// ctx's error.
func (t *Trainer) Revalidate(ctx context.Context) (bool, error) {
	c := t.Config
	if len(t.History) == 0 || t.dirty || c.ValEvery <= 0 {
		return false, nil
	}
	m := &t.History[len(t.History)-1]
	if m.ValGames > 0 || m.Phase == "ppo" && m.Iter%c.ValEvery != 0 {
		return false, nil
	}
	start := time.Now()
	winRate, runs, err := t.validate(ctx)
	if err != nil {
		return false, err
	}
	m.ValWinRate, m.ValRuns, m.ValGames = winRate, runs, c.ValGames
	m.ValSeconds = time.Since(start).Seconds()
	t.elapsed += m.ValSeconds
	m.ElapsedSecond = t.elapsed
	return true, nil
}

// Run trains until stop says so (checked before each phase: the warm
// start, a DAgger round or an iteration, with the iterations and
// environment steps done; a nil stop never says so) or ctx ends. The warm start, if configured and
// not done yet, runs first, then the DAgger rounds. After each phase, and
// its validation when one is due (ValEvery),
// Run appends the phase's metrics to History and calls after (if not nil)
// with them; after may return an error to stop the run (a checkpoint that
// failed to save, say). ctx is checked at every step of a rollout, every
// minibatch, every move of an imitation game and every validation game, so
// a cancelled run returns within about one forward pass over the batch; a
// run stopped by ctx inside a phase is left inconsistent (Consistent is
// false), the phase abandoned. Stopped during the validation after a
// phase, whose learning is done, the run keeps the phase without it (its
// metrics say ValGames 0), calls after, and returns ctx's error: the
// validation only reads the network, so a run resumed from there goes on
// as the uninterrupted one would.
func (t *Trainer) Run(ctx context.Context, stop func(iter int, steps int64) bool, after func(m Metrics) error) error {
	if stop == nil {
		stop = func(int, int64) bool { return false }
	}
	// phase runs one phase (the warm start, a DAgger round or an
	// iteration), marking the trainer inconsistent while it runs, and
	// keeps its metrics. The network is validated after the phase when
	// due. A validation cut short by ctx leaves the phase kept without
	// it: its learning is done and the validation changes nothing, so
	// losing the phase (up to half an hour of a warm start) to a Ctrl-C
	// while it validates would gain nothing.
	phase := func(run func() (Metrics, error)) error {
		t.dirty = true
		m, err := run()
		if err != nil {
			return err
		}
		var stopped error
		if c := t.Config; c.ValEvery > 0 && (m.Phase != "ppo" || t.iter%c.ValEvery == 0) {
			start := time.Now()
			if testValidating != nil {
				testValidating()
			}
			winRate, runs, err := t.validate(ctx)
			switch {
			case err != nil && ctx.Err() != nil:
				stopped = err
			case err != nil:
				return err
			default:
				m.ValWinRate, m.ValRuns, m.ValGames = winRate, runs, c.ValGames
				m.ValSeconds = time.Since(start).Seconds()
				t.elapsed += m.ValSeconds
				m.ElapsedSecond = t.elapsed
			}
		}
		t.dirty = false
		t.History = append(t.History, m)
		if after != nil {
			if err := after(m); err != nil {
				return err
			}
		}
		return stopped
	}
	if !t.cloned && t.Config.CloneGames > 0 {
		if stop(t.iter, t.steps) {
			return nil
		}
		// Done once the warm start has learned, before its metrics reach
		// after: a checkpoint saved there must not start it again, and
		// Imitating must say it is over.
		if err := phase(func() (Metrics, error) {
			m, err := t.clone(ctx)
			t.cloned = err == nil
			return m, err
		}); err != nil {
			return err
		}
	}
	t.cloned = true
	for t.rounds < t.Config.DaggerRounds {
		if err := ctx.Err(); err != nil {
			return err
		}
		if stop(t.iter, t.steps) {
			return nil
		}
		if err := phase(func() (Metrics, error) { return t.dagger(ctx) }); err != nil {
			return err
		}
	}
	for !stop(t.iter, t.steps) {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := phase(func() (Metrics, error) { return t.iteration(ctx) }); err != nil {
			return err
		}
	}
	return nil
}

// ErrNotFinite is wrapped by the error of a run whose loss or gradient
// stopped being finite (a learning rate too high, say). The update is not
// applied; a resumed run repeats the same updates exactly, so it stops
// the same way.
var ErrNotFinite = errors.New("train: the loss or its gradient is not finite")

// epochs makes passes over n rows, in minibatches of rows rows in an order
// shuffled from t.g (the rows left over that do not fill a minibatch sit
// that pass out), calling fill for each row of a minibatch before updating
// l. It returns the summed losses and the number of updates; a
// NaN loss or an ended ctx stops it with an error.
//
// With o.decay, the learning rate falls linearly from l's to zero over the
// passes' updates. With o.average, the weights it leaves are the mean of
// the weights after each update of the last pass. With o.maxKL positive,
// the first minibatch after the first update whose ApproxKL exceeds it
// ends the passes, its update not applied; its losses are in the sums, as
// Stable-Baselines3 logs them, which count the minibatches they add up.
func (t *Trainer) epochs(ctx context.Context, l *learner, n, rows, passes int, o passOptions, fill func(r, idx int)) (losses, int, error) {
	base, total := l.opt.LR, passUpdates(n, rows, passes)
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	var sum losses
	var mean weightMean // the last pass's weights, averaged
	updates := 0
	if o.progress != nil {
		o.progress(0)
	}
	for pass := range passes {
		if o.beforePass != nil {
			o.beforePass()
		}
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
			if o.decay {
				l.opt.LR = base * (1 - float64(updates)/float64(total))
			}
			maxKL := o.maxKL
			if updates == 0 {
				// The first minibatch is always learnt from: its policy is
				// the rollout's, and an iteration that learnt nothing
				// would have no losses to report.
				maxKL = 0
			}
			ls, applied, err := l.update(maxKL)
			if err != nil {
				return sum, updates, fmt.Errorf("%w, after %d updates", err, updates)
			}
			sum.Policy += ls.Policy
			sum.Value += ls.Value
			sum.Entropy += ls.Entropy
			sum.ApproxKL += ls.ApproxKL
			sum.ClipFrac += ls.ClipFrac
			sum.measured++
			if !applied {
				// Every pass left ends here too, as in Stable-Baselines3.
				mean.store(t.params())
				return sum, updates, nil
			}
			updates++
			if o.progress != nil {
				o.progress(updates)
			}
			if o.average && pass == passes-1 {
				mean.add(t.params())
			}
		}
	}
	mean.store(t.params())
	return sum, updates, nil
}

// passOptions are epochs' schedule: see there.
// passUpdates is how many updates epochs makes of n rows, rows at a time,
// in passes passes, none stopped early: a short last minibatch is dropped.
func passUpdates(n, rows, passes int) int {
	// In int64: passes (up to 2^16) times minibatches wraps a 32-bit int.
	// A total past the int's range is a run that would not end anyway.
	return int(min(int64(passes)*int64(n/rows), math.MaxInt))
}

type passOptions struct {
	decay, average bool
	maxKL          float64
	progress       func(done int) // hears of each update, if set
	beforePass     func()         // runs before each pass, if set
}

// weightMean is the running mean of sets of weights, in float64 so that
// a long pass does not round its early terms away.
type weightMean struct {
	mean [][]float64
	n    int
}

// add folds params into the mean.
func (m *weightMean) add(params [][]float32) {
	if m.mean == nil {
		m.mean = make([][]float64, len(params))
		for i, p := range params {
			m.mean[i] = make([]float64, len(p))
		}
	}
	m.n++
	w := 1 / float64(m.n)
	for i, p := range params {
		for j, v := range p {
			m.mean[i][j] += (float64(v) - m.mean[i][j]) * w
		}
	}
}

// store writes the mean into params; with nothing added it leaves them.
func (m *weightMean) store(params [][]float32) {
	if m.n == 0 {
		return
	}
	for i, p := range params {
		for j := range p {
			p[j] = float32(m.mean[i][j])
		}
	}
}

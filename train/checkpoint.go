package train

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/spiderenv/spider/agents/nn"
	"github.com/spiderenv/spider/env"
	"github.com/spiderenv/spider/internal/msgpackcheck"
	"github.com/spiderenv/spider/internal/printable"
	"github.com/spiderenv/spider/internal/rng"
)

// stateVersion is the version of the trainer's part of a checkpoint.
// Version 2 holds the configuration's game as env.Options under "game";
// version 1 had rule_set, suits, max_steps and slots keys.
const stateVersion = 2

// state is the trainer's part of a checkpoint: with the network, all a
// run needs to continue exactly.
type state struct {
	Version int    `msgpack:"version"`
	Config  Config `msgpack:"config"`
	Iter    int    `msgpack:"iter"`
	Steps   int64  `msgpack:"env_steps"`
	Eps     int64  `msgpack:"episodes"`
	Cloned  bool   `msgpack:"cloned"`
	Rounds  int    `msgpack:"dagger_rounds_done"`
	// Imitation is the labelled games while DAgger rounds remain.
	Imitation []labelled        `msgpack:"imitation"`
	Elapsed   float64           `msgpack:"elapsed_s"`
	RNG       uint64            `msgpack:"rng"`
	AdamM     []nn.Floats       `msgpack:"adam_m"`
	AdamV     []nn.Floats       `msgpack:"adam_v"`
	AdamT     int               `msgpack:"adam_t"`
	Batch     env.BatchSnapshot `msgpack:"batch"`
	History   []Metrics         `msgpack:"history"`
}

// Save writes a checkpoint of the run to path (through a temporary file
// and a rename): the network with its specification, and the trainer's
// whole state.
func (t *Trainer) Save(path string) error {
	if t.dirty {
		return fmt.Errorf("train: the run stopped inside an iteration or the warm start; %s keeps its last consistent state", path)
	}
	snap, err := t.batch.Snapshot()
	if err != nil {
		return err
	}
	st := state{Version: stateVersion, Config: t.Config, Iter: t.iter, Steps: t.steps, Eps: t.eps, Cloned: t.cloned,
		Rounds: t.rounds, Imitation: t.imitation, Elapsed: t.elapsed, RNG: t.g.State(), AdamT: t.opt.T, Batch: snap, History: t.History}
	for i := range t.opt.M {
		st.AdamM = append(st.AdamM, t.opt.M[i])
		st.AdamV = append(st.AdamV, t.opt.V[i])
	}
	if err := checkAdam(st.AdamM, st.AdamV, st.AdamT); err != nil {
		// Saved, it would freeze or poison every run resumed from it.
		return fmt.Errorf("train: not saved to %s: %v", path, err)
	}
	raw, err := msgpackcheck.Marshal(&st, stateSize(&st))
	if err != nil {
		return err
	}
	return nn.Save(path, t.Net, raw)
}

// maxAdamSteps bounds Adam's step count in a checkpoint: far beyond any
// run (an update takes milliseconds), and low enough that its
// bias corrections, Beta^T, are computed from an exact float64 count and
// T+1 never wraps.
const maxAdamSteps = 1 << 53

// checkAdam refuses optimiser state no run produces: a moment that is not
// finite, a negative second moment, or a step count past maxAdamSteps.
// Resumed, a NaN first moment or negative second one made every weight
// NaN at the first update, and an infinite second one froze every weight
// for good without a word.
func checkAdam(m, v []nn.Floats, steps int) error {
	if steps < 0 || int64(steps) > maxAdamSteps {
		return fmt.Errorf("the optimiser's step count %d is outside 0-%d", steps, int64(maxAdamSteps))
	}
	for i := range m {
		for _, x := range m[i] {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return fmt.Errorf("the optimiser's first moment of tensor %d holds a value that is not finite", i)
			}
		}
		for _, x := range v[i] {
			if !(x >= 0) || math.IsInf(float64(x), 1) {
				return fmt.Errorf("the optimiser's second moment of tensor %d holds a value that is negative or not finite", i)
			}
		}
	}
	return nil
}

// stateSize guesses the length of st's encoding, so that Save's buffer is
// made once: Adam's moments at four bytes a float32 (nn.Floats), the
// games' states as they are (strings) with their numbers, the labelled
// games at up to three bytes an action, and the history's lines.
func stateSize(st *state) int {
	n := 1 << 12
	for i := range st.AdamM {
		n += 4*(len(st.AdamM[i])+len(st.AdamV[i])) + 16
	}
	for _, s := range st.Batch.States {
		n += len(s) + 48
	}
	for _, g := range st.Imitation {
		n += 3*(len(g.Played)+len(g.Labels)) + 64
	}
	return n + 512*len(st.History)
}

// Resume loads a checkpoint written by Save and returns the run, ready to
// continue where it stopped. If want is not nil, the checkpoint's game
// (want.Game, defaults filled in), hidden layers and architecture (Arch,
// Column, Pair) must equal want's, or
// Resume refuses it and names the keys that differ; training settings
// (learning rate, games...) come from the checkpoint. Resume allocates
// the batch and the buffers the checkpoint's configuration asks for
// (Config.BufferBytes), which a file of a few kilobytes can set to
// gigabytes: a caller that does not trust the file checks them with
// ResumeIf.
func Resume(path string, want *Config) (*Trainer, error) {
	return ResumeIf(path, want, nil)
}

// ResumeIf is Resume with a say before the run's memory is allocated:
// once the checkpoint is read and checked (and want's test passed), admit,
// if not nil, is called with its configuration, before the batch and the
// buffers are made. An error from admit is returned as it is, and nothing
// more is allocated.
func ResumeIf(path string, want *Config, admit func(Config) error) (*Trainer, error) {
	net, raw, err := nn.Load(path)
	if err != nil {
		return nil, err
	}
	return resume(path, net, raw, want, admit)
}

// resume is ResumeIf of the network and training state read from path.
func resume(path string, net *nn.Net, raw []byte, want *Config, admit func(Config) error) (*Trainer, error) {
	if len(raw) == 0 {
		return nil, fmt.Errorf("%s: a policy without training state: it cannot be resumed", path)
	}
	// The version is read first, so a state of another layout is refused
	// by its number. msgpackcheck.Decode checks what each decode may
	// allocate: nn.Load checked the file's lengths, but a slice of large
	// structs (the history, the imitation games) declared with nil items
	// would still cost hundreds of bytes per byte.
	var v struct {
		Version int `msgpack:"version"`
	}
	if err := msgpackcheck.Decode(raw, &v); err != nil {
		return nil, fmt.Errorf("%s: unreadable training state: %v", path, err)
	}
	if v.Version != stateVersion {
		return nil, fmt.Errorf("%s: training state version %d, this program reads version %d", path, v.Version, stateVersion)
	}
	var st state
	if err := msgpackcheck.Decode(raw, &st); err != nil {
		return nil, fmt.Errorf("%s: unreadable training state: %v", path, err)
	}
	c := st.Config
	if err := c.validate(); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	switch {
	case st.Iter < 0 || st.Steps < 0 || st.Eps < 0 || st.AdamT < 0 || !(st.Elapsed >= 0):
		return nil, fmt.Errorf("%s: negative counters in the training state (iter %d, env steps %d, episodes %d, adam steps %d, elapsed %v)",
			path, st.Iter, st.Steps, st.Eps, st.AdamT, st.Elapsed)
	case st.Rounds < 0 || st.Rounds > c.DaggerRounds:
		return nil, fmt.Errorf("%s: %d DAgger rounds done of %d", path, st.Rounds, c.DaggerRounds)
	}
	// The teacher's name and the phases are printed and written to the
	// metrics: text that is not one of theirs (a terminal's escape
	// sequence, say) is refused. The teacher may be any name while no
	// imitation phase uses it, as New allows, but printable.
	if !printable.Is(c.Teacher) {
		return nil, fmt.Errorf("%s: the teacher's name %q is not printable text", path, c.Teacher)
	}
	for i, m := range st.History {
		switch m.Phase {
		case "clone", "dagger", "ppo":
		default:
			return nil, fmt.Errorf("%s: line %d of the history has the unknown phase %q", path, i+1, m.Phase)
		}
		// The history is plotted and written out at every save: a value
		// no run produces would stop the run at its first.
		if !m.plausible() {
			return nil, fmt.Errorf("%s: line %d of the history holds a number no run produces (not finite, a negative count or time, a rate outside 0-1, runs outside 0-%d)", path, i+1, env.NumRuns)
		}
	}
	r, _ := c.Rules()
	c.Game = r.Options()
	if err := checkImitation(st.Imitation, r, c, st.Rounds); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if got, err := c.Spec(); err != nil || !specEqual(got, net.Spec) {
		return nil, fmt.Errorf("%s: the network's specification does not match its training configuration", path)
	}
	if want != nil {
		if d := configDiff(*want, c); d != "" {
			return nil, fmt.Errorf("%s: the checkpoint does not match the requested run: %s", path, d)
		}
	}
	// The saved games must be the run's: checked before admit, so that
	// the number of games the buffers are made for is one the file's
	// bytes back.
	if n := len(st.Batch.States); n != c.Games {
		return nil, fmt.Errorf("%s: a snapshot of %d games for a run of %d", path, n, c.Games)
	}
	if admit != nil {
		if err := admit(c); err != nil {
			return nil, err
		}
	}
	t := &Trainer{Config: c, Net: net, rules: r, g: rng.New(st.RNG), iter: st.Iter, steps: st.Steps, eps: st.Eps,
		cloned: st.Cloned, rounds: st.Rounds, imitation: st.Imitation, elapsed: st.Elapsed, History: st.History}
	t.opt = newAdam(t.params(), c.LR, c.MaxNorm)
	if len(st.AdamM) != len(t.opt.M) || len(st.AdamV) != len(t.opt.V) {
		return nil, fmt.Errorf("%s: optimiser state for %d tensors, the network has %d", path, len(st.AdamM), len(t.opt.M))
	}
	for i := range st.AdamM {
		if len(st.AdamM[i]) != len(t.opt.M[i]) || len(st.AdamV[i]) != len(t.opt.V[i]) {
			return nil, fmt.Errorf("%s: optimiser state of tensor %d has the wrong size", path, i)
		}
		copy(t.opt.M[i], st.AdamM[i])
		copy(t.opt.V[i], st.AdamV[i])
	}
	if err := checkAdam(st.AdamM, st.AdamV, st.AdamT); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	t.opt.T = st.AdamT
	if err := t.setup(); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if err := t.batch.Restore(st.Batch); err != nil {
		t.batch.Close()
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if t.opt.T < 0 {
		t.batch.Close()
		return nil, fmt.Errorf("%s: negative optimiser step count", path)
	}
	return t, nil
}

// specEqual reports whether a and b describe one network. The games are
// compared with their defaults filled in, since a file from before an
// option was added holds no key for it (its zero, the default) where the
// configuration read back holds the default spelled out.
func specEqual(a, b nn.Spec) bool {
	return a.Game.Filled() == b.Game.Filled() && a.ObsLen == b.ObsLen && a.NumActions == b.NumActions && slices.Equal(a.Hidden, b.Hidden) &&
		arch(a.Arch) == arch(b.Arch) && a.Column == b.Column && a.Pair == b.Pair
}

// arch names an architecture, the empty name (files before it was
// recorded) as nn.MLP.
func arch(s string) string {
	if s == "" {
		return nn.MLP
	}
	return s
}

// configDiff lists how the game and network settings of want and got
// differ ("" if they do not). The games are compared as one value, with
// their defaults filled in; the message names each differing option by
// its key.
func configDiff(want, got Config) string {
	var d []string
	wg, gg := want.Game.Filled(), got.Game.Filled()
	if wg != gg {
		for _, f := range env.OptionFields() {
			if w, g := f.Text(wg), f.Text(gg); w != g {
				d = append(d, fmt.Sprintf("%s is %s, the checkpoint's %s", f.Key, w, g))
			}
		}
	}
	if !slices.Equal(want.Hidden, got.Hidden) {
		d = append(d, fmt.Sprintf("hidden layers are %v, the checkpoint's %v", want.Hidden, got.Hidden))
	}
	if arch(want.Arch) != arch(got.Arch) || want.Column != got.Column || want.Pair != got.Pair {
		d = append(d, fmt.Sprintf("the network is %s (column %d, pair %d), the checkpoint's %s (column %d, pair %d)",
			arch(want.Arch), want.Column, want.Pair, arch(got.Arch), got.Column, got.Pair))
	}
	return strings.Join(d, "; ")
}

// checkImitation checks the imitation games of a checkpoint, before
// anything is built from them: no more games than the run's warm start
// and DAgger rounds so far play, each within the step limit, with a label
// for each move, and every move and label legal where it was made.
func checkImitation(games []labelled, r env.Rules, c Config, rounds int) error {
	if len(games) > c.CloneGames && len(games)-c.CloneGames > rounds*c.DaggerGames {
		return fmt.Errorf("%d imitation games, more than the %d of the warm start and %d DAgger rounds of %d",
			len(games), c.CloneGames, rounds, c.DaggerGames)
	}
	for k, g := range games {
		switch {
		case len(g.Labels) != len(g.Played):
			return fmt.Errorf("imitation game %d has %d labels for %d moves", k+1, len(g.Labels), len(g.Played))
		case r.MaxSteps() >= 0 && len(g.Played) > r.MaxSteps():
			return fmt.Errorf("imitation game %d has %d moves, over the step limit of %d", k+1, len(g.Played), r.MaxSteps())
		}
		s := env.NewGame(r, g.Seed)
		for i, a := range g.Played {
			if !s.Legal(g.Labels[i]) {
				return fmt.Errorf("imitation game %d: the label of move %d is illegal", k+1, i+1)
			}
			if _, err := s.Step(a); err != nil {
				return fmt.Errorf("imitation game %d, move %d: %v", k+1, i+1, err)
			}
		}
	}
	return nil
}

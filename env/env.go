package env

import (
	"errors"
	"fmt"
	"strings"
)

// Errors the Env returns for calls out of order.
var (
	ErrNotReset    = errors.New("env: Step before Reset")
	ErrEpisodeOver = errors.New("env: the episode is over (terminated or truncated); call Reset")
	ErrNoUndo      = errors.New("env: nothing to undo")
)

// calledAs is one of the errors above in the words of the call that met
// it (a Batch's, naming its game), so that errors.Is finds the same
// mistake whichever type made it.
type calledAs struct {
	msg string
	err error
}

func (c calledAs) Error() string { return c.msg }
func (c calledAs) Unwrap() error { return c.err }

// within is err said of a part (prefix "env: game 3: "): its own "env: "
// is dropped, so that the message names the package once.
func within(prefix string, err error) error {
	return calledAs{prefix + strings.TrimPrefix(err.Error(), "env: "), err}
}

// Obs is an observation in the Env's encoding: Compact is set for the
// compact encoding and Float32 for the float32 one; the other is nil. Both
// slices belong to the Env and are updated in place by its next call: copy
// them to keep them, and do not modify them. A step rewrites only the
// columns it changed, so a value written into them stays and spoils every
// later observation (copy to change it: to scale it, say).
type Obs struct {
	Compact []uint8
	Float32 []float32
}

// Info is the side information of a step, as Gymnasium's info dict.
type Info struct {
	Score     int    // the score under the rule set
	Runs      int    // completed runs
	FaceDown  int    // face-down cards left on the tableau
	Moves     int    // actions taken, deals included
	Legal     int    // legal actions now (0 once the episode is over)
	StockLeft int    // cards left in the stock
	Won       bool   // all eight runs completed
	Status    Status // playing, won or lost
}

// Env is one game behind a Gymnasium-style interface: Reset, then Step
// until terminated or truncated. It keeps the mask and the observation in
// buffers of its own and the undo history of the episode. An Env is not
// safe for concurrent use; run one per goroutine. Make it with New: the
// zero Env has no rules, and its Reset panics as New does on zero Rules.
type Env struct {
	rules   Rules
	state   State
	history []Undo
	mask    []uint8
	chunks  uint32 // chunks of mask that may hold a 1
	u8      []uint8
	f32     []float32
	legal   int
	ready   bool
}

// maxHistory is the most undo records New makes room for: Step allocates
// only to grow the history past it.
const maxHistory = 1 << 14

// New returns an Env for r. It has no game until Reset. It panics if r is
// the zero Rules, not made by NewRules (a programming error).
func New(r Rules) *Env {
	if r.suits == 0 {
		panic("env: New with zero Rules; make them with NewRules")
	}
	e := &Env{rules: r, mask: make([]uint8, NumActions)}
	if r.encoding == Float32 {
		e.f32 = make([]float32, r.Float32Len())
	} else {
		e.u8 = make([]uint8, r.CompactLen())
	}
	// A whole episode's undo records, up to a sane size (640 KiB); a longer
	// limit, or none, grows the history as needed.
	limit := int(r.maxSteps)
	if limit < 0 {
		limit = maxHistory
	}
	e.history = make([]Undo, 0, min(limit, maxHistory))
	return e
}

// Rules returns the Env's configuration.
func (e *Env) Rules() Rules { return e.rules }

// Reset deals the game of seed and returns its first observation and info.
func (e *Env) Reset(seed uint64) (Obs, Info) {
	e.state = NewGame(e.rules, seed)
	e.history = e.history[:0]
	e.ready = true
	e.refresh()
	return e.obs(), e.Info()
}

// Step plays a and returns the observation, the reward (the change of the
// score, clamping included, plus the shaping term when the options ask for
// shaping), whether the game terminated (won or lost) or
// was truncated by the step limit, and the info. An illegal action returns
// an *IllegalActionError and changes nothing; so does a Step before Reset
// (ErrNotReset) or after the episode ended (ErrEpisodeOver).
func (e *Env) Step(a Action) (obs Obs, reward float64, terminated, truncated bool, info Info, err error) {
	if !e.ready {
		return Obs{}, 0, false, false, Info{}, ErrNotReset
	}
	if e.state.Over() {
		return Obs{}, 0, false, false, Info{}, ErrEpisodeOver
	}
	before, shaped := e.state.score, e.rules.shaping != NoShaping
	var phi float32
	if shaped {
		phi = potential(&e.state)
	}
	if r := e.state.reason(a); r != "" {
		return Obs{}, 0, false, false, Info{}, &IllegalActionError{Action: a, Reason: r}
	}
	u, n, chunks := e.state.applyMask(a, e.mask, e.chunks, nil)
	e.history = append(e.history, u)
	e.legal, e.chunks = n, chunks
	e.state.Update(e.u8, e.f32, u.Columns())
	reward = float64(e.state.score - before)
	if shaped {
		reward += float64(e.rules.shapingTerm(phi, &e.state, false))
	}
	return e.obs(), reward, e.state.Terminated(), e.state.Truncated(), e.Info(), nil
}

// Undo takes back the last action of the episode, restoring the game
// exactly, score included, even after the episode ended. It returns
// ErrNoUndo at the start of a game.
func (e *Env) Undo() (Obs, Info, error) {
	if len(e.history) == 0 {
		return Obs{}, Info{}, ErrNoUndo
	}
	u := e.history[len(e.history)-1]
	e.state.Undo(u)
	e.history = e.history[:len(e.history)-1]
	e.legal, e.chunks = e.state.writeMask(e.mask, e.chunks, nil)
	e.state.Update(e.u8, e.f32, u.Columns())
	return e.obs(), e.Info(), nil
}

// refresh rewrites the whole mask and observation from the state, as after
// a reset, when no previous mask or observation can be updated in place.
func (e *Env) refresh() {
	e.legal, e.chunks = e.state.writeMask(e.mask, AllChunks, nil)
	e.state.Observe(e.u8, e.f32)
}

// obs returns the Env's observation buffers, in its encoding.
func (e *Env) obs() Obs { return Obs{Compact: e.u8, Float32: e.f32} }

// Info returns the info of the current position.
func (e *Env) Info() Info {
	s := &e.state
	return Info{
		Score:     int(s.score),
		Runs:      int(s.runs),
		FaceDown:  s.TotalFaceDown(),
		Moves:     int(s.steps),
		Legal:     e.legal,
		StockLeft: s.StockLeft(),
		Won:       s.status == Won,
		Status:    s.status,
	}
}

// Mask returns the legal-action mask of the current position: one byte per
// action id, 1 exactly when Step would accept it. The slice belongs to the
// Env; do not modify it.
func (e *Env) Mask() []uint8 { return e.mask }

// State returns a copy of the game, for inspection; changing it does not
// change the Env. The copy holds the hidden cards, and stepping it turns
// them up as the game will: a search on it peeks. A player's search plans
// on State.Resample (agents.View.Sample) instead, which deals every unseen
// card anew.
func (e *Env) State() State { return e.state }

// Render returns the board as a player sees it.
func (e *Env) Render() string {
	if !e.ready {
		return "(no game: call Reset)\n"
	}
	return e.state.Render()
}

// String describes the Env's configuration.
func (e *Env) String() string { return fmt.Sprintf("spider env (%v)", e.rules) }

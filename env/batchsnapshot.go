package env

import (
	"fmt"

	"github.com/spiderenv/spider/internal/rng"
)

// BatchSnapshot is everything a Batch needs to go on exactly where it was:
// each game's position (as State.MarshalText writes it), its seed stream,
// episode number, autoreset flags, running return and random generator,
// and the rules it was taken under. Its fields are plain values so a
// trainer can save it in a checkpoint.
type BatchSnapshot struct {
	// Options are the rules' options (nil in a snapshot saved before they
	// were recorded): Restore refuses a snapshot of other rules.
	Options  *Options  `msgpack:"options,omitempty"`
	States   []string  `msgpack:"states"`
	Base     []uint64  `msgpack:"base"`
	Episode  []uint32  `msgpack:"episode"`
	Pending  []bool    `msgpack:"pending"`
	Ended    []bool    `msgpack:"ended"`
	EpReturn []float64 `msgpack:"ep_return"` // float32 in snapshots before 2026-12-07, read the same
	Policy   []uint64  `msgpack:"policy"`
	Next     []uint16  `msgpack:"next,omitempty"`
}

// Snapshot returns the batch's games and streams. It allocates; it is
// meant for checkpoints, not for every step; a closed batch keeps its
// games and can still be saved. A batch never reset, which has no games
// to snapshot, returns an error.
func (b *Batch) Snapshot() (BatchSnapshot, error) {
	n := b.opts.N
	if len(b.states) == 0 {
		return BatchSnapshot{}, fmt.Errorf("env: Snapshot of a Batch not made by NewBatch")
	}
	for i := range b.states {
		if b.states[i].rules.suits == 0 {
			return BatchSnapshot{}, fmt.Errorf("env: Snapshot of a batch whose game %d was never reset", i)
		}
	}
	o := b.rules.Options()
	snap := BatchSnapshot{
		Options:  &o,
		States:   make([]string, n),
		Base:     append([]uint64(nil), b.base...),
		Episode:  append([]uint32(nil), b.episode...),
		Pending:  append([]bool(nil), b.pending...),
		Ended:    append([]bool(nil), b.ended...),
		EpReturn: append([]float64(nil), b.epReturn...),
		Policy:   make([]uint64, n),
	}
	for i := range b.states {
		text, err := b.states[i].MarshalText()
		if err != nil {
			return BatchSnapshot{}, err
		}
		snap.States[i] = string(text)
		snap.Policy[i] = b.policy[i].State()
	}
	for _, a := range b.next {
		snap.Next = append(snap.Next, uint16(a))
	}
	return snap, nil
}

// Restore puts the batch back where snap was taken (by a batch of the same
// size and rules) and rewrites its observations, masks, scores, runs and
// moves; rewards and ended flags read zero, as after ResetGames. It returns
// an error, and changes nothing, if snap does not fit the batch: another
// size or other rules, a position ParseState refuses under them or one
// holding more copies of a card than their deck, a game over that this
// batch would not reset (which would refuse every step), flags its
// autoreset never sets, or a presampled action that is not legal.
func (b *Batch) Restore(snap BatchSnapshot) error {
	if b.work == nil {
		return ErrClosed
	}
	n := b.opts.N
	if len(snap.States) != n || len(snap.Base) != n || len(snap.Episode) != n || len(snap.Pending) != n ||
		len(snap.Ended) != n || len(snap.EpReturn) != n || len(snap.Policy) != n {
		return fmt.Errorf("env: snapshot of %d games for a batch of %d", len(snap.States), n)
	}
	if (b.next != nil) != (len(snap.Next) == n) {
		return fmt.Errorf("env: snapshot and batch disagree on Presample")
	}
	if snap.Options != nil {
		r, err := NewRules(*snap.Options)
		if err != nil {
			return within("env: the snapshot's options: ", err)
		}
		if r != b.rules {
			return fmt.Errorf("env: a snapshot of %v games for a batch of %v games", r, b.rules)
		}
	}
	states := make([]State, n)
	for i, text := range snap.States {
		s, err := ParseState(b.rules, text)
		if err == nil {
			err = s.checkCopies() // a game of another deck (suits) parses, short of this
		}
		if err == nil {
			err = b.fits(&s, snap.Pending[i], snap.Ended[i])
		}
		if err == nil && b.next != nil {
			err = b.fitsNext(&s, Action(snap.Next[i]), snap.Pending[i], snap.Ended[i])
		}
		if err != nil {
			return within(fmt.Sprintf("env: snapshot game %d: ", i), err)
		}
		states[i] = s
	}
	copy(b.states, states)
	copy(b.base, snap.Base)
	copy(b.episode, snap.Episode)
	copy(b.pending, snap.Pending)
	copy(b.ended, snap.Ended)
	copy(b.epReturn, snap.EpReturn)
	for i := range n {
		b.policy[i] = rng.New(snap.Policy[i])
		if b.next != nil {
			b.next[i] = Action(snap.Next[i])
		}
		s := &b.states[i]
		u8, f32 := b.obsRow(i)
		s.Observe(u8, f32)
		m := b.maskRow(i)
		switch {
		case b.pending[i]:
			b.allowAll(i)
		case b.ended[i]:
			clear(m)
			b.NumLegal[i], b.chunks[i] = 0, 0
		default:
			k, chunks := s.writeMask(m, AllChunks, b.listRow(i))
			b.NumLegal[i], b.chunks[i] = int32(k), chunks
		}
		b.Score[i], b.Runs[i], b.Moves[i] = s.score, s.runs, s.steps
	}
	b.clearStepFlags()
	return nil
}

// fits reports why a game in position s with the flags pending and ended
// cannot be one of this batch's: each flag is set only by one autoreset
// mode, and a game that is over must be awaiting its reset or ended,
// since the batch would otherwise step it on, refusing every action.
func (b *Batch) fits(s *State, pending, ended bool) error {
	switch mode := b.opts.Autoreset; {
	case pending && mode != NextStep:
		return fmt.Errorf("it awaits a next-step reset, which a batch of autoreset %v never does", mode)
	case ended && mode != Disabled:
		return fmt.Errorf("it is ended for good, which a batch of autoreset %v never is", mode)
	case !pending && !ended && s.Over():
		return fmt.Errorf("it is over (%v at step %d of a limit of %d) but neither awaits its reset nor is ended", s.Status(), s.Steps(), b.rules.maxSteps)
	}
	return nil
}

// fitsNext reports why a is not an action the batch's presampling could
// have drawn for the game: any id for one awaiting its reset (every id is
// allowed), Deal for an ended one (nothing is), otherwise a legal one.
func (b *Batch) fitsNext(s *State, a Action, pending, ended bool) error {
	switch {
	case pending && a >= NumActions:
		return fmt.Errorf("presampled action %d is not an id", a)
	case ended && a != Deal:
		return fmt.Errorf("presampled action %d for an ended game, which draws %v", a, Deal)
	case !pending && !ended:
		if err := s.Check(a); err != nil {
			return within(fmt.Sprintf("presampled action %d: ", a), err)
		}
	}
	return nil
}

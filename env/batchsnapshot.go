package env

import (
	"fmt"

	"github.com/spiderenv/spider/internal/rng"
)

// BatchSnapshot is everything a Batch needs to go on exactly where it was:
// each game's position (as State.MarshalText writes it), its seed stream,
// episode number, autoreset flags, running return and random generator.
// Its fields are plain values so a trainer can save it in a checkpoint.
type BatchSnapshot struct {
	States   []string  `msgpack:"states"`
	Base     []uint64  `msgpack:"base"`
	Episode  []uint32  `msgpack:"episode"`
	Pending  []bool    `msgpack:"pending"`
	Ended    []bool    `msgpack:"ended"`
	EpReturn []float32 `msgpack:"ep_return"`
	Policy   []uint64  `msgpack:"policy"`
	Next     []uint16  `msgpack:"next,omitempty"`
}

// Snapshot returns the batch's games and streams. It allocates; it is
// meant for checkpoints, not for every step.
func (b *Batch) Snapshot() (BatchSnapshot, error) {
	n := b.opts.N
	snap := BatchSnapshot{
		States:   make([]string, n),
		Base:     append([]uint64(nil), b.base...),
		Episode:  append([]uint32(nil), b.episode...),
		Pending:  append([]bool(nil), b.pending...),
		Ended:    append([]bool(nil), b.ended...),
		EpReturn: append([]float32(nil), b.epReturn...),
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
// an error, and changes nothing, if snap does not fit the batch.
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
	states := make([]State, n)
	for i, text := range snap.States {
		s, err := ParseState(b.rules, text)
		if err != nil {
			return fmt.Errorf("env: snapshot game %d: %w", i, err)
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

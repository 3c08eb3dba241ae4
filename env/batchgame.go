package env

import (
	"fmt"

	"github.com/spiderenv/spider/internal/rng"
)

// sample draws game i's random legal action.
func (b *Batch) sample(i int) Action {
	if b.NumLegal[i] == 0 {
		return Deal // an ended game under Disabled: nothing is legal
	}
	return nthInChunks(b.maskRow(i), b.policy[i].IntN(int(b.NumLegal[i])), b.chunks[i])
}

// check finds why game i's action would refuse the step, if it would.
func (b *Batch) check(i int) error {
	a := b.actions[i]
	if b.ended[i] {
		return calledAs{fmt.Sprintf("env: game %d has ended; reset it before stepping it (autoreset disabled)", i), ErrEpisodeOver}
	}
	if b.pending[i] || b.opts.Illegal != RefuseIllegal || b.legal(i, a) {
		return nil
	}
	// The reason is only wanted now, so it is computed only now.
	return within(fmt.Sprintf("env: game %d: ", i), b.states[i].Check(a))
}

// legal reports whether a is legal in game i, from the game's own state,
// not its mask row: the mask is exactly the legal set (the conformance
// tests prove it), but it lies in a buffer the caller holds, and a byte
// written there (an action masked out, say) had the batch play an illegal
// move without a word, or panic halfway through a step. The state's check
// costs about 3.6% of a one-worker batch step more than the byte
// (docs/performance.md).
func (b *Batch) legal(i int, a Action) bool {
	return b.states[i].Legal(a)
}

// listRow returns game i's row of the legal lists, or nil when the batch
// keeps none.
func (b *Batch) listRow(i int) []int16 {
	if b.Legal == nil {
		return nil
	}
	return b.Legal[i*NumActions : (i+1)*NumActions]
}

// allowAll makes every id legal in game i (its mask row all ones, listed
// in full when the batch keeps lists): a game the next step restarts,
// which ignores its action.
func (b *Batch) allowAll(i int) {
	m := b.maskRow(i)
	for k := range m {
		m[k] = 1
	}
	b.NumLegal[i], b.chunks[i] = NumActions, AllChunks
	if row := b.listRow(i); row != nil {
		for k := range row {
			row[k] = int16(k)
		}
	}
}

// obsRow returns game i's row of the observation buffer in use; the other
// encoding's slice is nil.
func (b *Batch) obsRow(i int) ([]uint8, []float32) {
	lo, hi := i*b.obsN, (i+1)*b.obsN
	if b.ObsFloat32 != nil {
		return nil, b.ObsFloat32[lo:hi]
	}
	return b.ObsCompact[lo:hi], nil
}

// maskRow returns game i's row of the mask buffer.
func (b *Batch) maskRow(i int) []uint8 { return b.Masks[i*NumActions : (i+1)*NumActions] }

// reset deals episode b.episode[i] of game i and writes its rows afresh.
func (b *Batch) reset(i int) {
	s := &b.states[i]
	*s = NewGame(b.rules, rng.Mix(b.base[i], uint64(b.episode[i])))
	u8, f32 := b.obsRow(i)
	s.Observe(u8, f32)
	n, chunks := s.writeMask(b.maskRow(i), b.chunks[i], b.listRow(i))
	b.NumLegal[i], b.chunks[i] = int32(n), chunks
	b.pending[i], b.ended[i] = false, false
	b.epReturn[i] = 0
	b.Rewards[i] = 0
	b.Terminated[i], b.Truncated[i], b.Illegal[i] = false, false, false
	if b.HasFinal != nil {
		b.HasFinal[i] = false
	}
	b.Score[i], b.Runs[i], b.Moves[i] = s.score, s.runs, s.steps
}

// step plays game i's action (checked already under RefuseIllegal).
func (b *Batch) step(i int) {
	if b.pending[i] {
		b.episode[i]++
		b.reset(i)
		return
	}
	s := &b.states[i]
	a := b.actions[i]
	if b.HasFinal != nil {
		b.HasFinal[i] = false
	}
	b.Illegal[i] = false
	before, shaped := s.score, b.rules.shaping != NoShaping
	var phi float32
	if shaped {
		phi = potential(s)
	}
	var reward float32
	forfeit := false
	if b.opts.Illegal != RefuseIllegal && !b.legal(i, a) {
		// Under RefuseIllegal the check phase has passed every action.
		b.Illegal[i] = true
		// 0 - p, not -p: no -0 when there is no penalty.
		reward = 0 - b.opts.IllegalPenalty
		s.steps++ // an illegal try still uses up a step of the limit
		forfeit = b.opts.Illegal == LoseIllegal
	} else {
		u, n, chunks := s.applyMask(a, b.maskRow(i), b.chunks[i], b.listRow(i))
		b.NumLegal[i], b.chunks[i] = int32(n), chunks
		reward = float32(s.score - before)
		u8, f32 := b.obsRow(i)
		s.Update(u8, f32, u.Columns())
	}
	if shaped {
		reward += b.rules.shapingTerm(phi, s, forfeit)
	}
	b.Rewards[i] = reward
	b.epReturn[i] += float64(reward)
	term := s.Terminated() || forfeit
	trunc := !term && s.Truncated()
	b.Terminated[i], b.Truncated[i] = term, trunc
	b.Score[i], b.Runs[i], b.Moves[i] = s.score, s.runs, s.steps
	if !term && !trunc {
		return // after a no-op the position, mask and observation are as they were
	}
	b.EpisodeReturn[i] = float32(b.epReturn[i])
	b.EpisodeLength[i] = s.steps
	b.EpisodeWon[i] = s.status == Won
	b.EpisodeRuns[i] = s.runs
	switch b.opts.Autoreset {
	case NextStep:
		// The next Step accepts and ignores any action for this game, so
		// every id is allowed: a policy sampling from the mask never meets
		// an empty one.
		b.pending[i] = true
		b.allowAll(i)
	case Disabled:
		// Nothing is accepted until ResetGames, a forfeited game included.
		b.ended[i] = true
		clearChunks(b.maskRow(i), b.chunks[i])
		b.NumLegal[i], b.chunks[i] = 0, 0
	case SameStep:
		lo, hi := i*b.obsN, (i+1)*b.obsN
		if b.ObsFloat32 != nil {
			copy(b.FinalObsFloat32[lo:hi], b.ObsFloat32[lo:hi])
		} else {
			copy(b.FinalObsCompact[lo:hi], b.ObsCompact[lo:hi])
		}
		b.FinalScore[i] = s.score
		illegal := b.Illegal[i]
		b.episode[i]++
		b.reset(i)
		// reset cleared the step's results; the ended game's are the step's.
		b.Rewards[i] = reward
		b.Terminated[i], b.Truncated[i] = term, trunc
		b.Illegal[i] = illegal
		b.HasFinal[i] = true
	}
}

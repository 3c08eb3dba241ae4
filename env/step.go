package env

import (
	"fmt"
	"math"
	"time"
)

// Undo is what State.Step returns so that State.Undo can restore the
// position before the action exactly, score and counters included. It is a
// small value; keep one per step to undo several.
type Undo struct {
	action  Action
	flipped uint16 // columns where a face-down card turned face up
	dealtTo uint16 // columns that received a card from a deal
	at      uint16 // stepTag of the steps played after the action: Undo checks it
	removed [NumColumns]uint8
	status  Status
	score   int32
	elapsed time.Duration
}

// stepTag is a step count as Undo records it: 1 to 65535, so that the
// zero Undo matches no game, in 16 bits, so that the record stays 32
// bytes (a record 65,535 steps away from its game is not told apart).
func stepTag(steps int32) uint16 { return uint16(uint32(steps)%65535) + 1 }

// Action returns the action this record undoes.
func (u Undo) Action() Action { return u.action }

// Columns returns the set of columns the action changed (bit c for column
// c), for the observation Update methods. Removing a run or turning a card
// happens only in a column that lost or gained cards, so the set is the
// move's two columns or the deal's columns.
func (u Undo) Columns() uint16 {
	if u.action == Deal {
		return u.dealtTo
	}
	src, dst, _ := u.action.Move()
	return 1<<src | 1<<dst
}

// Step plays action a. If a is illegal it returns an *IllegalActionError
// and leaves s unchanged. Otherwise it moves the cards, turns up a
// face-down card left on top, removes completed runs, updates the score
// and the status, and returns the record that undoes it.
func (s *State) Step(a Action) (Undo, error) {
	if r := s.reason(a); r != "" {
		return Undo{}, &IllegalActionError{Action: a, Reason: r}
	}
	return s.apply(a), nil
}

// apply plays a legal action; callers have checked legality.
func (s *State) apply(a Action) Undo {
	u := s.play(a)
	if s.status == Playing && !s.anyLegal() {
		s.status = Lost
	}
	return u
}

// applyMask is apply that also rewrites the mask in dst, whose possible
// 1s lie in the chunk set old (see writeMask), and returns the number of
// legal actions and the new chunk set. The mask's count doubles as the
// loss test, so the legal actions are found once.
func (s *State) applyMask(a Action, dst []uint8, old uint32, list []int16) (Undo, int, uint32) {
	u := s.play(a)
	n, chunks := s.writeMask(dst, old, list)
	// writeMask finds nothing once truncated; the rules may still say lost.
	if n == 0 && s.status == Playing && (!s.Truncated() || !s.anyLegal()) {
		s.status = Lost
	}
	return u, n, chunks
}

// play moves the cards of a legal action and scores it, setting the status
// to Won when it completes the eighth run; the loss test is the caller's.
func (s *State) play(a Action) Undo {
	u := Undo{action: a, status: s.status, score: s.score, at: stepTag(s.steps + 1), elapsed: s.elapsed}
	gain := int32(0)
	if a == Deal {
		for c := range NumColumns {
			if s.rules.ruleSet == Cardems && s.height[c] == 0 {
				continue
			}
			s.cols[c][s.height[c]] = s.stock[s.dealt]
			s.stock[s.dealt] = NoCard
			s.dealt++
			s.height[c]++
			u.dealtTo |= 1 << c
			gain += s.settle(c, &u)
		}
	} else {
		src, dst, k := a.Move()
		hs, hd := int(s.height[src]), int(s.height[dst])
		copy(s.cols[dst][hd:hd+k], s.cols[src][hs-k:hs])
		clear(s.cols[src][hs-k : hs])
		s.height[src] -= uint8(k)
		s.height[dst] += uint8(k)
		if s.height[src] > 0 && s.height[src] == s.down[src] {
			s.down[src]--
			u.flipped |= 1 << src
		}
		s.refresh(src)
		gain += s.settle(dst, &u)
	}
	s.finish(gain)
	return u
}

// settle runs after cards land on column c: it removes a completed run on
// top, turns up the card below, and refreshes the run cache. It returns
// the points the removal earns. No column can hold two completed runs at
// once (the first would have been removed when its Ace landed), so one
// check suffices.
func (s *State) settle(c int, u *Undo) int32 {
	s.refresh(c)
	if s.run[c] < NumRanks {
		return 0
	}
	h := s.height[c]
	suit := s.cols[c][h-1].Suit()
	clear(s.cols[c][h-NumRanks : h])
	s.height[c] = h - NumRanks
	s.runs++
	s.suitRuns[suit]++
	u.removed[c] = uint8(suit) + 1
	if s.height[c] > 0 && s.height[c] == s.down[c] {
		s.down[c]--
		u.flipped |= 1 << c
	}
	s.refresh(c)
	return RunBonus
}

// finish charges the action, advances game time and scores the win. As
// the sheets put it, a cost never takes the score below zero: the action's
// costs (the move and any time penalty) are clamped at 0 first, and its
// bonuses added after, so a move that completes a run from a score of 0
// ends at 100.
func (s *State) finish(gain int32) {
	cost := int32(1)
	s.steps++
	if s.rules.tick > 0 { // only classic has a clock (Options.Validate)
		before := s.elapsed / timePerPoint
		// The clock stops at its largest value (292 years of game time)
		// rather than wrap round and hand back the points it charged.
		s.elapsed = min(s.elapsed, math.MaxInt64-s.rules.tick) + s.rules.tick
		cost += int32(s.elapsed/timePerPoint - before)
	}
	if s.runs == NumRuns {
		s.status = Won
		if s.rules.ruleSet == Classic {
			gain += WinBonus
		}
	}
	// The costs cannot take the score below zero; the bonuses then add.
	s.score = max(0, s.score-cost) + gain
}

// Undo restores the position before the Step that returned u. u must be
// the record of the last action applied to s and not yet undone. Undo
// panics, leaving s as it was, when u was made at another step count: a
// record undone already, one of an earlier step, the zero Undo, or one
// of a copy of s stepped further (step counts 65,535 apart look alike).
// A record of another game at the same step count cannot be told from
// s's own and corrupts s: a programming error, as an index out of range
// is.
func (s *State) Undo(u Undo) {
	if u.at != stepTag(s.steps) {
		panic(fmt.Sprintf("env: Undo of a record made at another step (the zero Undo, one undone already, an earlier step's or a copy's further step), on a game after step %d", s.steps))
	}
	for c := NumColumns - 1; c >= 0; c-- {
		suit := u.removed[c]
		if suit == 0 {
			continue
		}
		if u.flipped&(1<<c) != 0 {
			s.down[c]++
		}
		h := s.height[c]
		for i := range NumRanks {
			s.cols[c][int(h)+i] = MakeCard(King-Rank(i), Suit(suit-1))
		}
		s.height[c] = h + NumRanks
		s.runs--
		s.suitRuns[suit-1]--
	}
	if u.action == Deal {
		for c := NumColumns - 1; c >= 0; c-- {
			if u.dealtTo&(1<<c) == 0 {
				continue
			}
			s.height[c]--
			s.dealt--
			s.stock[s.dealt] = s.cols[c][s.height[c]]
			s.cols[c][s.height[c]] = NoCard
		}
	} else {
		src, dst, k := u.action.Move()
		if u.flipped&(1<<src) != 0 {
			s.down[src]++
		}
		hs, hd := int(s.height[src]), int(s.height[dst])
		copy(s.cols[src][hs:hs+k], s.cols[dst][hd-k:hd])
		clear(s.cols[dst][hd-k : hd])
		s.height[src] += uint8(k)
		s.height[dst] -= uint8(k)
	}
	for c := range NumColumns {
		s.refresh(c)
	}
	s.steps--
	s.elapsed = u.elapsed
	s.score = u.score
	s.status = u.status
}

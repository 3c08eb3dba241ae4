package env

import (
	"fmt"
	"math"
	"time"
)

// Status is where a game stands under the rules. Truncation is not a
// status: it is the environment's step limit, reported by State.Truncated.
type Status uint8

const (
	// Playing: the game goes on.
	Playing Status = iota
	// Won: all eight runs are completed.
	Won
	// Lost: no move and no deal is possible.
	Lost
)

// String returns "playing", "won" or "lost".
func (s Status) String() string {
	switch s {
	case Playing:
		return "playing"
	case Won:
		return "won"
	case Lost:
		return "lost"
	}
	return fmt.Sprintf("Status(%d)", uint8(s))
}

// State is one game: the ten columns, the stock, the completed runs, the
// score and the counters. It is made only of fixed-size arrays and small
// integers, so an assignment (next := s) is a full, independent clone, and
// == compares two positions exactly. The zero State is not a game; make one
// with NewGame.
//
// Column c holds cols[c][0:height[c]], bottom first; the first down[c]
// cards are face down, the rest face up. Unused slots are always NoCard so
// that equal positions compare equal.
type State struct {
	// The small fields come first: legality and the mask read only these
	// two cache lines, not the columns.
	rules    Rules
	height   [NumColumns]uint8
	down     [NumColumns]uint8
	run      [NumColumns]uint8 // cached: length of the movable same-suit run on top
	top      [NumColumns]Card  // cached: top card, NoCard when empty
	dealt    uint8
	runs     uint8
	suitRuns [NumSuits]uint8
	status   Status
	score    int32
	steps    int32
	elapsed  time.Duration
	cols     [NumColumns][maxHeight]Card
	stock    [StockSize]Card // in deal order; stock[:dealt] are NoCard
}

// Rules returns the game's configuration.
func (s *State) Rules() Rules { return s.rules }

// Score returns the current score.
func (s *State) Score() int { return int(s.score) }

// Steps returns the number of actions taken (moves and deals).
func (s *State) Steps() int { return int(s.steps) }

// Elapsed returns the simulated game time (Options.TimePerActionMs per action).
func (s *State) Elapsed() time.Duration { return s.elapsed }

// LowestScore returns the lowest score the game can still end with: each
// action left before its step limit costing its point and what the clock
// charges for it, never below 0; with no step limit, 0. Bonuses only add,
// so no way of playing on ends lower (a game that ends sooner ends
// higher). An evaluation counts a game whose agent failed at this score,
// so that failing never scores better than playing on. A game already
// over (won, lost or at its step limit) can end with nothing but its score.
func (s *State) LowestScore() int {
	if s.Over() {
		return s.Score()
	}
	if s.rules.maxSteps < 0 {
		return 0
	}
	left := int64(max(0, s.rules.maxSteps-s.steps))
	cost := left
	if tick := int64(s.rules.tick); tick > 0 && left > 0 {
		if left > (math.MaxInt64-int64(s.elapsed))/tick {
			return 0 // the clock would charge more than any score holds
		}
		end := time.Duration(int64(s.elapsed) + left*tick)
		cost += int64(end/timePerPoint - s.elapsed/timePerPoint)
	}
	return int(max(0, int64(s.score)-cost))
}

// Status returns whether the game is being played, won or lost.
func (s *State) Status() Status { return s.status }

// Terminated reports whether the game is over under the rules (won or lost).
func (s *State) Terminated() bool { return s.status != Playing }

// Truncated reports whether the game hit the step limit while still being
// played. A truncated game accepts no action (until Undo).
func (s *State) Truncated() bool {
	return s.status == Playing && s.steps >= s.rules.stepCap
}

// Over reports whether the episode has ended: terminated or truncated.
func (s *State) Over() bool { return s.Terminated() || s.Truncated() }

// Runs returns the number of completed runs.
func (s *State) Runs() int { return int(s.runs) }

// SuitRuns returns the number of completed runs of suit su. It panics if
// su is not one of the four suits (it read another suit's count).
func (s *State) SuitRuns(su Suit) int { return int(s.suitRuns[su]) }

// StockLeft returns the number of cards left in the stock.
func (s *State) StockLeft() int { return StockSize - int(s.dealt) }

// DealsLeft returns how many more deals the stock holds if every deal
// reaches the columns that hold cards now. Under classic that is the
// stock's ten-card packets, whatever the columns. Under cardems a deal
// needs ten stock cards but gives a card only to each non-empty column, so
// the count is the deals of that many cards each while ten or more are
// left: it grows when a column empties and shrinks when one fills, and
// the 1 to 9 cards a partial deal can strand count for no deal. It reads
// only counts a player sees.
func (s *State) DealsLeft() int {
	left := s.StockLeft()
	if s.rules.ruleSet == Classic {
		return left / DealSize
	}
	filled := 0
	for _, h := range s.height {
		if h > 0 {
			filled++
		}
	}
	if left < DealSize || filled == 0 {
		return 0 // dealReason refuses both
	}
	return (left-DealSize)/filled + 1
}

// Height returns the number of cards in column c (0-based).
func (s *State) Height(c int) int { return int(s.height[c]) }

// FaceDown returns the number of face-down cards in column c.
func (s *State) FaceDown(c int) int { return int(s.down[c]) }

// FaceUpCount returns the number of face-up cards in column c.
func (s *State) FaceUpCount(c int) int { return int(s.height[c] - s.down[c]) }

// TotalFaceDown returns the number of face-down cards on the tableau.
func (s *State) TotalFaceDown() int {
	n := 0
	for _, d := range s.down {
		n += int(d)
	}
	return n
}

// Top returns the top card of column c, or NoCard if it is empty. The top
// card is always face up.
func (s *State) Top(c int) Card { return s.top[c] }

// AppendFaceUp appends the face-up cards of column c to dst, deepest first,
// top card last, and returns the extended slice.
func (s *State) AppendFaceUp(dst []Card, c int) []Card {
	return append(dst, s.cols[c][s.down[c]:s.height[c]]...)
}

// AppendFaceDown appends the face-down cards of column c to dst, deepest
// first. A player cannot see them: it exists for labelled oracles and
// tests, and no observation or fair agent uses it.
func (s *State) AppendFaceDown(dst []Card, c int) []Card {
	return append(dst, s.cols[c][:s.down[c]]...)
}

// RunLength returns the length of the movable group on top of column c:
// the longest descending same-suit run that ends in the top card.
func (s *State) RunLength(c int) int { return int(s.run[c]) }

// refresh recomputes the caches of column c after its cards changed.
func (s *State) refresh(c int) {
	s.top[c] = NoCard
	if h := s.height[c]; h > 0 {
		s.top[c] = s.cols[c][h-1]
	}
	s.run[c] = s.computeRun(c)
}

// computeRun measures the movable run of column c from scratch.
func (s *State) computeRun(c int) uint8 {
	h := int(s.height[c])
	if h == 0 {
		return 0
	}
	col := &s.cols[c]
	lo := int(s.down[c])
	n := uint8(1)
	for i := h - 1; i > lo; i-- {
		// Same suit and one rank higher is exactly "code + 1" within a suit.
		if col[i-1] != col[i]+1 || col[i].Rank() == King {
			break
		}
		n++
	}
	return n
}

// longestRun returns the length of the longest same-suit descending
// sequence among column c's face-up cards, wherever it lies: play removes
// a completed run as it forms on top, so a position with one anywhere
// (ParseState's text, a snapshot) is no position play reaches.
func (s *State) longestRun(c int) int {
	col := &s.cols[c]
	longest, n := 0, 0
	for i := int(s.down[c]); i < int(s.height[c]); i++ {
		if n > 0 && col[i-1] == col[i]+1 && col[i].Rank() != King {
			n++
		} else {
			n = 1
		}
		longest = max(longest, n)
	}
	return longest
}

// Key returns a 64-bit hash of what a player sees of the position: every
// column's face-down count and face-up cards, the stock count and the
// completed runs (not the score or the move count). Two positions a player
// cannot tell apart have the same key; search agents use it to detect
// loops and repeated positions without reading hidden cards.
func (s *State) Key() uint64 {
	h := uint64(0x243f6a8885a308d3)
	mix := func(v uint64) {
		h ^= v
		h *= 0x9e3779b97f4a7c15
		h ^= h >> 29
	}
	for c := range NumColumns {
		mix(uint64(s.down[c])<<8 | uint64(s.height[c]) | uint64(c)<<16)
		col := s.cols[c][s.down[c]:s.height[c]]
		for len(col) >= 8 {
			mix(uint64(col[0]) | uint64(col[1])<<8 | uint64(col[2])<<16 | uint64(col[3])<<24 |
				uint64(col[4])<<32 | uint64(col[5])<<40 | uint64(col[6])<<48 | uint64(col[7])<<56)
			col = col[8:]
		}
		var last uint64
		for i, card := range col {
			last |= uint64(card) << (8 * i)
		}
		mix(last)
	}
	mix(uint64(s.dealt) | uint64(s.runs)<<8 | uint64(s.suitRuns[0])<<16 | uint64(s.suitRuns[1])<<24 |
		uint64(s.suitRuns[2])<<32 | uint64(s.suitRuns[3])<<40)
	return h
}

// Reframe returns the same game under rules r, which Rules.Reframes
// accepts: only what the observation shows or rewards, the step limit and
// the clock may differ. A policy trained under one observation shape uses
// it to watch games played under another.
func (s State) Reframe(r Rules) (State, error) {
	if err := s.rules.Reframes(r); err != nil {
		return State{}, err
	}
	s.rules = r
	return s, nil
}

package env

import (
	"fmt"
	"math/bits"
)

// IllegalActionError says why an action cannot be taken in a state. Step
// returns it and leaves the game unchanged.
type IllegalActionError struct {
	Action Action
	Reason string
}

// Error returns the action and the reason, in the project's notation.
func (e *IllegalActionError) Error() string {
	return fmt.Sprintf("env: illegal action %v (id %d): %s", e.Action, uint16(e.Action), e.Reason)
}

// Reasons an action is refused; constant strings keep the check cheap.
const (
	reasonRange      = "outside the action space"
	reasonWon        = "the game is won"
	reasonLost       = "the game is lost"
	reasonTruncated  = "the step limit is reached"
	reasonEmptySrc   = "the source column is empty"
	reasonLongGroup  = "that many cards are not one same-suit descending run"
	reasonRank       = "the group's bottom card is not one rank below the destination's top card"
	reasonStockEmpty = "the stock has fewer than ten cards"
	reasonEmptyCol   = "a column is empty (classic deals only onto ten filled columns)"
	reasonNoColumn   = "every column is empty, so a deal would place no card"
)

// Check returns nil if a is legal in s, or an *IllegalActionError saying
// why not.
func (s *State) Check(a Action) error {
	if r := s.reason(a); r != "" {
		return &IllegalActionError{Action: a, Reason: r}
	}
	return nil
}

// Legal reports whether a is legal in s. It never allocates.
func (s *State) Legal(a Action) bool { return s.reason(a) == "" }

func (s *State) reason(a Action) string {
	switch {
	case a >= NumActions:
		return reasonRange
	case s.status == Won:
		return reasonWon
	case s.status == Lost:
		return reasonLost
	case s.Truncated():
		return reasonTruncated
	case a == Deal:
		return s.dealReason()
	}
	src, dst, k := a.Move()
	return s.moveReason(src, dst, k)
}

func (s *State) moveReason(src, dst, k int) string {
	if s.height[src] == 0 {
		return reasonEmptySrc
	}
	if k > int(s.run[src]) {
		return reasonLongGroup
	}
	if s.height[dst] == 0 {
		return ""
	}
	// The run descends by one, so its k-th card from the top has the top
	// card's rank plus k-1.
	if s.Top(dst).Rank() != s.Top(src).Rank()+Rank(k) {
		return reasonRank
	}
	return ""
}

// dealReason applies the two sheets' stock rules.
func (s *State) dealReason() string {
	if s.dealt > StockSize-DealSize {
		return reasonStockEmpty
	}
	filled := 0
	for _, h := range s.height {
		if h > 0 {
			filled++
		}
	}
	switch {
	case s.rules.ruleSet == Classic && filled < NumColumns:
		return reasonEmptyCol
	case filled == 0:
		return reasonNoColumn
	}
	return ""
}

// Mask writes one byte per action id into dst: 1 exactly when the action is
// legal, else 0. It returns the number of legal actions. Once the episode is
// over (terminated or truncated) every byte is 0. It never allocates.
// It panics if len(dst) < NumActions, which is a programming error.
func (s *State) Mask(dst []uint8) int {
	dst = dst[:NumActions]
	clear(dst)
	if s.Over() {
		return 0
	}
	return s.mask(dst)
}

// mask sets the legal ids in dst, which must be zeroed, and returns their
// number. The loss test (anyLegal) is a separate early-exit loop; Validate
// checks that the two agree.
func (s *State) mask(dst []uint8) int {
	n := 0
	if s.dealReason() == "" {
		n++
		dst[Deal] = 1
	}
	// byRank[r] is the set of columns whose top card has rank r, so each
	// source looks only at the ranks its run can land on.
	var byRank [NumRanks + 2]uint16
	var empty uint16
	for c := range NumColumns {
		if h := s.height[c]; h == 0 {
			empty |= 1 << c
		} else {
			byRank[s.cols[c][h-1].Rank()] |= 1 << c
		}
	}
	const row = (NumColumns - 1) * MaxMove
	for src := range NumColumns {
		r := int(s.run[src])
		if r == 0 {
			continue
		}
		out := dst[src*row : (src+1)*row]
		t := int(s.cols[src][s.height[src]-1].Rank())
		for k := 1; k <= r; k++ {
			for m := byRank[t+k]; m != 0; m &= m - 1 {
				to := bits.TrailingZeros16(m)
				if to > src {
					to--
				}
				out[to*MaxMove+k-1] = 1
				n++
			}
		}
		for m := empty; m != 0; m &= m - 1 {
			to := bits.TrailingZeros16(m)
			if to > src {
				to--
			}
			cell := out[to*MaxMove : to*MaxMove+r]
			for k := range cell {
				cell[k] = 1
			}
			n += r
		}
	}
	return n
}

// anyLegal reports whether some action is legal under the rules, ignoring
// the step limit. It is the loss test, so it stops at the first move found.
func (s *State) anyLegal() bool {
	if s.dealReason() == "" {
		return true
	}
	var tops [NumColumns]int8
	empty := false
	for c := range NumColumns {
		tops[c] = -1
		if s.height[c] == 0 {
			empty = true
		} else {
			tops[c] = int8(s.Top(c).Rank())
		}
	}
	for src := range NumColumns {
		r := int8(s.run[src])
		if r == 0 {
			continue
		}
		if empty {
			return true // any top card can go into the empty column
		}
		for dst := range NumColumns {
			if k := tops[dst] - tops[src]; k >= 1 && k <= r {
				return true
			}
		}
	}
	return false
}

// NumLegal returns the number of legal actions (0 once the episode is over).
func (s *State) NumLegal() int {
	var m [NumActions]uint8
	return s.Mask(m[:])
}

// AppendLegal appends the legal actions in id order to dst and returns the
// extended slice.
func (s *State) AppendLegal(dst []Action) []Action {
	var m [NumActions]uint8
	if s.Mask(m[:]) == 0 {
		return dst
	}
	for a, ok := range m {
		if ok != 0 {
			dst = append(dst, Action(a))
		}
	}
	return dst
}

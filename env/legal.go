package env

import "fmt"

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

// reason returns why a is illegal in s, or "" if it is legal: the game's
// end and the step limit first, then the deal's or the move's own rule.
// Constant strings keep it free of allocation for Legal and Step.
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

// moveReason applies the sheets' move rules to k cards from src to dst:
// src must hold cards, its top k must be a same-suit descending run (the
// cached run on top), and they land on an empty column or on a card one
// rank above the k-th from the top.
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

// anyLegal reports whether some action is legal under the rules, ignoring
// the step limit. It is the loss test, so it stops at the first move found.
func (s *State) anyLegal() bool {
	if s.dealReason() == "" {
		return true
	}
	var tops [NumColumns]int8
	empty := false
	for c, t := range s.top {
		tops[c] = -1
		if t == NoCard {
			empty = true
		} else {
			tops[c] = int8(t.Rank())
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

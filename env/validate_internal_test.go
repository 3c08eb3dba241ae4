package env

import (
	"slices"
	"strings"
	"testing"
)

// TestValidateRefusesBrokenPositions: Validate is the invariant check that
// tests, fuzzers and the conformance checker lean on, and they only ever
// show it valid positions. Here each position is broken in one way, its
// caches brought up to date so that only the broken invariant is wrong,
// and Validate must name it.
func TestValidateRefusesBrokenPositions(t *testing.T) {
	r := MustRules(Options{Suits: 2})
	dealt := NewGame(r, 8)
	if _, err := dealt.Step(Deal); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		from  State
		spoil func(s *State)
	}{
		{"a face-down top card", NewGame(r, 8), func(s *State) {
			s.down[4] = s.height[4] // column 5: five cards, all face down
			s.refresh(4)
		}},
		{"a negative score", NewGame(r, 8), func(s *State) { s.score = -1 }},
		{"a dealt stock slot still holding its card", dealt, func(s *State) { s.stock[0] = MakeCard(Ace, Spades) }},
		{"a card missing (the stock one short)", NewGame(r, 8), func(s *State) {
			s.stock[s.dealt] = NoCard
			s.dealt++
		}},
		{"a card too many (one card turned into another)", NewGame(r, 8), func(s *State) {
			s.stock[StockSize-1] = s.stock[StockSize-1]%26 + 1 // another card of the 2-suit deck
		}},
		{"lost with legal actions left", NewGame(r, 8), func(s *State) { s.status = Lost }},
		{"won with no run completed", NewGame(r, 8), func(s *State) { s.status = Won }},
		{"a stale run count", NewGame(r, 8), func(s *State) { s.runs = 1 }},
	} {
		s := tc.from
		if err := s.Validate(); err != nil {
			t.Fatalf("%s: the position before breaking it is refused: %v", tc.name, err)
		}
		tc.spoil(&s)
		if err := s.Validate(); err == nil {
			t.Errorf("%s: Validate accepted it", tc.name)
		}
	}
}

// TestValidateRefusesABuriedRun: a completed run is removed as it forms on
// top, so none lies under other cards either. Before, Validate (and
// ParseState, and so Batch.Restore) looked at the top run only, and a
// position with K-A under a 9 played on with the run never removed.
func TestValidateRefusesABuriedRun(t *testing.T) {
	s := NewGame(MustRules(Options{Suits: 1}), 8)
	// The same 104 cards laid out again: column 1 face up K-A and a 9,
	// columns 2-10 four or five cards with one face up, the stock 50.
	var pool []Card
	for c := range NumColumns {
		pool = append(pool, s.cols[c][:s.height[c]]...)
		s.cols[c] = [maxHeight]Card{}
	}
	pool = append(pool, s.stock[s.dealt:]...)
	take := func(card Card) Card {
		i := slices.Index(pool, card)
		if i < 0 {
			t.Fatalf("%v not among the cards", card)
		}
		pool = slices.Delete(pool, i, i+1)
		return card
	}
	var first []Card
	for rk := King; rk >= Ace; rk-- {
		first = append(first, take(MakeCard(rk, Spades)))
	}
	first = append(first, take(MakeCard(9, Spades)))
	copy(s.cols[0][:], first)
	s.height[0], s.down[0] = uint8(len(first)), 0
	for c := 1; c < NumColumns; c++ {
		h := 4 + (c+1)%2
		copy(s.cols[c][:], pool[:h])
		pool = pool[h:]
		s.height[c], s.down[c] = uint8(h), uint8(h-1)
	}
	if len(pool) != StockSize {
		t.Fatalf("%d cards left for the stock", len(pool))
	}
	copy(s.stock[:], pool)
	s.dealt = 0
	for c := range NumColumns {
		s.refresh(c)
	}
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "column 1: a completed run was left on the tableau") {
		t.Fatalf("K-A under a 9: %v", err)
	}
	// One card of the run out of order (the 9 and the 5 swapped) is a
	// position, refused for nothing else.
	s.cols[0][8], s.cols[0][13] = s.cols[0][13], s.cols[0][8]
	s.refresh(0)
	if err := s.Validate(); err != nil {
		t.Fatalf("the same cards with the run broken: %v", err)
	}
}

package env

import "testing"

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

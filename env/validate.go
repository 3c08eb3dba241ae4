package env

import "fmt"

// Validate checks every invariant of the position and returns the first
// one that fails, or nil. Tests, fuzzers and the conformance checker call
// it after every step; a failure is a bug in this package.
//
// It checks that all 104 cards are accounted for (tableau, stock and
// completed runs hold each card the deck has, as often as the deck has it);
// that face-down cards lie only under face-up ones and a non-empty column
// has a face-up top card; that no completed run is left on the tableau;
// that unused slots hold NoCard; that the run cache, counters and status
// agree with the cards; and that the score is not negative.
func (s *State) Validate() error {
	suits := int(s.rules.suits)
	if suits != 1 && suits != 2 && suits != 4 {
		return fmt.Errorf("rules have %d suits", suits)
	}
	var count [NumSuits*NumRanks + 1]int
	for c := range NumColumns {
		h, d := int(s.height[c]), int(s.down[c])
		if h > maxHeight || d > maxFaceDown {
			return fmt.Errorf("column %d: height %d, face-down %d", c+1, h, d)
		}
		if h > 0 && d >= h {
			return fmt.Errorf("column %d: %d face-down cards of %d, so the top card is face down", c+1, d, h)
		}
		if h == 0 && d != 0 {
			return fmt.Errorf("column %d is empty but has %d face-down cards", c+1, d)
		}
		for i := range maxHeight {
			card := s.cols[c][i]
			if i >= h {
				if card != NoCard {
					return fmt.Errorf("column %d: slot %d above the top holds %v", c+1, i, card)
				}
				continue
			}
			if !card.Valid() || int(card.Suit()) >= suits {
				return fmt.Errorf("column %d: slot %d holds %v, not a card of a %d-suit deck", c+1, i, card, suits)
			}
			count[card]++
		}
		if want := s.cols[c][max(h, 1)-1]; (h == 0 && s.top[c] != NoCard) || (h > 0 && s.top[c] != want) {
			return fmt.Errorf("column %d: cached top %v, real top %v", c+1, s.top[c], want)
		}
		if got := s.computeRun(c); got != s.run[c] {
			return fmt.Errorf("column %d: cached run %d, real run %d", c+1, s.run[c], got)
		}
		if s.longestRun(c) >= NumRanks {
			return fmt.Errorf("column %d: a completed run was left on the tableau", c+1)
		}
	}
	for i, card := range s.stock {
		switch {
		case i < int(s.dealt) && card != NoCard:
			return fmt.Errorf("stock slot %d was dealt but holds %v", i, card)
		case i >= int(s.dealt) && (!card.Valid() || int(card.Suit()) >= suits):
			return fmt.Errorf("stock slot %d holds %v", i, card)
		case i >= int(s.dealt):
			count[card]++
		}
	}
	runs := 0
	for su := range NumSuits {
		n := int(s.suitRuns[su])
		if n > 0 && su >= suits {
			return fmt.Errorf("%d completed runs of %v in a %d-suit game", n, Suit(su), suits)
		}
		runs += n
		for r := Ace; r <= King; r++ {
			count[MakeCard(r, Suit(su))] += n
		}
	}
	if runs != int(s.runs) {
		return fmt.Errorf("runs %d, but the suits add up to %d", s.runs, runs)
	}
	want := NumCards / (suits * NumRanks)
	for code := 1; code <= suits*NumRanks; code++ {
		if count[code] != want {
			return fmt.Errorf("card %v appears %d times, want %d", Card(code), count[code], want)
		}
	}
	var m [NumActions]uint8
	if n, _ := s.mask(m[:], nil); (n > 0) != s.anyLegal() {
		return fmt.Errorf("mask finds %d legal actions but anyLegal says %v", n, s.anyLegal())
	}
	if s.score < 0 {
		return fmt.Errorf("score %d is negative", s.score)
	}
	switch {
	case s.runs == NumRuns && s.status != Won:
		return fmt.Errorf("eight runs completed but status is %v", s.status)
	case s.runs < NumRuns && s.status == Won:
		return fmt.Errorf("status won with %d runs", s.runs)
	case s.runs < NumRuns && (s.status == Lost) == s.anyLegal():
		return fmt.Errorf("status %v but anyLegal says %v", s.status, s.anyLegal())
	}
	return nil
}

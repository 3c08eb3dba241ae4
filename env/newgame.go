package env

import (
	"fmt"

	"github.com/spiderenv/spider/internal/rng"
)

// NewGame deals a new game under r from seed. The same seed and Rules give
// the same deal on every machine and every Go version, forever: published
// results quote seeds, and golden tests pin several deals.
//
// The deck is 104 cards, eight sets of Ace to King; set i has suit
// i mod Suits. It is shuffled by Fisher-Yates driven by SplitMix64(seed),
// then dealt row by row: cards 0-49 make five rows across columns 1-10,
// cards 50-53 a sixth row on columns 1-4, and cards 54-103 are the stock in
// the order it deals them. Only the top card of each column is face up.
//
// NewGame panics if r is the zero Rules rather than one from NewRules,
// which is a programming error.
func NewGame(r Rules, seed uint64) State {
	if r.suits == 0 {
		panic("env: NewGame with zero Rules; make them with NewRules")
	}
	var deck [NumCards]Card
	Shuffle(&deck, r.Suits(), seed)
	var s State
	s.rules = r
	for i := 0; i < TableauCards; i++ {
		c := i % NumColumns
		s.cols[c][s.height[c]] = deck[i]
		s.height[c]++
	}
	for c := range NumColumns {
		s.down[c] = s.height[c] - 1
		s.refresh(c)
	}
	copy(s.stock[:], deck[TableauCards:])
	s.score = StartScore
	return s
}

// Shuffle fills deck with a shuffled deck of the given number of suits, as
// NewGame deals it. It is exported for tools that need the raw order. It
// panics if suits is not 1, 2 or 4, which deal no Spider deck (a
// programming error: Rules hold only those).
func Shuffle(deck *[NumCards]Card, suits int, seed uint64) {
	if suits != 1 && suits != 2 && suits != 4 {
		panic(fmt.Sprintf("env: Shuffle with %d suits; want 1, 2 or 4", suits))
	}
	for i := range deck {
		deck[i] = MakeCard(Rank(i%NumRanks+1), Suit((i/NumRanks)%suits))
	}
	g := rng.New(seed)
	for i := NumCards - 1; i > 0; i-- {
		j := g.IntN(i + 1)
		deck[i], deck[j] = deck[j], deck[i]
	}
}

// Resample returns a game that looks exactly like s to a player but whose
// unknown cards (every face-down card and the whole stock) are dealt anew
// at random from seed: the cards a player cannot see are shuffled among
// the places a player cannot see. The result depends only on what a player
// sees and on seed, never on where the unseen cards really are. Search agents play such games instead of
// peeking; tests use them to show that observations reveal nothing hidden.
func (s *State) Resample(seed uint64) State {
	next := *s
	// The unseen cards in sorted order, so the result depends only on which
	// cards are unseen (which the visible game determines), not on where
	// they really lie: two games a player cannot tell apart resample to
	// the same game. Counted rather than sorted: search resamples at every
	// deal it weighs.
	var count [NumSuits*NumRanks + 1]uint8
	for c := range NumColumns {
		for _, x := range s.cols[c][:s.down[c]] {
			count[x]++
		}
	}
	for _, x := range s.stock[s.dealt:] {
		count[x]++
	}
	var hidden [NumCards]Card
	n := 0
	for x, k := range count {
		for range k {
			hidden[n] = Card(x)
			n++
		}
	}
	g := rng.New(seed)
	for i := n - 1; i > 0; i-- {
		j := g.IntN(i + 1)
		hidden[i], hidden[j] = hidden[j], hidden[i]
	}
	n = 0
	for c := range NumColumns {
		n += copy(next.cols[c][:s.down[c]], hidden[n:])
	}
	copy(next.stock[s.dealt:], hidden[n:])
	return next
}

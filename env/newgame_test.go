package env_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/spiderenv/spider/env"
)

// TestDealShape checks a new game against the sheets' deal: columns 1-4
// get six cards and 5-10 five, only the top one face up, 50 cards in the
// stock, a score of 500; and a deck of the asked number of suits.
func TestDealShape(t *testing.T) {
	for _, suits := range []int{1, 2, 4} {
		s := env.NewGame(env.MustRules(env.Options{Suits: suits}), 11)
		for c := range env.NumColumns {
			want := 5
			if c < 4 {
				want = 6
			}
			if s.Height(c) != want || s.FaceDown(c) != want-1 || s.FaceUpCount(c) != 1 {
				t.Errorf("%d suits, column %d: %d cards, %d face down; want %d and %d", suits, c+1, s.Height(c), s.FaceDown(c), want, want-1)
			}
		}
		if s.StockLeft() != 50 || s.Score() != 500 || s.Steps() != 0 || s.Runs() != 0 {
			t.Errorf("%d suits: stock %d, score %d, steps %d, runs %d", suits, s.StockLeft(), s.Score(), s.Steps(), s.Runs())
		}
		if err := s.Validate(); err != nil { // all 104 cards, eight of each rank per suit share
			t.Error(err)
		}
		var deck [env.NumCards]env.Card
		env.Shuffle(&deck, suits, 11)
		seen := map[env.Suit]int{}
		for _, c := range deck {
			seen[c.Suit()]++
		}
		if len(seen) != suits {
			t.Errorf("%d suits: deck has suits %v", suits, seen)
		}
		for su, n := range seen {
			if n != 104/suits {
				t.Errorf("%d suits: %d cards of %v", suits, n, su)
			}
		}
	}
	a := env.NewGame(env.MustRules(env.Options{Suits: 4}), 12)
	b := env.NewGame(env.MustRules(env.Options{Suits: 4}), 12)
	c := env.NewGame(env.MustRules(env.Options{Suits: 4}), 13)
	if a != b || a == c {
		t.Error("the same seed must give the same deal and another seed another")
	}
	wantPanic(t, "NewGame with zero Rules", func() { env.NewGame(env.Rules{}, 1) })
}

func TestResampleDealsOnlyTheHiddenCardsAnew(t *testing.T) {
	r := env.MustRules(env.Options{Suits: 4})
	s := env.NewGame(r, 21)
	twin := s.Resample(1)
	if twin == s {
		t.Fatal("resampling a fresh deal changed nothing")
	}
	if err := twin.Validate(); err != nil {
		t.Fatal(err)
	}
	for c := range env.NumColumns {
		if twin.Top(c) != s.Top(c) || twin.FaceDown(c) != s.FaceDown(c) {
			t.Fatalf("column %d: visible part changed", c+1)
		}
	}
	if twin.Score() != s.Score() || twin.StockLeft() != s.StockLeft() {
		t.Fatal("counters changed")
	}
	if s.Resample(1) != twin || s.Resample(2) == twin {
		t.Fatal("Resample is not a function of its seed")
	}
}

// TestResampleDealsEveryArrangement: Resample shuffles the unseen cards
// uniformly, so over enough seeds every arrangement of a few distinct
// hidden cards comes up. A shuffle that always moves every card (Sattolo's,
// one index short of Fisher-Yates) deals only some of them: with two
// hidden cards it would always swap them, and a search agent would play
// only worlds in which every hidden card lies elsewhere than sorted order
// would put it.
func TestResampleDealsEveryArrangement(t *testing.T) {
	r := env.MustRules(env.Options{Suits: 1})
	s, err := env.ParseState(r, "1: 3s | 9s\n2: 5s | 8s\n3: 7s | Ks")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for seed := range uint64(300) {
		twin := s.Resample(seed)
		text, _ := twin.MarshalText()
		var hidden []string
		for _, line := range strings.SplitN(string(text), "\n", 4)[:3] {
			hidden = append(hidden, strings.Fields(line)[1]) // "1: 3s | 9s": the face-down card
		}
		seen[strings.Join(hidden, " ")] = true
	}
	if len(seen) != 6 {
		t.Fatalf("300 resamples dealt %d of the 6 arrangements of three hidden cards: %v", len(seen), seen)
	}
}

// TestShuffleRefusesOtherSuitCounts: 3 suits deal no Spider deck (unequal
// suits) and 0 divided by zero; each panics, as documented, naming it.
func TestShuffleRefusesOtherSuitCounts(t *testing.T) {
	for _, suits := range []int{0, 3, 5, -1} {
		got := func() (v any) {
			defer func() { v = recover() }()
			var deck [env.NumCards]env.Card
			env.Shuffle(&deck, suits, 1)
			return nil
		}()
		if want := "env: Shuffle with " + strconv.Itoa(suits) + " suits; want 1, 2 or 4"; got != want {
			t.Errorf("%d suits: panic %v, want %q", suits, got, want)
		}
	}
}

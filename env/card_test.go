package env_test

import (
	"strings"
	"testing"

	"github.com/spiderenv/spider/env"
)

func TestCardCodes(t *testing.T) {
	n := 0
	for su := env.Suit(0); su < env.NumSuits; su++ {
		for r := env.Ace; r <= env.King; r++ {
			c := env.MakeCard(r, su)
			n++
			if int(c) != n || c.Rank() != r || c.Suit() != su || !c.Valid() {
				t.Fatalf("MakeCard(%v, %v) = %d (rank %v suit %v)", r, su, c, c.Rank(), c.Suit())
			}
			p, err := env.ParseCard(c.String())
			if err != nil || p != c {
				t.Fatalf("ParseCard(%q) = %v, %v", c.String(), p, err)
			}
		}
	}
	if env.MakeCard(env.King, env.Spades).String() != "Ks" || env.MakeCard(10, env.Hearts).String() != "Th" {
		t.Error("card notation changed")
	}
	if p, err := env.ParseCard("tH"); err != nil || p != env.MakeCard(10, env.Hearts) {
		t.Errorf("ParseCard(%q) = %v, %v; letters are case-insensitive", "tH", p, err)
	}
	for bad, msg := range map[string]string{
		"":    `card "": want two letters, rank then suit`,
		"K":   `card "K": want two letters`,
		"Kss": `card "Kss": want two letters`,
		"Kx":  `card "Kx": unknown suit 'x' (want one of s, h, d, c)`,
		"1s":  `card "1s": unknown rank '1' (want one of A23456789TJQK)`,
	} {
		c, err := env.ParseCard(bad)
		if err == nil || !strings.Contains(err.Error(), msg) || c != env.NoCard {
			t.Errorf("ParseCard(%q) = %v, %v; want NoCard and an error containing %q", bad, c, err, msg)
		}
	}
	// Codes run 1 to 4 suits x 13 ranks = 52; 0 is NoCard.
	if env.NoCard.Valid() || env.Card(53).Valid() || env.NoCard.String() != "--" || env.Card(53).String() != "Card(53)" {
		t.Error("NoCard or 53 treated as a card")
	}
}

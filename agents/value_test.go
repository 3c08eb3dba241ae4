package agents

import (
	"math"
	"testing"

	"github.com/spiderenv/spider/env"
)

// valuePos is a one-suit position whose features are counted by hand in
// TestValueFeatures.
const valuePos = "1: 5s 6s | 9s 8s\n2: | Ts\n3: |\n4: 3s | Ks\n5: | As\n6: | Qs\n7: | Qs\n8: | Qs\n9: | Qs\n10: | Qs\nstock: 2s 2s 2s 2s 2s 2s 2s 2s 2s 2s"

func TestValueFeatures(t *testing.T) {
	s, err := env.ParseState(env.MustRules(env.Options{Suits: 1}), valuePos)
	if err != nil {
		t.Fatal(err)
	}
	var f [NumValueFeatures]float64
	buf := make([]env.Card, env.NumCards)
	ValueFeatures(&f, &s, -1, 0, buf)
	want := [NumValueFeatures]float64{
		1,                      // bias
		1,                      // one deal left
		0.3,                    // 3 cards face down
		2,                      // in 2 columns
		1,                      // one empty column
		0,                      // no run completed
		0,                      // 9s 8s follow: no break
		7,                      // 9s 8s and Ks into the empty column, each Qs onto the Ks
		2,                      // of which 9s 8s and Ks would turn a card
		1,                      // the shortest dig: 1 card
		math.Sqrt2 + 1,         // √2 + √1
		1,                      // the Ks on a face-down card
		(8 + 7 + 3 + 5*8) / 8., // unseen 7s, 9s, Qs and five times the Js, per 8
		0.3,                    // deals × face down / 10
		1,                      // 10 face-up cards
		0.12,                   // top runs 2, 1, 1, 1 and five 1s, squared, /100
		10,                     // the five Qs make 10 pairs of equal tops
		1,                      // the As
	}
	for i := range f {
		if math.Abs(f[i]-want[i]) > 1e-9 {
			t.Errorf("%s = %v, want %v", ValueFeatureNames[i], f[i], want[i])
		}
	}
	// Taken as a Qs, the Ks of column 4 is no longer a king on face-down
	// cards, the Qs find no king, and six Qs make 15 pairs.
	ValueFeatures(&f, &s, 3, env.Queen, buf)
	if f[11] != 0 || f[7] != 2 || f[16] != 15 {
		t.Errorf("column 4 as a Qs: kings %v, ways on %v, equal tops %v; want 0, 2, 15", f[11], f[7], f[16])
	}
}

// TestValueSeesNoHiddenCard: positions that differ only in their hidden
// cards (face down and stock) have the same features and the same value.
func TestValueSeesNoHiddenCard(t *testing.T) {
	r := env.MustRules(env.Options{Suits: 1})
	s := env.NewGame(r, 5)
	res := Play(r, 5, &Search{Nodes: 500})
	for _, act := range res.Actions[:min(40, len(res.Actions))] {
		s.Step(act)
	}
	var f, g [NumValueFeatures]float64
	buf := make([]env.Card, env.NumCards)
	ValueFeatures(&f, &s, -1, 0, buf)
	a := &Search{}
	v := a.Evaluate(&s)
	for seed := range uint64(20) {
		w := s.Resample(seed)
		ValueFeatures(&g, &w, -1, 0, buf)
		if g != f {
			t.Fatalf("resample %d: features %v, the real game's %v", seed, g, f)
		}
		if u := a.Evaluate(&w); u != v {
			t.Fatalf("resample %d: value %d, the real game's %d", seed, u, v)
		}
	}
}

// TestSearchLearnedValue: search adds the learned value on one suit
// only (classic and cardems); HandOnly and the oracle keep the hand-set
// value, as do two and four suits.
func TestSearchLearnedValue(t *testing.T) {
	s, err := env.ParseState(env.MustRules(env.Options{Suits: 1}), valuePos)
	if err != nil {
		t.Fatal(err)
	}
	a, oracle := &Search{}, &Search{Peek: true}
	m, err := New("search-hand")
	if err != nil {
		t.Fatal(err)
	}
	hand, ok := m().(*Search)
	if !ok || !hand.HandOnly || hand.Name() != "search-hand" {
		t.Fatalf("search-hand makes %#v", m())
	}
	if l := a.learned(&s, -1, 0); l == 0 || a.Evaluate(&s) != hand.Evaluate(&s)+l {
		t.Fatalf("one suit: %d, hand-set %d, learned %d", a.Evaluate(&s), hand.Evaluate(&s), l)
	}
	if oracle.Evaluate(&s) != hand.Evaluate(&s) {
		t.Fatalf("the oracle's value %d, not the hand-set %d", oracle.Evaluate(&s), hand.Evaluate(&s))
	}
	card := env.NewGame(env.MustRules(env.Options{RuleSet: env.Cardems}), 3)
	if a.Evaluate(&card) == hand.Evaluate(&card) {
		t.Fatalf("cardems one suit: %d, the hand-set value's too", a.Evaluate(&card))
	}
	for _, o := range []env.Options{{Suits: 2}, {Suits: 4}, {RuleSet: env.Cardems, Suits: 2}} {
		other := env.NewGame(env.MustRules(o), 3)
		if a.Evaluate(&other) != hand.Evaluate(&other) {
			t.Fatalf("%+v: %d, hand-set %d", o, a.Evaluate(&other), hand.Evaluate(&other))
		}
	}
}

// TestSearchRevealValueAveragesRanks: a move that turns a card is valued
// the same whatever the card turned is (search plans on a sampled game,
// whose turned card is a guess), though the learned value of the two
// positions after it differs.
func TestSearchRevealValueAveragesRanks(t *testing.T) {
	r := env.MustRules(env.Options{Suits: 1})
	a := &Search{}
	var vals, after []int
	for _, under := range []string{"5s", "Js"} {
		s, err := env.ParseState(r, "1: "+under+" | 9s 8s\n2: | Ts\n3: | Ks\n4: | Ks\n5: | Ks\n6: | Ks\n7: | Ks\n8: | Ks\n9: | Ks\n10: | Ks\nstock: 2s 2s 2s 2s 2s 2s 2s 2s 2s 2s")
		if err != nil {
			t.Fatal(err)
		}
		next := s
		if _, err := next.Step(env.MoveAction(0, 1, 2)); err != nil || next.FaceDown(0) != 0 {
			t.Fatalf("the move turns nothing: %v", err)
		}
		vals = append(vals, a.revealValue(&s, &next))
		after = append(after, a.Evaluate(&next))
	}
	if vals[0] != vals[1] {
		t.Fatalf("the reveal is worth %d over a 5s, %d over a Js", vals[0], vals[1])
	}
	if after[0] == after[1] {
		t.Fatalf("the positions after it are worth the same (%d): the test shows nothing", after[0])
	}
}

package agents

import (
	"fmt"
	"math"
	"strings"
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
	// A rank or column out of range panics, as documented, on an empty
	// column too (column 3), which never reads the rank.
	for _, tc := range []struct {
		col int
		r   env.Rank
	}{{2, 0}, {2, 14}, {3, 0}, {3, 14}, {env.NumColumns, env.Ace}} {
		func() {
			defer func() {
				if p := recover(); p == nil || !strings.Contains(fmt.Sprint(p), "want a column 0 to 9 and a rank 1 to 13") {
					t.Errorf("column %d, rank %d: panic %v", tc.col, tc.r, p)
				}
			}()
			ValueFeatures(&f, &s, tc.col, tc.r, buf)
		}()
	}
}

// valuePos4 is a four-suit position whose features
// TestValueFeaturesFourSuits counts in part (fitvalue -suits 4 fits on
// such positions).
const valuePos4 = "1: 5s | 9s 8h 7h\n2: | 9d\n3: 4c | Ts 9s\n4: | Kc\n5: | Kd\n6: | Kh\n7: | Ks\n8: | Qc\n9: | Qd\n10: | Jh"

// TestValueFeaturesFourSuits: on four suits a card on the next rank of
// another suit is a break and ends the movable run, while where a run can
// go is a matter of rank alone, as the rules move it.
func TestValueFeaturesFourSuits(t *testing.T) {
	s, err := env.ParseState(env.MustRules(env.Options{Suits: 4}), valuePos4)
	if err != nil {
		t.Fatal(err)
	}
	var f [NumValueFeatures]float64
	ValueFeatures(&f, &s, -1, 0, make([]env.Card, env.NumCards))
	// Breaks: 8h on 9s only (Ts 9s is one suit). Ways on: 8h 7h onto 9d
	// (another suit, as the rules allow), Ts 9s onto the Jh, the two Qs
	// onto a K and the Jh onto a Q: 5. Of them only Ts 9s turns a card
	// (8h 7h leaves the 9s behind).
	if f[6] != 1 || f[7] != 5 || f[8] != 1 {
		t.Errorf("breaks %v, ways on %v, reveals %v; want 1, 5, 1", f[6], f[7], f[8])
	}
	// The top runs: 8h 7h, 9d, Ts 9s and seven single cards.
	if want := float64(4+1+4+7) / 100; math.Abs(f[15]-want) > 1e-12 {
		t.Errorf("top runs squared %v, want %v", f[15], want)
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

// TestSearchLearnedValue: search adds the learned value on one suit with
// valueWeights and on two suits with valueWeights2, under both rule sets;
// HandOnly and the oracle keep the hand-set value, as do four suits.
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
	for _, rs := range []env.RuleSet{env.Classic, env.Cardems} {
		two := env.NewGame(env.MustRules(env.Options{RuleSet: rs, Suits: 2}), 3)
		var f [NumValueFeatures]float64
		ValueFeatures(&f, &two, -1, 0, make([]env.Card, env.NumCards))
		z1, z2 := 0.0, 0.0
		for i, x := range f {
			z1 += valueWeights[i] * x
			z2 += valueWeights2[i] * x
		}
		want := int(math.Round(valueMix * z2))
		if want == int(math.Round(valueMix*z1)) {
			t.Fatalf("%v: the two fits value the two-suit deal alike (%d): the test shows nothing", rs, want)
		}
		if got := a.Evaluate(&two) - hand.Evaluate(&two); got != want {
			t.Fatalf("%v two suits: learned part %d, want %d from valueWeights2 (%d from one suit's)", rs, got, want, int(math.Round(valueMix*z1)))
		}
		if oracle.Evaluate(&two) != hand.Evaluate(&two) {
			t.Fatalf("%v two suits: the oracle's value %d, not the hand-set %d", rs, oracle.Evaluate(&two), hand.Evaluate(&two))
		}
	}
	for _, o := range []env.Options{{Suits: 4}, {RuleSet: env.Cardems, Suits: 4}} {
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

// TestValueFeaturesCountWhatIsGone: the cards of completed runs are seen
// cards (hope counts the unseen ones that could go on a top card), and a
// move can free a card only when a column's whole face-up part is its
// movable run. TestValueFeatures's position has no run and no broken
// column, so it shows neither.
func TestValueFeaturesCountWhatIsGone(t *testing.T) {
	r := env.MustRules(env.Options{Suits: 1})
	buf := make([]env.Card, env.NumCards)
	var f, g [NumValueFeatures]float64
	s, err := env.ParseState(r, valuePos)
	if err != nil {
		t.Fatal(err)
	}
	ValueFeatures(&f, &s, -1, 0, buf)
	s, err = env.ParseState(r, valuePos+"\nruns: s")
	if err != nil {
		t.Fatal(err)
	}
	ValueFeatures(&g, &s, -1, 0, buf)
	// One run takes a copy of every rank: one fewer unseen card for each
	// of the eight top cards that are not aces.
	if g[5] != 1 || g[12] != f[12]-1 {
		t.Fatalf("with a completed run: runs %v, hope %v; want 1 and %v", g[5], g[12], f[12]-1)
	}
	// The 5s can go onto the 6s, but the 9s stays on the face-down card.
	s, err = env.ParseState(r, "1: 3s | 9s 5s\n2: | 6s\n3: | Ks\n4: | Ks\n5: | Ks\n6: | Ks\n7: | Ks\n8: | Ks\n9: | Ks\n10: | Ks")
	if err != nil {
		t.Fatal(err)
	}
	ValueFeatures(&f, &s, -1, 0, buf)
	if f[7] != 1 || f[8] != 0 {
		t.Fatalf("a run that leaves a face-up card behind: ways on %v, reveals %v; want 1 and 0", f[7], f[8])
	}
	// Column 1's top taken as a lone Ts: a run of one, not the 9s 8s's two.
	s, err = env.ParseState(r, valuePos)
	if err != nil {
		t.Fatal(err)
	}
	ValueFeatures(&f, &s, 0, 10, buf)
	if math.Abs(f[15]-0.09) > 1e-9 {
		t.Fatalf("column 1 as a lone Ts: top runs squared %v, want 0.09 (nine runs of one)", f[15])
	}
}

// TestSearchLearnedValueIsTheFit checks the learned value of the position
// TestValueFeatures counts against the weights docs/results.md publishes
// ("A learned value for one suit", two decimals), each bound to its fact
// by name: a weight moved onto another fact, or a fact left out of the
// sum, is off by more than the table's rounding can explain. A refit
// fails it until the table is updated with the weights.
func TestSearchLearnedValueIsTheFit(t *testing.T) {
	published := map[string]float64{
		"bias": 5.44, "deals_left": 3.45, "face_down_10": -2.12, "hidden_columns": -0.27,
		"empty_columns": 0.68, "runs": -0.67, "breaks": -0.03, "ways_on": 0.41,
		"equal_tops": -0.13, "reveals_now": 0.24, "min_face_down": -0.26, "sqrt_face_down": 0.34,
		"kings_on_face_down": -0.06, "hope": -0.48, "deals_x_face_down": -0.59, "face_up_10": -0.47,
		"top_runs_sq": 0.27, "ace_tops": -0.27,
	}
	s, err := env.ParseState(env.MustRules(env.Options{Suits: 1}), valuePos)
	if err != nil {
		t.Fatal(err)
	}
	checkPublishedFit(t, &s, &valueWeights, published)
}

// TestSearchLearnedValueIsTheTwoSuitFit does the same for classic two
// suits, whose weights docs/results.md publishes in "A learned value for
// two suits", on a two-suit deal.
func TestSearchLearnedValueIsTheTwoSuitFit(t *testing.T) {
	published := map[string]float64{
		"bias": 7.21, "deals_left": 1.96, "face_down_10": -0.43, "hidden_columns": 0.41,
		"empty_columns": 0.33, "runs": -0.79, "breaks": -0.12, "ways_on": 0.46,
		"equal_tops": -0.15, "reveals_now": 0.13, "min_face_down": -0.08, "sqrt_face_down": -0.36,
		"kings_on_face_down": -0.07, "hope": -0.45, "deals_x_face_down": -0.42, "face_up_10": -0.50,
		"top_runs_sq": -0.11, "ace_tops": -0.26,
	}
	s := env.NewGame(env.MustRules(env.Options{Suits: 2}), 3)
	checkPublishedFit(t, &s, &valueWeights2, published)
}

// checkPublishedFit checks weights against the published ones, and search's
// learned value of s against the published weights' sum.
func checkPublishedFit(t *testing.T, s *env.State, weights *[NumValueFeatures]float64, published map[string]float64) {
	t.Helper()
	var f [NumValueFeatures]float64
	ValueFeatures(&f, s, -1, 0, make([]env.Card, env.NumCards))
	z, slack := 0.0, 0.0
	for i, name := range ValueFeatureNames {
		w, ok := published[name]
		if !ok {
			t.Fatalf("fact %q has no published weight", name)
		}
		if math.Abs(weights[i]-w) > 0.005+1e-9 {
			t.Errorf("weight of %q is %v; docs/results.md publishes %v", name, weights[i], w)
		}
		z += w * f[i]
		slack += 0.005 * math.Abs(f[i])
	}
	got := (&Search{}).learned(s, -1, 0)
	if math.Abs(float64(got)-valueMix*z) > valueMix*slack+0.5 {
		t.Fatalf("learned value %d; the published weights give %.1f (within %.1f)", got, valueMix*z, valueMix*slack+0.5)
	}
}

// TestSearchRevealValueWeighsUnseenCards checks revealValue against its
// definition on a position with a completed run: the learned part is
// averaged over the ranks the turned card can have, each weighted by its
// copies not yet seen, and a run's cards are seen.
func TestSearchRevealValueWeighsUnseenCards(t *testing.T) {
	r := env.MustRules(env.Options{Suits: 1})
	s, err := env.ParseState(r, "1: 5s | 9s 8s\n2: | Ts\n3: | Ks\n4: | Ks\n5: | Ks\n6: | Ks\n7: | Ks\n8: | Qs\n9: | Qs\n10: | Qs\nstock: 2s 2s 2s 2s 2s 2s 2s 2s 2s 2s\nruns: s")
	if err != nil {
		t.Fatal(err)
	}
	next := s
	if _, err := next.Step(env.MoveAction(0, 1, 2)); err != nil || next.FaceDown(0) != 0 {
		t.Fatalf("the move turns nothing: %v", err)
	}
	a := &Search{}
	// Seen: one run, and the face-up cards but the one just turned.
	unseen := map[env.Rank]int{}
	for k := env.Ace; k <= env.King; k++ {
		unseen[k] = rankCopies - 1
	}
	for _, c := range []env.Rank{10, 9, 8, env.King, env.King, env.King, env.King, env.King, env.Queen, env.Queen, env.Queen} {
		unseen[c]--
	}
	total, sum := 0, 0
	for k, n := range unseen {
		total += n
		sum += n * a.learned(&next, 0, k)
	}
	want := a.Evaluate(&next) - a.learned(&next, -1, 0) + sum/total
	if got := a.revealValue(&s, &next); got != want {
		t.Fatalf("the reveal is worth %d, want %d", got, want)
	}
}

// referenceValueFeatures is ValueFeatures as first written, counting the
// whole position for each rank of a turned card; ValueFeatures counts once
// and finishes for each rank, and must write the same facts bit for bit.
func referenceValueFeatures(f *[NumValueFeatures]float64, s *env.State, col int, r env.Rank, buf []env.Card) {
	var seen [env.NumRanks + 1]int         // visible cards of each rank
	var top, base [env.NumColumns]env.Rank // each column's top card, and the deepest of its movable run
	var runLen [env.NumColumns]int
	var breaks, kings, empty, hidden, down, faceUp int
	minDown := 0
	sqrtDown := 0.0
	for c := range env.NumColumns {
		d := s.FaceDown(c)
		down += d
		if d > 0 {
			hidden++
			if minDown == 0 || d < minDown {
				minDown = d
			}
			sqrtDown += math.Sqrt(float64(d))
		}
		if s.Height(c) == 0 {
			empty++
			continue
		}
		up := s.AppendFaceUp(buf[:0], c)
		runLen[c] = s.RunLength(c)
		if c == col {
			up = up[len(up)-1:]
			up[0] = env.MakeCard(r, up[0].Suit())
			runLen[c] = 1
		}
		faceUp += len(up)
		for i, x := range up {
			seen[x.Rank()]++
			if i > 0 && !(x+1 == up[i-1] && x.Rank() != env.King) {
				breaks++
			}
		}
		if d > 0 && up[0].Rank() == env.King {
			kings++
		}
		top[c] = up[len(up)-1].Rank()
		base[c] = top[c] + env.Rank(runLen[c]-1)
	}
	for k := env.Ace; k <= env.King; k++ {
		seen[k] += s.Runs()
	}
	var ways, reveals, equalTops, aces int
	var hope, runSq float64
	for c := range env.NumColumns {
		h := s.Height(c)
		if h == 0 {
			continue
		}
		runSq += float64(runLen[c] * runLen[c])
		// Can its movable run go somewhere: onto a card one rank above, or
		// into an empty column (when that leaves something behind)?
		on := empty > 0 && runLen[c] < h
		for e := range env.NumColumns {
			if on || base[c] == env.King {
				break
			}
			on = e != c && s.Height(e) > 0 && top[e] == base[c]+1
		}
		if on {
			ways++
			if s.FaceDown(c) > 0 && s.FaceUpCount(c) == runLen[c] {
				reveals++
			}
		}
		if top[c] == env.Ace {
			aces++
		} else {
			hope += float64(rankCopies - seen[top[c]-1]) // unseen cards that could go on it
		}
		for e := c + 1; e < env.NumColumns; e++ {
			if s.Height(e) > 0 && top[e] == top[c] {
				equalTops++
			}
		}
	}
	deals := float64(s.StockLeft()) / env.DealSize
	f[0] = 1
	f[1] = deals
	f[2] = float64(down) / 10
	f[3] = float64(hidden)
	f[4] = float64(empty)
	f[5] = float64(s.Runs())
	f[6] = float64(breaks)
	f[7] = float64(ways)
	f[8] = float64(reveals)
	f[9] = float64(minDown)
	f[10] = sqrtDown
	f[11] = float64(kings)
	f[12] = hope / rankCopies
	f[13] = deals * float64(down) / 10
	f[14] = float64(faceUp) / 10
	f[15] = runSq / 100
	f[16] = float64(equalTops)
	f[17] = float64(aces)
}

// TestValueFeaturesCountOnceForEveryRank: ValueFeatures, which counts a
// position once for every rank a turned card can have, writes exactly the
// facts of the reference that counts it anew, along search's games of
// every suit count, for every column taken as any rank.
func TestValueFeaturesCountOnceForEveryRank(t *testing.T) {
	buf := make([]env.Card, env.NumCards)
	checked := 0
	for _, suits := range []int{1, 2, 4} {
		r := env.MustRules(env.Options{Suits: suits})
		s := env.NewGame(r, 7)
		res := Play(r, 7, &Search{Nodes: 100})
		for i, act := range res.Actions {
			if i%7 == 0 {
				for col := -1; col < env.NumColumns; col++ {
					for k := env.Ace; k <= env.King; k++ {
						var f, g [NumValueFeatures]float64
						ValueFeatures(&f, &s, col, k, buf)
						referenceValueFeatures(&g, &s, col, k, buf)
						if f != g {
							t.Fatalf("suits %d move %d column %d as rank %d:\n got %v\nwant %v", suits, i, col, k, f, g)
						}
						checked++
						if col < 0 {
							break
						}
					}
				}
			}
			s.Step(act)
		}
	}
	if checked < 1000 {
		t.Fatalf("only %d feature vectors checked", checked)
	}
}

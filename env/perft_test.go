package env_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/spiderenv/spider/env"
	"github.com/spiderenv/spider/internal/rng"
)

// randomPlayout plays up to steps random legal actions from the deal of
// seed, choosing with its own generator seeded by seed, and calls visit
// before each action. It picks uniformly among the moves and deals only one
// time in forty or when nothing else is legal, so that the stock lasts
// into positions with empty columns, where the rule sets differ.
func randomPlayout(r env.Rules, seed uint64, steps int, visit func(s *env.State, legal []env.Action)) env.State {
	g := rng.New(seed ^ 0x5eed)
	s := env.NewGame(r, seed)
	var legal []env.Action
	for range steps {
		legal = s.AppendLegal(legal[:0])
		if visit != nil {
			visit(&s, legal)
		}
		if len(legal) == 0 {
			break
		}
		a := legal[g.IntN(len(legal))]
		if n := len(legal); legal[n-1] == env.Deal && n > 1 {
			a = legal[g.IntN(n-1)]
			if g.IntN(40) == 0 {
				a = env.Deal
			}
		}
		if _, err := s.Step(a); err != nil {
			panic(err)
		}
	}
	return s
}

// TestPerft sums the number of legal actions along fixed seeded playouts,
// like chess's perft: any change to the rules or the action space moves
// these numbers.
func TestPerft(t *testing.T) {
	var b strings.Builder
	b.WriteString("# rules suits seed: sum of legal actions over the first 1000 positions, final steps, score, runs, status\n")
	for _, rs := range []env.RuleSet{env.Classic, env.Cardems} {
		for _, suits := range []int{1, 2, 4} {
			r := env.MustRules(env.Options{RuleSet: rs, Suits: suits})
			for seed := uint64(1); seed <= 8; seed++ {
				sum, deals := 0, 0
				s := randomPlayout(r, seed, 1000, func(s *env.State, legal []env.Action) {
					sum += len(legal)
					if len(legal) > 0 && legal[len(legal)-1] == env.Deal {
						deals++
					}
				})
				fmt.Fprintf(&b, "%v %d %d: %d legal (%d with a deal), %d steps, score %d, runs %d, %v\n",
					rs, suits, seed, sum, deals, s.Steps(), s.Score(), s.Runs(), s.Status())
			}
		}
	}
	golden(t, "perft.golden", b.String())
}

// perft counts the action sequences of length depth from s, as chess's
// perft does: every legal action, then every legal action after it, and so
// on. A game that has ended has no legal action, so its branch counts 0.
func perft(s env.State, depth int) int {
	if depth == 0 {
		return 1
	}
	n := 0
	for _, a := range s.AppendLegal(nil) {
		next := s
		if _, err := next.Step(a); err != nil {
			panic(err)
		}
		n += perft(next, depth-1)
	}
	return n
}

// perftDivide is perft split by the first action, in the project's notation.
func perftDivide(s env.State, depth int) map[string]int {
	out := map[string]int{}
	for _, a := range s.AppendLegal(nil) {
		next := s
		if _, err := next.Step(a); err != nil {
			panic(err)
		}
		out[a.String()] = perft(next, depth-1)
	}
	return out
}

// perftPosition is a two-suit position small enough to count by hand.
// Columns 4-10 hold a lone King each: nothing lands on a King, and a King
// moves only into an empty column. The stock holds exactly one deal (ten
// cards); onto ten filled columns its last two cards, 6h and 5s, land on
// columns 9 and 10. (It holds more Kings than a deck: ParseState checks
// the text, not the deck, and the rules never count cards.)
const perftPosition = `1: | 9h
2: 5s | 8s
3: | 7s
4: | Ks
5: | Ks
6: | Ks
7: | Ks
8: | Ks
9: | Ks
10: | Ks
stock: Ks Ks Ks Ks Ks Ks Ks Ks 6h 5s`

// TestPerftByHand checks perft on perftPosition against counts worked out
// by hand from the rules, not from this engine, under both rule sets: the
// self-check TestPerft cannot do, since its golden file is the engine's own
// earlier output.
//
// Depth 1, both rule sets: 3.
//
//	2>1x1  8s onto 9h; the 5s under it turns up        -> A
//	3>2x1  7s onto 8s; column 3 is left empty           -> B
//	deal   all ten columns filled, ten cards in stock   -> C
//	(the 9h and the Kings have nowhere to go)
//
// Depth 2: classic 2 + 11 + 1 = 14, cardems 2 + 12 + 1 = 15.
//
//	A: 3>1x1 (7s onto 8s), deal                                    2
//	B: 2>1x2 (8s 7s onto 9h), 2>3x1, 2>3x2, 1>3x1, and the seven
//	   Kings into column 3 (4>3x1 ... 10>3x1)                      11
//	   cardems also deals (ten cards, some column not empty)      +1
//	   classic does not (column 3 is empty)
//	C: tops are eight Kings, 6h (column 9) and 5s (column 10):
//	   10>9x1 only                                                  1
//
// Depth 3: classic 11 + 103 + 0 = 114, cardems 12 + 121 + 0 = 133.
// Below, "(+1)" marks a deal only cardems may make: a column is empty, and
// the stock still holds its ten cards.
//
//	A, 3>1x1: column 1 is 9h 8s 7s (movable run 8s 7s), column 3
//	   empty: 1>3x1, 1>3x2, 2>3x1 (the 5s), seven Kings into 3     10 (+1)
//	A, deal: 5s onto 6h (10>9x1)                                     1
//	B, 1>3x1: B with columns 1 and 3 swapped: 2>3x2, 2>1x1, 2>1x2,
//	   3>1x1, seven Kings into column 1                             11 (+1)
//	B, 2>1x2: the same position as A, 3>1x1                         10 (+1)
//	B, 2>3x1: back to the start position                             3
//	B, 2>3x2: 8s 7s in column 3, no empty column: 3>1x2, deal        2
//	B, k>3x1 for each King's column k in 4-10 (seven moves): column
//	   k is now the empty one: 1>kx1, 2>1x2, 2>kx1, 2>kx2, and
//	   seven Kings (the moved one included) into it           7 x 11 (+1 each)
//	B, deal (cardems only): Kings on columns 1, 2 and 4-9, 6h on
//	   column 10, the 5s left in the stock (fewer than ten: no
//	   deal); each of the nine tops into column 3                    9
//	C, 10>9x1: no move and no deal: lost                             0
//
// So classic: A 10+1 = 11, B 11+10+3+2+77 = 103, C 0; cardems: A 11+1 = 12,
// B 12+11+3+2+84+9 = 121, C 0.
func TestPerftByHand(t *testing.T) {
	for _, tc := range []struct {
		rs     env.RuleSet
		depth1 []string
		divide [3]map[string]int // perft split by the first action, at depths 1 to 3
		total  [3]int
	}{
		{env.Classic, []string{"2>1x1", "3>2x1", "deal"},
			[3]map[string]int{
				{"2>1x1": 1, "3>2x1": 1, "deal": 1},
				{"2>1x1": 2, "3>2x1": 11, "deal": 1},
				{"2>1x1": 11, "3>2x1": 103, "deal": 0},
			},
			[3]int{3, 14, 114}},
		{env.Cardems, []string{"2>1x1", "3>2x1", "deal"},
			[3]map[string]int{
				{"2>1x1": 1, "3>2x1": 1, "deal": 1},
				{"2>1x1": 2, "3>2x1": 12, "deal": 1},
				{"2>1x1": 12, "3>2x1": 121, "deal": 0},
			},
			[3]int{3, 15, 133}},
	} {
		s := pos(t, tc.rs, 2, perftPosition)
		var got []string
		for _, a := range s.AppendLegal(nil) {
			got = append(got, a.String())
		}
		if !slices.Equal(got, tc.depth1) {
			t.Errorf("%v: legal actions %v, want %v", tc.rs, got, tc.depth1)
		}
		for d := 1; d <= 3; d++ {
			if n := perft(s, d); n != tc.total[d-1] {
				t.Errorf("%v: perft(%d) = %d, want %d", tc.rs, d, n, tc.total[d-1])
			}
			if div := perftDivide(s, d); !maps.Equal(div, tc.divide[d-1]) {
				t.Errorf("%v: perft(%d) by first action %v, want %v", tc.rs, d, div, tc.divide[d-1])
			}
		}
	}
	// The transposition the count relies on: 8s onto 9h then 7s onto it
	// reaches the same position as 7s onto 8s then both onto 9h.
	a := pos(t, env.Classic, 2, perftPosition)
	step(t, &a, "2>1x1")
	step(t, &a, "3>1x1")
	b := pos(t, env.Classic, 2, perftPosition)
	step(t, &b, "3>2x1")
	step(t, &b, "2>1x2")
	if a != b {
		t.Errorf("the two move orders differ:\n%s\n%s", a.Render(), b.Render())
	}
}

package agents

import (
	"strings"
	"testing"

	"github.com/spiderenv/spider/env"
)

// TestSearchReplansOffItsLine: when the position is not the one its plan
// led to (a hint whose player moved otherwise), search plans anew rather
// than play the next move of a line meant for another position, even
// where that move is still legal.
func TestSearchReplansOffItsLine(t *testing.T) {
	r := env.MustRules(env.Options{Suits: 1, MaxSteps: 300})
	tried := 0
	for seed := uint64(1); seed <= 40 && tried < 5; seed++ {
		s := env.NewGame(r, seed)
		a := &Search{Nodes: 2000}
		a.Begin(seed)
		for move := 0; move < 60 && !s.Over(); move++ {
			legal := s.AppendLegal(nil)
			d := a.Act(NewView(&s, legal, 0, false))
			if len(a.plan) > 0 {
				// Another move that shows nothing new and keeps the plan's
				// next move legal.
				for _, m := range legal {
					if m == d.Action || m == env.Deal {
						continue
					}
					w := s
					down := w.TotalFaceDown()
					w.Step(m)
					if w.TotalFaceDown() != down || w.Over() || !w.Legal(a.plan[0]) || w.Key() == a.want {
						continue
					}
					tried++
					b := *a
					b.plan = append([]env.Action(nil), a.plan...)
					got := b.Act(NewView(&w, w.AppendLegal(nil), m, true))
					if strings.HasPrefix(got.Reason, "continues") {
						t.Fatalf("seed %d move %d: after %v instead of %v, search follows its old plan (%v)", seed, move, m, d.Action, got.Action)
					}
					break
				}
			}
			s.Step(d.Action)
		}
	}
	if tried == 0 {
		t.Fatal("no position off a plan was found: the test saw nothing")
	}
}

// TestSearchRevealValueIsTheSameForEveryTurnedRank: the value of a move
// that turns a card cannot depend on which card the sampled game put
// there, for any of the ranks it could be.
func TestSearchRevealValueIsTheSameForEveryTurnedRank(t *testing.T) {
	r := env.MustRules(env.Options{Suits: 1})
	a := &Search{}
	vals := map[string]int{}
	for _, under := range []string{"As", "2s", "3s", "4s", "5s", "6s", "7s", "8s", "9s", "Ts", "Js", "Qs", "Ks"} {
		s, err := env.ParseState(r, "1: "+under+" | 9s 8s\n2: | Ts\n3: | Ks\n4: | Ks\n5: | Ks\n6: | Ks\n7: | Ks\n8: | Ks\n9: | Ks\n10: | Ks\nstock: 2s 2s 2s 2s 2s 2s 2s 2s 2s 2s")
		if err != nil {
			t.Fatal(err)
		}
		next := s
		if _, err := next.Step(env.MoveAction(0, 1, 2)); err != nil {
			t.Fatal(err)
		}
		vals[under] = a.revealValue(&s, &next)
	}
	for k, v := range vals {
		if v != vals["As"] {
			t.Fatalf("the reveal is worth %d over a %s, %d over an As (all: %v)", v, k, vals["As"], vals)
		}
	}
}

// TestSearchReasonsAreInTheTable: every reason search gives along its
// games is one of planReasons' lines or their plain form, never empty, so
// a reason added to search without its plan forms is caught.
func TestSearchReasonsAreInTheTable(t *testing.T) {
	known := map[string]bool{}
	for why, forms := range planReasons {
		known[why], known[forms[0]], known[forms[1]] = true, true, true
	}
	seen := map[string]bool{}
	for _, suits := range []int{1, 2} {
		s := env.NewGame(env.MustRules(env.Options{Suits: suits}), 5)
		a := &Search{Nodes: 2000}
		a.Begin(5)
		var last env.Action
		for move := 0; move < 150 && !s.Over(); move++ {
			d := a.Act(NewView(&s, s.AppendLegal(nil), last, move > 0))
			if !known[d.Reason] {
				t.Fatalf("%d suits, move %d: reason %q is not in planReasons", suits, move, d.Reason)
			}
			seen[d.Reason] = true
			s.Step(d.Action)
			last = d.Action
		}
	}
	if len(seen) < 3 {
		t.Fatalf("the games gave only the reasons %v", seen)
	}
}

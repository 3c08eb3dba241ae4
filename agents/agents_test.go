package agents

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/spiderenv/spider/env"
	"github.com/spiderenv/spider/env/envtest"
)

func configs() []env.Rules { return envtest.Configurations(250, false) }

// asPolicy runs agent a under the conformance checker, which checks every
// invariant after each of its moves (and that each move is legal).
func asPolicy(a Agent) envtest.Policy {
	var last env.Action
	has, games := false, uint64(0)
	return func(s *env.State, mask []uint8) env.Action {
		if s.Steps() == 0 {
			games++
			a.Begin(games)
			has = false
		}
		d := a.Act(NewView(s, env.AppendMasked(nil, mask), last, has))
		last, has = d.Action, true
		return d.Action
	}
}

func TestAgentsConformance(t *testing.T) {
	for _, name := range Names() {
		m, _ := New(name)
		for _, r := range configs() {
			t.Run(fmt.Sprint(name, "/", r), func(t *testing.T) {
				t.Parallel()
				st := envtest.Check(t, r, asPolicy(m()), envtest.Config{Games: 3, Seed: 40})
				if st.Steps == 0 {
					t.Fatal("no step played")
				}
			})
		}
	}
}

// TestAgentsNeverReadHiddenCards plays each agent on a game and, in
// lockstep, a second instance on the same game with its unseen cards dealt
// anew before every decision: the choices must be the same.
func TestAgentsNeverReadHiddenCards(t *testing.T) {
	for _, name := range Names() {
		m, _ := New(name)
		for _, suits := range []int{1, 4} {
			r := env.MustRules(env.Options{Suits: suits, MaxSteps: 200})
			for seed := uint64(0); seed < 4; seed++ {
				real, twin := m(), m()
				real.Begin(seed)
				twin.Begin(seed)
				s := env.NewGame(r, seed)
				var legal []env.Action
				for step := 0; !s.Over(); step++ {
					legal = s.AppendLegal(legal[:0])
					other := s.Resample(uint64(step) + 1000*seed)
					if other == s && s.TotalFaceDown()+s.StockLeft() > 10 {
						t.Fatal("the twin should differ in its hidden cards")
					}
					d1 := real.Act(NewView(&s, legal, 0, false))
					d2 := twin.Act(NewView(&other, legal, 0, false))
					if d1 != d2 {
						t.Fatalf("%s, %d suits, seed %d, step %d: %v with the real cards, %v with others", name, suits, seed, step, d1, d2)
					}
					if _, err := s.Step(d1.Action); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
	}
}

func TestAgentsAreDeterministic(t *testing.T) {
	r := env.MustRules(env.Options{Suits: 2, MaxSteps: 300})
	for _, name := range Names() {
		m, _ := New(name)
		a := Play(r, 9, m())
		b := Play(r, 9, m())
		if !slices.Equal(a.Actions, b.Actions) || a.Score != b.Score {
			t.Errorf("%s played seed 9 two different ways", name)
		}
		ag := m()
		c := Play(r, 9, ag)
		d := Play(r, 9, ag) // reused after Begin: the same game again
		if !slices.Equal(c.Actions, d.Actions) {
			t.Errorf("%s does not start afresh on Begin", name)
		}
	}
}

func TestGreedyBeatsRandom(t *testing.T) {
	r := env.MustRules(env.Options{Suits: 1})
	seeds := make([]uint64, 30)
	for i := range seeds {
		seeds[i] = uint64(i)
	}
	ev, err := Evaluate(context.Background(), r, []string{"random", "greedy"}, seeds, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	rw, gw, gr, rr := 0, 0, 0, 0
	for i := range seeds {
		if ev.Results[0][i].Won {
			rw++
		}
		if ev.Results[1][i].Won {
			gw++
		}
		rr += ev.Results[0][i].Runs
		gr += ev.Results[1][i].Runs
		if ev.Results[0][i].Seed != seeds[i] || ev.Results[1][i].Seed != seeds[i] {
			t.Fatal("results are not paired by seed")
		}
	}
	if gw <= rw || gr <= 2*rr || gw < 3 {
		t.Fatalf("greedy won %d and completed %d runs; random %d and %d", gw, gr, rw, rr)
	}
}

func TestEvaluateStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := env.MustRules(env.Options{Suits: 1})
	if _, err := Evaluate(ctx, r, []string{"random"}, []uint64{1, 2, 3}, 1, nil); err == nil {
		t.Fatal("a cancelled evaluation returned no error")
	}
	if _, err := Evaluate(context.Background(), r, []string{"chess"}, []uint64{1}, 1, nil); err == nil {
		t.Fatal("an unknown policy was accepted")
	}
}

func TestGreedyReasons(t *testing.T) {
	r := env.MustRules(env.Options{Suits: 2})
	s, err := env.ParseState(r, "1: | 9s\n2: 3h | 8s\n3: | Kh\n4: | Kh\n5: | Kh\n6: | Kh\n7: | Kh\n8: | Kh\n9: | Kh\n10: | Kh\nstock: 2h 2h 2h 2h 2h 2h 2h 2h 2h 2h")
	if err != nil {
		t.Fatal(err)
	}
	d := (&Greedy{}).Act(NewView(&s, s.AppendLegal(nil), 0, false))
	if d.Action != env.MoveAction(1, 0, 1) || d.Reason != "turns a face-down card" {
		t.Fatalf("greedy chose %v because %q; want 2>1x1 to turn the 3h", d.Action, d.Reason)
	}
}

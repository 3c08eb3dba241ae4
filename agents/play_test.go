package agents

import (
	"runtime"
	"slices"
	"testing"

	"github.com/spiderenv/spider/agents/nn"
	"github.com/spiderenv/spider/env"
)

// TestPlayVisitSeesEveryDecision plays one deal with and without a
// visitor: the results are the same, and the visitor sees each position
// before its action, with its legal actions and the decision played.
func TestPlayVisitSeesEveryDecision(t *testing.T) {
	r := env.MustRules(env.Options{Suits: 2, MaxSteps: 200})
	want := Play(r, 5, &Greedy{})
	var states []env.State
	var actions []env.Action
	got := PlayVisit(r, 5, &Greedy{}, func(s *env.State, legal []env.Action, d Decision) {
		if !slices.Equal(legal, s.AppendLegal(nil)) || !slices.Contains(legal, d.Action) || d.Reason == "" {
			t.Fatalf("move %d: legal %v, state's %v, decision %+v", len(states), legal, s.AppendLegal(nil), d)
		}
		states = append(states, *s)
		actions = append(actions, d.Action)
	})
	got.Elapsed, want.Elapsed = 0, 0
	if !slices.Equal(got.Actions, want.Actions) || got.Score != want.Score || got.Runs != want.Runs || got.Won != want.Won || got.Moves != want.Moves {
		t.Fatalf("PlayVisit gave %+v, Play %+v", got, want)
	}
	if !slices.Equal(actions, want.Actions) {
		t.Fatalf("the visitor saw %d decisions, the game has %d actions", len(actions), len(want.Actions))
	}
	s := env.NewGame(r, 5)
	for i, a := range actions {
		if s != states[i] {
			t.Fatalf("move %d: the visitor saw another position than the game's", i)
		}
		s.Step(a)
	}
}

// TestMoveBytes: a game in play holds less than MoveBytes a move, for the
// players that hold most (greedy and nn: remember the positions they saw),
// so that a command counting MoveBytes a move up to the step limit counts
// enough. The live heap is read every 5,000 moves, after a collection;
// MoveBytes leaves a third more for a map's or a list's copy as it grows.
func TestMoveBytes(t *testing.T) {
	if testing.Short() {
		t.Skip("plays 40,000 moves of two players")
	}
	const moves = 40_000
	r := env.MustRules(env.Options{Suits: 1, MaxSteps: moves})
	net, err := nn.New(nn.SpecFor(r, []int{16}), 1)
	if err != nil {
		t.Fatal(err)
	}
	neural, err := NeuralMaker(net)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct {
		name string
		a    Agent
	}{{"greedy", &Greedy{}}, {"nn", neural()}} {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		base, most := ms.HeapAlloc, 0.0
		n := 0
		res := PlayVisit(r, 3, p.a, func(*env.State, []env.Action, Decision) {
			if n++; n%5000 == 0 {
				runtime.GC()
				runtime.ReadMemStats(&ms)
				most = max(most, float64(ms.HeapAlloc-min(ms.HeapAlloc, base))/float64(n))
			}
		})
		if res.Moves != moves {
			t.Fatalf("%s: the game ended after %d moves, not at the step limit", p.name, res.Moves)
		}
		t.Logf("%s: at most %.1f bytes a move held", p.name, most)
		if most > MoveBytes*3/4 || most < 8 {
			t.Errorf("%s held %.1f bytes a move: MoveBytes %d should be a third above it", p.name, most, MoveBytes)
		}
	}
}

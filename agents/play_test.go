package agents

import (
	"slices"
	"testing"

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

package agents

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/spiderenv/spider/env"
)

// recorder is a batch agent that plays each game's first legal action and
// checks what each call tells it of its games: New on a slot's first
// decision only, and the View's last action the one it chose there before.
// On call cancelAt (if > 0) it cancels the evaluation and fails the call.
type recorder struct {
	t        *testing.T
	width    int
	last     map[int]env.Action // by slot, the action played there last
	calls    int
	cancelAt int
	cancel   context.CancelFunc
	panicAt  int // a call that panics, as a batch agent with a bug
}

func (*recorder) Name() string { return "recorder" }
func (a *recorder) Width() int { return a.width }
func (a *recorder) ActBatch(ctx context.Context, games []BatchGame, actions []env.Action) error {
	a.calls++
	if a.calls == a.cancelAt {
		a.cancel()
		return ctx.Err()
	}
	if a.calls == a.panicAt {
		panic("recorder: a bug")
	}
	for i, g := range games {
		last, has := g.View.Last()
		prev, played := a.last[g.Slot]
		switch {
		case g.New && g.View.Steps() != 0, !g.New && g.View.Steps() == 0:
			a.t.Errorf("call %d, slot %d: New %v at step %d", a.calls, g.Slot, g.New, g.View.Steps())
		case g.New && has:
			a.t.Errorf("call %d, slot %d: a new game shows a last action %v", a.calls, g.Slot, last)
		case !g.New && (!has || !played || last != prev):
			a.t.Errorf("call %d, slot %d: last action %v (known %v), want %v, played there", a.calls, g.Slot, last, has, prev)
		}
		actions[i] = g.View.Legal()[0]
		a.last[g.Slot] = actions[i]
	}
	return nil
}

// TestBatchAgentsSeeEachGamesHistory plays a batch agent on more deals
// than its width, so slots are reused: each call must mark a slot's first
// decision New and no other, and show every later decision the action the
// agent played before in that slot, as play does for agents one at a time
// (Greedy and search use it not to undo their last move).
func TestBatchAgentsSeeEachGamesHistory(t *testing.T) {
	r := env.MustRules(env.Options{Suits: 1, MaxSteps: 30})
	a := &recorder{t: t, width: 2, last: map[int]env.Action{}}
	ev, err := EvaluatePolicies(context.Background(), r, []Policy{{Name: "recorder", Batch: a}}, []uint64{1, 2, 3, 4, 5}, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, res := range ev.Results[0] {
		if res.Failure != "" || res.Moves != 30 {
			t.Fatalf("deal %d: %d moves, failure %q; want 30 moves and none", res.Seed, res.Moves, res.Failure)
		}
	}
}

// TestBatchCancelledCallFailsNoGame: a call cut short by the evaluation's
// own stop (the agent returns the context's error) is not the agent's
// failure: the games in flight are dropped, not recorded as failed games.
func TestBatchCancelledCallFailsNoGame(t *testing.T) {
	r := env.MustRules(env.Options{Suits: 1, MaxSteps: 30})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a := &recorder{t: t, width: 2, last: map[int]env.Action{}, cancelAt: 40, cancel: cancel}
	var failed []string
	_, err := EvaluateEach(ctx, r, []Policy{{Name: "recorder", Batch: a}}, []uint64{1, 2, 3, 4, 5}, 1, nil, func(_, g int, res *Result) {
		if res.Failure != "" {
			failed = append(failed, res.Failure)
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("stopped mid-call: %v, want context.Canceled", err)
	}
	if len(failed) > 0 {
		t.Fatalf("the stop failed %d games in flight: %q", len(failed), failed)
	}
}

// TestBatchAgentPanicFailsItsCallsGames: a batch agent's panic fails the
// games of that call, with the panic and where it came from as their
// reason, and the evaluation goes on with its next games; it ran on a
// goroutine of the evaluation's own, where it would have ended the
// process.
func TestBatchAgentPanicFailsItsCallsGames(t *testing.T) {
	r := env.MustRules(env.Options{Suits: 1, MaxSteps: 30})
	a := &recorder{t: t, width: 2, last: map[int]env.Action{}, panicAt: 3}
	ev, err := EvaluatePolicies(context.Background(), r, []Policy{{Name: "recorder", Batch: a}}, []uint64{1, 2, 3, 4, 5}, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	failed := 0
	for _, res := range ev.Results[0] {
		switch {
		case res.Failure == "" && res.Moves == 30:
		case strings.HasPrefix(res.Failure, "panic: recorder: a bug (github.com/spiderenv/spider/agents.(*recorder).ActBatch at batch_test.go:") && res.Moves == 2:
			// Counted at the lowest score it could have ended with: 2
			// moves played, 28 left, a point each (not the 498 it froze).
			if res.Score != env.StartScore-30 {
				t.Errorf("deal %d failed at score %d; want %d", res.Seed, res.Score, env.StartScore-30)
			}
			failed++
		default:
			t.Errorf("deal %d: %d moves, failure %q", res.Seed, res.Moves, res.Failure)
		}
	}
	if failed != 2 {
		t.Fatalf("%d games failed; want the 2 of the call that panicked", failed)
	}
}

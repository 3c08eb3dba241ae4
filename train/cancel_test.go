package train

import (
	"context"
	"errors"
	"testing"
	"time"
)

// runCancelled runs tr, cancels it after wait, and returns how long Run
// took to return after the cancel.
func runCancelled(t *testing.T, tr *Trainer, wait time.Duration) time.Duration {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- tr.Run(ctx, until(1), nil) }()
	time.Sleep(wait)
	cancel()
	cancelled := time.Now()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("a cancelled run returned %v, want context.Canceled", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the run did not stop 30 s after its context was cancelled")
	}
	if tr.Consistent() {
		t.Fatal("a run stopped inside a phase reports a consistent state")
	}
	return time.Since(cancelled)
}

// TestCancelStopsAnIteration cancels a run during an iteration that takes
// seconds (a long rollout and four passes over it): Run must return
// within a second, abandoning the iteration, not finish it.
func TestCancelStopsAnIteration(t *testing.T) {
	c := DefaultConfig()
	c.Games, c.Rollout, c.Minibatch, c.Epochs, c.ValEvery = 64, 256, 512, 4, 0
	tr, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	took := runCancelled(t, tr, 300*time.Millisecond)
	t.Logf("returned %v after the cancel", took)
	if took > raceSlowdown*time.Second {
		t.Fatalf("the run returned %v after its context was cancelled", took)
	}
	if tr.Iterations() != 0 {
		t.Fatalf("%d iterations done; the one cancelled must not count", tr.Iterations())
	}
}

// TestCancelStopsTheWarmStartMidGame cancels a warm start whose search
// teacher plays four-suit games of seconds each: the games in flight must
// stop at their next move (one search plan, a few hundred ms), not run to
// their end (half a minute).
func TestCancelStopsTheWarmStartMidGame(t *testing.T) {
	c := tinyConfig()
	c.Game.Suits, c.Game.MaxSteps = 4, 1000
	c.CloneGames, c.Teacher = 8, "search"
	tr, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	took := runCancelled(t, tr, 200*time.Millisecond)
	t.Logf("returned %v after the cancel", took)
	if took > raceSlowdown*2*time.Second {
		t.Fatalf("the warm start returned %v after its context was cancelled", took)
	}
}

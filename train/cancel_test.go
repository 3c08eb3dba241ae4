package train

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
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

// TestCancelDuringValidationKeepsThePhase cancels a run as the validation
// after its warm start begins: the warm start is kept without its
// validation (after sees it, with ValGames 0), the trainer is consistent,
// and a run resumed from the checkpoint saved there, which runs the
// validation cut short first (Revalidate), ends with the weights and the
// validations of a run never stopped: without it the warm start was never
// validated, and the best network was another.
func TestCancelDuringValidationKeepsThePhase(t *testing.T) {
	c := tinyConfig()
	c.ValEvery, c.ValGames = 1, 50
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	testValidating = cancel
	defer func() { testValidating = nil }()
	tr, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	path := filepath.Join(t.TempDir(), "run.ckpt")
	var seen []Metrics
	err = tr.Run(ctx, until(2), func(m Metrics) error { seen = append(seen, m); return tr.Save(path) })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run returned %v, want context.Canceled", err)
	}
	if !tr.Consistent() || len(seen) != 1 || seen[0].Phase != "clone" || seen[0].ValGames != 0 || len(tr.History) != 1 {
		t.Fatalf("consistent %v, after saw %+v, history %d: want the warm start kept without its validation", tr.Consistent(), seen, len(tr.History))
	}
	testValidating = nil
	want := c
	resumed, err := Resume(path, &want)
	if err != nil {
		t.Fatal(err)
	}
	defer resumed.Close()
	if ran, err := resumed.Revalidate(context.Background()); !ran || err != nil {
		t.Fatalf("Revalidate after a cut validation: ran %v, %v", ran, err)
	}
	if ran, err := resumed.Revalidate(context.Background()); ran || err != nil {
		t.Fatalf("Revalidate a second time: ran %v, %v; want nothing to do", ran, err)
	}
	if err := resumed.Run(context.Background(), until(2), nil); err != nil {
		t.Fatal(err)
	}
	straight, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	defer straight.Close()
	if err := straight.Run(context.Background(), until(2), nil); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(weights(straight.Net), weights(resumed.Net)) {
		t.Fatal("the run resumed after a cancelled validation ends with other weights than the uninterrupted run")
	}
	if len(straight.History) != len(resumed.History) {
		t.Fatalf("%d phases resumed, %d straight", len(resumed.History), len(straight.History))
	}
	for i, m := range straight.History {
		r := resumed.History[i]
		if m.ValGames != r.ValGames || m.ValWinRate != r.ValWinRate || m.ValRuns != r.ValRuns {
			t.Errorf("phase %d (%s): validation %d deals, %v won, %v runs resumed; %d, %v, %v straight", i, m.Phase, r.ValGames, r.ValWinRate, r.ValRuns, m.ValGames, m.ValWinRate, m.ValRuns)
		}
	}
}

// TestStopIsCheckedBeforeEveryPhase: a budget that is spent (stop true
// from the start, as --time is once it has passed) starts no phase, not
// the warm start nor a DAgger round, which can take half an hour each.
func TestStopIsCheckedBeforeEveryPhase(t *testing.T) {
	c := tinyConfig()
	c.DaggerRounds, c.DaggerGames = 2, 2
	tr, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	calls := 0
	// Spent after the warm start: no DAgger round may follow.
	stop := func(int, int64) bool { calls++; return calls > 1 }
	if err := tr.Run(context.Background(), stop, nil); err != nil {
		t.Fatal(err)
	}
	if len(tr.History) != 1 || tr.History[0].Phase != "clone" || !tr.Consistent() {
		t.Fatalf("phases run: %d (want only the warm start), consistent %v", len(tr.History), tr.Consistent())
	}
	fresh, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if err := fresh.Run(context.Background(), func(int, int64) bool { return true }, nil); err != nil || len(fresh.History) != 0 {
		t.Fatalf("a budget spent from the start ran %d phases: %v", len(fresh.History), err)
	}
}

// TestRunWithoutStop: a nil stop trains on until after ends the run, as
// Run's documentation says, rather than panicking at the first phase.
func TestRunWithoutStop(t *testing.T) {
	tr, err := New(tinyConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	enough := errors.New("enough")
	err = tr.Run(context.Background(), nil, func(Metrics) error {
		if tr.Iterations() >= 2 {
			return enough
		}
		return nil
	})
	if !errors.Is(err, enough) || tr.Iterations() != 2 {
		t.Fatalf("Run(ctx, nil, after): %v after %d iterations; want after's error after 2", err, tr.Iterations())
	}
}

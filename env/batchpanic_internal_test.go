package env

import (
	"fmt"
	"strings"
	"testing"
)

// TestBatchWorkerPanicReachesCaller makes two workers of a batch panic in
// the middle of a step: the first one's panic must come out of Step on the
// caller's goroutine (where a server recovers it for that connection
// alone), not end the process from the worker's, and the batch must still
// reset and step afterwards, the other panic dropped with it.
func TestBatchWorkerPanicReachesCaller(t *testing.T) {
	b, err := NewBatch(MustRules(Options{}), BatchOptions{N: 8, Workers: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	b.Reset(1)
	actions := make([]Action, b.N())
	b.SampleLegal(actions)
	testPhase = func(w int, p phase) {
		if (w == 2 || w == 3) && p == phaseStep {
			panic(fmt.Sprintf("boom%d", w))
		}
	}
	defer func() { testPhase = nil }()
	func() {
		defer func() {
			v := recover()
			if msg := fmt.Sprint(v); !strings.HasPrefix(msg, "env: batch worker 2: boom2\n") || !strings.Contains(msg, "goroutine") {
				t.Fatalf("Step panicked with %q; want worker 2's panic and its stack", msg)
			}
		}()
		b.Step(actions)
		t.Fatal("Step returned")
	}()
	testPhase = nil
	b.Reset(2)
	b.SampleLegal(actions)
	if err := b.Step(actions); err != nil {
		t.Fatalf("a step after the panic: %v", err)
	}
}

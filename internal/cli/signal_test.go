package cli

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// lockedBuffer is a buffer written by one goroutine and read by another.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestInterruptible: the first signal cancels the context and says so at
// once; the second exits with the signal's code.
func TestInterruptible(t *testing.T) {
	sigs := make(chan os.Signal, 2)
	var stderr lockedBuffer
	codes := make(chan int, 1)
	ctx, stop := interruptible(context.Background(), "spider train", sigs, 0, &stderr, func(code int) { codes <- code })
	defer stop()
	var ran, removed atomic.Bool
	atExit(ctx, func() { ran.Store(true) })
	atExit(ctx, func() { removed.Store(true) })()
	sigs <- os.Interrupt
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the first signal did not cancel the context")
	}
	// stderr is no terminal here: the line begins it, with no empty line.
	if want := "spider train: stopping (interrupt): finishing cleanly; press Ctrl-C again to exit at once"; !strings.HasPrefix(stderr.String(), want) {
		t.Errorf("stderr %q does not begin with %q", stderr.String(), want)
	}
	select {
	case code := <-codes:
		t.Fatalf("exited with %d after one signal", code)
	default:
	}
	sigs <- syscall.SIGTERM
	select {
	case code := <-codes:
		if code != 128+int(syscall.SIGTERM) {
			t.Errorf("exit code %d after SIGTERM, want %d", code, 128+int(syscall.SIGTERM))
		}
		if !ran.Load() || removed.Load() {
			t.Errorf("before exiting: the hook ran %v (want true), the removed one %v (want false)", ran.Load(), removed.Load())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the second signal did not exit")
	}
}

// TestInterruptibleHookCannotHoldTheExit: a hook that never returns (a
// file system that hangs) delays the second signal's exit by the limit,
// not for ever.
func TestInterruptibleHookCannotHoldTheExit(t *testing.T) {
	sigs := make(chan os.Signal, 2)
	codes := make(chan int, 1)
	ctx, stop := interruptible(context.Background(), "spider serve", sigs, 0, io.Discard, func(code int) { codes <- code })
	defer stop()
	hang := make(chan struct{})
	defer close(hang)
	atExit(ctx, func() { <-hang })
	sigs <- os.Interrupt
	<-ctx.Done()
	sigs <- os.Interrupt
	select {
	case code := <-codes:
		if code != 128+int(syscall.SIGINT) {
			t.Errorf("exit code %d, want %d", code, 128+int(syscall.SIGINT))
		}
	case <-time.After(exitHooksLimit + 5*time.Second):
		t.Fatal("a hook that hangs kept the second signal from exiting")
	}
}

// TestInterruptibleRepeatedSignal: a signal delivered twice at once (as
// coreutils' timeout delivers it, to the command and to its process
// group) stops the command cleanly, as one does; a later one still exits.
func TestInterruptibleRepeatedSignal(t *testing.T) {
	sigs := make(chan os.Signal, 2)
	var stderr lockedBuffer
	codes := make(chan int, 1)
	ctx, stop := interruptible(context.Background(), "spider eval", sigs, repeatedSignal, &stderr, func(code int) { codes <- code })
	defer stop()
	sigs <- os.Interrupt
	sigs <- os.Interrupt
	<-ctx.Done()
	select {
	case code := <-codes:
		t.Fatalf("exited with %d on a signal delivered twice at once", code)
	case <-time.After(2 * repeatedSignal):
	}
	if strings.Contains(stderr.String(), "exiting at once") {
		t.Fatalf("stderr %q", stderr.String())
	}
	sigs <- os.Interrupt
	select {
	case code := <-codes:
		if code != 128+int(syscall.SIGINT) {
			t.Errorf("exit code %d, want %d", code, 128+int(syscall.SIGINT))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a second Ctrl-C after the first did not exit")
	}
}

// TestNoErrorAfterExitingAtOnce: once a second signal is exiting, the
// command's error (a rename whose temporary the exit removed) is not
// written after "exiting at once"; before it, it is.
func TestNoErrorAfterExitingAtOnce(t *testing.T) {
	sigs := make(chan os.Signal, 2)
	codes := make(chan int, 1)
	ctx, stop := interruptible(context.Background(), "spider eval", sigs, 0, io.Discard, func(code int) { codes <- code })
	defer stop()
	ran := make(chan struct{}, 2)
	unlessExiting(ctx, func() { ran <- struct{}{} })
	if len(ran) != 1 {
		t.Fatal("an error before any signal was not written")
	}
	sigs <- os.Interrupt
	<-ctx.Done()
	unlessExiting(ctx, func() { ran <- struct{}{} })
	if len(ran) != 2 {
		t.Fatal("an error after the first signal was not written")
	}
	<-ran
	<-ran
	sigs <- os.Interrupt
	<-codes
	go unlessExiting(ctx, func() { ran <- struct{}{} })
	select {
	case <-ran:
		t.Fatal("an error was written after exiting at once")
	case <-time.After(200 * time.Millisecond):
	}
}

// TestSecondSignalRemovesTemporariesUnderTheHooksLock: the second
// signal removes the temporaries of the writes in flight, which makes
// such a write fail. The command must not report that failure (and Main
// return 1) before the exit with the signal's code: the removal happens
// under the hooks' lock, which unlessExiting waits for. Removed before
// the lock was taken, a broken write was reported first in a few of
// three hundred tries.
func TestSecondSignalRemovesTemporariesUnderTheHooksLock(t *testing.T) {
	sigs := make(chan os.Signal, 2)
	codes := make(chan int, 1)
	ctx, stop := interruptible(context.Background(), "spider test", sigs, 0, io.Discard, func(code int) { codes <- code })
	defer stop()
	hooks := ctx.Value(exitHooksKey{}).(*exitHooks)
	var removed, lockedThen atomic.Bool
	real := removeInFlight
	removeInFlight = func() func() {
		removed.Store(true)
		if hooks.mu.TryLock() {
			hooks.mu.Unlock()
		} else {
			lockedThen.Store(true)
		}
		return real()
	}
	t.Cleanup(func() { removeInFlight = real })
	sigs <- os.Interrupt
	<-ctx.Done()
	sigs <- os.Interrupt
	<-codes
	if !removed.Load() || !lockedThen.Load() {
		t.Fatalf("temporaries removed %v, with the hooks' lock held %v; want both", removed.Load(), lockedThen.Load())
	}
}

//go:build unix

package msgpackcheck

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReadFileOfAPipeNoOneWritesReturns: a named pipe with no writer
// blocked ReadFile in open, where a Ctrl-C could not reach it; it now
// reads as an empty file at once.
func TestReadFileOfAPipeNoOneWritesReturns(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pipe")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skip("no named pipes here:", err)
	}
	done := make(chan error, 1)
	go func() {
		b, err := ReadFile(path, 1<<20)
		if err == nil && len(b) != 0 {
			err = errString("read " + string(b))
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil && !strings.Contains(err.Error(), path) {
			t.Fatalf("ReadFile of a pipe no one writes: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("ReadFile of a pipe no one writes is still waiting after 5 s")
	}
}

// TestOpenFileRefusesPipesUnlessAsked: OpenFile takes a named pipe only
// with pipes (ReadFile's process substitution), and never waits on one.
func TestOpenFileRefusesPipesUnlessAsked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pipe")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skip("no named pipes here:", err)
	}
	if f, _, err := OpenFile(path, false); err == nil || err.Error() != path+": a named pipe, not a regular file" {
		if f != nil {
			f.Close()
		}
		t.Fatalf("OpenFile(pipe, false): %v", err)
	}
	f, st, err := OpenFile(path, true)
	if err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("OpenFile(pipe, true): %v", err)
	}
	f.Close()
}

type errString string

func (e errString) Error() string { return string(e) }

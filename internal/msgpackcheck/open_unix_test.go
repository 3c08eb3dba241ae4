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

// TestReadFileRefusesAPipeOverItsLimit: a named pipe's size is not known
// before it is read (stat says 0), so ReadFile counts what it reads: one
// byte over the limit refuses it, without reading on to the pipe's end.
func TestReadFileRefusesAPipeOverItsLimit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pipe")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skip("no named pipes here:", err)
	}
	// Read and write, so the open does not wait for a reader, and the
	// pipe stays open for writing: ReadFile sees no end after the bytes.
	w, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.Write(make([]byte, 101)); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := ReadFile(path, 100)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || err.Error() != path+": more than 100 bytes, more than any valid file can have" {
			t.Fatalf("ReadFile of 101 bytes from a pipe, limit 100: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("ReadFile of a pipe over its limit is still reading after 5 s")
	}
}

type errString string

func (e errString) Error() string { return string(e) }

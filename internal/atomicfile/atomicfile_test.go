package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestWriteReplacesWholeAndLeavesNoTemporary(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	for _, data := range []string{"first", "second, longer"} {
		if err := Write(path, []byte(data)); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != data {
			t.Fatalf("read %q, %v; want %q", got, err, data)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("%d files in the folder; want only the target", len(ents))
	}
	if err := Write(filepath.Join(dir, "missing", "f"), nil); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("writing into a missing folder: %v, want a not-exist error", err)
	}
}

// TestWriteLongName writes a file whose name takes all of a file name's
// 255 bytes, in characters of several bytes: the temporary's name must
// fit as well.
func TestWriteLongName(t *testing.T) {
	dir := t.TempDir()
	for _, base := range []string{strings.Repeat("g", maxName-len(".spider")) + ".spider", strings.Repeat("é", maxName/2)} {
		path := filepath.Join(dir, base)
		if err := Write(path, []byte("x")); err != nil {
			t.Fatalf("a name of %d bytes: %v", len(base), err)
		}
		if got, err := os.ReadFile(path); err != nil || string(got) != "x" {
			t.Fatalf("read %q, %v", got, err)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Fatalf("%d files; want the 2 written and no temporary", len(ents))
	}
}

// TestWriteKeepsMode: a file replaced keeps its permission bits; a new
// one is 0644; a symbolic link at the name is replaced by the file, its
// target untouched.
func TestWriteKeepsMode(t *testing.T) {
	dir := t.TempDir()
	real, link := filepath.Join(dir, "real.md"), filepath.Join(dir, "link.md")
	if err := os.WriteFile(real, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(real, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Write(real, []byte("new")); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(real)
	if got, _ := os.ReadFile(real); err != nil || string(got) != "new" || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the file holds %q with mode %v (%v); want \"new\" with 0600", got, fi.Mode().Perm(), err)
	}
	if err := os.Symlink("real.md", link); err != nil {
		t.Fatal(err)
	}
	if err := Write(link, []byte("link")); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o644 {
		t.Fatalf("the link became %v (%v); want a file of 0644", fi.Mode(), err)
	}
	if got, _ := os.ReadFile(real); string(got) != "new" {
		t.Fatalf("the link's target holds %q", got)
	}
}

// TestTempPatternKeepsPartOfTheName: a long name that is not UTF-8 keeps
// most of itself in its temporary's name, so the sweep of stale
// temporaries still knows it for one.
func TestTempPatternKeepsPartOfTheName(t *testing.T) {
	base := "a" + strings.Repeat("\x80", maxName-1)
	p := tempPattern(base)
	if len(p)+9 > maxName || !strings.HasPrefix(p, ".a\x80") || strings.LastIndex(p, ".tmp-") < maxName/2 {
		t.Fatalf("pattern %q (%d bytes)", p, len(p))
	}
}

// TestRemoveInFlight removes a temporary being written, as a second
// Ctrl-C does: the Write fails, no temporary is left, and the old file
// stays whole.
func TestRemoveInFlight(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	if err := Write(path, []byte("old")); err != nil {
		t.Fatal(err)
	}
	beforeRename = func(string) { RemoveInFlight()() }
	defer func() { beforeRename = nil }()
	if err := Write(path, []byte("new")); err == nil {
		t.Fatal("a Write whose temporary was removed succeeded")
	}
	if got, err := os.ReadFile(path); err != nil || string(got) != "old" {
		t.Fatalf("read %q, %v; want the old file", got, err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("%d files; want the file alone", len(ents))
	}
}

// TestWriteFailingRenameLeavesNothing: when the rename fails (a folder
// stands at the name), Write returns the error and leaves no temporary,
// no open file and nothing in flight.
func TestWriteFailingRenameLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	if err := os.Mkdir(path, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(path, "inside"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, []byte("data")); err == nil {
		t.Fatal("a Write over a folder succeeded")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 || ents[0].Name() != "f" {
		t.Fatalf("%d files in the folder; want the folder f alone", len(ents))
	}
	inFlight.Range(func(name, _ any) bool {
		t.Errorf("%s is still in flight", name)
		return true
	})
}

// TestWriteClosesItsFiles: Writes leave no file open (the garbage
// collector, which would close a lost one, is held off) and nothing in
// flight.
func TestWriteClosesItsFiles(t *testing.T) {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd to count open files by")
	}
	before := len(ents)
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	path := filepath.Join(t.TempDir(), "f")
	for i := range 20 {
		if err := Write(path, []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if ents, _ := os.ReadDir("/proc/self/fd"); len(ents) > before {
		t.Fatalf("%d files open after 20 Writes, %d before", len(ents), before)
	}
	inFlight.Range(func(name, _ any) bool {
		t.Errorf("%s is still in flight after its Write", name)
		return true
	})
}

// TestTempPatternEveryLength: for a name of every length up to 255 bytes,
// in ASCII, in two-byte characters and not UTF-8, the temporary's name
// (with CreateTemp's ten digits at most) fits 255 bytes, keeps the whole
// name when it fits, is cut at a character's start, and keeps all of the
// name that fits but for at most three bytes of a character cut short.
func TestTempPatternEveryLength(t *testing.T) {
	for _, unit := range []string{"g", "é", "\x80"} {
		for n := 1; n <= maxName; n++ {
			base := strings.Repeat(unit, n/len(unit)+1)[:n]
			if unit != "\x80" && !utf8.ValidString(base) {
				base = base[:len(base)-1] // a whole number of é
			}
			p := tempPattern(base)
			name := strings.TrimSuffix(p, "*") + "4294967295"
			kept := strings.LastIndex(p, ".tmp-") - 1
			switch {
			case len(name) > maxName:
				t.Fatalf("%d bytes of %q: the temporary takes %d bytes", len(base), unit, len(name))
			case unit != "\x80" && !utf8.ValidString(name):
				t.Fatalf("%d bytes of %q: the temporary %q is not UTF-8", len(base), unit, name)
			case kept < len(base) && len(name) < maxName-3:
				t.Fatalf("%d bytes of %q: cut to %d, the temporary takes only %d bytes", len(base), unit, kept, len(name))
			case kept == len(base) && p != "."+base+p[1+len(base):]:
				t.Fatalf("%d bytes of %q: pattern %q", len(base), unit, p)
			}
		}
	}
}

// TestRemoveInFlightRemovesAll: with two Writes in flight at once, a
// second Ctrl-C removes both temporaries: both Writes fail and both old
// files stay whole.
func TestRemoveInFlightRemovesAll(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	for _, p := range []string{a, b} {
		if err := Write(p, []byte("old")); err != nil {
			t.Fatal(err)
		}
	}
	var inner error
	outer := true
	beforeRename = func(string) {
		if outer { // the first Write starts the second before its rename
			outer = false
			inner = Write(b, []byte("new"))
			return
		}
		RemoveInFlight()()
	}
	defer func() { beforeRename = nil }()
	if err := Write(a, []byte("new")); err == nil || inner == nil {
		t.Fatalf("Writes whose temporaries were removed: %v and %v; want both failed", err, inner)
	}
	for _, p := range []string{a, b} {
		if got, err := os.ReadFile(p); err != nil || string(got) != "old" {
			t.Fatalf("read %q, %v; want the old file", got, err)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Fatalf("%d files; want the two files alone", len(ents))
	}
}

// TestWriteAfterRemoveInFlightWaits: a Write that starts once the exit has
// removed what was in flight makes no new temporary (which the exit would
// leave behind); it waits until resume.
func TestWriteAfterRemoveInFlightWaits(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	resume := RemoveInFlight()
	done := make(chan error, 1)
	go func() { done <- Write(path, []byte("late")) }()
	select {
	case err := <-done:
		resume()
		t.Fatalf("a Write after RemoveInFlight went on: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("%d files made while exiting: %v", len(ents), ents)
	}
	resume()
	resume() // a second call changes nothing
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(path); err != nil || string(got) != "late" {
		t.Fatalf("read %q, %v after resume", got, err)
	}
}

// TestWriteSyncsTheFolderAfterTheRename checks that Write syncs the
// folder once the file is in place under its name: until then a crash of
// the machine may forget the rename. A failed rename syncs nothing.
func TestWriteSyncsTheFolderAfterTheRename(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	var synced []string
	real := syncDir
	syncDir = func(d string) {
		if got, err := os.ReadFile(path); err != nil || string(got) != "new" {
			t.Errorf("folder synced before the file was in place: %q, %v", got, err)
		}
		synced = append(synced, d)
		real(d)
	}
	t.Cleanup(func() { syncDir = real })
	if err := Write(path, []byte("new")); err != nil {
		t.Fatal(err)
	}
	if len(synced) != 1 || synced[0] != dir {
		t.Fatalf("folders synced %q; want [%q]", synced, dir)
	}
	if err := os.Mkdir(filepath.Join(dir, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "d", "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Write(filepath.Join(dir, "d"), []byte("new")); err == nil { // a rename over a full folder fails
		t.Fatal("Write over a folder that holds a file: no error")
	}
	if len(synced) != 1 {
		t.Fatalf("folders synced %q after a failed rename; want only the first", synced)
	}
}

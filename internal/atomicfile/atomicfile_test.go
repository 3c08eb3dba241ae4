package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	beforeRename = func(string) { RemoveInFlight() }
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

package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMakeFolderUndo: undo removes the folders makeFolder made, nested
// ones too, while they are empty, and nothing that was there before: a
// folder, or a link (a dangling one, which Stat would take for nothing).
func TestMakeFolderUndo(t *testing.T) {
	dir := t.TempDir()
	there := filepath.Join(dir, "there")
	if err := os.Mkdir(there, 0o755); err != nil {
		t.Fatal(err)
	}
	nested := filepath.Join(there, "a", "b", "c")
	undo, err := makeFolder(nested)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(nested); err != nil || !fi.IsDir() {
		t.Fatalf("%s not made: %v", nested, err)
	}
	undo()
	if _, err := os.Stat(filepath.Join(there, "a")); !os.IsNotExist(err) {
		t.Fatalf("undo left the folders it made: %v", err)
	}
	if _, err := os.Stat(there); err != nil {
		t.Fatalf("undo removed a folder that was there: %v", err)
	}

	// A file written inside stops undo at the first folder not empty.
	undo, err = makeFolder(nested)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(there, "a", "kept"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	undo()
	if _, err := os.Stat(filepath.Join(there, "a", "b")); !os.IsNotExist(err) {
		t.Fatalf("undo left the empty folders: %v", err)
	}
	if _, err := os.Stat(filepath.Join(there, "a", "kept")); err != nil {
		t.Fatalf("undo removed a folder with a file: %v", err)
	}

	link := filepath.Join(dir, "link")
	if err := os.Symlink(filepath.Join(dir, "nowhere", "deep"), link); err != nil {
		t.Fatal(err)
	}
	undo, err = makeFolder(link)
	if err == nil {
		t.Fatal("makeFolder made a folder through a dangling link")
	}
	undo()
	if _, err := os.Lstat(link); err != nil {
		t.Fatalf("the dangling link is gone: %v", err)
	}
}

// TestMakeFolderUndoesWhatItWalks: a path through ".." makes folders a
// cleaned path would not name, and undo removes them too; a makeFolder
// that fails partway removes what it made before it returns.
func TestMakeFolderUndoesWhatItWalks(t *testing.T) {
	dir := t.TempDir()
	undo, err := makeFolder(dir + "/x/y/../../z") // not Join, which cleans the path
	if err != nil {
		t.Fatal(err)
	}
	undo()
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("undo left %v", ents)
	}
	long := filepath.Join(dir, "n", "m", strings.Repeat("L", 300))
	if _, err := makeFolder(long); err == nil {
		t.Fatal("a name of 300 bytes was made")
	}
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := makeFolder(dir + "/p/../file"); err == nil {
		t.Fatal("a file was taken for a folder")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("a failed makeFolder left %v; want the file alone", ents)
	}
}

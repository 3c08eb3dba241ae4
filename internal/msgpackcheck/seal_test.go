package msgpackcheck

import (
	"errors"
	"io/fs"
	"strings"
	"testing"
)

// TestOpenFileNamesAnEmptyName: an empty path is said to be one; os's own
// error read "open : no such file or directory".
func TestOpenFileNamesAnEmptyName(t *testing.T) {
	if _, _, err := OpenFile("", true); err == nil || !errors.Is(err, fs.ErrNotExist) || !strings.HasPrefix(err.Error(), "an empty file name") {
		t.Fatalf("OpenFile(\"\"): %v", err)
	}
	if _, err := ReadFile("", 10); err == nil || !strings.HasPrefix(err.Error(), "an empty file name") {
		t.Fatalf("ReadFile(\"\"): %v", err)
	}
}

package cli

import (
	"errors"
	"os"
	"path/filepath"
)

// makeFolder makes path and any missing parents, as os.MkdirAll does, and
// returns undo, which removes again the folders it made, from path up, as
// long as they are empty: a run stopped or refused before it wrote
// anything leaves nothing behind, and never touches a folder (or a link)
// that was there before. undo does nothing once a file is written in path.
func makeFolder(path string) (undo func(), err error) {
	// The folders to make: path and each missing parent. Lstat, so that a
	// link, even a dangling one, counts as there.
	var made []string
	for p := filepath.Clean(path); ; p = filepath.Dir(p) {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			break
		}
		made = append(made, p)
		if filepath.Dir(p) == p {
			break
		}
	}
	if err := os.MkdirAll(path, 0o755); err != nil {
		return func() {}, err
	}
	return func() {
		for _, p := range made {
			if os.Remove(p) != nil { // not empty (or gone): stop there
				return
			}
		}
	}, nil
}

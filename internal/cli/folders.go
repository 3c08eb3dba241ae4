package cli

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

// makeFolder makes path and any missing parents, as os.MkdirAll does, and
// returns undo, which removes again the folders it made, innermost first,
// as long as they are empty: a run stopped or refused before it wrote
// anything leaves nothing behind, and never touches a folder (or a link)
// that was there before. undo stops at a folder a file was written in.
// On an error makeFolder has already undone what it made.
func makeFolder(path string) (undo func(), err error) {
	var made []string
	undo = func() {
		for i := len(made) - 1; i >= 0; i-- {
			if os.Remove(made[i]) != nil { // not empty (or gone): stop there
				return
			}
		}
	}
	// Every prefix of path as given, up to each separator and the whole:
	// "x/../f" goes through x, which a cleaned path would not name.
	for i := 1; i <= len(path); i++ {
		if i < len(path) && path[i] != os.PathSeparator {
			continue
		}
		p := path[:i]
		switch err := os.Mkdir(p, 0o755); {
		case err == nil:
			made = append(made, p)
		case errors.Is(err, fs.ErrExist):
			// There already: a folder, or a link (even a dangling one),
			// or a file, which the next Mkdir or the check below refuses.
		default:
			undo()
			return func() {}, err
		}
	}
	if fi, err := os.Stat(path); err != nil || !fi.IsDir() {
		undo()
		if err == nil {
			err = &fs.PathError{Op: "mkdir", Path: path, Err: syscall.ENOTDIR}
		}
		return func() {}, err
	}
	return undo, nil
}

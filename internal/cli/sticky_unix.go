//go:build unix

package cli

import (
	"os"
	"syscall"
)

// stickyRefusal says why the entry at path, which a write would replace
// by renaming a temporary over it, cannot be replaced, or "". In a folder
// with the sticky bit (as /tmp) only the entry's owner, the folder's or
// root may remove or replace it: the folder takes new files, so the
// probe passes, and the rename would fail only once the work is done.
func stickyRefusal(dir, path string) string {
	d, err := os.Stat(dir)
	if err != nil || d.Mode()&os.ModeSticky == 0 {
		return ""
	}
	f, err := os.Lstat(path)
	if err != nil {
		return "" // nothing there to replace
	}
	euid := os.Geteuid()
	ds, ok1 := d.Sys().(*syscall.Stat_t)
	fs, ok2 := f.Sys().(*syscall.Stat_t)
	if euid == 0 || !ok1 || !ok2 || int(ds.Uid) == euid || int(fs.Uid) == euid {
		return ""
	}
	return "is another user's file in a folder with the sticky bit (as /tmp), which only its owner may replace; give another file name"
}

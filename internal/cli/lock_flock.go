//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package cli

import (
	"errors"
	"os"
	"syscall"
)

// lockFolder takes an exclusive lock on the folder dir for as long as
// this process holds it, or until unlock: two training runs on one --out
// would interleave their checkpoints and metrics, and whichever saved
// last would silently drop the other's iterations. held is true when
// another process holds it. The lock is the kernel's (flock), so it goes
// with a process however it dies, and leaves no file in the folder. A
// folder that cannot be opened to lock (one its user may write in but not
// list), or a file system that has no such locks (some network ones), is
// used without.
func lockFolder(dir string) (unlock func(), held bool) {
	f, err := os.Open(dir)
	if err != nil {
		return func() {}, false
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return func() {}, errors.Is(err, syscall.EWOULDBLOCK)
	}
	return func() { f.Close() }, false
}

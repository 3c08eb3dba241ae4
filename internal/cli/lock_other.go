//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package cli

// lockFolder does nothing here: this system's locks are not flock's
// (lock_flock.go says why runs lock their folder).
func lockFolder(dir string) (unlock func(), held bool) {
	return func() {}, false
}

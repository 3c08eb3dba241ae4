//go:build !unix

package cli

// stickyRefusal is "" where there is no sticky bit.
func stickyRefusal(dir, path string) string { return "" }

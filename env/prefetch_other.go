//go:build !amd64

package env

// prefetch is a no-op where we have no prefetch instruction wired up.
func prefetch(addr uintptr) {}

//go:build !unix

package msgpackcheck

// openFlags is open_unix.go's for systems without named pipes' blocking
// open: none.
const openFlags = 0

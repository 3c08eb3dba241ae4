//go:build !unix

package cli

import "errors"

// makeFifo makes a named pipe at path, which only Unix systems have: here
// it fails, and the tests that call it leave that case out.
func makeFifo(path string) error { return errors.New("no named pipes here") }

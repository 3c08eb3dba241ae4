//go:build !unix

package cli

import "errors"

// makeFifo makes a named pipe at path, which only Unix systems have: the
// tests that call it are run on Unix.
func makeFifo(path string) error { return errors.New("no named pipes here") }

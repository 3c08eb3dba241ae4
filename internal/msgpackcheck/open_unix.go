//go:build unix

package msgpackcheck

import "syscall"

// openFlags opens a file without waiting: a named pipe no one writes to
// would block open itself, where no Ctrl-C reaches the program; opened so,
// it reads as empty instead. Reads of a pipe with a writer still wait for
// its bytes, and a regular file never waits.
const openFlags = syscall.O_NONBLOCK

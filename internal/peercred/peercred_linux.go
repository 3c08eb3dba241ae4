// Package peercred says which user is at the other end of a Unix socket
// or of a loopback TCP connection, for the server (which counts
// connections per user) and for eval's remote agents (which must be this
// user's).
package peercred

import (
	"net"
	"syscall"
)

// UnixUID returns the uid of the process at the other end of a Unix
// socket connection, which the kernel recorded when it connected
// (SO_PEERCRED), or false for another kind of connection or where the
// kernel does not say.
func UnixUID(c net.Conn) (int, bool) {
	if _, unix := c.LocalAddr().(*net.UnixAddr); !unix {
		// Linux answers SO_PEERCRED on any socket: on a TCP one with uid
		// 4294967295, which names no user.
		return 0, false
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return 0, false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return 0, false
	}
	var cred *syscall.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil || credErr != nil {
		return 0, false
	}
	return int(cred.Uid), true
}

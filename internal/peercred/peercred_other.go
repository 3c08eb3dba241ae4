//go:build !linux

// Package peercred says which user is at the other end of a Unix socket
// or of a loopback TCP connection, for the server (which counts
// connections per user) and for eval's remote agents (which must be this
// user's).
package peercred

import "net"

// UnixUID is known on Linux only: elsewhere it says nothing.
func UnixUID(net.Conn) (int, bool) { return 0, false }

// TCPPeerUID is known on Linux only: elsewhere it says nothing.
func TCPPeerUID(net.Conn) (int, bool) { return 0, false }

// TCPServerUID is known on Linux only: elsewhere it says nothing.
func TCPServerUID(net.Conn) (int, bool) { return 0, false }

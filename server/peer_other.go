//go:build !linux

package server

import "net"

// tcpPeerUID is known on Linux only; elsewhere a loopback peer is its
// address.
func tcpPeerUID(_, _ *net.TCPAddr) (int, bool) { return 0, false }

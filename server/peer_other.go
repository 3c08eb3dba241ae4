//go:build !linux

package server

import "net"

// unixPeerUID is known on Linux only; elsewhere every Unix socket peer is
// one peer.
func unixPeerUID(net.Conn) (int, bool) { return 0, false }

// tcpPeerUID is known on Linux only; elsewhere a loopback peer is its
// address.
func tcpPeerUID(_, _ *net.TCPAddr) (int, bool) { return 0, false }

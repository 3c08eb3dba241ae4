package server

import (
	"net"
	"strconv"

	"github.com/spiderenv/spider/internal/peercred"
)

// peerOf names who is at the other end of c, for the limit on connections
// per peer (Config.MaxPeerConns): the local user, by uid, for a Unix socket
// (SO_PEERCRED) and, on Linux, for TCP over loopback (the owner of the
// client's socket, peercred.TCPPeerUID); otherwise the remote address. Every
// local user reaches a loopback server from the same address, so without
// the uid one user's connections would count against everyone's.
func peerOf(c net.Conn) string {
	switch a := c.RemoteAddr().(type) {
	case *net.UnixAddr:
		if uid, ok := peercred.UnixUID(c); ok {
			return "user " + strconv.Itoa(uid)
		}
		return "the Unix socket's peer"
	case *net.TCPAddr:
		if uid, ok := peercred.TCPPeerUID(c); ok {
			return "user " + strconv.Itoa(uid)
		}
		return "address " + a.IP.String()
	case nil:
		return "an unnamed peer"
	}
	return "address " + c.RemoteAddr().String()
}

package peercred

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
)

// TCPPeerUID returns the uid that owns the other end of c, a loopback TCP
// connection a server accepted: the client's socket. It fails for a
// connection of another kind or not over loopback, and when the client has
// already closed its end.
func TCPPeerUID(c net.Conn) (int, bool) {
	remote, local, ok := loopback(c)
	if !ok {
		return 0, false
	}
	return tcpPeerUID(remote, local)
}

// TCPServerUID returns the uid that owns the server's side of c, a
// loopback TCP connection this process dialled: the server's end of c once
// the server has accepted it (the process that answers), else the socket
// listening at the address c reached (the server's end names no user
// until it is accepted). So a server that accepts and then closes its
// listener is still named. It fails for a connection of another kind or
// not over loopback, and when neither is found (a server in another
// network namespace, behind a forwarded port).
func TCPServerUID(c net.Conn) (int, bool) {
	remote, local, ok := loopback(c)
	if !ok {
		return 0, false
	}
	if uid, ok := tcpPeerUID(remote, local); ok {
		return uid, true
	}
	if !useDiag(remote, local) {
		return procListenerUID(remote)
	}
	return diagListenerUID(remote)
}

// loopback returns c's remote and local addresses when c is a TCP
// connection over loopback.
func loopback(c net.Conn) (remote, local *net.TCPAddr, ok bool) {
	remote, ok1 := c.RemoteAddr().(*net.TCPAddr)
	local, ok2 := c.LocalAddr().(*net.TCPAddr)
	if !ok1 || !ok2 || !remote.IP.IsLoopback() {
		return nil, nil, false
	}
	return remote, local, true
}

// tcpPeerUID returns the uid that owns the other end of a loopback TCP
// connection from remote to local (the client's end, seen from a server).
// It fails when its owner has already closed it, or has not accepted it
// yet. It asks the kernel for that one socket over netlink
// (sock_diag, a hash lookup: diagUID); only where that cannot be used does
// it read /proc/net/tcp (procUID), whose cost grows with every TCP socket
// on the machine, TIME_WAIT ones included: 30 ms a connection with 30,000
// of them, which any local user could open to slow every accept.
func tcpPeerUID(remote, local *net.TCPAddr) (int, bool) {
	if !useDiag(remote, local) {
		return procUID(remote, local)
	}
	return diagUID(remote, local)
}

// useDiag reports whether sock_diag answers here, probing with the
// connection's own end (from local to remote), which this process holds.
// Only a conclusive probe is kept for the life of the process: the own end
// found (netlink works), or missed by netlink while /proc lists it (it does
// not, as in a sandbox without it). A connection already gone decides
// nothing and is looked up by netlink, which fails at once: a client that
// connects and resets at once, which any user can make a server's first,
// turned netlink off for good, and every later accept read /proc.
func useDiag(remote, local *net.TCPAddr) bool {
	switch diagState.Load() {
	case diagYes:
		return true
	case diagNo:
		return false
	}
	if _, ok := diagUID(local, remote); ok {
		diagState.Store(diagYes)
		return true
	}
	if _, ok := procUID(local, remote); ok {
		diagState.Store(diagNo)
		return false
	}
	return true
}

// diagState is what useDiag has found: diagUnknown until a probe decides.
var diagState atomic.Int32

const (
	diagUnknown = iota
	diagYes
	diagNo
)

// Netlink's sock_diag, from linux/sock_diag.h and linux/inet_diag.h.
const (
	sockDiagByFamily = 20 // SOCK_DIAG_BY_FAMILY
	diagReqBytes     = 56 // struct inet_diag_req_v2
	diagMsgUID       = 64 // idiag_uid's offset in struct inet_diag_msg
	// diagInode is idiag_inode's offset. A socket no process holds any
	// more has none (0), and the kernel reports it with uid 0, root's: a
	// connection's TIME_WAIT end, or one its owner closed (a client that
	// hung up at once). Such an end names no user, so the peer is then
	// its address.
	diagInode    = diagMsgUID + 4
	diagNoCookie = ^uint32(0)
)

// diagUID returns the uid that owns the TCP socket whose local address is
// src and whose remote one is dst, asking the kernel for it by netlink
// (what ss does). It fails when there is no such socket, or when netlink
// cannot be used (a sandbox without it; useDiag then sends the lookups to
// /proc). An IPv4 pair is looked for among IPv4 sockets, then among IPv6
// ones as mapped addresses (a dual-stack listener's end is one).
func diagUID(src, dst *net.TCPAddr) (int, bool) {
	uid, _, ok := diagSocket(src, dst)
	return uid, ok
}

// diagSocket is diagUID, with the socket's inode.
func diagSocket(src, dst *net.TCPAddr) (uid int, inode uint32, ok bool) {
	if src.Port < 0 || src.Port > 0xFFFF || dst.Port < 0 || dst.Port > 0xFFFF {
		return 0, 0, false
	}
	fd, ok := diagOpen()
	if !ok {
		return 0, 0, false
	}
	defer syscall.Close(fd)
	if a, b := src.IP.To4(), dst.IP.To4(); a != nil && b != nil {
		if uid, inode, ok = diagAsk(fd, 1, syscall.AF_INET, src.Port, dst.Port, a, b, false); ok {
			return uid, inode, true
		}
	}
	a, b := src.IP.To16(), dst.IP.To16()
	if a == nil || b == nil {
		return 0, 0, false
	}
	return diagAsk(fd, 2, syscall.AF_INET6, src.Port, dst.Port, a, b, false)
}

// diagListenerUID returns the uid that owns the TCP socket listening at
// addr, on its address or on every address of its port, asking the kernel
// by netlink: a lookup with no remote end finds no connection, and the
// kernel then looks among the listeners, as it does for an incoming
// connection.
func diagListenerUID(addr *net.TCPAddr) (int, bool) {
	if addr.Port < 0 || addr.Port > 0xFFFF {
		return 0, false
	}
	fd, ok := diagOpen()
	if !ok {
		return 0, false
	}
	defer syscall.Close(fd)
	// Only the family of the address: an IPv4 lookup finds a dual-stack
	// listener too, and an IPv6 one for an IPv4 address could find only an
	// IPv6-only listener, which takes no IPv4 connection.
	if a := addr.IP.To4(); a != nil {
		uid, _, ok := diagAsk(fd, 1, syscall.AF_INET, addr.Port, 0, a, net.IPv4zero.To4(), true)
		return uid, ok
	}
	a := addr.IP.To16()
	if a == nil {
		return 0, false
	}
	uid, _, ok := diagAsk(fd, 2, syscall.AF_INET6, addr.Port, 0, a, net.IPv6zero, true)
	return uid, ok
}

// diagOpen opens a netlink socket for sock_diag, or fails where there is
// none (a sandbox without it).
func diagOpen() (int, bool) {
	fd, err := syscall.Socket(syscall.AF_NETLINK, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, syscall.NETLINK_INET_DIAG)
	if err != nil {
		return 0, false
	}
	// The kernel answers at once; the timeout is insurance that an accept
	// or a dial never waits on it.
	tv := syscall.Timeval{Sec: 1}
	if syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &tv) != nil {
		syscall.Close(fd)
		return 0, false
	}
	return fd, true
}

// tcpListen is TCP_LISTEN, a socket's state while it listens.
const tcpListen = 10

// loopbackIndex is the loopback interface's index, the same in every
// network namespace (LOOPBACK_IFINDEX).
const loopbackIndex = 1

// diagAsk sends one sock_diag request for the socket of the given family
// from src:sport to dst:dport on the netlink socket fd, and reads its
// answer. With listener, it asks for the socket listening at src:sport
// (dst:dport all zero), which may be of either family (a dual-stack one
// answers an IPv4 request) and bound to every address of the port.
func diagAsk(fd int, seq uint32, family, sport, dport int, src, dst net.IP, listener bool) (uid int, inode uint32, ok bool) {
	var req [syscall.NLMSG_HDRLEN + diagReqBytes]byte
	ne := binary.NativeEndian
	ne.PutUint32(req[0:], uint32(len(req)))
	ne.PutUint16(req[4:], sockDiagByFamily)
	ne.PutUint16(req[6:], syscall.NLM_F_REQUEST)
	ne.PutUint32(req[8:], seq)
	r := req[syscall.NLMSG_HDRLEN:]
	r[0], r[1] = byte(family), syscall.IPPROTO_TCP
	ne.PutUint32(r[4:], ^uint32(0)) // every state
	id := r[8:]                     // struct inet_diag_sockid
	binary.BigEndian.PutUint16(id[0:], uint16(sport))
	binary.BigEndian.PutUint16(id[2:], uint16(dport))
	copy(id[4:20], src)
	copy(id[20:36], dst)
	// The loopback interface: a socket bound to it (SO_BINDTODEVICE, which
	// any user may set) is found only by a lookup on it, and one bound to
	// no device by any.
	ne.PutUint32(id[36:], loopbackIndex)
	ne.PutUint32(id[40:], diagNoCookie)
	ne.PutUint32(id[44:], diagNoCookie)
	if syscall.Sendto(fd, req[:], 0, &syscall.SockaddrNetlink{Family: syscall.AF_NETLINK}) != nil {
		return 0, 0, false
	}
	var buf [1024]byte
	n, _, err := syscall.Recvfrom(fd, buf[:], 0)
	if err != nil || n < syscall.NLMSG_HDRLEN {
		return 0, 0, false
	}
	msg := buf[:n]
	if ne.Uint16(msg[4:]) != sockDiagByFamily || ne.Uint32(msg[8:]) != seq {
		return 0, 0, false // NLMSG_ERROR: no such socket, or no sock_diag here
	}
	body := msg[syscall.NLMSG_HDRLEN:]
	if len(body) < diagInode+4 {
		return 0, 0, false
	}
	if listener {
		if body[1] != tcpListen || [2]byte(body[4:6]) != [2]byte(id[0:2]) {
			return 0, 0, false // not a listener at that port
		}
	} else if body[0] != byte(family) || [36]byte(body[4:40]) != [36]byte(id[:36]) {
		return 0, 0, false // not the socket asked for
	}
	if inode = ne.Uint32(body[diagInode:]); inode == 0 {
		return 0, 0, false // no process holds it (diagInode)
	}
	return int(ne.Uint32(body[diagMsgUID:])), inode, true
}

// procUID returns the uid that owns the client's end of a loopback TCP
// connection from remote to local: the line of /proc/net/tcp (or tcp6)
// whose local address is the client's and whose remote address is the
// server's.
func procUID(remote, local *net.TCPAddr) (int, bool) {
	match := func(src, dst string) func([]string) bool {
		return func(f []string) bool { return f[1] == src && f[2] == dst }
	}
	var fields []string
	if a, b := remote.IP.To4(), local.IP.To4(); a != nil && b != nil {
		fields = procLine("/proc/net/tcp", match(procAddr(remote), procAddr(local)))
		if fields == nil {
			// An IPv6 socket's, the addresses mapped: the end a dual-stack
			// listener accepted.
			fields = procLine("/proc/net/tcp6", match(procMapped(a, remote.Port), procMapped(b, local.Port)))
		}
	} else {
		fields = procLine("/proc/net/tcp6", match(procAddr(remote), procAddr(local)))
	}
	if fields == nil || fields[9] == "0" {
		return 0, false // none, or no inode: no process holds it (diagInode)
	}
	uid, err := strconv.Atoi(fields[7])
	return uid, err == nil
}

// procMapped writes the IPv4 address v4 mapped into IPv6 (::ffff:a.b.c.d),
// and port, as /proc/net/tcp6 does.
func procMapped(v4 net.IP, port int) string {
	return procHex(append(net.IPv4zero.To16()[:12:12], v4...)) + fmt.Sprintf(":%04X", port)
}

// procListenerUID returns the uid that owns the TCP socket listening at
// addr, on its address or on every address of its port, from
// /proc/net/tcp and tcp6 (an IPv4 address as itself or mapped, since a
// dual-stack listener takes IPv4 connections).
func procListenerUID(addr *net.TCPAddr) (int, bool) {
	port := fmt.Sprintf(":%04X", addr.Port)
	v6 := map[string]bool{strings.Repeat("0", 32) + port: true}
	tables := []struct {
		file string
		want map[string]bool
	}{{"/proc/net/tcp6", v6}}
	if v4 := addr.IP.To4(); v4 != nil {
		// An IPv4 listener first, which takes the connection before an
		// IPv6 one could; then a dual-stack one, as the address mapped.
		v4want := map[string]bool{strings.Repeat("0", 8) + port: true, procAddr(addr): true}
		v6[procMapped(v4, addr.Port)] = true
		tables = append([]struct {
			file string
			want map[string]bool
		}{{"/proc/net/tcp", v4want}}, tables...)
	} else {
		// Only IPv6 listeners take a connection to an IPv6 address.
		v6[procAddr(addr)] = true
	}
	for _, t := range tables {
		fields := procLine(t.file, func(f []string) bool { return f[3] == "0A" && t.want[f[1]] && f[9] != "0" })
		if fields == nil {
			continue
		}
		if uid, err := strconv.Atoi(fields[7]); err == nil {
			return uid, true
		}
	}
	return 0, false
}

// procLine returns the fields of the first line of file, a table of TCP
// sockets in /proc/net, that match says is the one, or nil.
func procLine(file string, match func(fields []string) bool) []string {
	f, err := os.Open(file)
	if err != nil {
		return nil
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode ...
		if fields := strings.Fields(sc.Text()); len(fields) >= 10 && match(fields) {
			return fields
		}
	}
	return nil
}

// procAddr writes an address as /proc/net/tcp does: the IP as the words
// the kernel holds in network order, each printed as a native (here
// little-endian) 32-bit hex number, then the port in hex.
func procAddr(a *net.TCPAddr) string {
	ip := a.IP.To4()
	if ip == nil {
		ip = a.IP.To16()
	}
	return procHex(ip) + fmt.Sprintf(":%04X", a.Port)
}

// procHex writes the 4 or 16 bytes of an IP as /proc/net/tcp does.
func procHex(ip net.IP) string {
	var b strings.Builder
	for i := 0; i+4 <= len(ip); i += 4 {
		fmt.Fprintf(&b, "%08X", binary.NativeEndian.Uint32(ip[i:]))
	}
	return b.String()
}

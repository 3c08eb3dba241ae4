package server

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// unixPeerUID returns the uid of the process at the other end of a Unix
// socket, which the kernel recorded when it connected.
func unixPeerUID(c net.Conn) (int, bool) {
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

// tcpPeerUID returns the uid that owns the client's end of a loopback TCP
// connection from remote to local: the line of /proc/net/tcp (or tcp6)
// whose local address is the client's and whose remote address is the
// server's. It fails when the client has already closed its end.
func tcpPeerUID(remote, local *net.TCPAddr) (int, bool) {
	file, want := "/proc/net/tcp6", [2]string{procAddr(remote), procAddr(local)}
	if remote.IP.To4() != nil && local.IP.To4() != nil {
		file = "/proc/net/tcp"
	}
	f, err := os.Open(file)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid ...
		fields := strings.Fields(sc.Text())
		if len(fields) < 8 || fields[1] != want[0] || fields[2] != want[1] {
			continue
		}
		uid, err := strconv.Atoi(fields[7])
		return uid, err == nil
	}
	return 0, false
}

// procAddr writes an address as /proc/net/tcp does: the IP as the words
// the kernel holds in network order, each printed as a native (here
// little-endian) 32-bit hex number, then the port in hex.
func procAddr(a *net.TCPAddr) string {
	ip := a.IP.To4()
	if ip == nil {
		ip = a.IP.To16()
	}
	var b strings.Builder
	for i := 0; i+4 <= len(ip); i += 4 {
		fmt.Fprintf(&b, "%08X", binary.NativeEndian.Uint32(ip[i:]))
	}
	fmt.Fprintf(&b, ":%04X", a.Port)
	return b.String()
}

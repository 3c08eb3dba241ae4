package server

import (
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestSendBufferIsNeverSmall checks that a batch's socket send buffer is
// at least minSendBuffer (as far as the kernel's net.core.wmem_max lets
// it), however small the batch's step reply: setting a send buffer turns
// off the kernel's growing of it, and the few kilobytes of a small batch
// sent a 921,600-byte picture over TCP's loopback in pieces that each
// waited for a delayed ACK (seconds a picture; milliseconds on a Unix
// socket).
func TestSendBufferIsNeverSmall(t *testing.T) {
	raw, err := os.ReadFile("/proc/sys/net/core/wmem_max")
	if err != nil {
		t.Skip("needs /proc/sys/net/core/wmem_max:", err)
	}
	wmemMax, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	_, c := loopbackPair(t, "tcp", "127.0.0.1:0")
	for _, size := range []int64{1, 5_000, 200_000, 64 << 20} {
		setSendBuffer(c, size)
		rc, err := c.(*net.TCPConn).SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		var got int
		var gerr error
		if err := rc.Control(func(fd uintptr) {
			got, gerr = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_SNDBUF)
		}); err != nil || gerr != nil {
			t.Fatal(err, gerr)
		}
		// The kernel doubles what it grants, up to wmem_max.
		want := 2 * min(max(int(size), minSendBuffer), maxSendBuffer, wmemMax)
		if got < want {
			t.Errorf("setSendBuffer(%d): SO_SNDBUF %d, want at least %d", size, got, want)
		}
	}
}

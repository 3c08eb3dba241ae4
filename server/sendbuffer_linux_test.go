package server

import (
	"net"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
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
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skip("no TCP loopback here:", err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
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

// TestUnreadRepliesDoNotKeepTheServerBusy: a client that sends requests
// and does not read the replies leaves its connection blocked in a write
// until the idle timeout (5 minutes by default, a year from Python);
// counted as a request being answered all that time, it kept every
// connection's freed memory from going back to the system.
func TestUnreadRepliesDoNotKeepTheServerBusy(t *testing.T) {
	var returns atomic.Int64
	old := returnToSystem
	returnToSystem = func() { returns.Add(1) }
	t.Cleanup(func() { returnToSystem = old }) // after the server's own cleanup, registered later
	srv, path := startUnix(t, Config{MaxMemory: 1 << 30})
	cl := dialNet(t, "unix", path)
	hello(cl)
	cl.ok(map[string]any{"op": "make", "n": 1})
	cl.ok(map[string]any{"op": "reset", "seed": 1})
	for i := range 64 { // 64 pictures of 921,600 bytes, never read: far past the sockets' buffers
		cl.send(map[string]any{"op": "render", "id": 100 + i, "game": 0, "mode": "rgb_array"})
	}
	time.Sleep(300 * time.Millisecond) // the connection is blocked in its write
	srv.gaveBack(64 << 20)
	deadline := time.Now().Add(3 * time.Second)
	for returns.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if returns.Load() == 0 {
		t.Fatalf("no memory returned in 3 s while a client left its replies unread (%d requests counted as being answered)", srv.busy.Load())
	}
}

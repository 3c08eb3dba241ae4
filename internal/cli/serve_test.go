package cli

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"
)

// helloOver sends a hello over c and returns the decoded reply.
func helloOver(t *testing.T, c net.Conn) map[string]any {
	t.Helper()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	b, _ := msgpack.Marshal(map[string]any{"op": "hello", "version": 1})
	var h [4]byte
	binary.BigEndian.PutUint32(h[:], uint32(len(b)))
	if _, err := c.Write(append(h[:], b...)); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(c, h[:]); err != nil {
		t.Fatal(err)
	}
	reply := make([]byte, binary.BigEndian.Uint32(h[:]))
	if _, err := io.ReadFull(c, reply); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := msgpack.Unmarshal(reply, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func serveOpts() serveOptions {
	return serveOptions{addr: "127.0.0.1:0", maxConns: 4, maxGames: 64, maxTotal: 128, maxFrame: 1 << 20, maxBytes: 1 << 30, idle: time.Minute}
}

func TestServeTCPAndShutdown(t *testing.T) {
	o := serveOpts()
	addrs := make(chan net.Addr, 1)
	o.ready = func(a net.Addr) { addrs <- a }
	ctx, cancel := context.WithCancel(context.Background())
	var errb bytes.Buffer
	done := make(chan error, 1)
	go func() { done <- runServe(ctx, o, io.Discard, &errb) }()
	addr := <-addrs
	if !strings.HasPrefix(addr.String(), "127.0.0.1:") {
		t.Fatalf("listening on %v, want loopback", addr)
	}
	c, err := net.Dial("tcp", addr.String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if r := helloOver(t, c); r["ok"] != true {
		t.Fatalf("hello: %v", r)
	}
	cancel() // what SIGINT and SIGTERM do through Main's context
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("serve did not stop")
	}
	if !strings.Contains(errb.String(), "listening on tcp 127.0.0.1:") || !strings.Contains(errb.String(), "stopped") {
		t.Errorf("stderr: %q", errb.String())
	}
}

func TestServeUnixSocketReplacesStaleFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "spider.sock")
	// A socket file left behind by a server that died.
	stale, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	stale.(*net.UnixListener).SetUnlinkOnClose(false)
	stale.Close()
	o := serveOpts()
	o.unix = path
	ready := make(chan net.Addr, 1)
	o.ready = func(a net.Addr) { ready <- a }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- runServe(ctx, o, io.Discard, io.Discard) }()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("serve failed: %v", err)
	}
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	if r := helloOver(t, c); r["ok"] != true {
		t.Fatalf("hello: %v", r)
	}
	c.Close()
	// A second server on the same live path is refused.
	o2 := serveOpts()
	o2.unix = path
	if err := runServe(context.Background(), o2, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "another server") {
		t.Fatalf("second server on a live socket: %v", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Error("the socket file was left behind")
	}
}

func TestServeRefusesBadLimits(t *testing.T) {
	o := serveOpts()
	o.maxFrame = 10
	if _, ok := runServe(context.Background(), o, io.Discard, io.Discard).(usageError); !ok {
		t.Fatal("a 10-byte frame limit was accepted")
	}
}

package cli

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/spiderenv/spider/server"
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
	return serveOptions{addr: "127.0.0.1:0", cfg: server.Config{MaxConns: 4, MaxGames: 64, MaxTotal: 128, MaxFrame: 1 << 20, MaxBytes: 1 << 30, IdleTimeout: time.Minute}}
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
	for name, spoil := range map[string]func(*server.Config){
		"max-conns":       func(c *server.Config) { c.MaxConns = 0 },
		"max-games":       func(c *server.Config) { c.MaxGames = -1 },
		"max-total":       func(c *server.Config) { c.MaxTotal = 0 },
		"max-frame":       func(c *server.Config) { c.MaxFrame = minFrame - 1 },
		"max-batch-bytes": func(c *server.Config) { c.MaxBytes = 0 },
		"idle-timeout":    func(c *server.Config) { c.IdleTimeout = 0 },
		"workers":         func(c *server.Config) { c.Workers = -1 },
	} {
		o := serveOpts()
		spoil(&o.cfg)
		err := runServe(context.Background(), o, io.Discard, io.Discard)
		if _, ok := err.(usageError); !ok || err.Error() != "limits must be positive (max-frame at least 64 bytes)" {
			t.Errorf("a bad --%s: %v; want the usage error on limits", name, err)
		}
	}
	o := serveOpts()
	o.cfg.MaxBytes = server.MaxBatchBytes + 1
	err := runServe(context.Background(), o, io.Discard, io.Discard)
	if _, ok := err.(usageError); !ok || !strings.Contains(err.Error(), "a step reply must fit one frame") {
		t.Errorf("--max-batch-bytes over %d: %v", server.MaxBatchBytes, err)
	}
}

// TestServeFlagDefaultsComeFromServer checks that the serve command's
// flags default to server.DefaultConfig and set the Config fields.
func TestServeFlagDefaultsComeFromServer(t *testing.T) {
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	serveCommand(fs)
	d := server.DefaultConfig()
	for flag, want := range map[string]any{
		"max-conns": d.MaxConns, "max-games": d.MaxGames, "max-total": d.MaxTotal, "max-frame": d.MaxFrame,
		"max-batch-bytes": d.MaxBytes, "idle-timeout": d.IdleTimeout, "workers": d.Workers,
	} {
		f := fs.Lookup(flag)
		if f == nil || f.DefValue != fmt.Sprint(want) {
			t.Errorf("--%s defaults to %v, want server.DefaultConfig's %v", flag, f, want)
		}
	}
	// A flag given reaches the Config the server gets.
	fs = pflag.NewFlagSet("serve", pflag.ContinueOnError)
	run := serveCommand(fs)
	if err := fs.Parse([]string{"--max-frame", "10"}); err != nil {
		t.Fatal(err)
	}
	if err := run(context.Background(), nil, nil, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "max-frame at least 64 bytes") {
		t.Fatalf("--max-frame 10: %v", err)
	}
}

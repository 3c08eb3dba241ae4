package cli

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/spiderenv/spider/agents"
	"github.com/spiderenv/spider/env"
	"github.com/spiderenv/spider/internal/bytesize"
	"github.com/spiderenv/spider/server"
)

// serveInBackground runs runServe with o, stderr to stderr, until cancel:
// ready gets the address it listens on, done what it returned.
func serveInBackground(o serveOptions, stderr io.Writer) (ready <-chan net.Addr, done <-chan error, cancel context.CancelFunc) {
	r := make(chan net.Addr, 1)
	o.ready = func(a net.Addr) { r <- a }
	ctx, cancel := context.WithCancel(context.Background())
	d := make(chan error, 1)
	go func() { d <- runServe(ctx, o, io.Discard, stderr) }()
	return r, d, cancel
}

// helloUnix says hello to the server on the Unix socket at path, which
// must answer ok, and hangs up.
func helloUnix(t *testing.T, path string) {
	t.Helper()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if r := helloOver(t, c); r["ok"] != true {
		t.Fatalf("hello: %v", r)
	}
}

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
	return serveOptions{addr: "127.0.0.1:0", cfg: server.Config{MaxConns: 4, MaxPeerConns: 4, MaxGames: 64, MaxTotal: 128, MaxFrame: 1 << 20, MaxBytes: 1 << 30,
		IdleTimeout: time.Minute, SetupTimeout: time.Minute}, maxMemory: 256 << 20}
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

// TestServeExitsWithStdin: with --exit-with-stdin the server stops, its
// socket removed, when the pipe to its stdin closes (its parent died);
// without it, stdin is not read.
func TestServeExitsWithStdin(t *testing.T) {
	for _, exit := range []bool{true, false} {
		path := filepath.Join(t.TempDir(), "spider.sock")
		o := serveOpts()
		o.unix, o.stdinEOF = path, exit
		pr, pw := io.Pipe()
		o.stdin = pr
		var errb lockedBuffer
		ready, done, cancel := serveInBackground(o, &errb)
		<-ready
		pw.Close() // the parent's end of the pipe, closed as its process exits
		stopped := false
		select {
		case err := <-done:
			stopped = true
			if !exit {
				t.Fatalf("without --exit-with-stdin the server stopped when stdin ended: %v", err)
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(errb.String(), "stdin ended") {
				t.Errorf("stderr %q does not say why it stopped", errb.String())
			}
			if _, err := os.Stat(path); !os.IsNotExist(err) {
				t.Error("the socket file was left behind")
			}
		case <-time.After(2 * time.Second):
			if exit {
				t.Fatal("the server did not stop when stdin ended")
			}
		}
		cancel()
		if !stopped {
			<-done
		}
		pr.Close()
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
	ready, done, cancel := serveInBackground(o, io.Discard)
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("serve failed: %v", err)
	}
	helloUnix(t, path)
	// A second server on the same live path is refused.
	o2 := serveOpts()
	o2.unix = path
	if err := runServe(refusing(t), o2, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "another server") {
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
		"max-conns":          func(c *server.Config) { c.MaxConns = 0 },
		"max-conns-per-peer": func(c *server.Config) { c.MaxPeerConns = -1 },
		"max-games":          func(c *server.Config) { c.MaxGames = -1 },
		"max-total":          func(c *server.Config) { c.MaxTotal = 0 },
		"max-frame":          func(c *server.Config) { c.MaxFrame = minFrame - 1 },
		"max-batch-bytes":    func(c *server.Config) { c.MaxBytes = 0 },
		"idle-timeout":       func(c *server.Config) { c.IdleTimeout = 0 },
		"setup-timeout":      func(c *server.Config) { c.SetupTimeout = -time.Second },
		"workers":            func(c *server.Config) { c.Workers = -1 },
	} {
		o := serveOpts()
		spoil(&o.cfg)
		err := runServe(refusing(t), o, io.Discard, io.Discard)
		if _, ok := err.(usageError); !ok || !strings.HasPrefix(err.Error(), "--"+name+" ") {
			t.Errorf("a bad --%s: %v; want a usage error naming it", name, err)
		}
	}
	// No batch holds more than env.MaxBatch games: a larger --max-games
	// would be promised in hello and never reached.
	o := serveOpts()
	o.cfg.MaxGames = env.MaxBatch + 1
	if err := runServe(refusing(t), o, io.Discard, io.Discard); !isUsage(err) || !strings.Contains(err.Error(), "--max-games 1048577 is over 1048576") {
		t.Errorf("--max-games over env.MaxBatch: %v", err)
	}
	// Where int has 32 bits, MaxBatchBytes is the largest int: nothing is over it.
	if over := int64(server.MaxBatchBytes) + 1; over <= math.MaxInt {
		o := serveOpts()
		o.cfg.MaxBytes = int(over)
		err := runServe(refusing(t), o, io.Discard, io.Discard)
		if _, ok := err.(usageError); !ok || !strings.Contains(err.Error(), "a step reply must fit one frame") {
			t.Errorf("--max-batch-bytes over %d: %v", server.MaxBatchBytes, err)
		}
	}
	// A 32-bit build (make test-ports) refuses what its int cannot count.
	if strconv.IntSize == 32 {
		o := serveOpts()
		o.maxMemory, o.memorySet = 3<<30, true
		if err := runServe(refusing(t), o, io.Discard, io.Discard); !isUsage(err) || !strings.Contains(err.Error(), "--max-memory 3GiB is over 2.0GiB, the most a 32-bit build can count") {
			t.Errorf("--max-memory 3GiB in a 32-bit build: %v", err)
		}
	}
	o = serveOpts()
	o.maxMemory, o.memorySet = 1<<20, true
	if err := runServe(refusing(t), o, io.Discard, io.Discard); !isUsage(err) || !strings.Contains(err.Error(), "--max-memory 1MiB is under 16MiB") {
		t.Errorf("--max-memory 1MiB: %v", err)
	}
	if _, total, ok := machineMemory(); ok {
		o.maxMemory = byteSize(total + 1<<30)
		if err := runServe(refusing(t), o, io.Discard, io.Discard); !isUsage(err) || !strings.Contains(err.Error(), "is more than this machine's") {
			t.Errorf("--max-memory over the machine's: %v", err)
		}
	}
}

func isUsage(err error) bool {
	var u usageError
	return errors.As(err, &u)
}

// TestServeRefusesNonLoopback refuses, before listening, an --addr that
// other hosts could reach, unless --insecure-listen-all; loopback names and
// addresses pass. (The test never listens beyond loopback.)
func TestServeRefusesNonLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:7878", ":7878", "[::]:7878", "192.0.2.1:7878", "[2001:db8::1]:7878"} {
		o := serveOpts()
		o.addr = addr
		err := runServe(refusing(t), o, io.Discard, io.Discard)
		if !isUsage(err) || !strings.Contains(err.Error(), "--insecure-listen-all") {
			t.Errorf("--addr %s: %v; want a usage error naming --insecure-listen-all", addr, err)
		}
		// Refused by the check before listening, not only once bound
		// (checkListening), when the port would already be open; an
		// address of every interface is named as such.
		what := "an address other hosts can reach"
		if !strings.Contains(addr, "192.0.2.1") && !strings.Contains(addr, "2001:db8") {
			what = "every interface"
		}
		if err := checkLoopback(addr, false); !isUsage(err) || !strings.Contains(err.Error(), "listens on "+what) {
			t.Errorf("checkLoopback(%s) before listening: %v; want a usage error saying it listens on %s", addr, err, what)
		}
		if err := checkLoopback(addr, true); err != nil {
			t.Errorf("--addr %s --insecure-listen-all: %v", addr, err)
		}
	}
	for _, addr := range []string{"127.0.0.1:7878", "127.0.0.2:7878", "[::1]:7878", "localhost:7878"} {
		if err := checkLoopback(addr, false); err != nil {
			t.Errorf("--addr %s: %v", addr, err)
		}
	}
	for _, addr := range []string{"127.0.0.1:99999", "127.0.0.1:-1", "127.0.0.1:port"} {
		if err := checkLoopback(addr, false); !isUsage(err) || !strings.Contains(err.Error(), "is not a port number") {
			t.Errorf("--addr %s: %v; want a usage error on its port", addr, err)
		}
	}
	if err := checkLoopback("7878", false); !isUsage(err) {
		t.Errorf("--addr 7878 (no host): %v", err)
	}
}

// exposedListener claims to listen on every interface.
type exposedListener struct{ net.Listener }

func (exposedListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4zero, Port: 7878} }

// TestServeWarnsWhenListeningOnTheNetwork checks the address a listener
// really got (a host name resolves only when listening): refused without
// --insecure-listen-all, a warning on stderr with it.
func TestServeWarnsWhenListeningOnTheNetwork(t *testing.T) {
	var stderr bytes.Buffer
	ln := exposedListener{}
	if err := checkListening(ln, "myhost:7878", false, &stderr); !isUsage(err) || !strings.Contains(err.Error(), "not loopback") || stderr.Len() != 0 {
		t.Errorf("without --insecure-listen-all: %v, stderr %q", err, stderr.String())
	}
	if err := checkListening(ln, "myhost:7878", true, &stderr); err != nil || !strings.Contains(stderr.String(), "WARNING: listening on 0.0.0.0:7878") ||
		!strings.Contains(stderr.String(), "no authentication") {
		t.Errorf("with --insecure-listen-all: %v, stderr %q", err, stderr.String())
	}
	loop, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer loop.Close()
	stderr.Reset()
	if err := checkListening(loop, "localhost:0", false, &stderr); err != nil || stderr.Len() != 0 {
		t.Errorf("loopback: %v, stderr %q", err, stderr.String())
	}
}

// TestServeUnixKeepsAFileThatIsNotASocket refuses to start on a path that
// holds a regular file, and leaves the file as it was.
func TestServeUnixKeepsAFileThatIsNotASocket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(path, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	o := serveOpts()
	o.unix = path
	wantUsage(t, "serve on a regular file", runServe(refusing(t), o, io.Discard, io.Discard), "not a socket")
	if b, err := os.ReadFile(path); err != nil || string(b) != "mine" {
		t.Fatalf("the file is now %q, %v", b, err)
	}
	// A folder that is not there is a path that cannot be used too.
	o.unix = filepath.Join(t.TempDir(), "no-such-folder", "s.sock")
	wantUsage(t, "serve in a missing folder", runServe(refusing(t), o, io.Discard, io.Discard), "no such file or directory")
}

// TestServeUnixWithAddr refuses --unix with --addr, which it used to
// ignore.
func TestServeUnixWithAddr(t *testing.T) {
	var stderr bytes.Buffer
	code := Main([]string{"serve", "--unix", filepath.Join(t.TempDir(), "s"), "--addr", "127.0.0.1:0"}, nil, io.Discard, &stderr)
	if code != 2 || !strings.Contains(stderr.String(), "give --addr or --unix, not both") {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
}

// TestServeFlagDefaultsComeFromServer checks that the serve command's
// flags default to server.DefaultConfig and set the Config fields.
func TestServeFlagDefaultsComeFromServer(t *testing.T) {
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	serveCommand(fs)
	d := server.DefaultConfig()
	for flag, want := range map[string]any{
		"max-conns": d.MaxConns, "max-games": d.MaxGames, "max-total": d.MaxTotal, "max-frame": bytesize.Format(int64(d.MaxFrame)),
		"max-batch-bytes": bytesize.Format(int64(d.MaxBytes)), "idle-timeout": d.IdleTimeout, "workers": d.Workers,
		"max-conns-per-peer": d.MaxPeerConns, "setup-timeout": d.SetupTimeout, "max-memory": bytesize.Format(int64(d.MaxMemory)),
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
	if err := run(context.Background(), nil, nil, io.Discard, io.Discard); err == nil || err.Error() != "--max-frame 10: want at least 64" {
		t.Fatalf("--max-frame 10: %v", err)
	}
	// An empty --unix is refused, not taken for TCP.
	fs = pflag.NewFlagSet("serve", pflag.ContinueOnError)
	run = serveCommand(fs)
	if err := fs.Parse([]string{"--unix", ""}); err != nil {
		t.Fatal(err)
	}
	if err := run(context.Background(), nil, nil, io.Discard, io.Discard); !isUsage(err) || !strings.Contains(err.Error(), "--unix needs a socket path") {
		t.Fatalf("--unix '': %v", err)
	}
}

// sizedAgent is a hint agent that says it allocates bytes.
type sizedAgent struct {
	agents.Greedy
	bytes int64
}

func (a *sizedAgent) Bytes() int64 { return a.bytes }

// TestHintBytesCoversTheAgent: what a connection's hint agent is counted
// for is at least what the agent says it allocates: 1 MiB for greedy and
// every shipped network, more for an agent that allocates more.
func TestHintBytesCoversTheAgent(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "models", "*.spider"))
	if err != nil || len(files) == 0 {
		t.Fatalf("models: %v %v", files, err)
	}
	for _, f := range append(files, "greedy") {
		name := f
		if name != "greedy" {
			name = "nn:" + f
		}
		m, _, err := serveHint(name, 0, 1<<40)
		if err != nil {
			t.Fatal(err)
		}
		if got := hintBytes(name, m); got != 1<<20 {
			t.Errorf("%s: %d bytes a hint agent, want 1 MiB", name, got)
		}
	}
	big := func() agents.Agent { return &sizedAgent{bytes: 5 << 20} }
	if got := hintBytes("nn:wide.spider", big); got != 5<<20+64<<10 {
		t.Errorf("an agent of 5 MiB is counted %d bytes", got)
	}
	if got := hintBytes("search", big); got != 48<<20 {
		t.Errorf("search's hint agent is counted %d bytes, want its budget's 48 MiB", got)
	}
}

// TestServeHintNetworkCountsAgainstMaxMemory: a hint network's weights are
// taken from --max-memory for the server's life, and one whose checkpoint
// could not be loaded within it (file and weights, keeping 16 MiB for the
// connections) is refused before it is read.
func TestServeHintNetworkCountsAgainstMaxMemory(t *testing.T) {
	_, path, fi, weights := savedNet(t, 64)
	enough := minMemory + 2*fi.Size()
	m, shared, err := serveHint("nn:"+path, 0, enough)
	if err != nil || m == nil || shared != weights {
		t.Fatalf("--max-memory %d for a %d-byte checkpoint: shared %d (want the weights' %d), %v", enough, fi.Size(), shared, weights, err)
	}
	if _, _, err := serveHint("nn:"+path, 0, enough-1); !isUsage(err) || !strings.Contains(err.Error(), "--max-memory") {
		t.Fatalf("a byte less: %v", err)
	}
	if _, shared, err := serveHint("search", 0, minMemory); err != nil || shared != 0 {
		t.Fatalf("search shares nothing: %d, %v", shared, err)
	}
	if _, _, err := serveHint("nn:"+path, -1, enough); !isUsage(err) || !strings.Contains(err.Error(), "--move-ms") {
		t.Fatalf("a negative --move-ms with a network: %v", err)
	}
	if _, _, err := serveHint("nn:"+path+".missing", 0, enough); err == nil {
		t.Fatal("a missing checkpoint was accepted")
	}
	o := serveOpts()
	o.hint, o.maxMemory, o.memorySet = "nn:"+path, byteSize(enough-1), true
	if err := runServe(refusing(t), o, io.Discard, io.Discard); !isUsage(err) || !strings.Contains(err.Error(), "for its connections") {
		t.Fatalf("serve with the network over --max-memory: %v", err)
	}
}

// TestCheckMoveMsBounds: --move-ms takes 0 (no limit) to maxMoveMs, both
// ends included, as its error message says.
func TestCheckMoveMsBounds(t *testing.T) {
	for ms, ok := range map[int]bool{-1: false, 0: true, 1: true, maxMoveMs: true, maxMoveMs + 1: false} {
		if err := checkMoveMs(ms); (err == nil) != ok {
			t.Errorf("checkMoveMs(%d) = %v; want accepted %v", ms, err, ok)
		}
	}
}

// refusing returns the context for a serve that must be refused before it
// serves: if a bug lets it serve instead, it stops within seconds and the
// test fails on its error, rather than at the test binary's timeout with
// a dump of every goroutine.
func refusing(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

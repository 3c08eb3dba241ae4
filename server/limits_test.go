package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/spiderenv/spider/agents"
	"github.com/spiderenv/spider/env"
	"github.com/spiderenv/spider/picture"
)

// serveOn runs a server on ln until the test ends.
func serveOn(t *testing.T, srv *Server, ln net.Listener) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Error("the server did not stop")
		}
	})
}

// dialNet is dial for any network.
func dialNet(t *testing.T, network, addr string) *client {
	t.Helper()
	c, err := net.Dial(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(20 * time.Second))
	t.Cleanup(func() { c.Close() })
	return &client{t: t, c: c}
}

// flakyListener fails its first Accepts with an error, then accepts.
type flakyListener struct {
	net.Listener
	fails atomic.Int32
	err   error
}

func (l *flakyListener) Accept() (net.Conn, error) {
	if l.fails.Add(-1) >= 0 {
		return nil, l.err
	}
	return l.Listener.Accept()
}

// syncLog is a log destination tests read while the server writes.
type syncLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *syncLog) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *syncLog) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// TestAcceptRetriesTemporaryErrors runs out of file descriptors four
// times in a row: the server must pause, 5 ms doubling, and go on
// serving, not stop (and close every connection) at the first.
func TestAcceptRetriesTemporaryErrors(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := &flakyListener{Listener: inner, err: &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}}
	ln.fails.Store(4)
	var logged syncLog
	srv := New(Config{Log: log.New(&logged, "", 0)})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve after cancel: %v", err)
		}
	}()
	cl := dial(t, inner.Addr().String())
	cl.c.SetDeadline(time.Now().Add(5 * time.Second))
	hello(cl)
	select {
	case err := <-done:
		t.Fatalf("Serve stopped: %v", err)
	default:
	}
	for _, want := range []string{"too many open files; retrying in 5ms", "retrying in 10ms", "retrying in 20ms", "retrying in 40ms"} {
		if !strings.Contains(logged.String(), want) {
			t.Errorf("the log lacks %q:\n%s", want, logged.String())
		}
	}
}

// TestAcceptStopsOnAPermanentError keeps net/http's rule: an error that
// will not go away ends Serve, with the error.
func TestAcceptStopsOnAPermanentError(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer inner.Close()
	broken := errors.New("the listener is broken")
	ln := &flakyListener{Listener: inner, err: broken}
	ln.fails.Store(1 << 30)
	done := make(chan error, 1)
	go func() { done <- New(Config{}).Serve(context.Background(), ln) }()
	select {
	case err := <-done:
		if !errors.Is(err, broken) {
			t.Fatalf("Serve returned %v, want %v", err, broken)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve retried a permanent error")
	}
}

// listenOn listens on a Unix socket in a temporary folder, or on a free
// loopback TCP port.
func listenOn(t *testing.T, network string) net.Listener {
	t.Helper()
	addr := "127.0.0.1:0"
	if network == "unix" {
		addr = filepath.Join(t.TempDir(), "s")
	}
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// TestPeerConnectionLimit lets one local user hold MaxPeerConns
// connections, over a Unix socket and over loopback TCP alike (the peer is
// the user, found by its uid), and refuses the next with the flag's name.
func TestPeerConnectionLimit(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("peers are told apart by uid on Linux only")
	}
	want := fmt.Sprintf("user %d already has 2 connections, the most one peer may hold (--max-conns-per-peer); close one", os.Getuid())
	for _, network := range []string{"unix", "tcp"} {
		t.Run(network, func(t *testing.T) {
			ln := listenOn(t, network)
			srv := New(Config{MaxConns: 8, MaxPeerConns: 2})
			serveOn(t, srv, ln)
			a, b := dialNet(t, network, ln.Addr().String()), dialNet(t, network, ln.Addr().String())
			hello(a)
			hello(b)
			third := dialNet(t, network, ln.Addr().String())
			if r := third.recv(); r == nil || r["code"] != "limit" || r["error"] != want || !third.closed() {
				t.Fatalf("a third connection of the same user: %v; want %q", r, want)
			}
			// A place given back is a place again.
			a.c.Close()
			deadline := time.Now().Add(5 * time.Second)
			for srv.Conns() != 1 && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			hello(dialNet(t, network, ln.Addr().String()))
		})
	}
}

// TestRefusalsInABurst gives every connection over MaxConns its reply
// naming the flag, however fast they come: a burst of them on a Unix
// socket was accepted faster than refusals on goroutines of their own
// ran, and past 64 most were closed with no reply.
func TestRefusalsInABurst(t *testing.T) {
	ln, err := net.Listen("unix", filepath.Join(t.TempDir(), "s"))
	if err != nil {
		t.Fatal(err)
	}
	srv := New(Config{MaxConns: 1})
	serveOn(t, srv, ln)
	hello(dialNet(t, "unix", ln.Addr().String()))
	burst := make([]*client, 300)
	for i := range burst {
		burst[i] = dialNet(t, "unix", ln.Addr().String())
	}
	for i, cl := range burst {
		if r := cl.recv(); r == nil || r["code"] != "limit" || !strings.Contains(fmt.Sprint(r["error"]), "--max-conns") || !cl.closed() {
			t.Fatalf("connection %d of a burst over the limit: %v; want a limit reply naming --max-conns", i, r)
		}
	}
}

// TestSetupTimeout closes a connection that says hello over and over but
// never makes a batch, with a reply that names the flag, and leaves one
// that made a batch alone, its close answered too.
func TestSetupTimeout(t *testing.T) {
	_, addr := start(t, Config{SetupTimeout: 300 * time.Millisecond, IdleTimeout: time.Minute})
	player := dial(t, addr)
	hello(player)
	player.ok(map[string]any{"op": "make", "n": 2})
	idle := dial(t, addr)
	hello(idle)
	began := time.Now()
	var last map[string]any
	for time.Since(began) < 2*time.Second {
		time.Sleep(100 * time.Millisecond)
		idle.send(map[string]any{"op": "hello", "version": Version})
		if last = idle.recv(); last == nil || last["ok"] != true {
			break
		}
	}
	if last == nil || last["code"] != "limit" || !strings.Contains(fmt.Sprint(last["error"]), "--setup-timeout") || !idle.closed() {
		t.Fatalf("a connection that only says hello, after %v: %v", time.Since(began), last)
	}
	if since := time.Since(began); since > time.Second {
		t.Fatalf("closed after %v; the setup timeout is 300ms", since)
	}
	player.ok(map[string]any{"op": "reset", "seed": 1})
	// The timeout bounds a connection until it makes a batch, not after:
	// close drops the batch before its reply, which a reply bounded by
	// the setup timeout (and its second of grace) then never got to, on
	// a connection older than that.
	time.Sleep(1500 * time.Millisecond)
	if r := player.ok(map[string]any{"op": "close", "id": 7}); fmt.Sprint(r["id"]) != "7" {
		t.Fatalf("close reply %v, want id 7", r)
	}
}

// TestMemoryLimitRefusesMake fills MaxMemory with batches: the make that
// does not fit is refused naming the flag, fits as soon as another
// connection's close is answered (its batch is given back before the
// reply, not when the connection ends after it), and every byte comes
// back when all have closed.
func TestMemoryLimitRefusesMake(t *testing.T) {
	srv, addr := start(t, Config{MaxMemory: 64 << 20})
	big := map[string]any{"op": "make", "n": 230, "suits": 4, "obs": "float32", "autoreset": "same-step"}
	r := env.MustRules(env.Options{Suits: 4, Encoding: env.Float32})
	bo := env.BatchOptions{N: 230, Autoreset: env.SameStep, Workers: srv.cfg.Workers}
	need := BatchBytes(r, bo) + 230*connGameBytes + stepReplyBytes(r, bo, false)
	if need < 20<<20 || need > 31<<20 {
		t.Fatalf("the test wants two batches to fit 64 MiB and three not: one needs %d MiB", need>>20)
	}
	a, b, c := dial(t, addr), dial(t, addr), dial(t, addr)
	for _, cl := range []*client{a, b, c} {
		hello(cl)
	}
	a.ok(big)
	b.ok(big)
	rep := c.call(big)
	if rep["ok"] != false || rep["code"] != "limit" || !strings.Contains(fmt.Sprint(rep["error"]), "--max-memory 64MiB") {
		t.Fatalf("a third batch over 64 MiB: %v", rep)
	}
	c.ok(map[string]any{"op": "make", "n": 1}) // a small one still fits
	a.ok(map[string]any{"op": "close"})
	c.ok(big)
	c.ok(map[string]any{"op": "reset", "seed": 3})
	deadline := time.Now().Add(5 * time.Second)
	b.c.Close()
	c.c.Close()
	for (srv.Conns() != 0 || srv.Memory() != 0) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if srv.Memory() != 0 {
		t.Fatalf("%d bytes still held after every connection closed", srv.Memory())
	}
}

// TestCloseGivesBackBeforeItsReply: a client that makes a batch again as
// soon as it has read close's reply must find the memory free, so the
// batch is given back before the reply is written. Over a pipe the reply
// waits for its reader, which lets the test look in between.
func TestCloseGivesBackBeforeItsReply(t *testing.T) {
	ln := &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
	srv := New(Config{})
	serveOn(t, srv, ln)
	mine, theirs := net.Pipe()
	t.Cleanup(func() { mine.Close() })
	mine.SetDeadline(time.Now().Add(20 * time.Second))
	ln.conns <- theirs
	cl := &client{t: t, c: mine}
	hello(cl)
	cl.ok(map[string]any{"op": "make", "n": 64})
	held := srv.Memory()
	cl.send(map[string]any{"op": "close"})
	deadline := time.Now().Add(5 * time.Second)
	for srv.Games() != 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if srv.Games() != 0 || srv.Memory() >= held {
		t.Fatalf("before close's reply was read the server held %d games and %d bytes (%d with the batch)", srv.Games(), srv.Memory(), held)
	}
	if r := cl.recv(); r == nil || r["ok"] != true {
		t.Fatalf("close: %v", r)
	}
}

// pipeListener accepts the connections sent on conns: one end of a
// net.Pipe, whose writes wait for their reader.
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error { l.once.Do(func() { close(l.done) }); return nil }

func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }

// TestHintSharedIsTakenFirst: what the hint agents share (a network's
// weights) comes off MaxMemory before any connection, so a batch that
// fits 64 MiB is refused when 40 MiB of it are the hint's, and fits again
// without them.
func TestHintSharedIsTakenFirst(t *testing.T) {
	big := map[string]any{"op": "make", "n": 230, "suits": 4, "obs": "float32", "autoreset": "same-step"} // 20-31 MiB (TestMemoryLimitRefusesMake)
	for _, tc := range []struct {
		shared int
		ok     bool
	}{{0, true}, {40 << 20, false}} {
		_, addr := start(t, Config{MaxMemory: 64 << 20, HintShared: tc.shared})
		c := dial(t, addr)
		hello(c)
		rep := c.call(big)
		if rep["ok"] != tc.ok {
			t.Fatalf("a batch of 20-31 MiB with %d MiB of 64 shared by the hints: %v", tc.shared>>20, rep)
		}
		if !tc.ok && (rep["code"] != "limit" || !strings.Contains(fmt.Sprint(rep["error"]), "--max-memory 64MiB, 40MiB of it held by the hint network")) {
			t.Fatalf("refused without naming the limit: %v", rep)
		}
	}
}

// TestLargeFramesAreNotKept sends garbage frames of 16 MiB on six
// connections that stay open (a frame that is not a request gets an error
// and keeps the connection): the server must not keep 96 MiB of frame
// buffers for them.
func TestLargeFramesAreNotKept(t *testing.T) {
	_, addr := start(t, Config{MaxFrame: 16 << 20})
	garbage := bytes.Repeat([]byte{0xc1}, 16<<20)
	var clients []*client
	for range 6 {
		cl := dial(t, addr)
		cl.sendRaw(garbage)
		if r := cl.recv(); r == nil || r["code"] != "bad_frame" {
			t.Fatalf("a garbage frame: %v", r)
		}
		hello(cl) // still open
		clients = append(clients, cl)
	}
	garbage = nil
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if ms.HeapAlloc > 48<<20 {
		t.Fatalf("%d MiB of heap live after six 16 MiB garbage frames were answered", ms.HeapAlloc>>20)
	}
	for _, cl := range clients {
		hello(cl)
	}
}

// TestRepliesFitTheirBuffer serves makes, resets, steps and renders of
// several configurations: the reply buffer sized at make must hold every
// reply without growing, and the server's count must be what the
// connection holds.
func TestRepliesFitTheirBuffer(t *testing.T) {
	for _, mk := range []map[string]any{
		{"op": "make", "n": 3, "suits": 4, "obs": "float32", "autoreset": "same-step", "mask": "bits"},
		{"op": "make", "n": 5, "autoreset": "next-step"},
		{"op": "make", "n": 1, "obs": "float32", "face_up_slots": 104}, // the make reply is the largest
		{"op": "make", "n": 70, "suits": 2, "autoreset": "same-step"},
	} {
		t.Run(fmt.Sprint(mk), func(t *testing.T) {
			cn := testConn(t, Config{}, mk)
			want := cn.held.reply
			check := func(what string) {
				t.Helper()
				if int64(cap(cn.en.buf)) != want || len(cn.en.buf) > cap(cn.en.buf) {
					t.Fatalf("after %s the reply buffer holds %d of %d bytes; it was sized %d at make", what, len(cn.en.buf), cap(cn.en.buf), want)
				}
				if cn.s.Memory() != cn.held.total() {
					t.Fatalf("after %s the server counts %d bytes, the connection holds %d", what, cn.s.Memory(), cn.held.total())
				}
			}
			check("make")
			cn.call(t, map[string]any{"op": "reset", "seed": 1, "id": int64(-1 << 63)})
			check("reset")
			actions := make([]env.Action, cn.batch.N())
			for range 50 {
				cn.batch.SampleLegal(actions)
				cn.call(t, map[string]any{"op": "step", "actions": actionsBin(actions), "id": int64(1<<63 - 1)})
				check("step")
			}
			cn.call(t, map[string]any{"op": "render", "game": 0, "mode": "rgb_array"})
			want = max(want, rgbReplyBytes)
			check("a picture")
		})
	}
}

// TestBatchBytesMatchesNewBatch compares BatchBytes with the bytes
// env.NewBatch really allocates (the workers' stacks aside, which the
// allocation count does not see), so a buffer added to the batch cannot
// slip past the server's memory limit.
func TestBatchBytesMatchesNewBatch(t *testing.T) {
	for _, c := range []struct {
		o  env.Options
		bo env.BatchOptions
	}{
		{env.Options{}, env.BatchOptions{N: 4096}},
		{env.Options{Suits: 4, Encoding: env.Float32}, env.BatchOptions{N: 1024, Autoreset: env.SameStep, Workers: 3}},
		{env.Options{Suits: 2, FaceUpSlots: 104}, env.BatchOptions{N: 2048, Presample: true, Workers: 1}},
		{env.Options{Suits: 4}, env.BatchOptions{N: 2048, Legal: true, Workers: 1}},
	} {
		r := env.MustRules(c.o)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		b, err := env.NewBatch(r, c.bo)
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatal(err)
		}
		b.Close()
		workers := c.bo.Workers
		if workers == 0 {
			workers = runtime.GOMAXPROCS(0)
		}
		est := float64(BatchBytes(r, c.bo) - int64(workers)*workerBytes)
		got := float64(after.TotalAlloc - before.TotalAlloc)
		if got > est*1.01+64<<10 || got < est*0.97 {
			t.Errorf("%v %+v: NewBatch allocated %.0f bytes; BatchBytes says %.0f", r, c.bo, got, est)
		}
	}
}

// procStatus returns a field of /proc/PID/status in bytes.
func procStatus(t *testing.T, pid int, field string) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// TestFrameGrowthCountsBothBuffers: while a frame buffer grows, the old
// buffer is copied into the new one and both are live, so both count
// against MaxMemory. A 1 MiB frame grows from 512 KiB, holding 1.5 MiB at
// that moment: with 1.25 MiB to spare it is refused, with 1.5 MiB taken.
func TestFrameGrowthCountsBothBuffers(t *testing.T) {
	for _, spare := range []int{1<<20 + 256<<10, 3 << 19} {
		_, addr := start(t, Config{MaxMemory: connBytes + spare, MaxFrame: 1 << 20})
		cl := dial(t, addr)
		go cl.c.Write(frame(bytes.Repeat([]byte{0xc1}, 1<<20))) // cut off once refused
		r := cl.recv()
		want := "bad_frame" // taken, and then not msgpack
		if spare < 3<<19 {
			want = "limit"
		}
		if r == nil || r["code"] != want {
			t.Errorf("%d bytes to spare: reply %v, want %s", spare, r, want)
		}
	}
}

// TestGarbageCollectedOnlyWhenNeeded: bytes given back in large pieces
// are counted as garbage, and collected only when a reservation would not
// fit beside them, not at every give-back (a collection costs tens of
// milliseconds on a large heap).
func TestGarbageCollectedOnlyWhenNeeded(t *testing.T) {
	s := New(Config{MaxMemory: 100 << 20})
	if !s.reserve(61 << 20) {
		t.Fatal("61 MiB of 100 refused")
	}
	s.giveBack(60 << 20)
	s.giveBack(1 << 20) // small pieces are left to the collector's pacing
	if g := s.garbage.Load(); g != 60<<20 {
		t.Fatalf("garbage %d MiB after giving back 60 and 1; want 60", g>>20)
	}
	if !s.reserve(30<<20) || s.garbage.Load() != 60<<20 {
		t.Fatalf("30 MiB beside 60 of garbage: garbage %d MiB, want 60, uncollected", s.garbage.Load()>>20)
	}
	if !s.reserve(20<<20) || s.garbage.Load() != 0 {
		t.Fatalf("20 MiB more would pass the limit with the garbage: garbage %d MiB, want it collected", s.garbage.Load()>>20)
	}
	if s.reserve(51 << 20) {
		t.Fatal("51 MiB reserved beside 50 of 100")
	}
}

// TestRoomOutsideHeap: before a segment is mapped, the heap's freed pages
// and uncollected garbage are returned to the system when they would not
// fit beside what is reserved, and only then (a 64 MiB refused frame and
// a shared batch had taken the process 32 MiB past its bound).
func TestRoomOutsideHeap(t *testing.T) {
	returns, free := 0, int64(0)
	oldReturn, oldFree := returnToSystem, heapFree
	returnToSystem, heapFree = func() { returns++ }, func() int64 { return free }
	defer func() { returnToSystem, heapFree = oldReturn, oldFree }()
	s := New(Config{MaxMemory: 100 << 20})
	if !s.reserve(60 << 20) {
		t.Fatal("60 MiB of 100 refused")
	}
	for _, tc := range []struct {
		free, garbage int64
		want          int
	}{
		{30 << 20, 0, 0},        // 90 MiB in all: room
		{41 << 20, 0, 1},        // 101: returned
		{20 << 20, 21 << 20, 2}, // 101 with the garbage: returned
		{0, 40 << 20, 2},        // 100: room
	} {
		free = tc.free
		s.garbage.Store(tc.garbage)
		s.roomOutsideHeap()
		if returns != tc.want {
			t.Fatalf("reserved 60 MiB, %d MiB free pages, %d MiB garbage: %d returns, want %d", tc.free>>20, tc.garbage>>20, returns, tc.want)
		}
	}
	if oldFree() < 0 {
		t.Fatal("the heap's free bytes read negative")
	}
}

// TestCollectionsNeverCountGarbageTwice runs the collection reserve asks
// for and the one that returns memory to the system at the same time, as
// a make and a closing connection can: the garbage they take off the
// count must be taken off once. Counted twice it fell below zero, and
// reserve then let batches in beside garbage it no longer saw.
func TestCollectionsNeverCountGarbageTwice(t *testing.T) {
	s := New(Config{MaxMemory: 100 << 20})
	for round := range 20 {
		if !s.reserve(64 << 20) {
			t.Fatalf("round %d: 64 MiB of 100 refused", round)
		}
		s.giveBack(64 << 20)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for _, freeOS := range []bool{false, true} {
			wg.Go(func() {
				<-start
				s.collect(freeOS)
			})
		}
		close(start)
		wg.Wait()
		if g := s.garbage.Load(); g != 0 {
			t.Fatalf("round %d: garbage %d bytes after both collections; want 0", round, g)
		}
	}
}

// TestServeOnce: a second Serve on a Server returns an error at once and
// leaves the first serving, since the limits and the shutdown are the
// whole server's.
func TestServeOnce(t *testing.T) {
	srv, addr := start(t, Config{})
	cl := dial(t, addr)
	hello(cl)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(context.Background(), ln) }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "Serve called twice") {
			t.Fatalf("second Serve: %v; want an error saying it was called twice", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a second Serve did not return")
	}
	cl.ok(map[string]any{"op": "make", "n": 2}) // the first still serves
}

// TestMemoryLimitForDefault: MemoryLimitFor reads an unset MaxMemory as
// New does, so a program that sets the Go limit from it before making the
// server gets the server's own MemoryLimit.
func TestMemoryLimitForDefault(t *testing.T) {
	if got, want := MemoryLimitFor(0), New(Config{}).MemoryLimit(); got != want {
		t.Errorf("MemoryLimitFor(0) = %d, New(Config{}).MemoryLimit() = %d", got, want)
	}
	if got := MemoryLimitFor(96 << 20); got != 96<<20+Overhead/2 {
		t.Errorf("MemoryLimitFor(96 MiB) = %d", got)
	}
}

// TestKeepFrameHoldsEveryRequestOfItsBatch builds the largest step and
// reset requests a batch of n games takes (actions as an array of the
// widest integers with env_ids, or a seed list of the widest seeds with a
// reset mask): the frame buffer they grow must be kept (keepFrame), or
// every such request would allocate its buffer again.
func TestKeepFrameHoldsEveryRequestOfItsBatch(t *testing.T) {
	for _, n := range []int{1, 100, 4096, 65536} {
		actions, seeds := make([]int, n), make([]uint64, n)
		for i := range n {
			actions[i], seeds[i] = 0xffff, 1<<64-1
		}
		for name, req := range map[string]map[string]any{
			"step":  {"op": "step", "id": int64(1<<63 - 1), "seq": int64(1<<63 - 1), "actions": actions, "env_ids": make([]byte, 4*n)},
			"reset": {"op": "reset", "id": int64(1<<63 - 1), "seeds": seeds, "reset_mask": make([]byte, n)},
		} {
			size := len(must(msgpack.Marshal(req)))
			if size > keepFrame(n) {
				t.Errorf("a %s request of %d games takes %d bytes; keepFrame(%d) keeps %d", name, n, size, n, keepFrame(n))
			}
		}
	}
}

// TestRefusedRequestsHoldNoMemory: a render or hint request refused for
// memory or for the batch's rules leaves the connection holding what it
// held before, so the server's count is where it was and later requests
// find the memory free.
func TestRefusedRequestsHoldNoMemory(t *testing.T) {
	mk := map[string]any{"op": "make", "n": 1, "suits": 2}
	used := func() int64 {
		cn := testConn(t, Config{}, mk)
		cn.call(t, map[string]any{"op": "reset", "seed": 1})
		return cn.s.Memory()
	}()
	refused := func(cn *conn, q map[string]any, code string) {
		t.Helper()
		before := cn.s.Memory()
		if err := cn.serve(must(msgpack.Marshal(q))); err != nil {
			t.Fatal(err)
		}
		if r := decodeReply(t, cn.en.payload()); r["ok"] != false || r["code"] != code {
			t.Fatalf("%v: %v; want refused with %s", q, r, code)
		}
		if got := cn.s.Memory(); got != before || got != cn.held.total() {
			t.Fatalf("%v refused: the server counts %d bytes (%d before), the connection holds %d", q, got, before, cn.held.total())
		}
	}

	// Room for the picture but not for the reply buffer that carries it.
	cn := testConn(t, Config{MaxMemory: int(used + picture.Size + 1000)}, mk)
	cn.call(t, map[string]any{"op": "reset", "seed": 1})
	refused(cn, map[string]any{"op": "render", "game": 0, "mode": "rgb_array"}, "limit")

	// A hint agent that cannot advise on two suits, with memory to spare.
	cn = testConn(t, Config{Hint: func() agents.Agent { return fixedAgent{env.MustRules(env.Options{Suits: 1})} }}, mk)
	cn.call(t, map[string]any{"op": "reset", "seed": 1})
	refused(cn, map[string]any{"op": "hint", "game": 0}, "bad_config")
	if cn.hint != nil {
		t.Fatal("the refused hint request kept its agent")
	}
}

// TestSetupTimeoutHoldsForClientsThatDoNotRead: a connection without a
// batch keeps its place no longer than the setup timeout (and its second
// of grace), however it reads: one that sends hellos and never reads a
// reply blocked the server's write for the idle timeout (a minute here,
// 5 by default), and one that wrote thousands of hellos at once and read
// them slowly was answered from the server's read buffer long past it.
// On a Unix socket, whose buffers hold a few hundred replies (each is a
// write of its own), so that the server waits on the reader soon.
func TestSetupTimeoutHoldsForClientsThatDoNotRead(t *testing.T) {
	ln, err := net.Listen("unix", filepath.Join(t.TempDir(), "s"))
	if err != nil {
		t.Skipf("no Unix socket: %v", err)
	}
	srv := New(Config{SetupTimeout: 300 * time.Millisecond, IdleTimeout: time.Minute})
	serveOn(t, srv, ln)
	connect := func() *client {
		c, err := net.Dial("unix", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.SetDeadline(time.Now().Add(20 * time.Second))
		return &client{t: t, c: c}
	}
	hellos := bytes.Repeat(frame(must(msgpack.Marshal(map[string]any{"op": "hello", "version": Version}))), 4096)

	// Never reads: writes until the server stops reading.
	deaf := connect()
	began := time.Now()
	go func(began time.Time) {
		for time.Since(began) < 10*time.Second {
			deaf.c.SetWriteDeadline(time.Now().Add(200 * time.Millisecond))
			if _, err := deaf.c.Write(hellos[:16<<10]); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
				return
			}
		}
	}(began)
	for srv.Conns() == 0 && time.Since(began) < 10*time.Second {
		time.Sleep(time.Millisecond) // until the server has taken it
	}
	for srv.Conns() > 0 && time.Since(began) < 10*time.Second {
		time.Sleep(20 * time.Millisecond)
	}
	if took := time.Since(began); srv.Conns() != 0 || took > 3*time.Second {
		t.Fatalf("a connection that never reads was still open after %v (%d open); the setup timeout is 300ms", took, srv.Conns())
	}

	// Writes every hello at once, then reads 64 replies every 50 ms: the
	// replies stop soon after the setup timeout with the limit reply,
	// not at the end of what the server had read (about 2,800 hellos,
	// 2.2 s of reading).
	slow := connect()
	began = time.Now()
	go slow.c.Write(hellos)
	var last map[string]any
	replies := 0
	for {
		if last = slow.recv(); last == nil || last["ok"] != true {
			break
		}
		if replies++; replies%64 == 0 {
			time.Sleep(50 * time.Millisecond)
		}
	}
	if last == nil || last["code"] != "limit" || !strings.Contains(fmt.Sprint(last["error"]), "--setup-timeout") {
		t.Fatalf("after %d replies in %v: %v, want the setup timeout's limit reply", replies, time.Since(began), last)
	}
	if took := time.Since(began); took > 3*time.Second || replies >= 2000 {
		t.Fatalf("%d of 4096 hellos answered over %v; the setup timeout is 300ms", replies, took)
	}
}

// TestMemoryIsReturnedWhenTheServerIsQuiet: memory given back is returned
// to the system (a forced collection, which stops every goroutine for up
// to tens of milliseconds on a freshly freed heap) only once no request
// is being served and none has been for a moment. Returned at once, it
// held up the steps of every other connection 10-240 ms each time a
// large batch was closed beside them.
func TestMemoryIsReturnedWhenTheServerIsQuiet(t *testing.T) {
	var returns atomic.Int64
	oldReturn := returnToSystem
	returnToSystem = func() { returns.Add(1) }
	defer func() { returnToSystem = oldReturn }()
	s := New(Config{MaxMemory: 1 << 30})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.returnMemoryLoop(ctx)
	}()
	defer func() {
		cancel()
		<-done
	}()

	s.requestStarts()
	s.gaveBack(64 << 20)
	time.Sleep(300 * time.Millisecond)
	if n := returns.Load(); n != 0 {
		t.Fatalf("%d returns while a request was being served; want none until it ends", n)
	}
	s.requestEnds()
	deadline := time.Now().Add(3 * time.Second)
	for returns.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if n := returns.Load(); n != 1 {
		t.Fatalf("%d returns after the last request ended; want 1", n)
	}

	// A server answering one request after another, with gaps shorter
	// than the quiet it waits for, returns nothing until they stop.
	stop := time.Now().Add(400 * time.Millisecond)
	s.gaveBack(64 << 20)
	for time.Now().Before(stop) {
		s.requestStarts()
		time.Sleep(time.Millisecond)
		s.requestEnds()
		time.Sleep(time.Millisecond)
	}
	if n := returns.Load(); n != 1 {
		t.Fatalf("%d returns while requests came every 2 ms; want still 1", n)
	}
	deadline = time.Now().Add(3 * time.Second)
	for returns.Load() == 1 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if n := returns.Load(); n != 2 {
		t.Fatalf("%d returns once the requests stopped; want 2", n)
	}
}

package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sync"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/spiderenv/spider/env"
)

// rssConfig is the server TestServerRSSWithinMaxMemory measures: a small
// memory limit, frames large enough to matter, every other limit out of
// the way so that the memory limit is the one that binds.
func rssConfig() Config {
	return Config{MaxMemory: 96 << 20, MaxFrame: 16<<20 + 1, MaxConns: 64, MaxPeerConns: 64,
		MaxGames: 16384, MaxTotal: 1 << 20, MaxBytes: 1 << 30, Workers: 2}
}

// TestServerRSSWithinMaxMemory runs a server in a child process, as spider
// serve runs it (the Go memory limit set from MemoryLimit), and loads it
// with everything a client may do at once: batches as large as the memory
// limit admits, made and remade, stepped with the replies read, pictures,
// and frames of garbage as large as --max-frame. The child's peak RSS must
// stay within MaxMemory plus Overhead, and once the clients have gone its
// RSS must fall back near where it started.
func TestServerRSSWithinMaxMemory(t *testing.T) {
	if path := os.Getenv("SPIDER_RSS_CHILD"); path != "" {
		rssChild(t, path)
		return
	}
	if testing.Short() {
		t.Skip("loads a server for several seconds")
	}
	if runtime.GOOS != "linux" || raceEnabled {
		t.Skip("reads /proc; the race detector's memory would be measured too")
	}
	cfg := rssConfig()
	sock, pid := startRSSChild(t, cfg.MaxMemory)
	base := procStatus(t, pid, "VmRSS")

	var load tally
	want := map[string]int{"step": 20, "garbage": 1, "make refused": 1}
	ctx := loadContext(t, 6*time.Second, 60*time.Second, &load, want)
	var wg sync.WaitGroup
	count := load.add
	for k := range 5 {
		wg.Go(func() { rssPlayer(ctx, sock, k, count) })
	}
	for range 4 {
		wg.Go(func() { rssGarbage(ctx, sock, cfg.MaxFrame, count) })
	}
	wg.Go(func() { rssPictures(ctx, sock, count) })
	wg.Wait()
	counts := load.m
	peak := procStatus(t, pid, "VmHWM")
	// Every client has closed: the memory must go back to the system.
	var after int64
	for range 40 {
		time.Sleep(100 * time.Millisecond)
		if after = procStatus(t, pid, "VmRSS"); after < base+32<<20 {
			break
		}
	}
	bound := int64(cfg.MaxMemory) + Overhead
	t.Logf("--max-memory %d MiB: RSS %d MiB at the start, peak %d MiB (bound %d MiB = max-memory + %d MiB), %d MiB after the clients left; load: %v",
		cfg.MaxMemory>>20, base>>20, peak>>20, bound>>20, Overhead>>20, after>>20, counts)
	if !load.atLeast(want) {
		t.Errorf("the load did not fill the limit in a minute: %v", counts)
	}
	if peak > bound {
		t.Errorf("peak RSS %d MiB is over max-memory + overhead = %d MiB", peak>>20, bound>>20)
	}
	if after > base+32<<20 {
		t.Errorf("RSS %d MiB after every client left; it started at %d MiB", after>>20, base>>20)
	}
}

// tally counts what a load's clients did, from any goroutine; its map is
// read once they are done.
type tally struct {
	mu sync.Mutex
	m  map[string]int
}

func (tl *tally) add(what string) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	if tl.m == nil {
		tl.m = map[string]int{}
	}
	tl.m[what]++
}

// atLeast reports whether every count of want has been reached.
func (tl *tally) atLeast(want map[string]int) bool {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	for k, n := range want {
		if tl.m[k] < n {
			return false
		}
	}
	return true
}

// loadContext returns the context of a load that runs for at least
// least, then until the load has done want (counted in load), or for
// most at the outside: on a busy machine the clients get less done in
// the same time, and a fixed window would fail a sound server.
func loadContext(t *testing.T, least, most time.Duration, load *tally, want map[string]int) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), most)
	t.Cleanup(cancel)
	go func() {
		select {
		case <-time.After(least):
		case <-ctx.Done():
			return
		}
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for !load.atLeast(want) {
			select {
			case <-tick.C:
			case <-ctx.Done():
				return
			}
		}
		cancel()
	}()
	return ctx
}

// startRSSChild starts the child process of TestServerRSSWithinMaxMemory,
// a server of rssConfig with the given MaxMemory, and returns its socket
// and process id; it stops when the test ends.
func startRSSChild(t *testing.T, maxMemory int) (sock string, pid int) {
	t.Helper()
	sock = filepath.Join(t.TempDir(), "s")
	child := exec.Command(os.Args[0], "-test.run=^TestServerRSSWithinMaxMemory$", "-test.count=1")
	child.Env = append(os.Environ(), "SPIDER_RSS_CHILD="+sock, fmt.Sprint("SPIDER_RSS_MAX=", maxMemory))
	stdin, err := child.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	child.Stderr = os.Stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close() // the child stops when its stdin closes
		done := make(chan error, 1)
		go func() { done <- child.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			child.Process.Kill()
			<-done
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "ready\n" {
		t.Fatalf("the child server did not start: %q, %v", line, err)
	}
	return sock, child.Process.Pid
}

// rssChild is the child process: a server on the Unix socket path until
// its stdin closes.
func rssChild(t *testing.T, path string) {
	cfg := rssConfig()
	if _, err := fmt.Sscan(os.Getenv("SPIDER_RSS_MAX"), &cfg.MaxMemory); err != nil {
		t.Fatal(err)
	}
	srv := New(cfg)
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(srv.MemoryLimit()))
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	fmt.Println("ready")
	if err := srv.Serve(ctx, ln); err != nil {
		t.Fatal(err)
	}
}

// rawClient is a client that reads replies into one reused buffer and
// decodes only the small ones: the parent's own memory does not matter.
type rawClient struct {
	c   net.Conn
	r   *bufio.Reader
	buf []byte
}

func rawDial(path string) (*rawClient, error) {
	c, err := net.Dial("unix", path)
	if err != nil {
		return nil, err
	}
	c.SetDeadline(time.Now().Add(20 * time.Second))
	return &rawClient{c: c, r: bufio.NewReaderSize(c, 1<<16)}, nil
}

func (rc *rawClient) send(payload []byte) error {
	_, err := rc.c.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(payload))), payload...))
	return err
}

// call sends m and returns the reply's ok and code; big replies are read
// and not decoded (ok is then true).
func (rc *rawClient) call(m map[string]any) (bool, string, error) {
	payload, err := msgpack.Marshal(m)
	if err != nil {
		return false, "", err
	}
	if err := rc.send(payload); err != nil {
		return false, "", err
	}
	return rc.reply()
}

func (rc *rawClient) reply() (bool, string, error) {
	var err error
	var payload []byte
	if payload, rc.buf, err = readFrame(rc.r, rc.buf, 1<<30, nil); err != nil {
		return false, "", err
	}
	if len(payload) > 1<<20 {
		return true, "", nil
	}
	var rep struct {
		OK   bool   `msgpack:"ok"`
		Code string `msgpack:"code"`
	}
	if err := msgpack.Unmarshal(payload, &rep); err != nil {
		return false, "", err
	}
	return rep.OK, rep.Code, nil
}

// rssPlayer makes the largest float32 four-suit batch it can get, steps
// it, and closes and starts again, until ctx ends.
func rssPlayer(ctx context.Context, path string, k int, count func(string)) {
	actions := make([]byte, 2*200)
	for ctx.Err() == nil {
		rc, err := rawDial(path)
		if err != nil {
			count("dial failed")
			time.Sleep(10 * time.Millisecond)
			continue
		}
		func() {
			defer rc.c.Close()
			if ok, _, err := rc.call(map[string]any{"op": "hello", "version": Version}); !ok || err != nil {
				return
			}
			n := 0
			for _, try := range []int{200, 100, 50, 25} {
				ok, code, err := rc.call(map[string]any{"op": "make", "n": try, "suits": 4, "obs": "float32", "autoreset": "same-step"})
				if err != nil {
					return
				}
				if ok {
					n = try
					break
				}
				count("make refused")
				if code != "limit" {
					count("make failed: " + code)
				}
			}
			if n == 0 {
				time.Sleep(20 * time.Millisecond)
				return
			}
			count("make")
			if ok, _, err := rc.call(map[string]any{"op": "reset", "seed": k}); !ok || err != nil {
				return
			}
			// Action 1080 is the deal: legal while the stock lasts, and
			// the noop policy makes the rest cost nothing either way.
			for i := range n {
				binary.LittleEndian.PutUint16(actions[2*i:], uint16(env.Deal))
			}
			for range 10 + k {
				if ok, _, err := rc.call(map[string]any{"op": "step", "actions": actions[:2*n]}); !ok || err != nil {
					return
				}
				count("step")
			}
		}()
	}
}

// rssGarbage sends frames of garbage as large as the server takes, until
// ctx ends; a frame the memory limit refuses costs the connection.
func rssGarbage(ctx context.Context, path string, size int, count func(string)) {
	garbage := bytes.Repeat([]byte{0xc1}, size)
	for ctx.Err() == nil {
		rc, err := rawDial(path)
		if err != nil {
			count("dial failed")
			time.Sleep(10 * time.Millisecond)
			continue
		}
		for ctx.Err() == nil {
			if rc.send(garbage) != nil {
				break
			}
			_, code, err := rc.reply()
			if err != nil {
				break
			}
			count("garbage")
			if code != "bad_frame" {
				count("garbage refused: " + code)
				break
			}
		}
		rc.c.Close()
	}
}

// rssPictures asks for pictures on a small batch until ctx ends.
func rssPictures(ctx context.Context, path string, count func(string)) {
	for ctx.Err() == nil {
		rc, err := rawDial(path)
		if err != nil {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		func() {
			defer rc.c.Close()
			for _, m := range []map[string]any{{"op": "hello", "version": Version}, {"op": "make", "n": 1}, {"op": "reset", "seed": 1}} {
				if ok, _, err := rc.call(m); !ok || err != nil {
					time.Sleep(20 * time.Millisecond)
					return
				}
			}
			for range 20 {
				if ok, _, err := rc.call(map[string]any{"op": "render", "game": 0, "mode": "rgb_array"}); !ok || err != nil {
					return
				}
				count("picture")
			}
		}()
	}
}

// TestServerRSSRemakeAndReconnect loads a server with the two patterns
// that let a released batch linger on the heap after its bytes were given
// back: a client that replaces its batch with a new make, and one that
// opens a new connection, closes the old one and makes its batch again at
// once. Batches here are large beside the Overhead, so that two of them
// held at once would show; the peak RSS must stay within MaxMemory plus
// Overhead.
func TestServerRSSRemakeAndReconnect(t *testing.T) {
	if testing.Short() {
		t.Skip("loads a server for several seconds")
	}
	if runtime.GOOS != "linux" || raceEnabled {
		t.Skip("reads /proc; the race detector's memory would be measured too")
	}
	const maxMemory = 256 << 20
	sock, pid := startRSSChild(t, maxMemory)
	var load tally
	want := map[string]int{"reconnect": 3, "make": 6}
	ctx := loadContext(t, 5*time.Second, 60*time.Second, &load, want)
	count := load.add
	// makeSome makes the largest batch of sizes it can get on rc, and
	// resets it; false when none fit.
	makeSome := func(rc *rawClient, sizes []int) bool {
		for _, n := range sizes {
			ok, _, err := rc.call(map[string]any{"op": "make", "n": n, "suits": 4, "obs": "float32"})
			if err != nil {
				return false
			}
			if ok {
				ok, _, err = rc.call(map[string]any{"op": "reset", "seed": n})
				count("make")
				return ok && err == nil
			}
			count("make refused")
		}
		return false
	}
	dial := func() *rawClient {
		rc, err := rawDial(sock)
		if err != nil {
			return nil
		}
		if ok, _, err := rc.call(map[string]any{"op": "hello", "version": Version}); !ok || err != nil {
			rc.c.Close()
			return nil
		}
		return rc
	}
	var wg sync.WaitGroup
	wg.Go(func() { // reconnects: a new connection, then the old one closed
		var old *rawClient
		for ctx.Err() == nil {
			rc := dial()
			if rc == nil {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			if old != nil {
				old.call(map[string]any{"op": "close"})
				old.c.Close()
			}
			old = rc
			for ctx.Err() == nil && !makeSome(rc, []int{2800, 2000}) {
				time.Sleep(5 * time.Millisecond)
			}
			count("reconnect")
		}
		if old != nil {
			old.c.Close()
		}
	})
	wg.Go(func() { // remakes its batch on one connection
		rc := dial()
		if rc == nil {
			return
		}
		defer rc.c.Close()
		for ctx.Err() == nil {
			if !makeSome(rc, []int{1500, 1000, 500}) {
				time.Sleep(5 * time.Millisecond)
			}
		}
	})
	wg.Wait()
	counts := load.m
	peak := procStatus(t, pid, "VmHWM")
	bound := int64(maxMemory) + Overhead
	t.Logf("--max-memory %d MiB: peak %d MiB (bound %d MiB); load: %v", maxMemory>>20, peak>>20, bound>>20, counts)
	if !load.atLeast(want) {
		t.Errorf("the load did not remake and reconnect enough in a minute: %v", counts)
	}
	if peak > bound {
		t.Errorf("peak RSS %d MiB is over max-memory + overhead = %d MiB", peak>>20, bound>>20)
	}
}

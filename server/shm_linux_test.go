//go:build linux && (amd64 || arm64 || 386)

package server

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/spiderenv/spider/env"
	"github.com/spiderenv/spider/internal/rng"
)

// startUnix runs a server on a Unix socket in a fresh folder until the
// test ends and returns its path.
func startUnix(t *testing.T, cfg Config) (*Server, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "spider.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	srv := New(cfg)
	serveOn(t, srv, ln)
	return srv, path
}

// shmClient is a client holding a batch's shared memory as a client on
// the same machine maps it: the buffers read-only, the actions writable.
type shmClient struct {
	*client
	buffers, actions []byte
	layout           map[string]map[string]any
}

// makeShm sends make with "shm": true and maps the descriptors that come
// with the reply.
func makeShm(t *testing.T, cl *client, mk map[string]any) *shmClient {
	t.Helper()
	mk["shm"] = true
	cl.send(mk)
	uc := cl.c.(*net.UnixConn)
	buf := make([]byte, 1<<20)
	oob := make([]byte, syscall.CmsgSpace(2*4))
	n, oobn, _, _, err := uc.ReadMsgUnix(buf, oob)
	if err != nil {
		t.Fatal(err)
	}
	size := int(binary.BigEndian.Uint32(buf)) + frameHeader
	if _, err := io.ReadFull(uc, buf[n:size]); err != nil {
		t.Fatal(err)
	}
	rep := decodeReply(t, buf[frameHeader:size])
	if rep["ok"] != true || rep["shm"] != true {
		t.Fatalf("make with shm: %v", rep)
	}
	if asked, _ := mk["legal"].(bool); rep["legal"] != mk["legal"] || asked != (rep["shm_layout"] != nil && hasField(rep["shm_layout"], "legal")) {
		t.Fatalf("make with shm and legal %v: reply's legal %v, layout %v", mk["legal"], rep["legal"], rep["shm_layout"])
	}
	msgs, err := syscall.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		t.Fatalf("control messages %v, %v", msgs, err)
	}
	fds, err := syscall.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 2 {
		t.Fatalf("descriptors %v, %v", fds, err)
	}
	defer syscall.Close(fds[0])
	defer syscall.Close(fds[1])
	sizes := rep["shm_size"].([]any)
	sc := &shmClient{client: cl, layout: map[string]map[string]any{}}
	for _, f := range rep["shm_layout"].([]any) {
		m := f.(map[string]any)
		sc.layout[m["name"].(string)] = m
	}
	// The buffers cannot be mapped writable, nor shrunk under the server.
	if _, err := syscall.Mmap(fds[0], 0, int(toInt(sizes[0])), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED); !errors.Is(err, syscall.EPERM) {
		t.Fatalf("mapping the buffers writable: %v; want EPERM", err)
	}
	if err := syscall.Ftruncate(fds[0], 0); !errors.Is(err, syscall.EPERM) {
		t.Fatalf("shrinking the buffers: %v; want EPERM", err)
	}
	if err := syscall.Ftruncate(fds[1], 0); !errors.Is(err, syscall.EPERM) {
		t.Fatalf("shrinking the actions: %v; want EPERM", err)
	}
	if sc.buffers, err = syscall.Mmap(fds[0], 0, int(toInt(sizes[0])), syscall.PROT_READ, syscall.MAP_SHARED); err != nil {
		t.Fatal(err)
	}
	if sc.actions, err = syscall.Mmap(fds[1], 0, int(toInt(sizes[1])), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Munmap(sc.buffers); syscall.Munmap(sc.actions) })
	return sc
}

func toInt(v any) int64 {
	switch x := v.(type) {
	case int8:
		return int64(x)
	case int16:
		return int64(x)
	case int32:
		return int64(x)
	case int64:
		return x
	case uint8:
		return int64(x)
	case uint16:
		return int64(x)
	case uint32:
		return int64(x)
	case uint64:
		return int64(x)
	}
	panic(fmt.Sprintf("not an integer: %T", v))
}

// hasField reports whether a make reply's shm_layout places an array
// named name.
func hasField(layout any, name string) bool {
	for _, f := range layout.([]any) {
		if f.(map[string]any)["name"] == name {
			return true
		}
	}
	return false
}

// field returns the bytes of the shared buffer named name.
func (sc *shmClient) field(name string) []byte {
	f, ok := sc.layout[name]
	if !ok {
		return nil
	}
	size := map[string]int64{"uint8": 1, "bool": 1, "uint16": 2, "int16": 2, "int32": 4, "float32": 4}[f["dtype"].(string)]
	for _, d := range f["shape"].([]any) {
		size *= toInt(d)
	}
	off := toInt(f["offset"])
	return sc.buffers[off : off+size]
}

// asReply returns the shared buffers as the step reply of the socket path
// would carry them, for compare.
func (sc *shmClient) asReply() map[string]any {
	rep := map[string]any{"ok": true}
	for name := range sc.layout {
		if name != "actions" {
			rep[name] = sc.field(name)
		}
	}
	return rep
}

// TestShmMatchesBatch plays the same games through shared memory and an
// in-process Batch for 3,000 steps in every autoreset mode, some steps on
// a subset of the games, and requires identical bytes in every array, the
// legal lists included where make asked for them.
func TestShmMatchesBatch(t *testing.T) {
	steps := 3000
	if testing.Short() {
		steps = 300
	}
	_, path := startUnix(t, Config{})
	for _, tc := range []struct {
		obs, autoreset string
		legal          bool
	}{{"compact", "next-step", true}, {"float32", "same-step", false}, {"compact", "disabled", true}} {
		t.Run(tc.obs+"/"+tc.autoreset, func(t *testing.T) {
			const n = 7
			cl := dialNet(t, "unix", path)
			hello(cl)
			mk := map[string]any{"op": "make", "n": n, "obs": tc.obs, "autoreset": tc.autoreset, "max_steps": 60, "illegal": "noop", "mask": "bits"}
			if tc.legal {
				mk["legal"] = true
			}
			sc := makeShm(t, cl, mk)
			auto, _ := env.ParseAutoreset(tc.autoreset)
			enc := env.Compact
			if tc.obs == "float32" {
				enc = env.Float32
			}
			b, err := env.NewBatch(env.MustRules(env.Options{MaxSteps: 60, Encoding: enc}), env.BatchOptions{N: n, Autoreset: auto, Illegal: env.NoopIllegal, Legal: tc.legal})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			rep := cl.ok(map[string]any{"op": "reset", "seed": 21})
			if rep["done"] != true || len(rep) != 2 {
				t.Fatalf("reset reply %v; want ok and done only", rep)
			}
			b.Reset(21)
			compare(t, sc.asReply(), b, false)
			g := rng.New(4)
			actions := make([]env.Action, n)
			ended := make([]bool, n)
			for step := range steps {
				pickActions(&g, b, actions)
				if step%50 == 7 {
					actions[3] = 0 // an illegal move now and then: the noop policy's flag
				}
				for i, a := range actions {
					binary.LittleEndian.PutUint16(sc.actions[2*i:], uint16(a))
				}
				req := map[string]any{"op": "step", "seq": step}
				if step%3 == 1 {
					ids := []int32{0, 2, 3, 6}
					req["env_ids"] = int32Bin(ids)
					err = b.StepSome(actions, ids)
				} else {
					err = b.Step(actions)
				}
				if err != nil {
					t.Fatal(err)
				}
				rep := cl.ok(req)
				if rep["done"] != true || toInt(rep["seq"]) != int64(step) {
					t.Fatalf("step reply %v", rep)
				}
				compare(t, sc.asReply(), b, false)
				if tc.autoreset == "disabled" {
					for i := range ended {
						ended[i] = b.NumLegal[i] == 0
					}
					if bytes.Contains(bytesOf(ended), []byte{1}) {
						b.ResetGames(ended)
						cl.ok(map[string]any{"op": "reset", "reset_mask": bytesOf(ended)})
						compare(t, sc.asReply(), b, false)
					}
				}
			}
		})
	}
}

// pickActions draws one legal action per game from the batch's masks.
func pickActions(g *rng.Rand, b *env.Batch, dst []env.Action) {
	for i := range dst {
		dst[i] = env.Deal
		if b.NumLegal[i] == 0 {
			continue
		}
		k := g.IntN(int(b.NumLegal[i]))
		for a, ok := range b.Masks[i*env.NumActions : (i+1)*env.NumActions] {
			if ok == 1 {
				if k == 0 {
					dst[i] = env.Action(a)
					break
				}
				k--
			}
		}
	}
}

func int32Bin(ids []int32) []byte {
	b := make([]byte, 0, 4*len(ids))
	for _, id := range ids {
		b = binary.LittleEndian.AppendUint32(b, uint32(id))
	}
	return b
}

// TestShmChecksActions requires the actions in shared memory to be
// checked as a step's actions are: an illegal one under the error policy
// refuses the step and changes nothing.
func TestShmChecksActions(t *testing.T) {
	_, path := startUnix(t, Config{})
	cl := dialNet(t, "unix", path)
	hello(cl)
	sc := makeShm(t, cl, map[string]any{"op": "make", "n": 3})
	cl.ok(map[string]any{"op": "reset", "seed": 1})
	before := bytes.Clone(sc.buffers)
	masks := sc.field("masks")
	for i := range 3 {
		binary.LittleEndian.PutUint16(sc.actions[2*i:], uint16(bytes.IndexByte(masks[i*env.NumActions:], 1)))
	}
	for _, a := range []int{env.NumActions, 0xffff, bytes.IndexByte(masks[env.NumActions:2*env.NumActions], 0)} {
		binary.LittleEndian.PutUint16(sc.actions[2:], uint16(a))
		r := cl.call(map[string]any{"op": "step", "seq": 1})
		if r["ok"] != false || r["code"] != codeBadAction || !strings.Contains(r["error"].(string), "game 1") {
			t.Fatalf("action %d in shared memory: %v", a, r)
		}
		if !bytes.Equal(before, sc.buffers) {
			t.Fatalf("a refused step changed the shared buffers")
		}
	}
	cl.failed(map[string]any{"op": "step", "env_ids": int32Bin([]int32{1, 1})}, codeBadRequest, "env_ids must be strictly increasing: item 1 is 1 after 1")
	cl.failed(map[string]any{"op": "step", "env_ids": []byte{1, 0, 0}}, codeBadRequest, "env_ids bin has 3 bytes; want 4 per game (int32 little-endian), 3 games at most")
	cl.failed(map[string]any{"op": "step", "env_ids": int32Bin([]int32{3})}, codeBadRequest, "env_ids item 0 is 3, outside 0 to 2")
	// An empty list is a step of no game (PROTOCOL.md: k is 0 to n): it
	// changes nothing.
	if r := cl.call(map[string]any{"op": "step", "seq": 2, "env_ids": []byte{}}); r["ok"] != true {
		t.Fatalf("a step of no game: %v", r)
	}
	if !bytes.Equal(before, sc.buffers) {
		t.Fatalf("a step of no game changed the shared buffers")
	}
}

// TestLegalListsCountOnlyWhenShared sets --max-batch-bytes between a
// batch's buffers without and with the legal lists: a shared batch with
// lists is refused, the same make over TCP (served without lists) is not.
func TestLegalListsCountOnlyWhenShared(t *testing.T) {
	const n = 100
	per := env.MustRules(env.Options{}).ObsLen() + env.NumActions
	cfg := Config{MaxBytes: n * (per + env.NumActions)} // room for the buffers, not for lists too
	mk := map[string]any{"op": "make", "n": n, "shm": true, "legal": true}
	_, path := startUnix(t, cfg)
	cl := dialNet(t, "unix", path)
	hello(cl)
	if rep := cl.call(mk); rep["ok"] != false || rep["code"] != codeLimit {
		t.Fatalf("a shared batch with lists over --max-batch-bytes: %v", rep)
	}
	_, addr := start(t, cfg)
	tcp := dial(t, addr)
	hello(tcp)
	if rep := tcp.ok(mk); rep["shm"] != false || rep["legal"] != false {
		t.Fatalf("make over TCP: %v", rep)
	}
}

// TestShmFallsBackOnTCP asks for shared memory (and legal lists) over TCP:
// the batch is served over the socket without lists, and the reply says
// why.
func TestShmFallsBackOnTCP(t *testing.T) {
	_, addr := start(t, Config{})
	cl := dial(t, addr)
	hello(cl)
	rep := cl.ok(map[string]any{"op": "make", "n": 2, "shm": true, "legal": true})
	if rep["shm"] != false || !strings.Contains(fmt.Sprint(rep["shm_error"]), "not a Unix socket") || rep["legal"] != false {
		t.Fatalf("make with shm over TCP: %v", rep)
	}
	step := cl.ok(map[string]any{"op": "reset", "seed": 3})
	if _, ok := step["obs"].([]byte); !ok {
		t.Fatalf("reset reply over TCP has no observations: %v", step)
	}
	if _, ok := step["legal"]; ok {
		t.Fatalf("reset reply over TCP carries legal lists: %v", step)
	}
}

// TestShmClientGoneFreesSegment closes a client holding a segment and
// requires the server to unmap it and give its memory back, and a new
// client to work.
func TestShmClientGoneFreesSegment(t *testing.T) {
	srv, path := startUnix(t, Config{})
	maps := func() int {
		b, err := os.ReadFile("/proc/self/maps")
		if err != nil {
			t.Fatal(err)
		}
		return strings.Count(string(b), "memfd:spider-")
	}
	base := maps()
	cl := dialNet(t, "unix", path)
	hello(cl)
	sc := makeShm(t, cl, map[string]any{"op": "make", "n": 64})
	cl.ok(map[string]any{"op": "reset", "seed": 1})
	if got := maps(); got != base+4 { // the server's two mappings and the test client's two
		t.Fatalf("%d memfd mappings with one shared batch; want %d", got, base+4)
	}
	syscall.Munmap(sc.buffers)
	syscall.Munmap(sc.actions)
	sc.buffers, sc.actions = nil, nil
	cl.c.Close()
	deadline := time.Now().Add(5 * time.Second)
	for maps() != base || srv.Memory() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("after the client left: %d memfd mappings (want %d), %d bytes held", maps(), base, srv.Memory())
		}
		time.Sleep(10 * time.Millisecond)
	}
	cl2 := dialNet(t, "unix", path)
	hello(cl2)
	makeShm(t, cl2, map[string]any{"op": "make", "n": 4})
	cl2.ok(map[string]any{"op": "reset", "seed": 1})
}

// TestShmStepAllocatesNothing serves steps of a batch in shared memory
// (with the legal lists), of every game and of a subset, and requires no
// allocation per request.
func TestShmStepAllocatesNothing(t *testing.T) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	var ends [2]*net.UnixConn
	for i, fd := range fds {
		f := os.NewFile(uintptr(fd), "socketpair")
		c, err := net.FileConn(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		ends[i] = c.(*net.UnixConn)
		t.Cleanup(func() { c.Close() })
	}
	go io.Copy(io.Discard, ends[1]) // the client's end: replies are read and dropped
	// since: flush bounds a reply before a batch by the setup timeout.
	cn := &conn{s: New(Config{}), c: ends[0], w: bufio.NewWriterSize(ends[0], 1<<16), since: time.Now()}
	t.Cleanup(cn.release)
	cn.call(t, map[string]any{"op": "hello", "version": Version})
	cn.call(t, map[string]any{"op": "make", "n": 64, "illegal": "noop", "autoreset": "same-step", "shm": true, "legal": true})
	if cn.seg == nil || cn.batch.Legal == nil {
		t.Fatalf("no shared memory (%s) or no legal lists", cn.shmWhy)
	}
	cn.call(t, map[string]any{"op": "reset", "seed": 2})
	all := must(msgpack.Marshal(map[string]any{"op": "step", "seq": 5, "id": 9}))
	some := must(msgpack.Marshal(map[string]any{"op": "step", "seq": 5, "env_ids": int32Bin([]int32{1, 5, 9, 60})}))
	for _, req := range [][]byte{all, some} {
		if r := cn.call(t, must(msgpackUnmarshalMap(req))); r["done"] != true {
			t.Fatalf("step reply %v", r)
		}
		if allocs := mallocs(300, func() {
			if err := cn.serve(req); err != nil {
				t.Fatal(err)
			}
		}); allocs != 0 {
			t.Errorf("%d allocations in 300 shared steps", allocs)
		}
	}
}

func msgpackUnmarshalMap(b []byte) (map[string]any, error) {
	var m map[string]any
	err := msgpack.Unmarshal(b, &m)
	return m, err
}

// TestShmLowersTheMemoryLimit: a server that owns the Go memory limit
// lowers it by the shared memory it holds, which the collector does not
// see, and raises it again when the segment goes.
func TestShmLowersTheMemoryLimit(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	srv, path := startUnix(t, Config{MaxMemory: 512 << 20, OwnsMemoryLimit: true})
	full := srv.MemoryLimit()
	debug.SetMemoryLimit(full)
	cl := dialNet(t, "unix", path)
	hello(cl)
	sc := makeShm(t, cl, map[string]any{"op": "make", "n": 64})
	held := int64(len(sc.buffers) + len(sc.actions))
	if got := debug.SetMemoryLimit(-1); got != full-held {
		t.Fatalf("Go memory limit %d with a segment of %d bytes; want %d", got, held, full-held)
	}
	cl.c.Close()
	deadline := time.Now().Add(5 * time.Second)
	for debug.SetMemoryLimit(-1) != full {
		if time.Now().After(deadline) {
			t.Fatalf("Go memory limit %d after the client left; want %d", debug.SetMemoryLimit(-1), full)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestShmMakeMakesRoomOutsideTheHeap: a make on shared memory returns the
// heap's freed pages to the system before it maps its segment when they
// would not fit beside it (a refused 64 MiB frame, then a shared batch,
// took the process 32 MiB past its bound), and not when they fit.
func TestShmMakeMakesRoomOutsideTheHeap(t *testing.T) {
	var returns atomic.Int64
	var free atomic.Int64
	oldReturn, oldFree := returnToSystem, heapFree
	t.Cleanup(func() { returnToSystem, heapFree = oldReturn, oldFree }) // after the server's own
	returnToSystem, heapFree = func() { returns.Add(1) }, free.Load
	_, path := startUnix(t, Config{MaxMemory: 512 << 20})
	cl := dialNet(t, "unix", path)
	hello(cl)
	makeShm(t, cl, map[string]any{"op": "make", "n": 64})
	if n := returns.Load(); n != 0 {
		t.Fatalf("%d returns with no free pages", n)
	}
	free.Store(600 << 20)
	makeShm(t, cl, map[string]any{"op": "make", "n": 64})
	if n := returns.Load(); n != 1 {
		t.Fatalf("%d returns with 600 MiB of free pages at a 512 MiB limit; want 1, before the segment", n)
	}
}

// TestShmBytesCoversWhatASegmentAdds makes segments of batches whose
// actions take a page or several and requires shmBytes, what make
// reserves for a segment beside the batch's own bytes, to cover what the
// segment adds: the layout's padding and both memfds' last pages, since
// the kernel maps whole pages.
func TestShmBytesCoversWhatASegmentAdds(t *testing.T) {
	page := os.Getpagesize()
	for _, tc := range []struct {
		o  env.Options
		bo env.BatchOptions
	}{
		{env.Options{Suits: 1}, env.BatchOptions{N: 1}},
		{env.Options{Suits: 4, Encoding: env.Float32}, env.BatchOptions{N: 7, Autoreset: env.SameStep, Legal: true}},
		{env.Options{Suits: 2}, env.BatchOptions{N: 2048}},
		{env.Options{Suits: 2}, env.BatchOptions{N: 3000}},
		{env.Options{Suits: 1}, env.BatchOptions{N: 40000, Legal: true}},
	} {
		r, err := env.NewRules(tc.o)
		if err != nil {
			t.Fatal(err)
		}
		l := env.BatchLayout(r, tc.bo)
		padding := l.Size
		for _, f := range l.Fields {
			padding -= f.Bytes()
		}
		sg, err := newSegment(l, tc.bo.N)
		if err != nil {
			t.Fatal(err)
		}
		mapped := func(b []byte) int { return (len(b) + page - 1) / page * page }
		actions, rest := mapped(sg.actions), mapped(sg.buffers)-len(sg.buffers)
		sg.close()
		if got, need := shmBytes(tc.bo.N), int64(padding+rest+actions); got < need {
			t.Errorf("%d games: shmBytes %d; the segment adds %d (padding %d, the buffers' last page %d, actions mapped in %d bytes)",
				tc.bo.N, got, need, padding, rest, actions)
		}
	}
}

// TestSendWithFDsSendsTheWholeFrame sends a frame far larger than the
// socket's send buffer, which the kernel takes in parts: the peer must
// get the descriptors and every byte of the frame.
func TestSendWithFDsSendsTheWholeFrame(t *testing.T) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	conn := func(fd int) *net.UnixConn {
		f := os.NewFile(uintptr(fd), "socketpair")
		defer f.Close()
		c, err := net.FileConn(f)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c.(*net.UnixConn)
	}
	w, r := conn(fds[0]), conn(fds[1])
	w.SetWriteBuffer(4096)
	r.SetDeadline(time.Now().Add(20 * time.Second))
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	frame := make([]byte, 4<<20)
	for i := range frame {
		frame[i] = byte(i * 7)
	}
	sent := make(chan error, 1)
	go func() {
		err := sendWithFDs(w, frame, []int{int(pr.Fd()), int(pw.Fd())})
		w.Close() // the reader sees the end of the stream after the frame
		sent <- err
	}()
	buf := make([]byte, len(frame)+1)
	oob := make([]byte, syscall.CmsgSpace(2*4))
	n, oobn, _, _, err := r.ReadMsgUnix(buf, oob)
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := syscall.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		t.Fatalf("control messages %v, %v; want one", msgs, err)
	}
	got, err := syscall.ParseUnixRights(&msgs[0])
	if err != nil || len(got) != 2 {
		t.Fatalf("descriptors %v, %v; want 2", got, err)
	}
	for _, fd := range got {
		syscall.Close(fd)
	}
	for n < len(buf) {
		k, err := r.Read(buf[n:])
		n += k
		if err != nil {
			break
		}
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	if n != len(frame) || !bytes.Equal(buf[:n], frame) {
		t.Fatalf("the peer got %d bytes of a frame of %d (equal: %v)", n, len(frame), bytes.Equal(buf[:min(n, len(frame))], frame[:min(n, len(frame))]))
	}
}

// TestShmFallsBackWhenNoSegment makes the segment fail on a Unix socket
// (as a memfd_create refused for want of memory would): the batch is
// served over the socket with the mask form the client asked for, bits
// here, which the segment would have given up, and no legal lists; the
// reply says why; and the server holds exactly what the same make over
// TCP, which never tries a segment, holds.
func TestShmFallsBackWhenNoSegment(t *testing.T) {
	segmentMaker = func(env.Layout, int) (*segment, error) { return nil, errNoShm("memfd_create: refused by the test") }
	t.Cleanup(func() { segmentMaker = newSegment })
	mk := map[string]any{"op": "make", "n": 6, "mask": "bits", "shm": true, "legal": true, "obs": "float32"}
	srv, path := startUnix(t, Config{})
	cl := dialNet(t, "unix", path)
	hello(cl)
	rep := cl.ok(mk)
	if rep["shm"] != false || !strings.Contains(fmt.Sprint(rep["shm_error"]), "refused by the test") || rep["mask"] != "bits" || rep["legal"] != false {
		t.Fatalf("make with shm whose segment failed: shm %v (%v), mask %v, legal %v", rep["shm"], rep["shm_error"], rep["mask"], rep["legal"])
	}
	r := env.MustRules(env.Options{Encoding: env.Float32})
	ref, err := env.NewBatch(r, env.BatchOptions{N: 6})
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	rep = cl.ok(map[string]any{"op": "reset", "seed": 5})
	ref.Reset(5)
	compare(t, rep, ref, true)
	actions := make([]env.Action, 6)
	for range 20 {
		ref.SampleLegal(actions)
		rep = cl.ok(map[string]any{"op": "step", "actions": actionsBin(actions)})
		if err := ref.Step(actions); err != nil {
			t.Fatal(err)
		}
		compare(t, rep, ref, true)
	}
	tcpSrv, addr := start(t, Config{})
	tcp := dial(t, addr)
	hello(tcp)
	tcp.ok(mk)
	if srv.Memory() != tcpSrv.Memory() {
		t.Fatalf("the fallen-back batch holds %d bytes; the same make over TCP %d", srv.Memory(), tcpSrv.Memory())
	}
}

package server

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log"
	"math"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/spiderenv/spider/agents"
	"github.com/spiderenv/spider/env"
)

// start runs a server on a free loopback port until the test ends.
func start(t *testing.T, cfg Config) (*Server, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := New(cfg)
	serveOn(t, srv, ln)
	return srv, ln.Addr().String()
}

// client is a minimal protocol client for tests.
type client struct {
	t *testing.T
	c net.Conn
}

func dial(t *testing.T, addr string) *client {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(20 * time.Second))
	t.Cleanup(func() { c.Close() })
	return &client{t: t, c: c}
}

// frame returns payload behind its length prefix.
func frame(payload []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(payload))), payload...)
}

func (cl *client) sendRaw(payload []byte) {
	cl.t.Helper()
	if _, err := cl.c.Write(frame(payload)); err != nil {
		cl.t.Fatal(err)
	}
}

func (cl *client) send(m map[string]any) {
	cl.t.Helper()
	cl.sendRaw(must(msgpack.Marshal(m)))
}

// recv reads one reply, or returns nil when the server closed the stream.
// It checks the reply's map32 header against the keys the map really has.
func (cl *client) recv() map[string]any {
	cl.t.Helper()
	payload, _, err := readFrame(cl.c, nil, 1<<30, nil)
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || strings.Contains(err.Error(), "reset") {
			return nil
		}
		cl.t.Fatalf("reading a reply: %v", err)
	}
	return decodeReply(cl.t, payload)
}

// decodeReply decodes a reply map and checks that its header counts its
// distinct keys: a miscount or a key written twice fails.
func decodeReply(t testing.TB, payload []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := msgpack.Unmarshal(payload, &m); err != nil {
		t.Fatalf("reply is not a map: %v", err)
	}
	if len(payload) < 5 || payload[0] != 0xdf {
		t.Fatalf("reply does not start with a map32 header: % x", payload[:min(len(payload), 5)])
	}
	if n := binary.BigEndian.Uint32(payload[1:]); int(n) != len(m) {
		t.Fatalf("reply header says %d fields; the map has %d distinct keys: %v", n, len(m), m)
	}
	return m
}

func (cl *client) call(m map[string]any) map[string]any {
	cl.t.Helper()
	cl.send(m)
	r := cl.recv()
	if r == nil {
		cl.t.Fatalf("%v: connection closed", m["op"])
	}
	return r
}

func (cl *client) ok(m map[string]any) map[string]any {
	cl.t.Helper()
	r := cl.call(m)
	if r["ok"] != true {
		cl.t.Fatalf("%v failed: %v (%v)", m["op"], r["error"], r["code"])
	}
	return r
}

// failed sends m and requires a failed reply with code and exactly msg.
func (cl *client) failed(m map[string]any, code, msg string) {
	cl.t.Helper()
	r := cl.call(m)
	if r["ok"] != false || r["code"] != code || r["error"] != msg {
		cl.t.Fatalf("%v: reply %v; want code %s, error %q", m, r, code, msg)
	}
}

// closed reports whether the server has closed the connection: a read that
// times out means it is still open (and restores the deadline).
func (cl *client) closed() bool {
	cl.t.Helper()
	cl.c.SetReadDeadline(time.Now().Add(150 * time.Millisecond))
	defer cl.c.SetReadDeadline(time.Now().Add(20 * time.Second))
	var b [1]byte
	_, err := cl.c.Read(b[:])
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return false
	}
	return err != nil
}

func actionsBin(actions []env.Action) []byte {
	b := make([]byte, 2*len(actions))
	for i, a := range actions {
		binary.LittleEndian.PutUint16(b[2*i:], uint16(a))
	}
	return b
}

func hello(cl *client) { cl.ok(map[string]any{"op": "hello", "version": Version}) }

// TestServeMatchesBatch plays the same games through the server and through
// an in-process Batch and requires identical bytes for every array.
func TestServeMatchesBatch(t *testing.T) {
	for _, tc := range []struct {
		obs, autoreset, mask string
	}{{"compact", "next-step", "bytes"}, {"float32", "same-step", "bits"}, {"compact", "disabled", "bits"}} {
		t.Run(tc.obs+"/"+tc.autoreset+"/"+tc.mask, func(t *testing.T) {
			_, addr := start(t, Config{})
			cl := dial(t, addr)
			hello(cl)
			const n = 5
			mk := cl.ok(map[string]any{"op": "make", "rules": "cardems", "suits": 2, "n": n, "obs": tc.obs,
				"autoreset": tc.autoreset, "mask": tc.mask, "max_steps": 30, "id": 7})
			if fmt.Sprint(mk["id"]) != "7" {
				t.Fatalf("id not echoed: %#v", mk["id"])
			}
			r := env.MustRules(env.Options{RuleSet: env.Cardems, Suits: 2, MaxSteps: 30, Encoding: must(env.ParseEncoding(tc.obs))})
			ar := must(env.ParseAutoreset(tc.autoreset))
			ref, err := env.NewBatch(r, env.BatchOptions{N: n, Autoreset: ar})
			if err != nil {
				t.Fatal(err)
			}
			defer ref.Close()
			if mk["obs_dtype"] != tc.obs && !(tc.obs == "compact" && mk["obs_dtype"] == "uint8") {
				t.Fatalf("obs_dtype %v", mk["obs_dtype"])
			}
			if shape := mk["obs_shape"].([]any); fmt.Sprint(shape...) != fmt.Sprint(r.ObsLen()) {
				t.Fatalf("obs_shape %v, want [%d]", shape, r.ObsLen())
			}
			if mk["autoreset"] != tc.autoreset || mk["mask"] != tc.mask || mk["rules"] != "cardems" || fmt.Sprint(mk["suits"]) != "2" || fmt.Sprint(mk["max_steps"]) != "30" {
				t.Fatalf("make reply %v does not echo the request", mk)
			}
			rep := cl.ok(map[string]any{"op": "reset", "seed": 99})
			ref.Reset(99)
			compare(t, rep, ref, tc.mask == "bits")
			actions := make([]env.Action, n)
			for step := range 80 {
				ref.SampleLegal(actions)
				if ar == env.Disabled {
					ended := make([]bool, n)
					someEnded := false
					for i := range n {
						ended[i] = ref.Terminated[i] || ref.Truncated[i]
						someEnded = someEnded || ended[i]
					}
					if someEnded && step > 0 {
						mask := make([]byte, n)
						for i, e := range ended {
							if e {
								mask[i] = 1
							}
						}
						rep = cl.ok(map[string]any{"op": "reset", "reset_mask": mask})
						ref.ResetGames(ended)
						compare(t, rep, ref, tc.mask == "bits")
						ref.SampleLegal(actions)
					}
				}
				rep = cl.ok(map[string]any{"op": "step", "actions": actionsBin(actions)})
				if err := ref.Step(actions); err != nil {
					t.Fatal(err)
				}
				compare(t, rep, ref, tc.mask == "bits")
			}
			hint := cl.ok(map[string]any{"op": "hint", "game": 1})
			st := ref.State(1)
			if !st.Over() {
				legal := st.AppendLegal(nil)
				want := (&agents.Greedy{}).Act(agents.NewView(&st, legal, 0, false))
				if fmt.Sprint(hint["action"]) != fmt.Sprint(int(want.Action)) || hint["notation"] != want.Action.String() || hint["reason"] != want.Reason {
					t.Fatalf("hint %v, want greedy's %v (%s)", hint, want.Action, want.Reason)
				}
			}
			text := cl.ok(map[string]any{"op": "render", "game": 2})["text"].(string)
			s := ref.State(2)
			if text != s.Render() {
				t.Fatalf("render differs:\n%s\n%s", text, s.Render())
			}
			if r := cl.ok(map[string]any{"op": "close", "id": -3}); len(r) != 2 || fmt.Sprint(r["id"]) != "-3" {
				t.Fatalf("close reply %v, want ok and the id", r)
			}
			if !cl.closed() {
				t.Fatal("close did not close the connection")
			}
		})
	}
}

// TestStepActionArray checks that an array of integers steps exactly like
// the same actions as a bin.
func TestStepActionArray(t *testing.T) {
	_, addr := start(t, Config{})
	bin, arr := dial(t, addr), dial(t, addr)
	const n = 4
	ref := must(env.NewBatch(env.MustRules(env.Options{}), env.BatchOptions{N: n}))
	defer ref.Close()
	ref.Reset(8)
	for _, cl := range []*client{bin, arr} {
		hello(cl)
		cl.ok(map[string]any{"op": "make", "n": n})
		cl.ok(map[string]any{"op": "reset", "seed": 8})
	}
	actions := make([]env.Action, n)
	for range 30 {
		ref.SampleLegal(actions)
		ints := make([]int, n)
		for i, a := range actions {
			ints[i] = int(a)
		}
		b := bin.ok(map[string]any{"op": "step", "actions": actionsBin(actions)})
		a := arr.ok(map[string]any{"op": "step", "actions": ints})
		ref.Step(actions)
		compare(t, b, ref, false)
		compare(t, a, ref, false)
	}
}

// errText returns err's message, for the replies that carry env's.
func errText[T any](_ T, err error) string { return err.Error() }

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func compare(t *testing.T, rep map[string]any, b *env.Batch, bits bool) {
	t.Helper()
	obs := b.ObsCompact
	if b.ObsFloat32 != nil {
		obs = bytesOf(b.ObsFloat32)
	}
	masks := b.Masks
	if bits {
		masks = make([]byte, b.N()*PackedRowBytes)
		packMasks(masks, b.Masks)
	}
	want := map[string][]byte{
		"obs": obs, "masks": masks, "num_legal": bytesOf(b.NumLegal), "rewards": bytesOf(b.Rewards),
		"terminated": bytesOf(b.Terminated), "truncated": bytesOf(b.Truncated), "illegal": bytesOf(b.Illegal),
		"score": bytesOf(b.Score), "moves": bytesOf(b.Moves), "runs": b.Runs,
		"episode_return": bytesOf(b.EpisodeReturn), "episode_length": bytesOf(b.EpisodeLength),
		"episode_won": bytesOf(b.EpisodeWon), "episode_runs": b.EpisodeRuns,
	}
	if b.Legal != nil {
		want["legal"] = bytesOf(b.Legal)
	}
	if b.HasFinal != nil {
		want["has_final"] = bytesOf(b.HasFinal)
		want["final_score"] = bytesOf(b.FinalScore)
		if b.FinalObsFloat32 != nil {
			want["final_obs"] = bytesOf(b.FinalObsFloat32)
		} else {
			want["final_obs"] = b.FinalObsCompact
		}
	}
	for k, w := range want {
		got, ok := rep[k].([]byte)
		if !ok || !bytes.Equal(got, w) {
			t.Fatalf("%s differs from the in-process batch (%d bytes, want %d)", k, len(got), len(w))
		}
	}
	if len(rep) != len(want)+1 { // and "ok"
		t.Fatalf("step reply has %d fields, want %d", len(rep), len(want)+1)
	}
}

func TestPackMasks(t *testing.T) {
	row := make([]byte, env.NumActions)
	for i := range row {
		if (i*7)%5 == 0 || i == env.NumActions-1 {
			row[i] = 1
		}
	}
	out := make([]byte, PackedRowBytes)
	packMasks(out, row)
	for a := range env.NumActions {
		if got := out[a/8] >> (a % 8) & 1; got != row[a] {
			t.Fatalf("bit %d = %d, want %d", a, got, row[a])
		}
	}
	if out[PackedRowBytes-1]>>1 != 0 {
		t.Fatal("padding bits set")
	}
}

// envError returns the error env gives for setting option key to text,
// from Set or from NewRules: the message a bad_config reply must carry.
func envError(t *testing.T, o env.Options, key, text string) string {
	t.Helper()
	f, ok := env.LookupOption(key)
	if !ok {
		t.Fatalf("no game option %q", key)
	}
	err := f.Set(&o, text)
	if err == nil {
		_, err = env.NewRules(o)
	}
	if err == nil {
		t.Fatalf("%s %s is valid", key, text)
	}
	return err.Error()
}

// helloFields are a hello request's op and version, for hand-built maps.
var helloFields = []byte{0xa2, 'o', 'p', 0xa5, 'h', 'e', 'l', 'l', 'o', 0xa7, 'v', 'e', 'r', 's', 'i', 'o', 'n', Version}

// manyFields is a hello request of n fields: op, version and n-2
// unknown ones.
func manyFields(n int) []byte {
	b := append([]byte{0xde, byte(n >> 8), byte(n)}, helloFields...)
	for i := range n - 2 {
		b = append(b, 0xa3, 'k', byte('a'+i/26), byte('a'+i%26), 0x01)
	}
	return b
}

// nestedField is a hello request with an unknown field x whose value is
// nil inside depth arrays.
func nestedField(depth int) []byte {
	b := append(append([]byte{0x83}, helloFields...), 0xa1, 'x')
	return append(append(b, bytes.Repeat([]byte{0x91}, depth)...), 0xc0)
}

// TestLimitsAreExact serves requests at the limits PROTOCOL.md states (64
// fields, unknown fields nested 16 deep, seed 0): TestBadInput refuses one
// past each.
func TestLimitsAreExact(t *testing.T) {
	_, addr := start(t, Config{MaxFrame: 1 << 16, MaxGames: 64, MaxBytes: 2 << 20})
	cl := dial(t, addr)
	for _, payload := range [][]byte{manyFields(64), nestedField(16)} {
		cl.sendRaw(payload)
		if r := cl.recv(); r == nil || r["ok"] != true {
			t.Fatalf("% x...: %v", payload[:12], r)
		}
	}
	cl.ok(map[string]any{"op": "make", "n": 2})
	cl.ok(map[string]any{"op": "reset", "seed": 0})
	cl.ok(map[string]any{"op": "reset", "seeds": []any{0, 1}})
}

// TestMakeTakesTheEndsOfItsRanges: a value at the top or bottom of a
// documented range is taken, and one just past it refused (the ranges'
// comparisons could be off by one unseen: every other test stays inside).
func TestMakeTakesTheEndsOfItsRanges(t *testing.T) {
	_, addr := start(t, Config{MaxGames: 64})
	cl := dial(t, addr)
	cl.ok(map[string]any{"op": "hello", "version": 1})
	for _, ok := range []map[string]any{
		{"op": "make", "n": 1, "illegal": "noop", "illegal_penalty": 1e6},
		{"op": "make", "n": 1, "illegal": "noop", "illegal_penalty": 0.0},
		{"op": "make", "n": 64, "workers": 1024},
	} {
		cl.ok(ok) // a make replaces the connection's batch
	}
	cl.failed(map[string]any{"op": "make", "n": 1, "illegal_penalty": 1e6 + 1}, "bad_config", "illegal_penalty 1.000001e+06 is outside 0 to 1e6")
	if r := cl.call(map[string]any{"op": "make", "n": 65}); r["ok"] != false {
		t.Fatalf("make of 65 games under --max-games 64: %v", r)
	}
}

// TestBadInput sends each kind of bad input on its own connection, checks
// the error reply (or the closed connection), and then checks the server
// still serves a good client.
func TestBadInput(t *testing.T) {
	srv, addr := start(t, Config{MaxFrame: 1 << 16, MaxGames: 64, MaxBytes: 2 << 20})
	marshal := func(m map[string]any) []byte { return must(msgpack.Marshal(m)) }
	helloB := marshal(map[string]any{"op": "hello", "version": 1})
	makeB := marshal(map[string]any{"op": "make", "n": 3})
	resetB := marshal(map[string]any{"op": "reset", "seed": 1})
	// A hand-built map: msgpack.Marshal cannot repeat a key.
	raw := func(fields int, items ...[]byte) []byte {
		return append([]byte{0x80 | byte(fields)}, bytes.Join(items, nil)...)
	}
	str := func(s string) []byte { return append([]byte{0xa0 | byte(len(s))}, s...) }
	stepHeader := []byte{0x82, 0xa2, 'o', 'p', 0xa4, 's', 't', 'e', 'p', 0xa7, 'a', 'c', 't', 'i', 'o', 'n', 's'}
	tests := []struct {
		name    string
		setup   [][]byte // payloads sent first, each answered
		raw     []byte   // the bad bytes, sent as they are
		code    string   // expected error code
		msg     string   // expected message, or a part of it when contains is set
		part    bool
		closes  bool
		noReply bool // the client hangs up instead
	}{
		{name: "GarbageBytes", raw: frame([]byte{0xc1, 0xff, 0x00}), code: "bad_frame", msg: "a request must be a msgpack map with string keys: want a map"},
		{name: "NotAMap", raw: frame(must(msgpack.Marshal([]int{1, 2}))), code: "bad_frame", msg: "a request must be a msgpack map with string keys: want a map"},
		{name: "IntegerKey", raw: frame([]byte{0x81, 0x01, 0x01}), code: "bad_frame", msg: "a request must be a msgpack map with string keys: want a string"},
		{name: "NoOp", raw: frame(marshal(map[string]any{"version": 1})), code: "bad_request", msg: `the request has no "op"`},
		{name: "NoVersion", raw: frame(marshal(map[string]any{"op": "hello"})), code: "bad_request", msg: `hello needs "version" (this server speaks 1)`},
		{name: "WrongVersion", raw: frame(marshal(map[string]any{"op": "hello", "version": 9})), code: "bad_request", msg: "protocol version 9 is not supported (this server speaks 1)"},
		{name: "OpBeforeHello", raw: frame(makeB), code: "bad_order", msg: `the first request must be hello (op "make" came first)`},
		{name: "UnknownOp", setup: [][]byte{helloB}, raw: frame(marshal(map[string]any{"op": "fly"})), code: "bad_request", msg: `unknown op "fly" (known: hello, make, reset, step, render, hint, close)`},
		{name: "UnknownOpBeforeHello", raw: frame(marshal(map[string]any{"op": "fly"})), code: "bad_request", msg: `unknown op "fly" (known: hello, make, reset, step, render, hint, close)`},
		{name: "OpNotAString", raw: frame(marshal(map[string]any{"op": 1})), code: "bad_request", msg: `field "op" has the wrong type or value: want a string`},
		{name: "DuplicateField", setup: [][]byte{helloB}, raw: frame(raw(3, str("op"), str("make"), str("n"), []byte{1}, str("n"), []byte{2})), code: "bad_request", msg: `field "n" given twice`},
		{name: "DuplicateOption", setup: [][]byte{helloB}, raw: frame(raw(3, str("op"), str("make"), str("suits"), []byte{1}, str("suits"), []byte{2})), code: "bad_request", msg: `field "suits" given twice`},
		{name: "NilSeedThenSeed", setup: [][]byte{helloB, makeB}, raw: frame(raw(3, str("op"), str("reset"), str("seed"), []byte{0xc0}, str("seed"), []byte{5})), code: "bad_request", msg: `field "seed" given twice`},
		{name: "BytesAfterTheMap", raw: frame(append(append([]byte{}, helloB...), 0xc1, 0xff)), code: "bad_frame", msg: "2 bytes after the request map: a frame holds one msgpack value"},
		{name: "DuplicateUnknownField", setup: [][]byte{helloB}, raw: frame(raw(3, str("op"), str("make"), str("x"), []byte{1}, str("x"), []byte{2})), code: "bad_request", msg: `field "x" given twice`},
		{name: "NumericOptionAsString", setup: [][]byte{helloB}, raw: frame(marshal(map[string]any{"op": "make", "suits": "four"})), code: "bad_request", msg: `field "suits" has the wrong type or value: want an integer`},
		{name: "NameOptionAsInteger", setup: [][]byte{helloB}, raw: frame(marshal(map[string]any{"op": "make", "rules": 1})), code: "bad_request", msg: `field "rules" has the wrong type or value: want a string`},
		{name: "NAsFloat", setup: [][]byte{helloB}, raw: frame(marshal(map[string]any{"op": "make", "n": 2.5})), code: "bad_request", msg: `field "n" has the wrong type or value: want an integer`},
		{name: "BadSuits", setup: [][]byte{helloB}, raw: frame(marshal(map[string]any{"op": "make", "suits": 3})), code: "bad_config", msg: envError(t, env.Options{}, "suits", "3")},
		{name: "UnknownRules", setup: [][]byte{helloB}, raw: frame(marshal(map[string]any{"op": "make", "rules": "spite"})), code: "bad_config", msg: envError(t, env.Options{}, "rules", "spite")},
		{name: "UnknownObs", setup: [][]byte{helloB}, raw: frame(marshal(map[string]any{"op": "make", "obs": "png"})), code: "bad_config", msg: envError(t, env.Options{}, "obs", "png")},
		{name: "TooManySlots", setup: [][]byte{helloB}, raw: frame(marshal(map[string]any{"op": "make", "face_up_slots": 105})), code: "bad_config", msg: envError(t, env.Options{}, "face_up_slots", "105")},
		{name: "ClockUnderCardems", setup: [][]byte{helloB}, raw: frame(marshal(map[string]any{"op": "make", "rules": "cardems", "time_per_action_ms": 100})), code: "bad_config", msg: envError(t, env.Options{RuleSet: env.Cardems}, "time_per_action_ms", "100")},
		{name: "ZeroGames", setup: [][]byte{helloB}, raw: frame(marshal(map[string]any{"op": "make", "n": 0})), code: "bad_config", msg: "n must be at least 1"},
		// A msgpack uint64 past 2^63-1 is an integer out of range, with the
		// code of a field's range error, not a value of the wrong type.
		{name: "HugeGames", setup: [][]byte{helloB}, raw: frame(marshal(map[string]any{"op": "make", "n": uint64(math.MaxUint64)})), code: "limit", msg: "n must be 1 to", part: true},
		{name: "HugeWorkers", setup: [][]byte{helloB}, raw: frame(marshal(map[string]any{"op": "make", "workers": uint64(1 << 63)})), code: "bad_config", msg: "workers 2^63-1 or more is outside 0 to 1024"},
		{name: "HugeOption", setup: [][]byte{helloB}, raw: frame(marshal(map[string]any{"op": "make", "max_steps": uint64(1 << 63)})), code: "bad_config", msg: "max_steps 9223372036854775808 is more than any game can have"},
		{name: "HugeFloatOption", setup: [][]byte{helloB}, raw: frame(marshal(map[string]any{"op": "make", "shaping": "progress", "shaping_gamma": uint64(1 << 63)})), code: "bad_config", msg: "shaping_gamma", part: true},
		{name: "BadWorkers", setup: [][]byte{helloB}, raw: frame(marshal(map[string]any{"op": "make", "workers": 5000})), code: "bad_config", msg: "workers 5000 is outside 0 to 1024"},
		{name: "BadPenalty", setup: [][]byte{helloB}, raw: frame(marshal(map[string]any{"op": "make", "illegal_penalty": -1.5})), code: "bad_config", msg: "illegal_penalty -1.5 is outside 0 to 1e6"},
		{name: "BadMask", setup: [][]byte{helloB}, raw: frame(marshal(map[string]any{"op": "make", "mask": "nibbles"})), code: "bad_config", msg: `mask "nibbles": want bytes or bits`},
		{name: "BadAutoreset", setup: [][]byte{helloB}, raw: frame(marshal(map[string]any{"op": "make", "autoreset": "never"})), code: "bad_config", msg: errText(env.ParseAutoreset("never"))},
		{name: "TooManyGames", setup: [][]byte{helloB}, raw: frame(marshal(map[string]any{"op": "make", "n": 65})), code: "limit", msg: "n must be 1 to 64 (the server's --max-games)"},
		{name: "TooManyBytes", setup: [][]byte{helloB}, raw: frame(marshal(map[string]any{"op": "make", "n": 64, "suits": 4, "obs": "float32"})), code: "limit", msg: "of buffers, over the server's --max-batch-bytes 2MiB", part: true},
		{name: "StepBeforeMake", setup: [][]byte{helloB}, raw: frame(marshal(map[string]any{"op": "step", "actions": []int{1}})), code: "bad_order", msg: "step before make: make a batch first"},
		{name: "StepBeforeReset", setup: [][]byte{helloB, makeB}, raw: frame(marshal(map[string]any{"op": "step", "actions": []int{1, 1, 1}})), code: "bad_order", msg: "step before reset: reset the batch first"},
		{name: "RenderBeforeReset", setup: [][]byte{helloB, makeB}, raw: frame(marshal(map[string]any{"op": "render", "game": 0})), code: "bad_order", msg: "render before reset: reset the batch first"},
		{name: "MaskedResetFirst", setup: [][]byte{helloB, makeB}, raw: frame(marshal(map[string]any{"op": "reset", "reset_mask": []byte{1, 0, 0}})), code: "bad_order", msg: "reset_mask before the first reset: reset the whole batch first"},
		{name: "SeededMaskedResetFirst", setup: [][]byte{helloB, makeB}, raw: frame(marshal(map[string]any{"op": "reset", "seeds": []any{1, 2, 3}, "reset_mask": []byte{1, 0, 0}})), code: "bad_order", msg: "reset_mask before the first reset: reset the whole batch first"},
		{name: "SeedsShortResetMask", setup: [][]byte{helloB, makeB, resetB}, raw: frame(marshal(map[string]any{"op": "reset", "seeds": []any{1, 2, 3}, "reset_mask": []byte{1, 0}})), code: "bad_request", msg: "reset_mask has 2 bytes for 3 games"},
		{name: "ResetMaskNotBool", setup: [][]byte{helloB, makeB, resetB}, raw: frame(marshal(map[string]any{"op": "reset", "reset_mask": []byte{1, 2, 0}})), code: "bad_request", msg: "reset_mask byte 1 is 2; want 0 or 1"},
		{name: "NegativeSeed", setup: [][]byte{helloB, makeB}, raw: frame(marshal(map[string]any{"op": "reset", "seed": -4})), code: "bad_request", msg: `field "seed" has the wrong type or value: negative`},
		{name: "WrongActionCount", setup: [][]byte{helloB, makeB, resetB}, raw: frame(marshal(map[string]any{"op": "step", "actions": []int{1080, 1080}})), code: "bad_action", msg: "2 actions for 3 games"},
		{name: "WrongActionBytes", setup: [][]byte{helloB, makeB, resetB}, raw: frame(marshal(map[string]any{"op": "step", "actions": []byte{1, 2, 3}})), code: "bad_action", msg: "actions bin has 3 bytes; want 6 (uint16 little-endian, one per game)"},
		{name: "ActionsNotIntegers", setup: [][]byte{helloB, makeB, resetB}, raw: frame(marshal(map[string]any{"op": "step", "actions": []any{1080, "deal", 1080}})), code: "bad_request", msg: `field "actions" has the wrong type or value: want an integer`},
		{name: "ActionsAString", setup: [][]byte{helloB, makeB, resetB}, raw: frame(marshal(map[string]any{"op": "step", "actions": "deal"})), code: "bad_request", msg: `field "actions" has the wrong type or value: want a bin of uint16 or an array of integers`},
		{name: "OutOfRangeAction", setup: [][]byte{helloB, makeB, resetB}, raw: frame(marshal(map[string]any{"op": "step", "actions": []int{1080, 70000, 1080}})), code: "bad_action", msg: "game 1: action 70000 is not an action id: ids are 0 to 1080, and an array item must fit a uint16 (0 to 65535)"},
		{name: "NegativeAction", setup: [][]byte{helloB, makeB, resetB}, raw: frame(marshal(map[string]any{"op": "step", "actions": []int{-1, 1080, 1080}})), code: "bad_action", msg: "game 0: action -1 is not an action id: ids are 0 to 1080, and an array item must fit a uint16 (0 to 65535)"},
		{name: "HugeAction", setup: [][]byte{helloB, makeB, resetB}, raw: frame(marshal(map[string]any{"op": "step", "actions": []uint64{1080, 1 << 63, math.MaxUint64}})), code: "bad_action", msg: "game 1: action 9223372036854775808 is not an action id: ids are 0 to 1080, and an array item must fit a uint16 (0 to 65535)"},
		// actions are read before env_ids: an action out of range wins over a bad env_ids.
		{name: "OutOfRangeActionAndBadEnvIDs", setup: [][]byte{helloB, makeB, resetB}, raw: frame(marshal(map[string]any{"op": "step", "actions": []int{1080, 70000, 1080}, "env_ids": []byte{9, 0, 0, 0}})), code: "bad_action", msg: "game 1: action 70000 is not an action id: ids are 0 to 1080, and an array item must fit a uint16 (0 to 65535)"},
		{name: "IllegalActionAndBadEnvIDs", setup: [][]byte{helloB, marshal(map[string]any{"op": "make", "n": 3, "illegal": "error"}), resetB}, raw: frame(marshal(map[string]any{"op": "step", "actions": []int{0, 0, 0}, "env_ids": []byte{9, 0, 0, 0}})), code: "bad_request", msg: "env_ids item 0 is 9, outside 0 to 2"},
		{name: "IllegalActionWithEnvIDs", setup: [][]byte{helloB, marshal(map[string]any{"op": "make", "n": 3, "illegal": "error"}), resetB}, raw: frame(marshal(map[string]any{"op": "step", "actions": []int{0, 0, 0}, "env_ids": []byte{2, 0, 0, 0}})), code: "bad_action", msg: "env: game 2: illegal action", part: true},
		{name: "IllegalAction", setup: [][]byte{helloB, makeB, resetB}, raw: frame(marshal(map[string]any{"op": "step", "actions": []int{1080, 1080, 0}})), code: "bad_action", msg: "game 2", part: true},
		{name: "NoActions", setup: [][]byte{helloB, makeB, resetB}, raw: frame(marshal(map[string]any{"op": "step"})), code: "bad_request", msg: `step needs "actions": a bin of uint16 or an array of integers, one per game`},
		{name: "NoGame", setup: [][]byte{helloB, makeB, resetB}, raw: frame(marshal(map[string]any{"op": "render"})), code: "bad_request", msg: `render needs "game", the index of a game`},
		{name: "BadGame", setup: [][]byte{helloB, makeB, resetB}, raw: frame(marshal(map[string]any{"op": "render", "game": 3})), code: "bad_request", msg: "game 3 is outside 0 to 2"},
		{name: "NilSeedsFirst", setup: [][]byte{helloB, makeB}, raw: frame(marshal(map[string]any{"op": "reset", "seeds": []any{1, nil, 3}})), code: "bad_order", msg: "a nil seed before the first reset: the game has no episodes to go on with; give every game a seed"},
		{name: "ShortSeeds", setup: [][]byte{helloB, makeB}, raw: frame(marshal(map[string]any{"op": "reset", "seeds": []any{1, 2}})), code: "bad_request", msg: "seeds has 2 items for 3 games"},
		{name: "SeedsAndSeed", setup: [][]byte{helloB, makeB}, raw: frame(marshal(map[string]any{"op": "reset", "seed": 1, "seeds": []any{1, 2, 3}})), code: "bad_request", msg: "seeds with seed: send one of the two"},
		{name: "NegativeSeeds", setup: [][]byte{helloB, makeB}, raw: frame(marshal(map[string]any{"op": "reset", "seeds": []any{1, -2, 3}})), code: "bad_request", msg: `field "seeds" has the wrong type or value: negative`},
		{name: "SeedsNotArray", setup: [][]byte{helloB, makeB}, raw: frame(marshal(map[string]any{"op": "reset", "seeds": 4})), code: "bad_request", msg: `field "seeds" has the wrong type or value: want an array of seeds (integers from 0 to 2^64-1, or nil)`},
		{name: "ShortResetMask", setup: [][]byte{helloB, makeB, resetB}, raw: frame(marshal(map[string]any{"op": "reset", "reset_mask": []byte{1}})), code: "bad_request", msg: "reset_mask has 1 bytes for 3 games"},
		{name: "HintBadGame", setup: [][]byte{helloB, makeB, resetB}, raw: frame(marshal(map[string]any{"op": "hint", "game": 9})), code: "bad_request", msg: "game 9 is outside 0 to 2"},
		{name: "HugeActionArray", setup: [][]byte{helloB, makeB, resetB}, raw: frame(append(stepHeader, 0xdd, 0xff, 0xff, 0xff, 0xf0)), code: "bad_request", msg: `field "actions" has the wrong type or value: a declared length runs past the end of the frame`},
		{name: "HugeActionBin", setup: [][]byte{helloB, makeB, resetB}, raw: frame(append(stepHeader, 0xc6, 0xff, 0xff, 0xff, 0xf0)), code: "bad_request", msg: `field "actions" has the wrong type or value: a declared length runs past the end of the frame`},
		{name: "TruncatedInteger", setup: [][]byte{helloB}, raw: frame(raw(2, str("op"), str("make"), str("n"), []byte{0xcd, 0x01})), code: "bad_request", msg: `field "n" has the wrong type or value: the frame ends inside a value`},
		{name: "MapPastTheEnd", raw: frame([]byte{0x8f, 0xa2, 'o', 'p'}), code: "bad_frame", msg: "a request map of 15 fields: a declared length runs past the end of the frame"},
		{name: "DeeplyNestedUnknownField", raw: frame(append(append([]byte{0x82, 0xa2, 'o', 'p', 0xa5, 'h', 'e', 'l', 'l', 'o', 0xa1, 'x'}, bytes.Repeat([]byte{0x91}, 5000)...), 0xc0)), code: "bad_request", msg: `field "x" has the wrong type or value: an unknown field is nested more than 16 deep`},
		{name: "UnknownFieldNotMsgpack", raw: frame(raw(2, str("op"), str("hello"), str("x"), []byte{0xc1})), code: "bad_request", msg: `field "x" has the wrong type or value: byte 0xc1 is not msgpack`},
		{name: "TooManyFields", raw: frame(append([]byte{0xde, 0x03, 0xe8}, bytes.Repeat([]byte{0xa1, 'k', 0x01}, 1000)...)), code: "bad_request", msg: "a request of 1000 fields is over the limit of 64"},
		// One past each limit (TestLimitsAreExact serves what is at them).
		{name: "OneFieldTooMany", raw: frame(manyFields(65)), code: "bad_request", msg: "a request of 65 fields is over the limit of 64"},
		{name: "NestedOneTooDeep", raw: frame(nestedField(17)), code: "bad_request", msg: `field "x" has the wrong type or value: an unknown field is nested more than 16 deep`},
		{name: "SeedMinusOne", setup: [][]byte{helloB, makeB}, raw: frame(marshal(map[string]any{"op": "reset", "seed": -1})), code: "bad_request", msg: `field "seed" has the wrong type or value: negative`},
		{name: "SeedsMinusOne", setup: [][]byte{helloB, makeB}, raw: frame(marshal(map[string]any{"op": "reset", "seeds": []any{1, -1, 3}})), code: "bad_request", msg: `field "seeds" has the wrong type or value: negative`},
		{name: "HugeString", raw: frame(append([]byte{0x81, 0xa2, 'o', 'p', 0xdb}, 0x7f, 0xff, 0xff, 0xff)), code: "bad_request", msg: `field "op" has the wrong type or value: a string of 2147483647 bytes is over the limit of 256`},
		{name: "OversizeFrame", raw: []byte{0, 2, 0, 0, 1, 2}, code: "bad_frame", msg: "frame of 131072 bytes is over the limit of 65536 (--max-frame)", closes: true},
		// The largest header: where int has 32 bits it had read negative,
		// under any limit, and the connection had stayed open.
		{name: "LargestFrame", raw: []byte{0xff, 0xff, 0xff, 0xff, 1, 2}, code: "bad_frame", msg: "frame of 4294967295 bytes is over the limit of 65536 (--max-frame)", closes: true},
		{name: "EmptyFrame", raw: []byte{0, 0, 0, 0}, code: "bad_frame", msg: "empty frame", closes: true},
		{name: "DisconnectMidFrame", setup: [][]byte{helloB}, raw: []byte{0, 0, 0, 50, 0x81}, closes: true, noReply: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cl := dial(t, addr)
			for _, f := range tc.setup {
				cl.sendRaw(f)
				if r := cl.recv(); r == nil || r["ok"] != true {
					t.Fatalf("setup frame failed: %v", r)
				}
			}
			if _, err := cl.c.Write(tc.raw); err != nil {
				t.Fatal(err)
			}
			if tc.noReply {
				cl.c.Close() // hang up with the frame half sent
			} else {
				r := cl.recv()
				msg := fmt.Sprint(r["error"])
				if r == nil || r["ok"] != false || r["code"] != tc.code || (tc.part && !strings.Contains(msg, tc.msg)) || (!tc.part && msg != tc.msg) {
					t.Fatalf("reply %v; want code %s with error %q", r, tc.code, tc.msg)
				}
				if _, ok := r["id"]; ok || len(r) != 3 {
					t.Fatalf("failed reply %v: want ok, code and error only", r)
				}
				if tc.closes != cl.closed() {
					t.Fatalf("connection closed = %v, want %v", !tc.closes, tc.closes)
				}
				if !tc.closes {
					// The connection goes on: a good request still works.
					cl.ok(map[string]any{"op": "hello", "version": Version})
				}
			}
			good := dial(t, addr)
			hello(good)
			good.ok(map[string]any{"op": "make", "n": 2})
			good.ok(map[string]any{"op": "reset", "seed": 5})
			good.ok(map[string]any{"op": "step", "actions": []int{1080, 1080}})
		})
	}
	deadline := time.Now().Add(5 * time.Second)
	for srv.Games() != 0 || srv.Conns() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("after all clients left: %d games, %d connections still held", srv.Games(), srv.Conns())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestFailedReplyEchoesID checks that a failed request's reply carries its
// id, as a good one does.
// TestMakeRefusesOptionsPastInt: an option over what an int holds is
// refused, not cut to its low bits, which where int has 32 bits made 2^32
// + 2 suits 2 and a step limit of 2^31 -1 (none).
func TestMakeRefusesOptionsPastInt(t *testing.T) {
	_, addr := start(t, Config{})
	cl := dial(t, addr)
	hello(cl)
	for key, v := range map[string]int64{"suits": 1<<32 + 2, "max_steps": 1 << 31, "time_per_action_ms": 1<<32 + 1} {
		want := fmt.Sprintf("%s %d is more than any game can have", key, v) // 32 bits
		if strconv.IntSize == 64 {
			want = fmt.Sprintf("%s must be 1, 2 or 4, not %d", key, v)
			if key != "suits" {
				want = fmt.Sprintf("%s %d is ", key, v) // over the option's own limit
			}
		}
		r := cl.call(map[string]any{"op": "make", key: v})
		if r["ok"] != false || r["code"] != "bad_config" || !strings.Contains(fmt.Sprint(r["error"]), want) {
			t.Errorf("%s %d: %v; want bad_config saying %q", key, v, r, want)
		}
	}
}

func TestFailedReplyEchoesID(t *testing.T) {
	_, addr := start(t, Config{})
	cl := dial(t, addr)
	hello(cl)
	r := cl.call(map[string]any{"op": "make", "suits": 3, "id": int64(1 << 40)})
	if r["ok"] != false || r["code"] != "bad_config" || fmt.Sprint(r["id"]) != fmt.Sprint(int64(1<<40)) || len(r) != 4 {
		t.Fatalf("reply %v; want bad_config with id %d", r, int64(1<<40))
	}
}

// TestOrderComesFromTheTable sends every op of the table at every stage
// before the one it needs, and requires the bad_order message of the
// first stage the connection lacks.
func TestOrderComesFromTheTable(t *testing.T) {
	_, addr := start(t, Config{})
	// reach brings a new connection to a stage.
	reach := []func(*client){
		stageStart: func(*client) {},
		stageHello: hello,
		stageMade: func(cl *client) {
			hello(cl)
			cl.ok(map[string]any{"op": "make", "n": 2})
		},
	}
	want := map[stage]string{
		stageHello: `the first request must be hello (op "%s" came first)`,
		stageMade:  "%s before make: make a batch first",
		stageReset: "%s before reset: reset the batch first",
	}
	checked := 0
	for _, op := range operations {
		for at := stageStart; at < op.needs; at++ {
			cl := dial(t, addr)
			reach[at](cl)
			cl.failed(map[string]any{"op": op.name, "game": 0}, "bad_order", fmt.Sprintf(want[at+1], op.name))
			checked++
		}
	}
	if checked < len(operations) {
		t.Fatalf("only %d order checks for %d operations", checked, len(operations))
	}
	// A new make takes the connection back to "made".
	cl := dial(t, addr)
	reach[stageMade](cl)
	cl.ok(map[string]any{"op": "reset", "seed": 1})
	cl.ok(map[string]any{"op": "render", "game": 1})
	cl.ok(map[string]any{"op": "make", "n": 2})
	cl.failed(map[string]any{"op": "render", "game": 1}, "bad_order", "render before reset: reset the batch first")
}

// TestEndedGameIsEpisodeOver checks that stepping a game that has ended
// (autoreset disabled) and hinting one (any autoreset) are refused with
// episode_over, not bad_action, changing nothing, so that a client can tell
// "reset it" from "choose another action" without reading the message.
func TestEndedGameIsEpisodeOver(t *testing.T) {
	deal := actionsBin([]env.Action{env.Deal, env.Deal, env.Deal})
	for _, autoreset := range []string{"disabled", "next-step"} {
		t.Run(autoreset, func(t *testing.T) {
			_, addr := start(t, Config{})
			cl := dial(t, addr)
			hello(cl)
			cl.ok(map[string]any{"op": "make", "n": 3, "max_steps": 1, "autoreset": autoreset, "illegal": "error"})
			cl.ok(map[string]any{"op": "reset", "seed": 5})
			rep := cl.ok(map[string]any{"op": "step", "actions": deal})
			if fmt.Sprint(rep["truncated"]) != fmt.Sprint([]byte{1, 1, 1}) {
				t.Fatalf("truncated %v after one step of max_steps 1", rep["truncated"])
			}
			before := cl.ok(map[string]any{"op": "render", "game": 1})["text"]
			cl.failed(map[string]any{"op": "hint", "game": 1}, "episode_over", "game 1 has ended: it has no legal action to hint until it is reset")
			if autoreset == "disabled" {
				cl.failed(map[string]any{"op": "step", "actions": deal}, "episode_over", "env: game 0 has ended; reset it before stepping it (autoreset disabled)")
				cl.failed(map[string]any{"op": "step", "actions": deal, "env_ids": []byte{2, 0, 0, 0}}, "episode_over", "env: game 2 has ended; reset it before stepping it (autoreset disabled)")
				if after := cl.ok(map[string]any{"op": "render", "game": 1})["text"]; after != before {
					t.Fatalf("a refused step changed game 1:\n%v\n%v", before, after)
				}
				cl.ok(map[string]any{"op": "reset", "reset_mask": []byte{1, 1, 1}})
			} else if rep := cl.ok(map[string]any{"op": "step", "actions": deal}); fmt.Sprint(rep["truncated"]) != fmt.Sprint([]byte{0, 0, 0}) {
				t.Fatalf("truncated %v: the step after the end should have reset every game", rep["truncated"])
			}
			// Restarted, the games take hints and steps again.
			cl.ok(map[string]any{"op": "hint", "game": 1})
			cl.ok(map[string]any{"op": "step", "actions": deal})
		})
	}
}

// TestOperationStagesAsDocumented pins the table's stages to the order
// PROTOCOL.md states: hello any time; make and close after hello; reset
// after make; step, render and hint after a reset. (TestOrderComesFromTheTable
// checks the server against the table, whatever the table says.)
func TestOperationStagesAsDocumented(t *testing.T) {
	want := map[string]stage{
		"hello": stageStart, "make": stageHello, "close": stageHello, "reset": stageMade,
		"step": stageReset, "render": stageReset, "hint": stageReset,
	}
	if len(operations) != len(want) {
		t.Fatalf("%d operations in the table, %d documented", len(operations), len(want))
	}
	for _, op := range operations {
		if w, ok := want[op.name]; !ok || op.needs != w {
			t.Errorf("op %q needs stage %d; want %d (documented: %v)", op.name, op.needs, w, ok)
		}
	}
	// And on the wire: close before hello, hint after make but before a reset.
	_, addr := start(t, Config{})
	cl := dial(t, addr)
	cl.failed(map[string]any{"op": "close"}, "bad_order", `the first request must be hello (op "close" came first)`)
	cl = dial(t, addr)
	hello(cl)
	cl.ok(map[string]any{"op": "make", "n": 1})
	cl.failed(map[string]any{"op": "hint", "game": 0}, "bad_order", "hint before reset: reset the batch first")
}

// TestHelloListsTheTable checks the hello reply against the table of
// operations, the game options and the server's limits.
func TestHelloListsTheTable(t *testing.T) {
	_, addr := start(t, Config{MaxGames: 50, MaxFrame: 4096})
	cl := dial(t, addr)
	r := cl.ok(map[string]any{"op": "hello", "version": Version, "id": 2})
	var names []string
	for _, op := range operations {
		names = append(names, op.name)
	}
	var options []string
	for _, f := range env.OptionFields() {
		options = append(options, f.Key)
	}
	if fmt.Sprint(r["ops"]) != fmt.Sprint(names) || fmt.Sprint(r["version"]) != fmt.Sprint(Version) || r["server"] != "spider" ||
		fmt.Sprint(r["max_games"]) != "50" || fmt.Sprint(r["max_frame"]) != "4096" || fmt.Sprint(r["id"]) != "2" ||
		fmt.Sprint(r["options"]) != fmt.Sprint(options) || len(options) == 0 {
		t.Fatalf("hello reply %v", r)
	}
	if len(r) != 8 {
		t.Fatalf("hello reply has %d fields, want 8: %v", len(r), r)
	}
}

// optionExample is f's example value as the socket carries it: an integer
// for a numeric option, a float for a float one, the name for the others.
func optionExample(t *testing.T, f env.OptionField) any {
	t.Helper()
	if f.Float {
		v, err := strconv.ParseFloat(f.Example, 64)
		if err != nil {
			t.Fatalf("%s: example %q: %v", f.Key, f.Example, err)
		}
		return v
	}
	if !f.Numeric {
		return f.Example
	}
	v, err := strconv.ParseInt(f.Example, 10, 64)
	if err != nil {
		t.Fatalf("%s: example %q: %v", f.Key, f.Example, err)
	}
	return v
}

// TestMakeEchoesEveryOption sets each game option alone and checks that
// the make reply echoes it, with every other option at its default, and
// that the batch has the configuration the option makes.
func TestMakeEchoesEveryOption(t *testing.T) {
	_, addr := start(t, Config{})
	cl := dial(t, addr)
	hello(cl)
	def := env.DefaultOptions()
	for _, f := range env.OptionFields() {
		v := optionExample(t, f)
		if fmt.Sprint(v) == fmt.Sprint(f.Value(def)) {
			t.Errorf("the test value of %q is its default, %v", f.Key, v)
		}
		var o env.Options
		if err := f.Set(&o, fmt.Sprint(v)); err != nil {
			t.Fatal(err)
		}
		r := env.MustRules(o)
		rep := cl.ok(map[string]any{"op": "make", f.Key: v, "n": 2})
		for _, g := range env.OptionFields() {
			if got, want := fmt.Sprint(rep[g.Key]), fmt.Sprint(g.Value(r.Options())); got != want {
				t.Errorf("make with %s %v: the reply says %s %s, want %s", f.Key, v, g.Key, got, want)
			}
		}
		if fmt.Sprint(rep[f.Key]) != fmt.Sprint(v) {
			t.Errorf("make with %s %v echoed %v", f.Key, v, rep[f.Key])
		}
		if fmt.Sprint(rep["obs_shape"]) != fmt.Sprint([]int{r.ObsLen()}) {
			t.Errorf("make with %s %v: obs_shape %v, want [%d]", f.Key, v, rep["obs_shape"], r.ObsLen())
		}
		batchFields := []string{"n", "num_actions", "obs_shape", "obs_dtype", "obs_low", "obs_high", "mask", "mask_row_bytes", "autoreset", "illegal", "workers"}
		if want := 1 + len(batchFields) + len(env.OptionFields()); len(rep) != want {
			t.Errorf("make reply has %d fields, want %d (ok, the batch fields %v and every game option)", len(rep), want, batchFields)
		}
		for _, k := range batchFields {
			if _, ok := rep[k]; !ok {
				t.Errorf("make reply lacks the batch field %q", k)
			}
		}
		cl.ok(map[string]any{"op": "reset", "seed": 1})
		cl.ok(map[string]any{"op": "step", "actions": []int{env.NumActions - 1, env.NumActions - 1}})
	}
}

// TestMakeNamesIgnoreCase: every name make takes (the game options' and
// the batch fields') is read whatever its case, and the reply echoes it in
// lower case, the form a client compares with.
func TestMakeNamesIgnoreCase(t *testing.T) {
	_, addr := start(t, Config{})
	cl := dial(t, addr)
	hello(cl)
	rep := cl.ok(map[string]any{"op": "make", "rules": "CardEms", "obs": "FLOAT32", "shaping": "Progress",
		"autoreset": "Same-Step", "illegal": "NOOP", "mask": "BITS"})
	for k, want := range map[string]string{"rules": "cardems", "obs": "float32", "shaping": "progress",
		"autoreset": "same-step", "illegal": "noop", "mask": "bits"} {
		if rep[k] != want {
			t.Errorf("%s: the reply says %v, want %q", k, rep[k], want)
		}
	}
}

// TestMakeZeroMeansDefault sends every numeric game option as 0 and
// requires the defaults, as an absent option gets.
func TestMakeZeroMeansDefault(t *testing.T) {
	_, addr := start(t, Config{})
	cl := dial(t, addr)
	hello(cl)
	req := map[string]any{"op": "make"}
	for _, f := range env.OptionFields() {
		if f.Numeric {
			req[f.Key] = 0
		}
	}
	for _, m := range []map[string]any{req, {"op": "make"}} {
		rep := cl.ok(m)
		for _, f := range env.OptionFields() {
			if got, want := fmt.Sprint(rep[f.Key]), f.Text(env.DefaultOptions()); got != want {
				t.Errorf("make %v: %s is %s, want the default %s", m, f.Key, got, want)
			}
		}
	}
}

// TestOptionKeysAreFree checks that no game option's key is also one of
// the server's own request fields, which would hide the option.
func TestOptionKeysAreFree(t *testing.T) {
	for _, f := range env.OptionFields() {
		if k, ok := lookupField([]byte(f.Key)); ok {
			t.Errorf("game option %q is also the request field %d", f.Key, k)
		}
	}
	for f := range numFields {
		if k, ok := lookupField([]byte(requestFields[f].key)); !ok || k != f {
			t.Errorf("request field %q looks up as %d, %v", requestFields[f].key, k, ok)
		}
	}
}

func TestLimits(t *testing.T) {
	_, addr := start(t, Config{MaxConns: 2, MaxTotal: 10, IdleTimeout: 300 * time.Millisecond})
	a, b := dial(t, addr), dial(t, addr)
	hello(a)
	hello(b)
	a.ok(map[string]any{"op": "make", "n": 6})
	b.failed(map[string]any{"op": "make", "n": 6}, "limit", "the server holds its limit of 10 games across connections (--max-total)")
	b.ok(map[string]any{"op": "make", "n": 4})
	third := dial(t, addr)
	if r := third.recv(); r == nil || r["code"] != "limit" || r["error"] != "the server already serves 2 connections, its limit (--max-conns)" || !third.closed() {
		t.Fatalf("a third connection over the limit of 2: %v", r)
	}
	// The idle timeout frees an abandoned connection.
	time.Sleep(500 * time.Millisecond)
	if !a.closed() {
		t.Fatal("an idle connection was not closed")
	}
}

// TestDefaultConfig checks that New fills exactly the zero (and negative)
// fields from DefaultConfig.
func TestDefaultConfig(t *testing.T) {
	d := DefaultConfig()
	if d.MaxConns <= 0 || d.MaxPeerConns <= 0 || d.MaxPeerConns >= d.MaxConns || d.MaxGames <= 0 || d.MaxTotal < d.MaxGames || d.MaxFrame <= 0 || d.MaxBytes <= 0 ||
		int64(d.MaxMemory) < 2*int64(d.MaxBytes) || d.IdleTimeout <= 0 || d.SetupTimeout <= 0 || d.Workers != 0 || d.Log == nil || d.Hint == nil || d.HintBytes <= 0 {
		t.Fatalf("DefaultConfig %+v: a limit is unset, or one peer may take every connection, or the largest batch does not fit the memory", d)
	}
	got := New(Config{MaxGames: 7, MaxFrame: -1, Workers: 3, MaxMemory: 5 << 20}).cfg
	if got.MaxGames != 7 || got.Workers != 3 || got.MaxMemory != 5<<20 || got.MaxFrame != d.MaxFrame || got.MaxConns != d.MaxConns || got.MaxPeerConns != d.MaxPeerConns ||
		got.MaxTotal != d.MaxTotal || got.MaxBytes != d.MaxBytes || got.IdleTimeout != d.IdleTimeout || got.SetupTimeout != d.SetupTimeout ||
		got.Log == nil || got.Hint == nil || got.HintBytes != d.HintBytes {
		t.Fatalf("New filled %+v; want DefaultConfig's values in the zero and negative fields only", got)
	}
	if _, ok := got.Hint().(*agents.Greedy); !ok {
		t.Fatalf("the default hint agent is %T, want greedy", got.Hint())
	}
	if got := New(Config{MaxGames: env.MaxBatch + 1}).cfg.MaxGames; got != env.MaxBatch {
		t.Fatalf("MaxGames over env.MaxBatch became %d, want %d, the most a batch holds", got, env.MaxBatch)
	}
	if New(Config{}).cfg.Workers <= 0 {
		t.Fatal("workers not resolved")
	}
}

func TestConcurrentConnections(t *testing.T) {
	_, addr := start(t, Config{})
	// Parallel subtests: six clients at once, each free to fail on its own.
	t.Run("clients", func(t *testing.T) {
		for k := range 6 {
			t.Run(fmt.Sprint(k), func(t *testing.T) {
				t.Parallel()
				cl := dial(t, addr)
				hello(cl)
				n := 2 + k
				cl.ok(map[string]any{"op": "make", "n": n, "suits": []int{1, 2, 4}[k%3], "obs": []string{"compact", "float32"}[k%2]})
				r := env.MustRules(env.Options{Suits: []int{1, 2, 4}[k%3], Encoding: env.Encoding(k % 2)})
				ref := must(env.NewBatch(r, env.BatchOptions{N: n}))
				defer ref.Close()
				rep := cl.ok(map[string]any{"op": "reset", "seed": k})
				ref.Reset(uint64(k))
				compare(t, rep, ref, false)
				actions := make([]env.Action, n)
				for range 100 {
					ref.SampleLegal(actions)
					rep := cl.ok(map[string]any{"op": "step", "actions": actionsBin(actions)})
					ref.Step(actions)
					compare(t, rep, ref, false)
				}
			})
		}
	})
}

func TestShutdownClosesConnections(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var logged syncLog
	srv := New(Config{Log: log.New(&logged, "", 0)})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	cl := dial(t, ln.Addr().String())
	hello(cl)
	cl.ok(map[string]any{"op": "make", "n": 3})
	cancel()
	defer func() {
		// Closing its own connections to stop is not an error to log.
		if s := logged.String(); s != "" {
			t.Errorf("the server logged on a clean shutdown: %q", s)
		}
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after cancel")
	}
	if !cl.closed() || srv.Games() != 0 {
		t.Fatalf("after shutdown: connection open or %d games held", srv.Games())
	}
}

// fixedAgent always suggests the first legal action, with a reason that
// shows it answered.
type fixedAgent struct{ rules env.Rules }

func (fixedAgent) Name() string { return "fixed" }
func (fixedAgent) Begin(uint64) {}
func (fixedAgent) Act(v agents.View) agents.Decision {
	return agents.Decision{Action: v.Legal()[0], Reason: "the fixed test agent"}
}
func (a fixedAgent) CheckRules(r env.Rules) error {
	if r.Suits() != a.rules.Suits() {
		return fmt.Errorf("trained for %d suits", a.rules.Suits())
	}
	return nil
}

// TestHintUsesConfiguredAgent checks that Config.Hint answers hints and
// that an agent refusing the batch's rules gives a bad_config error while
// the connection goes on.
func TestHintUsesConfiguredAgent(t *testing.T) {
	_, addr := start(t, Config{Hint: func() agents.Agent { return fixedAgent{env.MustRules(env.Options{Suits: 1})} }})
	for _, suits := range []int{1, 2} {
		cl := dial(t, addr)
		cl.ok(map[string]any{"op": "hello", "version": Version})
		cl.ok(map[string]any{"op": "make", "n": 2, "suits": suits})
		cl.ok(map[string]any{"op": "reset", "seed": 3})
		if suits == 1 {
			if rep := cl.ok(map[string]any{"op": "hint", "game": 0}); rep["reason"] != "the fixed test agent" {
				t.Fatalf("hint %v", rep)
			}
			continue
		}
		cl.failed(map[string]any{"op": "hint", "game": 0}, "bad_config", "the hint policy cannot advise on these games: trained for 1 suits")
		cl.ok(map[string]any{"op": "render", "game": 0}) // the connection goes on
	}
}

// seedAgent chooses by the seed Begin gave it, as a search that samples
// does, and says which seed it was.
type seedAgent struct{ seed *uint64 }

func (seedAgent) Name() string     { return "seed" }
func (a seedAgent) Begin(s uint64) { *a.seed = s }
func (a seedAgent) Act(v agents.View) agents.Decision {
	legal := v.Legal()
	return agents.Decision{Action: legal[*a.seed%uint64(len(legal))], Reason: fmt.Sprint(*a.seed)}
}

// TestHintIsTheSameInEverySlot: a hint is the policy's choice for the
// position as its player sees it, so the same deal in two slots, or asked
// on another connection, gets the same hint (its agent was begun with the
// slot's number, which a search's samples, and so its moves, followed).
func TestHintIsTheSameInEverySlot(t *testing.T) {
	var seed uint64
	_, addr := start(t, Config{Hint: func() agents.Agent { return seedAgent{&seed} }})
	var first map[string]any
	for conn := range 2 {
		cl := dial(t, addr)
		hello(cl)
		cl.ok(map[string]any{"op": "make", "n": 3, "suits": 1})
		cl.ok(map[string]any{"op": "reset", "seeds": []any{5, 6, 5}})
		for _, game := range []int{0, 2} {
			rep := cl.ok(map[string]any{"op": "hint", "game": game})
			if first == nil {
				first = rep
			} else if rep["action"] != first["action"] || rep["reason"] != first["reason"] {
				t.Fatalf("connection %d, game %d: hint %v (seed %v), where game 0 of the first got %v (seed %v)", conn+1, game, rep["action"], rep["reason"], first["action"], first["reason"])
			}
		}
		if rep := cl.ok(map[string]any{"op": "hint", "game": 1}); rep["reason"] == first["reason"] {
			t.Fatalf("game 1, another deal, was hinted with the same seed %v", rep["reason"])
		}
	}
}

// TestResetSeeds resets a batch with a list of seeds and checks every
// buffer against an in-process batch given the same list, then resets with
// seed s and checks game 1 against a batch of one reset with s+1.
func TestResetSeeds(t *testing.T) {
	_, addr := start(t, DefaultConfig())
	cl := dial(t, addr)
	hello(cl)
	cl.ok(map[string]any{"op": "make", "n": 3, "autoreset": "next-step"})
	r := env.MustRules(env.Options{})
	b := must(env.NewBatch(r, env.BatchOptions{N: 3, Autoreset: env.NextStep}))
	defer b.Close()
	rep := cl.ok(map[string]any{"op": "reset", "seeds": []any{uint64(1) << 63, 8, 0}})
	if err := b.ResetSeeds([]uint64{1 << 63, 8, 0}, []bool{true, true, true}); err != nil {
		t.Fatal(err)
	}
	compare(t, rep, b, false)
	rep = cl.ok(map[string]any{"op": "reset", "seeds": []any{nil, 4, nil}})
	if err := b.ResetSeeds([]uint64{0, 4, 0}, []bool{false, true, false}); err != nil {
		t.Fatal(err)
	}
	compare(t, rep, b, false)

	// With reset_mask only the chosen games reset, each from its seed or
	// to its next episode; game 2's seed is not read.
	rep = cl.ok(map[string]any{"op": "reset", "seeds": []any{9, nil, 5}, "reset_mask": []byte{1, 1, 0}})
	if err := b.ResetGamesSeeded([]bool{true, true, false}, []uint64{9, 0, 5}, []bool{true, false, true}); err != nil {
		t.Fatal(err)
	}
	compare(t, rep, b, false)
	rep = cl.ok(map[string]any{"op": "reset", "reset_mask": []byte{0, 1, 1}})
	if err := b.ResetGames([]bool{false, true, true}); err != nil {
		t.Fatal(err)
	}
	compare(t, rep, b, false)

	rep = cl.ok(map[string]any{"op": "reset", "seed": 41})
	one := must(env.NewBatch(r, env.BatchOptions{N: 1, Autoreset: env.NextStep}))
	defer one.Close()
	one.Reset(42)
	if got, want := rep["obs"].([]byte)[len(one.ObsCompact):2*len(one.ObsCompact)], one.ObsCompact; !bytes.Equal(got, want) {
		t.Fatal("game 1 of a reset with seed 41 is not the game of seed 42")
	}
}

// TestPeerGoneIsNotLogged checks which errors count as a client that hung
// up (not logged) and which are the server's to report.
func TestPeerGoneIsNotLogged(t *testing.T) {
	gone := []error{
		&net.OpError{Op: "write", Err: os.NewSyscallError("write", syscall.EPIPE)},
		&net.OpError{Op: "read", Err: os.NewSyscallError("read", syscall.ECONNRESET)},
	}
	for _, err := range gone {
		if !peerGone(err) {
			t.Errorf("%v: not seen as a client that hung up", err)
		}
	}
	for _, err := range []error{errors.New("frame too large"), os.ErrDeadlineExceeded, syscall.ENOMEM} {
		if peerGone(err) {
			t.Errorf("%v: taken for a client that hung up", err)
		}
	}
}

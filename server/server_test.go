package server

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
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

func (cl *client) sendRaw(payload []byte) {
	cl.t.Helper()
	if err := writeFrame(cl.c, payload); err != nil {
		cl.t.Fatal(err)
	}
}

func (cl *client) send(m map[string]any) {
	cl.t.Helper()
	b, err := msgpack.Marshal(m)
	if err != nil {
		cl.t.Fatal(err)
	}
	cl.sendRaw(b)
}

// recv reads one reply, or returns nil when the server closed the stream.
func (cl *client) recv() map[string]any {
	cl.t.Helper()
	payload, _, err := readFrame(cl.c, nil, 1<<30)
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || strings.Contains(err.Error(), "reset") {
			return nil
		}
		cl.t.Fatalf("reading a reply: %v", err)
	}
	var m map[string]any
	if err := msgpack.Unmarshal(payload, &m); err != nil {
		cl.t.Fatalf("reply is not a map: %v", err)
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
			if mk["id"] != int8(7) && mk["id"] != uint8(7) && mk["id"] != int64(7) {
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
			if shape := mk["obs_shape"].([]any); fmt.Sprint(shape[0]) != fmt.Sprint(r.ObsLen()) {
				t.Fatalf("obs_shape %v, want [%d]", shape, r.ObsLen())
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
			cl.ok(map[string]any{"op": "close"})
			if !cl.closed() {
				t.Fatal("close did not close the connection")
			}
		})
	}
}

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

// TestBadInput sends each kind of bad input on its own connection, checks
// the error reply (or the closed connection), and then checks the server
// still serves a good client.
func TestBadInput(t *testing.T) {
	srv, addr := start(t, Config{MaxFrame: 1 << 16, MaxGames: 64, MaxBytes: 2 << 20})
	frame := func(b []byte) []byte {
		var h [4]byte
		binary.BigEndian.PutUint32(h[:], uint32(len(b)))
		return append(h[:], b...)
	}
	marshal := func(m map[string]any) []byte { return must(msgpack.Marshal(m)) }
	helloB := marshal(map[string]any{"op": "hello", "version": 1})
	makeB := marshal(map[string]any{"op": "make", "n": 3})
	resetB := marshal(map[string]any{"op": "reset", "seed": 1})
	tests := []struct {
		name    string
		setup   [][]byte // frames sent first, each answered
		raw     []byte   // the bad bytes, sent as they are
		code    string   // expected error code ("" when the server just closes)
		msg     string
		closes  bool
		noReply bool
	}{
		{"GarbageBytes", nil, frame([]byte{0xc1, 0xff, 0x00}), codeBadFrame, "msgpack map", false, false},
		{"NotAMap", nil, frame(must(msgpack.Marshal([]int{1, 2}))), codeBadFrame, "map", false, false},
		{"NoOp", nil, frame(marshal(map[string]any{"version": 1})), codeBadRequest, "no \"op\"", false, false},
		{"WrongVersion", nil, frame(marshal(map[string]any{"op": "hello", "version": 9})), codeBadRequest, "version 9", false, false},
		{"OpBeforeHello", nil, frame(makeB), codeBadOrder, "hello", false, false},
		{"UnknownOp", [][]byte{helloB}, frame(marshal(map[string]any{"op": "fly"})), codeBadRequest, "unknown op", false, false},
		{"WrongType", [][]byte{helloB}, frame(marshal(map[string]any{"op": "make", "suits": "four"})), codeBadRequest, "\"suits\"", false, false},
		{"BadSuits", [][]byte{helloB}, frame(marshal(map[string]any{"op": "make", "suits": 3})), codeBadConfig, "suits", false, false},
		{"TooManyGames", [][]byte{helloB}, frame(marshal(map[string]any{"op": "make", "n": 65})), codeLimit, "max-games", false, false},
		{"TooManyBytes", [][]byte{helloB}, frame(marshal(map[string]any{"op": "make", "n": 64, "suits": 4, "obs": "float32"})), codeLimit, "MiB of buffers", false, false},
		{"StepBeforeMake", [][]byte{helloB}, frame(marshal(map[string]any{"op": "step", "actions": []int{1}})), codeBadOrder, "before make", false, false},
		{"StepBeforeReset", [][]byte{helloB, makeB}, frame(marshal(map[string]any{"op": "step", "actions": []int{1, 1, 1}})), codeBadOrder, "before reset", false, false},
		{"RenderBeforeReset", [][]byte{helloB, makeB}, frame(marshal(map[string]any{"op": "render", "game": 0})), codeBadOrder, "before reset", false, false},
		{"MaskedResetFirst", [][]byte{helloB, makeB}, frame(marshal(map[string]any{"op": "reset", "reset_mask": []byte{1, 0, 0}})), codeBadOrder, "first reset", false, false},
		{"WrongActionCount", [][]byte{helloB, makeB, resetB}, frame(marshal(map[string]any{"op": "step", "actions": []int{1080, 1080}})), codeBadAction, "2 actions for 3 games", false, false},
		{"WrongActionBytes", [][]byte{helloB, makeB, resetB}, frame(marshal(map[string]any{"op": "step", "actions": []byte{1, 2, 3}})), codeBadAction, "3 bytes", false, false},
		{"OutOfRangeAction", [][]byte{helloB, makeB, resetB}, frame(marshal(map[string]any{"op": "step", "actions": []int{1080, 5000, 1080}})), codeBadAction, "game 1", false, false},
		{"NegativeAction", [][]byte{helloB, makeB, resetB}, frame(marshal(map[string]any{"op": "step", "actions": []int{-1, 1080, 1080}})), codeBadAction, "game 0", false, false},
		{"IllegalAction", [][]byte{helloB, makeB, resetB}, frame(marshal(map[string]any{"op": "step", "actions": []int{1080, 1080, 0}})), codeBadAction, "game 2", false, false},
		{"NoActions", [][]byte{helloB, makeB, resetB}, frame(marshal(map[string]any{"op": "step"})), codeBadRequest, "needs \"actions\"", false, false},
		{"BadGame", [][]byte{helloB, makeB, resetB}, frame(marshal(map[string]any{"op": "render", "game": 3})), codeBadRequest, "outside", false, false},
		{"ShortResetMask", [][]byte{helloB, makeB, resetB}, frame(marshal(map[string]any{"op": "reset", "reset_mask": []byte{1}})), codeBadRequest, "reset_mask", false, false},
		{"HintBadGame", [][]byte{helloB, makeB, resetB}, frame(marshal(map[string]any{"op": "hint", "game": 9})), codeBadRequest, "outside", false, false},
		{"HugeActionArray", [][]byte{helloB, makeB, resetB}, frame(append([]byte{0x82, 0xa2, 'o', 'p', 0xa4, 's', 't', 'e', 'p', 0xa7, 'a', 'c', 't', 'i', 'o', 'n', 's'}, 0xdd, 0xff, 0xff, 0xff, 0xf0)), codeBadRequest, "past the end of the frame", false, false},
		{"HugeActionBin", [][]byte{helloB, makeB, resetB}, frame(append([]byte{0x82, 0xa2, 'o', 'p', 0xa4, 's', 't', 'e', 'p', 0xa7, 'a', 'c', 't', 'i', 'o', 'n', 's'}, 0xc6, 0xff, 0xff, 0xff, 0xf0)), codeBadRequest, "past the end of the frame", false, false},
		{"DeeplyNestedUnknownField", nil, frame(append(append([]byte{0x82, 0xa2, 'o', 'p', 0xa5, 'h', 'e', 'l', 'l', 'o', 0xa1, 'x'}, bytes.Repeat([]byte{0x91}, 5000)...), 0xc0)), codeBadRequest, "nested more than", false, false},
		{"TooManyFields", nil, frame(append([]byte{0xde, 0x03, 0xe8}, bytes.Repeat([]byte{0xa1, 'k', 0x01}, 1000)...)), codeBadRequest, "over the limit of 64", false, false},
		{"HugeString", nil, frame(append([]byte{0x81, 0xa2, 'o', 'p', 0xdb}, 0x7f, 0xff, 0xff, 0xff)), codeBadRequest, "over the limit", false, false},
		{"OversizeFrame", nil, []byte{0, 2, 0, 0, 1, 2}, codeBadFrame, "over the limit", true, false},
		{"EmptyFrame", nil, []byte{0, 0, 0, 0}, codeBadFrame, "empty frame", true, false},
		{"DisconnectMidFrame", [][]byte{helloB}, []byte{0, 0, 0, 50, 0x81}, "", "", true, true},
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
				if r == nil || r["ok"] != false || r["code"] != tc.code || !strings.Contains(fmt.Sprint(r["error"]), tc.msg) {
					t.Fatalf("reply %v; want code %s with %q", r, tc.code, tc.msg)
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

func TestLimits(t *testing.T) {
	_, addr := start(t, Config{MaxConns: 2, MaxTotal: 10, IdleTimeout: 300 * time.Millisecond})
	a, b := dial(t, addr), dial(t, addr)
	hello(a)
	hello(b)
	a.ok(map[string]any{"op": "make", "n": 6})
	r := b.call(map[string]any{"op": "make", "n": 6})
	if r["code"] != codeLimit {
		t.Fatalf("a 12th game was accepted over the total of 10: %v", r)
	}
	b.ok(map[string]any{"op": "make", "n": 4})
	third := dial(t, addr)
	if r := third.recv(); r == nil || r["code"] != codeLimit || !third.closed() {
		t.Fatalf("a third connection over the limit of 2: %v", r)
	}
	// The idle timeout frees an abandoned connection.
	time.Sleep(500 * time.Millisecond)
	if !a.closed() {
		t.Fatal("an idle connection was not closed")
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
	srv := New(Config{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	cl := dial(t, ln.Addr().String())
	hello(cl)
	cl.ok(map[string]any{"op": "make", "n": 3})
	cancel()
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
		rep := cl.call(map[string]any{"op": "hint", "game": 0})
		if suits == 1 {
			if rep["ok"] != true || rep["reason"] != "the fixed test agent" {
				t.Fatalf("hint %v", rep)
			}
			continue
		}
		if rep["ok"] == true || rep["code"] != codeBadConfig || !strings.Contains(fmt.Sprint(rep["error"]), "trained for 1 suits") {
			t.Fatalf("hint on a 2-suit batch: %v", rep)
		}
		if r := cl.call(map[string]any{"op": "render", "game": 0}); r["ok"] != true {
			t.Fatalf("the connection did not go on after the refusal: %v", r)
		}
	}
}

package remote

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/spiderenv/spider/agents"
	"github.com/spiderenv/spider/env"
	"github.com/spiderenv/spider/internal/alloccount"
)

// fakeAgent is a policy agent in the test's process, on a Unix socket,
// playing the first legal action; misbehave may change each answer: it is
// given the request's number (from 1) and the actions, and returns
// whether to answer at all.
type fakeAgent struct {
	addr      string
	hello     map[string]any
	requests  atomic.Int64
	seenKeys  map[string]bool
	misbehave func(req int64, id any, actions []uint16, conn net.Conn) bool
	board     bool
	tcp       string // listen over TCP at this loopback host:port, not on a Unix socket
}

func writeFrame(w io.Writer, v any) error {
	b, err := msgpack.Marshal(v)
	if err != nil {
		return err
	}
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], uint32(len(b)))
	_, err = w.Write(append(hdr[:], b...))
	return err
}

func readFrame(r io.Reader) (map[string]any, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	b := make([]byte, binary.BigEndian.Uint32(hdr[:]))
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, err
	}
	var m map[string]any
	return m, msgpack.Unmarshal(b, &m)
}

// listenAgent listens on a Unix socket in a fresh folder, closed when the
// test ends, and returns it with its address for remote:.
func listenAgent(t *testing.T) (net.Listener, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "agent.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln, "unix:" + path
}

// start listens in a fresh folder and serves connections until the test
// ends.
func (f *fakeAgent) start(t *testing.T) {
	t.Helper()
	var ln net.Listener
	if f.tcp != "" {
		var err error
		if ln, err = net.Listen("tcp", f.tcp); err != nil {
			t.Skipf("no loopback at %s here: %v", f.tcp, err)
		}
		t.Cleanup(func() { ln.Close() })
		f.addr = ln.Addr().String()
	} else {
		ln, f.addr = listenAgent(t)
	}
	f.seenKeys = map[string]bool{}
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go f.serve(conn)
		}
	}()
}

func (f *fakeAgent) serve(conn net.Conn) {
	defer conn.Close()
	for {
		m, err := readFrame(conn)
		if err != nil {
			return
		}
		switch m["op"] {
		case "hello":
			f.hello = m
			writeFrame(conn, map[string]any{"ok": true, "id": m["id"], "version": 1, "name": "fake-first", "board": f.board})
		case "act":
			for k := range m {
				f.seenKeys[k] = true
			}
			n := int(toInt(m["n"]))
			masks := m["masks"].([]byte)
			actions := make([]uint16, n)
			for i := range n {
				row := masks[i*env.NumActions : (i+1)*env.NumActions]
				actions[i] = uint16(bytes.IndexByte(row, 1))
			}
			req := f.requests.Add(1)
			if f.misbehave != nil && !f.misbehave(req, m["id"], actions, conn) {
				continue
			}
			out := make([]byte, 2*n)
			for i, a := range actions {
				binary.LittleEndian.PutUint16(out[2*i:], a)
			}
			writeFrame(conn, map[string]any{"ok": true, "id": m["id"], "actions": out})
		case "close":
			return
		}
	}
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

func evalBoth(t *testing.T, f *fakeAgent, o Options, seeds []uint64) *agents.Evaluation {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, err := Dial(ctx, f.addr, o)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	first, _ := agents.New("first")
	ev, err := agents.EvaluatePolicies(ctx, o.Rules, []agents.Policy{{Name: "first", Maker: first}, {Name: "remote", Batch: a}}, seeds, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

func rules(t *testing.T, o env.Options) env.Rules {
	t.Helper()
	r, err := env.NewRules(o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func seedRange(lo, n uint64) []uint64 {
	var s []uint64
	for i := range n {
		s = append(s, lo+i)
	}
	return s
}

// TestRemoteFirstPlaysTheSameGames: an agent over the socket that plays
// the first legal action plays every deal exactly as the built-in "first".
func TestRemoteFirstPlaysTheSameGames(t *testing.T) {
	for _, enc := range []env.Encoding{env.Compact, env.Float32} {
		f := &fakeAgent{board: enc == env.Float32}
		f.start(t)
		testFirstPlaysTheSameGames(t, f, enc)
	}
}

// TestRemoteOverTCP: an agent of this user's over loopback TCP, IPv4 and
// IPv6, plays as it does on a Unix socket. (s78's check of the agent's
// user read SO_PEERCRED of the TCP connection, which Linux answers with
// uid 4294967295, and refused every such agent as another user's.)
func TestRemoteOverTCP(t *testing.T) {
	for _, host := range []string{"127.0.0.1:0", "[::1]:0"} {
		t.Run(host, func(t *testing.T) {
			f := &fakeAgent{tcp: host}
			f.start(t)
			testFirstPlaysTheSameGames(t, f, env.Compact)
		})
	}
}

// testFirstPlaysTheSameGames plays 20 two-suit deals with f, which plays
// the first legal action, and the built-in "first", and wants the same
// games.
func testFirstPlaysTheSameGames(t *testing.T, f *fakeAgent, enc env.Encoding) {
	t.Helper()
	{
		r := rules(t, env.Options{Suits: 2, MaxSteps: 300, Encoding: enc})
		ev := evalBoth(t, f, Options{Rules: r, Width: 7}, seedRange(100001, 20))
		for i := range ev.Seeds {
			a, b := ev.Results[0][i], ev.Results[1][i]
			a.Elapsed, b.Elapsed = 0, 0
			if b.Failure != "" || !reflect.DeepEqual(a, b) {
				t.Fatalf("seed %d: built-in %+v\nremote %+v", ev.Seeds[i], a, b)
			}
			if a.Moves == 0 {
				t.Fatalf("seed %d: no moves", ev.Seeds[i])
			}
		}
		decisions := 0
		for _, res := range ev.Results[1] {
			decisions += res.Moves
		}
		// At most 7 games a request, and batched: far fewer requests than decisions.
		if got := int(f.requests.Load()); got*7 < decisions || got*2 > decisions {
			t.Errorf("%d requests for %d decisions: want between a seventh and a half", got, decisions)
		}
		g := f.hello["game"].(map[string]any)
		if g["suits"] != int8(2) || toInt(f.hello["max_games"]) != 7 || f.hello["obs_dtype"] != map[env.Encoding]string{env.Compact: "uint8", env.Float32: "float32"}[enc] {
			t.Errorf("hello %v", f.hello)
		}
		if f.seenKeys["boards"] != f.board || f.seenKeys["seed"] || f.seenKeys["seeds"] {
			t.Errorf("request keys %v (board asked: %v); a seed must never be sent", f.seenKeys, f.board)
		}
	}
}

// TestRemoteIllegalAnswerFailsTheGame: an illegal action ends that game
// as a failure naming it; the other games and policies go on.
func TestRemoteIllegalAnswerFailsTheGame(t *testing.T) {
	f := &fakeAgent{}
	f.misbehave = func(req int64, _ any, actions []uint16, _ net.Conn) bool {
		if req == 3 {
			actions[0] = uint16(env.MoveAction(0, 1, 12)) // 12 cards from a column with at most 3 face up
			actions[1] = 5000                             // out of range
		}
		return true
	}
	f.start(t)
	r := rules(t, env.Options{Suits: 1, MaxSteps: 200})
	ev := evalBoth(t, f, Options{Rules: r, Width: 4}, seedRange(1, 8))
	var failed []string
	for i := range ev.Seeds {
		if ev.Results[0][i].Failure != "" {
			t.Errorf("built-in first failed: %s", ev.Results[0][i].Failure)
		}
		if msg := ev.Results[1][i].Failure; msg != "" {
			failed = append(failed, msg)
			if ev.Results[1][i].Won || ev.Results[1][i].Moves != 2 {
				t.Errorf("failed game %+v: want not won, after 2 moves", ev.Results[1][i])
			}
		} else if ev.Results[1][i].Moves != ev.Results[0][i].Moves {
			t.Errorf("seed %d: an unaffected game differs", ev.Seeds[i])
		}
	}
	if len(failed) != 2 || !strings.HasPrefix(failed[0], "illegal action 11 at move 3") || !strings.HasPrefix(failed[1], "illegal action 1081 at move 3") {
		t.Fatalf("failures %q: want the two games of request 3 failed as illegal (5000 read as 1081)", failed)
	}
}

// TestRemoteSlowAnswerTimesOut: a request answered after the timeout
// fails its games; the late answer is dropped, and the next requests are
// answered in time and played. The agent answers request 2 only once
// request 3 has come, which the eval sends after giving up on 2, so the
// test does not depend on the machine's speed.
func TestRemoteSlowAnswerTimesOut(t *testing.T) {
	f := &fakeAgent{}
	var lateID any
	var late []byte
	f.misbehave = func(req int64, id any, actions []uint16, conn net.Conn) bool {
		switch req {
		case 2:
			lateID, late = id, make([]byte, 2*len(actions))
			for i, a := range actions {
				binary.LittleEndian.PutUint16(late[2*i:], a)
			}
			return false
		case 3:
			writeFrame(conn, map[string]any{"ok": true, "id": lateID, "actions": late})
		}
		return true
	}
	f.start(t)
	r := rules(t, env.Options{Suits: 1, MaxSteps: 100})
	ev := evalBoth(t, f, Options{Rules: r, Width: 3, Timeout: 100 * time.Millisecond}, seedRange(1, 6))
	var timedOut, played int
	for i := range ev.Seeds {
		res := ev.Results[1][i]
		switch {
		case strings.Contains(res.Failure, "timed out"):
			timedOut++
			if res.Moves != 1 {
				t.Errorf("timed-out game after %d moves, want 1", res.Moves)
			}
		case res.Failure == "":
			played++
			if res.Moves != ev.Results[0][i].Moves || res.Score != ev.Results[0][i].Score {
				t.Errorf("seed %d: a game after the timeout differs from first's", ev.Seeds[i])
			}
		default:
			t.Errorf("unexpected failure %q", res.Failure)
		}
	}
	if timedOut != 3 || played != 3 {
		t.Fatalf("%d timed out, %d played; want the 3 games of the slow request to fail and the next 3 to play", timedOut, played)
	}
}

// TestRemoteLateReplyOfAnotherShapeIsDropped: late replies are dropped by
// their id before anything else is read of them, so one for another number
// of games, or without actions, does not cost the games that follow.
func TestRemoteLateReplyOfAnotherShapeIsDropped(t *testing.T) {
	f := &fakeAgent{}
	var lateID any
	f.misbehave = func(req int64, id any, actions []uint16, conn net.Conn) bool {
		switch req {
		case 2:
			lateID = id
			return false
		case 3:
			writeFrame(conn, map[string]any{"ok": true, "id": lateID, "actions": []int{1, 2, 3, 4, 5}})
			writeFrame(conn, map[string]any{"ok": true, "id": lateID})
		}
		return true
	}
	f.start(t)
	r := rules(t, env.Options{Suits: 1, MaxSteps: 100})
	ev := evalBoth(t, f, Options{Rules: r, Width: 2, Timeout: 100 * time.Millisecond}, seedRange(1, 4))
	var timedOut, played int
	for i := range ev.Seeds {
		switch res := ev.Results[1][i]; {
		case strings.Contains(res.Failure, "timed out"):
			timedOut++
		case res.Failure == "":
			played++
		default:
			t.Errorf("unexpected failure %q", res.Failure)
		}
	}
	if timedOut != 2 || played != 2 {
		t.Fatalf("%d timed out, %d played; want the 2 games of the slow request to fail and the next 2 to play", timedOut, played)
	}
}

// TestRemoteVanishedAgentFailsTheRest: an agent that closes the
// connection fails every game left, at once, and the built-in policy's
// games are all played.
func TestRemoteVanishedAgentFailsTheRest(t *testing.T) {
	failsAtOnce(t, 5, func(conn net.Conn) { conn.Close() }, seedRange(1, 6), "agent disconnected")
}

// TestRemoteImpossibleIDFailsAtOnce: a reply whose id no request had (a
// negative one, or a uint64 past 2^63-1, which msgpack reads as negative)
// is a broken stream, not the late reply to an earlier request: the
// agent's games fail at once, naming the id, rather than after the
// timeout.
func TestRemoteImpossibleIDFailsAtOnce(t *testing.T) {
	for name, c := range map[string]struct {
		id   any
		want string
	}{
		"negative":     {int64(-1), "with id -1"},
		"none":         {nil, "nil where a value must be"},
		"past int64's": {uint64(1) << 63, "9223372036854775808 is outside int64's range"},
	} {
		t.Run(name, func(t *testing.T) {
			failsAtOnce(t, 2, func(conn net.Conn) {
				writeFrame(conn, map[string]any{"ok": true, "id": c.id, "actions": []int{0, 0}})
			}, seedRange(1, 2), c.want)
		})
	}
	// A reply with no id names none (it said "with id 0").
	failsAtOnce(t, 2, func(conn net.Conn) {
		writeFrame(conn, map[string]any{"ok": true, "actions": []int{0, 0}})
	}, seedRange(1, 2), "without an id")
}

// failsAtOnce plays a fake agent, which at its request req does only
// what misbehave does on the connection, beside the built-in policy on
// seeds, with a timeout of 10 s: every game of the agent must fail with
// a reason containing want, long before the timeout, and every built-in
// game be played.
func failsAtOnce(t *testing.T, req int64, misbehave func(conn net.Conn), seeds []uint64, want string) {
	t.Helper()
	f := &fakeAgent{}
	f.misbehave = func(n int64, _ any, _ []uint16, conn net.Conn) bool {
		if n == req {
			misbehave(conn)
			return false
		}
		return true
	}
	f.start(t)
	r := rules(t, env.Options{Suits: 1, MaxSteps: 100})
	start := time.Now()
	ev := evalBoth(t, f, Options{Rules: r, Width: 2, Timeout: 10 * time.Second}, seeds)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the eval took %v: it must not wait for the timeout", d)
	}
	for i := range ev.Seeds {
		if ev.Results[0][i].Failure != "" || ev.Results[0][i].Moves == 0 {
			t.Errorf("built-in game %+v", ev.Results[0][i])
		}
		if msg := ev.Results[1][i].Failure; !strings.Contains(msg, want) {
			t.Errorf("seed %d: failure %q, want it to contain %q", ev.Seeds[i], msg, want)
		}
	}
}

func TestParseAddressRefusesNonLoopback(t *testing.T) {
	for addr, want := range map[string]string{
		"unix:/tmp/a.sock": "unix /tmp/a.sock", "127.0.0.1:9": "tcp 127.0.0.1:9", "[::1]:9": "tcp [::1]:9", "localhost:9": "tcp localhost:9",
	} {
		n, a, err := ParseAddress(addr)
		if err != nil || n+" "+a != want {
			t.Errorf("ParseAddress(%q) = %s %s, %v; want %s", addr, n, a, err, want)
		}
	}
	for _, bad := range []string{"10.0.0.1:9", "0.0.0.0:9", "example.com:80", ":9", "unix:", "nohost"} {
		if _, _, err := ParseAddress(bad); err == nil {
			t.Errorf("ParseAddress(%q) accepted", bad)
		}
	}
}

func TestDecodeReplyRefusesBadReplies(t *testing.T) {
	enc := func(v any) []byte { b, _ := msgpack.Marshal(v); return b }
	for name, c := range map[string]struct {
		b    []byte
		want string
	}{
		"not a map":      {enc([]int{1}), "not a map"},
		"no ok":          {enc(map[string]any{"id": 1}), `no "ok"`},
		"too few":        {enc(map[string]any{"ok": true, "id": 1, "actions": []int{1}}), "1 actions for 2 games"},
		"odd bin":        {enc(map[string]any{"ok": true, "id": 1, "actions": []byte{1, 2, 3}}), "not uint16s"},
		"huge array":     {[]byte{0x81, 0xa7, 'a', 'c', 't', 'i', 'o', 'n', 's', 0xdd, 0xff, 0xff, 0xff, 0xff}, ""},
		"trailing bytes": {append(enc(map[string]any{"ok": true}), 0xc0), "follow"},
		// 50 million actions declared inside an extension, where Size
		// does not look: 100 MB allocated for 18 bytes, before.
		"map in an extension": {[]byte{0xc7, 15, 1, 0x81, 0xa7, 'a', 'c', 't', 'i', 'o', 'n', 's', 0xdd, 0x02, 0xfa, 0xf0, 0x80, 0xc0}, "not a map"},
	} {
		var rep reply
		var err error
		if got := alloccount.Bytes(func() { rep, err = decodeReply(c.b) }); got > 64<<10 {
			t.Errorf("%s: decoding allocated %d bytes", name, got)
		}
		if err == nil {
			err = rep.check(2)
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", name, err, c.want)
		}
	}
	rep, err := decodeReply(enc(map[string]any{"ok": true, "id": 7, "actions": []int{3, -1}}))
	if err == nil {
		err = rep.check(2)
	}
	if err != nil || rep.id != 7 || rep.actions[0] != 3 || rep.actions[1] != env.NumActions {
		t.Errorf("good reply: %+v, %v", rep, err)
	}
	// An agent's name and refusal reach tables and terminals: control
	// characters are quoted, and long texts cut.
	rep, err = decodeReply(enc(map[string]any{"ok": false, "id": 1, "name": "evil\x1b[2J\nrow", "error": strings.Repeat("é", 1<<20)}))
	if err != nil || rep.name != `"evil\x1b[2J\nrow"` || len(rep.errMsg) > maxErrorText || !strings.HasSuffix(rep.errMsg, "...") || !utf8.ValidString(rep.errMsg) {
		t.Errorf("name %q, error of %d bytes (%v)", rep.name, len(rep.errMsg), err)
	}
}

// TestRemoteCancelWhileAgentDoesNotRead: an agent that stops reading
// leaves a large request half written; a cancelled evaluation returns at
// once, not after the timeout, and so does Close's goodbye.
func TestRemoteCancelWhileAgentDoesNotRead(t *testing.T) {
	stuck := make(chan struct{})
	defer close(stuck)
	addr := rawAgent(t, func(conn net.Conn, hello map[string]any) {
		writeFrame(conn, map[string]any{"ok": true, "id": hello["id"], "version": 1, "name": "stuck"})
		<-stuck // never reads again
	})
	r := rules(t, env.Options{Suits: 1, Encoding: env.Float32})
	o := Options{Rules: r, Width: 64, Timeout: 20 * time.Second} // a request of 3.4 MB, more than the socket holds
	a, err := Dial(context.Background(), addr, o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	start := time.Now()
	_, err = agents.EvaluatePolicies(ctx, r, []agents.Policy{{Name: "remote", Batch: a}}, seedRange(1, 64), 1, nil)
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("the cancelled evaluation returned after %v (%v)", took, err)
	}
	start = time.Now()
	a.Close()
	if took := time.Since(start); took > 3*closeTimeout {
		t.Fatalf("Close took %v", took)
	}
}

// TestRemoteRefusesGamesOfOtherRules: a game under rules other than those
// the agent was dialled for is refused before anything is sent, since its
// observation would not have the length the agent was told.
func TestRemoteRefusesGamesOfOtherRules(t *testing.T) {
	f := &fakeAgent{}
	f.start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := rules(t, env.Options{Suits: 1, MaxSteps: 200})
	a, err := Dial(ctx, f.addr, Options{Rules: r})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	for _, o := range []env.Options{{Suits: 2, MaxSteps: 200}, {Suits: 1, MaxSteps: 200, Encoding: env.Float32}, {Suits: 1, MaxSteps: 200, FaceUpSlots: 2}} {
		s := env.NewGame(rules(t, o), 7)
		games := []agents.BatchGame{{Slot: 0, New: true, View: agents.NewView(&s, s.AppendLegal(nil), 0, false)}}
		err := a.ActBatch(ctx, games, make([]env.Action, 1))
		if err == nil || !strings.Contains(err.Error(), "dialled for") {
			t.Errorf("%+v: %v; want a refusal naming the rules dialled for", o, err)
		}
	}
	// A call the agent could not answer whole: too little room for the
	// actions, a slot outside the width (sent as 65535 before).
	s := env.NewGame(r, 7)
	view := agents.NewView(&s, s.AppendLegal(nil), 0, false)
	if err := a.ActBatch(ctx, []agents.BatchGame{{Slot: 0, View: view}, {Slot: 1, View: view}}, make([]env.Action, 1)); err == nil || !strings.Contains(err.Error(), "2 games and room for 1 actions") {
		t.Errorf("two games, one action: %v", err)
	}
	if err := a.ActBatch(ctx, []agents.BatchGame{{Slot: -1, View: view}}, make([]env.Action, 1)); err == nil || !strings.Contains(err.Error(), "slot -1, outside 0 to") {
		t.Errorf("slot -1: %v", err)
	}
	if got := f.requests.Load(); got != 0 {
		t.Errorf("%d act requests sent; want none", got)
	}
	// Zero Rules are no game to tell the agent of.
	if _, err := Dial(ctx, f.addr, Options{}); err == nil || !strings.Contains(err.Error(), "zero Rules") {
		t.Errorf("Dial with zero Rules: %v", err)
	}
	// Its own rules still play.
	s = env.NewGame(r, 7)
	if err := a.ActBatch(ctx, []agents.BatchGame{{Slot: 0, New: true, View: agents.NewView(&s, s.AppendLegal(nil), 0, false)}}, make([]env.Action, 1)); err != nil {
		t.Fatalf("a game of the dialled rules: %v", err)
	}
}

// rawAgent serves one connection on a fresh socket: it reads the hello
// and hands the connection to answer, which writes whatever bytes it
// likes; the connection is closed when answer returns.
func rawAgent(t *testing.T, answer func(conn net.Conn, hello map[string]any)) string {
	t.Helper()
	ln, addr := listenAgent(t)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		if m, err := readFrame(conn); err == nil {
			answer(conn, m)
		}
	}()
	return addr
}

// TestReplyFrameLengthBounds: a reply frame's length is checked before
// anything is read or allocated. An empty frame and one a byte over 1 MiB
// are refused by their length (the agent sends no payload after it), and
// a frame of exactly 1 MiB is read.
func TestReplyFrameLengthBounds(t *testing.T) {
	r := rules(t, env.Options{Suits: 1, MaxSteps: 100})
	for _, n := range []uint32{0, maxReply + 1} {
		addr := rawAgent(t, func(conn net.Conn, _ map[string]any) {
			conn.Write(binary.BigEndian.AppendUint32(nil, n))
		})
		_, err := Dial(context.Background(), addr, Options{Rules: r, Timeout: 20 * time.Second})
		// The agent sent it: a bad reply, not a disconnection.
		if want := fmt.Sprintf("agent sent a bad reply: a reply frame of %d bytes: want 1 to %d", n, maxReply); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("a reply frame of %d bytes: %v; want an error saying %q", n, err, want)
		}
	}
	addr := rawAgent(t, func(conn net.Conn, hello map[string]any) {
		b, _ := msgpack.Marshal(map[string]any{"ok": true, "id": hello["id"], "version": 1, "name": "big"})
		b[0]++ // one more field: a bin that pads the frame to maxReply bytes
		b = append(b, 0xa3, 'p', 'a', 'd', 0xc6)
		b = binary.BigEndian.AppendUint32(b, uint32(maxReply-len(b)-4))
		b = append(b, make([]byte, maxReply-len(b))...)
		conn.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...))
		readFrame(conn) // the goodbye
	})
	a, err := Dial(context.Background(), addr, Options{Rules: r, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatalf("a reply frame of exactly %d bytes: %v", maxReply, err)
	}
	if a.Name() != "big" {
		t.Errorf("name %q", a.Name())
	}
	a.Close()
}

// TestHelloRefusesOtherVersions: an agent must speak version 1; one that
// answers with another version, older or newer, is refused.
func TestHelloRefusesOtherVersions(t *testing.T) {
	r := rules(t, env.Options{Suits: 1, MaxSteps: 100})
	for _, v := range []int{0, 2} {
		addr := rawAgent(t, func(conn net.Conn, hello map[string]any) {
			writeFrame(conn, map[string]any{"ok": true, "id": hello["id"], "version": v, "name": "other"})
		})
		_, err := Dial(context.Background(), addr, Options{Rules: r, Timeout: 20 * time.Second})
		if want := fmt.Sprintf("agent speaks protocol version %d, want 1", v); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("version %d: %v; want an error saying %q", v, err, want)
		}
	}
	// A hello without a version says so (it said "version 0").
	addr := rawAgent(t, func(conn net.Conn, hello map[string]any) {
		writeFrame(conn, map[string]any{"ok": true, "id": hello["id"], "name": "other"})
	})
	if _, err := Dial(context.Background(), addr, Options{Rules: r, Timeout: 20 * time.Second}); err == nil || !strings.Contains(err.Error(), "agent's hello names no protocol version, want 1") {
		t.Errorf("no version: %v", err)
	}
}

// TestWidthBounds: a connection takes 1 to MaxWidth games per request,
// MaxWidth included, and ActBatch refuses more games than the width
// before sending anything.
func TestWidthBounds(t *testing.T) {
	f := &fakeAgent{}
	f.start(t)
	r := rules(t, env.Options{Suits: 1, MaxSteps: 100})
	ctx := context.Background()
	for _, w := range []int{-1, MaxWidth + 1} {
		if a, err := Dial(ctx, f.addr, Options{Rules: r, Width: w}); err == nil || !strings.Contains(err.Error(), "games per request") {
			if a != nil {
				a.Close()
			}
			t.Errorf("width %d: %v; want a refusal", w, err)
		}
	}
	a, err := Dial(ctx, f.addr, Options{Rules: r, Width: MaxWidth})
	if err != nil {
		t.Fatalf("width %d: %v", MaxWidth, err)
	}
	if got := toInt(f.hello["max_games"]); got != MaxWidth || a.Width() != MaxWidth {
		t.Errorf("max_games %d, Width %d; want %d", got, a.Width(), MaxWidth)
	}
	a.Close()
	a, err = Dial(ctx, f.addr, Options{Rules: r, Width: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	var games []agents.BatchGame
	for i := range 3 {
		s := env.NewGame(r, uint64(i))
		games = append(games, agents.BatchGame{Slot: i, New: true, View: agents.NewView(&s, s.AppendLegal(nil), 0, false)})
	}
	if err := a.ActBatch(ctx, games, make([]env.Action, 3)); err == nil || !strings.Contains(err.Error(), "3 games, over the width of 2") {
		t.Errorf("3 games on a width of 2: %v", err)
	}
	if got := f.requests.Load(); got != 0 {
		t.Errorf("%d act requests sent; want none", got)
	}
	if err := a.ActBatch(ctx, games[:2], make([]env.Action, 2)); err != nil {
		t.Errorf("2 games on a width of 2: %v", err)
	}
}

// TestDecodeReplyReadsEveryHeader: a reply map may take any map header,
// map32 included, and a bin of actions any bin header, bin32 included.
func TestDecodeReplyReadsEveryHeader(t *testing.T) {
	b := []byte{0xdf, 0, 0, 0, 3, 0xa2, 'o', 'k', 0xc3, 0xa2, 'i', 'd', 0x05}
	b = append(b, 0xa7, 'a', 'c', 't', 'i', 'o', 'n', 's', 0xc6, 0, 0, 0, 4, 3, 0, 0x38, 0x04) // 3, 1080
	rep, err := decodeReply(b)
	if err == nil {
		err = rep.check(2)
	}
	if err != nil || rep.id != 5 || len(rep.actions) != 2 || rep.actions[0] != 3 || rep.actions[1] != 1080 {
		t.Fatalf("a map32 reply with a bin32 of actions: %+v, %v", rep, err)
	}
}

// TestDecodeReplyActions: an act reply without actions is refused as
// such; nil actions are no actions (not a crash); an integer past the
// last action id, however large, becomes env.NumActions, which no game
// allows, and never a legal id.
func TestDecodeReplyActions(t *testing.T) {
	enc := func(v any) []byte { b, _ := msgpack.Marshal(v); return b }
	for _, n := range []int{0, 2} {
		rep, err := decodeReply(enc(map[string]any{"ok": true, "id": 1}))
		if err == nil {
			err = rep.check(n)
		}
		if err == nil || err.Error() != `no "actions" field` {
			t.Errorf("an answer for %d games without actions: %v", n, err)
		}
	}
	if rep, err := decodeReply(enc(map[string]any{"ok": true, "id": 1})); err != nil || rep.check(-1) != nil {
		t.Errorf("a hello reply needs no actions: %v, %v", err, rep.check(-1))
	}
	rep, err := decodeReply(enc(map[string]any{"ok": true, "id": 1, "actions": nil}))
	if err != nil || len(rep.actions) != 0 || !rep.hasActions {
		t.Fatalf("nil actions: %+v, %v", rep, err)
	}
	if err := rep.check(1); err == nil || err.Error() != "0 actions for 1 games" {
		t.Errorf("nil actions for 1 game: %v", err)
	}
	rep, err = decodeReply(enc(map[string]any{"ok": true, "id": 1, "actions": []any{1080, 1081, 5000, int64(1) << 40}}))
	want := []env.Action{1080, env.NumActions, env.NumActions, env.NumActions}
	if err != nil || !reflect.DeepEqual(rep.actions, want) {
		t.Errorf("actions past the last id: %v, %v; want %v", rep.actions, err, want)
	}
	// An item that is not an integer is not an id: that game fails, and
	// the others are read. A nil was read as action 0 and played; a
	// float or string failed the whole reply.
	rep, err = decodeReply(enc(map[string]any{"ok": true, "id": 1, "actions": []any{nil, 0, 2.0, "3", uint64(1) << 63, []int{1}, 7}}))
	want = []env.Action{env.NumActions, 0, env.NumActions, env.NumActions, env.NumActions, env.NumActions, 7}
	if err != nil || !reflect.DeepEqual(rep.actions, want) {
		t.Errorf("actions that are not integers: %v, %v; want %v", rep.actions, err, want)
	}
	// A nil id, ok or version is refused, not read as 0 or false.
	for _, key := range []string{"id", "ok", "version"} {
		m := map[string]any{"ok": true, "id": 1, "version": 1}
		m[key] = nil
		if _, err := decodeReply(enc(m)); err == nil || !strings.Contains(err.Error(), "nil where a value must be") {
			t.Errorf("a nil %s: %v", key, err)
		}
	}
}

// TestAgentNameIsCut: an agent's name is cut to 64 bytes, as PROTOCOL.md
// says; only its first 128 bytes are looked at, so a control character
// past them neither quotes nor lengthens it.
func TestAgentNameIsCut(t *testing.T) {
	for _, name := range []string{strings.Repeat("a", 100), strings.Repeat("a", 200) + "\x1b[2J"} {
		b, _ := msgpack.Marshal(map[string]any{"ok": true, "id": 1, "name": name})
		rep, err := decodeReply(b)
		if want := strings.Repeat("a", 61) + "..."; err != nil || rep.name != want {
			t.Errorf("a name of %d bytes: %q, %v; want %q", len(name), rep.name, err, want)
		}
	}
}

// TestRemoteCloseDuringActBatch: Close from another goroutine (a Ctrl-C
// handler) while ActBatch waits for an answer that will not come ends that
// call at once with ErrClosed, not after the timeout, writes nothing beside
// it (the race detector watched this in make test), and every later call
// says ErrClosed too.
func TestRemoteCloseDuringActBatch(t *testing.T) {
	f := &fakeAgent{}
	waiting := make(chan struct{})
	f.misbehave = func(req int64, id any, actions []uint16, conn net.Conn) bool {
		if req == 3 {
			close(waiting)
			return false // no answer: the call waits
		}
		return req < 3
	}
	f.start(t)
	r := rules(t, env.Options{Suits: 1, MaxSteps: 100})
	a, err := Dial(context.Background(), f.addr, Options{Rules: r, Width: 4, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	type out struct {
		ev  *agents.Evaluation
		err error
	}
	done := make(chan out, 1)
	go func() {
		ev, err := agents.EvaluatePolicies(context.Background(), r, []agents.Policy{{Name: "remote", Batch: a}}, seedRange(1, 8), 1, nil)
		done <- out{ev, err}
	}()
	<-waiting
	a.Close()
	var o out
	select {
	case o = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the evaluation went on waiting for the answer after Close")
	}
	if o.err != nil {
		t.Fatal(o.err)
	}
	var closed int
	for _, res := range o.ev.Results[0] {
		if strings.Contains(res.Failure, ErrClosed.Error()) {
			closed++
		}
	}
	if closed == 0 {
		t.Errorf("no game failed with %q: %+v", ErrClosed, o.ev.Results[0])
	}
	g := env.NewGame(r, 1)
	if err := a.ActBatch(context.Background(), []agents.BatchGame{{View: agents.NewView(&g, g.AppendLegal(nil), 0, false)}}, make([]env.Action, 1)); !errors.Is(err, ErrClosed) {
		t.Errorf("ActBatch after Close: %v, want ErrClosed", err)
	}
}

// Package remote plays policies that live in another process: an agent
// listening on a Unix socket or a loopback TCP port, speaking the policy
// agent protocol of PROTOCOL.md (msgpack maps in length-prefixed frames,
// as the server's). spider eval connects to the agent, says hello with the
// game's options, then sends the agent batches of games (observations,
// masks and, if the agent asks, the visible board) and reads back one
// action id per game.
//
// The agent sees what a player sees and nothing else: the observation
// (which shows no hidden card), the mask, the visible board, and an
// opaque slot number per game. Never the seed, from which the hidden
// cards could be dealt again.
package remote

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"

	"github.com/spiderenv/spider/agents"
	"github.com/spiderenv/spider/env"
	"github.com/spiderenv/spider/internal/msgpackcheck"
	"github.com/spiderenv/spider/internal/peercred"
	"github.com/spiderenv/spider/internal/printable"
)

// Version is the policy agent protocol's version.
const Version = 1

// MaxWidth is the most games one request may hold.
const MaxWidth = 4096

// maxReply bounds an agent's reply frame: an action per game takes at
// most 9 bytes as a msgpack integer, and an error message is short.
const maxReply = 1 << 20

// Options configure a connection to an agent.
type Options struct {
	// Rules are the games' rules, observation encoding included: every
	// game given to ActBatch must be played under them.
	Rules env.Rules
	// Timeout bounds the wait for each reply (hello's included); 0 means
	// DefaultTimeout.
	Timeout time.Duration
	// Width is the most games per request (0: DefaultWidth).
	Width int
	// Policy is the name the eval gives the agent ("remote:ADDR"), sent
	// in hello for the agent's logs.
	Policy string
}

// DefaultTimeout and DefaultWidth are the defaults of Options.
const (
	DefaultTimeout = 5 * time.Second
	DefaultWidth   = 64
)

// Agent is a connection to a remote agent. It is an agents.BatchAgent;
// its ActBatch may be called by one goroutine at a time (list it once
// in an evaluation, which plays a batch agent in one goroutine). Close
// may be called from any goroutine, during an ActBatch too (a Ctrl-C
// handler): that call then returns ErrClosed at once, and so does every
// later one. Make an Agent with Dial: the zero Agent has no connection,
// and its ActBatch and Close panic.
type Agent struct {
	o      Options
	conn   net.Conn
	w      *bufio.Writer
	name   string
	board  bool
	id     int64
	frames chan frame
	closed chan struct{}
	once   sync.Once
	// mu is held by ActBatch for its whole call, and by Close's goodbye,
	// which must not write id, buf or the connection beside a request.
	mu      sync.Mutex
	lost    error // set once the connection cannot be used any more; under mu
	buf     bytes.Buffer
	obsU8   []uint8
	obsF32  []float32
	mask    []uint8
	slots   []byte
	newGame []byte
	faceUp  []env.Card
}

// frame is one reply read by the reader goroutine, or why reading stopped.
type frame struct {
	payload []byte
	err     error
}

// ParseAddress checks an agent's address: "unix:/path" (or a path with a
// slash), or host:port with a loopback host (localhost, or an IP in 127.0.0.0/8 or ::1).
// The agent has no authentication and sees nothing secret, but eval
// connects only to agents on this machine: results must not depend on a
// network. It returns the network and address for net.Dial.
func ParseAddress(addr string) (network, address string, err error) {
	if p, ok := strings.CutPrefix(addr, "unix:"); ok {
		if p == "" {
			return "", "", fmt.Errorf("remote address %q: want unix:/path", addr)
		}
		return "unix", p, nil
	}
	if strings.Contains(addr, "/") {
		return "unix", addr, nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil || port == "" {
		return "", "", fmt.Errorf("remote address %q: want unix:/path or a loopback host:port", addr)
	}
	if host != "localhost" {
		ip := net.ParseIP(host)
		if ip == nil || !ip.IsLoopback() {
			return "", "", fmt.Errorf("remote address %q: the host must be loopback (localhost, 127.0.0.0/8, ::1), not %q", addr, host)
		}
	}
	return "tcp", net.JoinHostPort(host, port), nil
}

// Dial connects to the agent at addr and says hello: the connection, the
// hello's write and its reply each within o.Timeout.
func Dial(ctx context.Context, addr string, o Options) (*Agent, error) {
	network, address, err := ParseAddress(addr)
	if err != nil {
		return nil, err
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Width == 0 {
		o.Width = DefaultWidth
	}
	if o.Width < 1 || o.Width > MaxWidth {
		return nil, fmt.Errorf("remote: %d games per request: want 1 to %d", o.Width, MaxWidth)
	}
	if o.Rules == (env.Rules{}) {
		// The hello would tell the agent of a game of no suits.
		return nil, fmt.Errorf("remote: Dial with zero Rules: give the games' rules (env.NewRules)")
	}
	d := net.Dialer{Timeout: o.Timeout}
	conn, err := d.DialContext(ctx, network, address)
	if err != nil {
		// Wrapped: a socket file that is not there is a missing file
		// (errors.Is fs.ErrNotExist), which eval calls a usage error.
		return nil, fmt.Errorf("remote agent %s: %w", addr, err)
	}
	uid, ok := peercred.UnixUID(conn)
	if !ok {
		// Over loopback TCP, the owner of the agent's end (or, before it
		// accepts, of the listening socket): any local user can listen at
		// a free port, the one an agent was to take among them, before it
		// starts or after it stops.
		uid, ok = peercred.TCPServerUID(conn)
	}
	if ok && uid != os.Getuid() && uid != 0 {
		// Before the hello, which tells the agent the game: a socket of
		// another user's, made reachable or taken at a shared path such
		// as /tmp/agent.sock, would have its agent played as this one.
		conn.Close()
		return nil, fmt.Errorf("remote agent %s: it runs as user %d, not this user (%d): refused, since another user's agent would be played as yours", addr, uid, os.Getuid())
	}
	a := &Agent{o: o, conn: conn, w: bufio.NewWriterSize(conn, 64<<10), frames: make(chan frame, 1), closed: make(chan struct{}),
		mask: make([]uint8, env.NumActions)}
	go a.read()
	if err := a.hello(ctx); err != nil {
		a.Close()
		return nil, fmt.Errorf("remote agent %s: %v", addr, err)
	}
	return a, nil
}

// Name returns the name the agent gave in hello.
func (a *Agent) Name() string { return a.name }

// Width returns the most games per request.
func (a *Agent) Width() int { return a.o.Width }

// ErrClosed is what ActBatch returns once Close was called.
var ErrClosed = errors.New("remote: the agent was closed")

// isClosed reports whether Close was called.
func (a *Agent) isClosed() bool {
	select {
	case <-a.closed:
		return true
	default:
		return false
	}
}

// Close says goodbye and closes the connection. With an ActBatch in
// flight on another goroutine it closes the connection without a
// goodbye, which ends that call with ErrClosed.
func (a *Agent) Close() error {
	var err error
	a.once.Do(func() {
		close(a.closed)
		if a.mu.TryLock() {
			if a.lost == nil {
				a.id++
				// Best effort, and brief: the agent may be gone, or not reading.
				ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
				a.send(ctx, map[string]any{"op": "close", "id": a.id}, 0)
				cancel()
			}
			a.mu.Unlock()
		}
		err = a.conn.Close()
	})
	return err
}

// read reads reply frames until the connection fails, handing each to
// ActBatch; a reply nobody waits for any more (its request timed out) is
// dropped there by its id.
func (a *Agent) read() {
	r := bufio.NewReaderSize(a.conn, 64<<10)
	var hdr [4]byte
	for {
		var f frame
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			f.err = err
		} else if n := binary.BigEndian.Uint32(hdr[:]); n == 0 || n > maxReply {
			f.err = badFrame{fmt.Errorf("a reply frame of %d bytes: want 1 to %d", n, maxReply)}
		} else {
			f.payload = make([]byte, n)
			if _, err := io.ReadFull(r, f.payload); err != nil {
				f.err = err
			}
		}
		select {
		case a.frames <- f:
		case <-a.closed:
			return
		}
		if f.err != nil {
			return
		}
	}
}

// closeTimeout bounds the goodbye Close writes.
const closeTimeout = time.Second

// send writes one frame holding v, within the timeout, and gives up at
// once when ctx ends: an agent that does not read must not hold a Ctrl-C
// for the whole timeout.
func (a *Agent) send(ctx context.Context, v any, size int) error {
	a.buf.Reset()
	// A request's frame is made once at its size: grown by doubling, a
	// batch of 4096 float32 observations took twice its 220 MB and more.
	a.buf.Grow(4 + size)
	a.buf.Write([]byte{0, 0, 0, 0})
	enc := msgpack.NewEncoder(&a.buf)
	enc.SetCustomStructTag("msgpack")
	if err := enc.Encode(v); err != nil {
		return err
	}
	b := a.buf.Bytes()
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	a.conn.SetWriteDeadline(time.Now().Add(a.o.Timeout))
	defer context.AfterFunc(ctx, func() { a.conn.SetWriteDeadline(time.Now()) })()
	if _, err := a.w.Write(b); err != nil {
		return err
	}
	return a.w.Flush()
}

// reply is an agent's answer.
type reply struct {
	ok      bool
	id      int64
	hasID   bool
	errMsg  string
	version int64
	// hasVersion says the reply had a version field (a hello's must).
	hasVersion bool
	name       string
	board      bool
	actions    []env.Action
	// hasActions says the reply had an actions field.
	hasActions bool
}

// wait returns the reply to request id, skipping late replies to earlier
// requests, or why none came within the timeout.
func (a *Agent) wait(ctx context.Context, id int64, n int) (reply, error) {
	timer := time.NewTimer(a.o.Timeout)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return reply{}, ctx.Err()
		case <-timer.C:
			return reply{}, fmt.Errorf("timed out: no answer within %v", a.o.Timeout)
		case <-a.closed:
			// Close closed the connection: the reader stops without
			// handing on its error, so waiting on would last the timeout.
			return reply{}, ErrClosed
		case f := <-a.frames:
			if f.err != nil {
				if a.isClosed() {
					return reply{}, ErrClosed // the error is Close's own
				}
				var bad badFrame
				switch {
				case errors.As(f.err, &bad):
					// The agent is still there; eval will not read on.
					a.lost = fmt.Errorf("agent sent a bad reply: %v", bad.error)
					a.conn.Close()
				case errors.Is(f.err, io.EOF):
					a.lost = errors.New("agent disconnected (the connection was closed)")
				default:
					a.lost = fmt.Errorf("agent disconnected: %v", f.err)
				}
				return reply{}, a.lost
			}
			rep, err := decodeReply(f.payload)
			if err == nil && rep.hasID && rep.id >= 0 && rep.id < id {
				// The answer to a request that timed out, whatever it
				// holds: it is not checked against this request.
				continue
			}
			if err == nil {
				err = rep.check(n)
			}
			if err != nil {
				// A reply that cannot be read leaves no trust in the stream.
				a.lost = fmt.Errorf("agent sent a bad reply: %v", err)
				a.conn.Close()
				return reply{}, a.lost
			}
			if !rep.hasID || rep.id != id {
				a.lost = fmt.Errorf("agent answered request %d with id %d", id, rep.id)
				if !rep.hasID {
					a.lost = fmt.Errorf("agent answered request %d without an id", id)
				}
				a.conn.Close()
				return reply{}, a.lost
			}
			if !rep.ok {
				return rep, fmt.Errorf("agent refused: %s", rep.errMsg)
			}
			return rep, nil
		}
	}
}

// hello is the first exchange: the game's options and spaces, then the
// agent's name and whether it wants the board.
func (a *Agent) hello(ctx context.Context) error {
	r := a.o.Rules
	dtype := "uint8"
	if r.Encoding() == env.Float32 {
		dtype = "float32"
	}
	a.id++
	msg := map[string]any{
		"op": "hello", "version": Version, "id": a.id, "policy": a.o.Policy,
		"game": r.Options(), "num_actions": env.NumActions, "obs_shape": []int{r.ObsLen()}, "obs_dtype": dtype,
		"mask_row_bytes": env.NumActions, "max_games": a.o.Width,
	}
	if err := a.send(ctx, msg, 0); err != nil {
		return err
	}
	rep, err := a.wait(ctx, a.id, -1)
	if err != nil {
		return err
	}
	switch {
	case !rep.hasVersion:
		return fmt.Errorf("agent's hello names no protocol version, want %d", Version)
	case rep.version != Version:
		return fmt.Errorf("agent speaks protocol version %d, want %d", rep.version, Version)
	}
	a.name, a.board = rep.name, rep.board
	return nil
}

// ActBatch sends the games' observations and masks (and boards, if the
// agent asked) in one request and reads back their actions. Every game
// must be played under Options.Rules, whose observation the agent was
// told of at Dial: it returns an error, and sends nothing, if one is not.
func (a *Agent) ActBatch(ctx context.Context, games []agents.BatchGame, actions []env.Action) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.isClosed() {
		return ErrClosed
	}
	if a.lost != nil {
		return a.lost
	}
	if len(games) > a.o.Width {
		return fmt.Errorf("remote: %d games, over the width of %d", len(games), a.o.Width)
	}
	n := len(games)
	if len(actions) < n {
		return fmt.Errorf("remote: %d games and room for %d actions", n, len(actions))
	}
	r := a.o.Rules
	for i, g := range games {
		if g.Slot < 0 || g.Slot >= a.o.Width {
			return fmt.Errorf("remote: game %d in slot %d, outside 0 to %d", i, g.Slot, a.o.Width-1)
		}
		if g.View.Rules() != r {
			return fmt.Errorf("remote: game %d is played under %v, and the agent was dialled for %v", i, g.View.Rules(), r)
		}
	}
	obsLen := r.ObsLen()
	var obs []byte
	if r.Encoding() == env.Float32 {
		a.obsF32 = grow(a.obsF32, n*obsLen)
		for i, g := range games {
			g.View.ObserveFloat32(a.obsF32[i*obsLen : (i+1)*obsLen])
		}
		// The wire format is little-endian, as every machine Go runs this on.
		obs = unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(a.obsF32))), 4*len(a.obsF32))
	} else {
		a.obsU8 = grow(a.obsU8, n*obsLen)
		for i, g := range games {
			g.View.ObserveCompact(a.obsU8[i*obsLen : (i+1)*obsLen])
		}
		obs = a.obsU8
	}
	a.mask = grow(a.mask, n*env.NumActions)
	a.slots = grow(a.slots, 2*n)
	a.newGame = grow(a.newGame, n)
	var boards []board
	for i, g := range games {
		g.View.Mask(a.mask[i*env.NumActions : (i+1)*env.NumActions])
		binary.LittleEndian.PutUint16(a.slots[2*i:], uint16(g.Slot))
		a.newGame[i] = 0
		if g.New {
			a.newGame[i] = 1
		}
		if a.board {
			boards = append(boards, a.boardOf(g.View))
		}
	}
	a.id++
	msg := map[string]any{"op": "act", "id": a.id, "n": n, "slots": a.slots, "new": a.newGame, "obs": obs, "masks": a.mask}
	if a.board {
		msg["boards"] = boards
	}
	if err := a.send(ctx, msg, requestBytes(len(obs), n, len(boards))); err != nil {
		if a.isClosed() {
			return ErrClosed // Close closed the connection under this write
		}
		a.lost = fmt.Errorf("agent disconnected: %v", err)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return a.lost
	}
	rep, err := a.wait(ctx, a.id, n)
	if err != nil {
		return err
	}
	copy(actions, rep.actions)
	return nil
}

// boardBytes bounds one game's board in a request: ten columns of at most
// 104 face-up cards and their counts, with msgpack's headers.
const boardBytes = 2048

// requestBytes is an act request's encoded size, or a little more: the
// observations (obs bytes), masks, slots and new-game flags of n games,
// boards boards, and the keys and headers around them.
func requestBytes(obs, n, boards int) int {
	return obs + n*(env.NumActions+3) + boards*boardBytes + 256
}

// RequestBytes is the most memory one connection of width games holds for
// its requests under r (ActBatch's buffers and the frame it encodes, a
// board with every game in case the agent asks for them, and the reply
// read), for a caller that counts memory before it dials.
func RequestBytes(r env.Rules, width int) int64 {
	obs := int64(r.ObsLen())
	if r.Encoding() == env.Float32 {
		obs *= 4
	}
	w := int64(width)
	held := w * (obs + env.NumActions + 3 + boardBytes)
	return held + int64(requestBytes(int(w*obs), width, width)) + maxReply + 64<<10
}

// board is the visible board of one game.
type board struct {
	FaceDown  []int    `msgpack:"face_down"`
	FaceUp    [][]byte `msgpack:"face_up"`
	StockLeft int      `msgpack:"stock_left"`
	Runs      int      `msgpack:"runs"`
	Score     int      `msgpack:"score"`
	Steps     int      `msgpack:"steps"`
}

func (a *Agent) boardOf(v agents.View) board {
	b := board{FaceDown: make([]int, env.NumColumns), FaceUp: make([][]byte, env.NumColumns),
		StockLeft: v.StockLeft(), Runs: v.Runs(), Score: v.Score(), Steps: v.Steps()}
	for c := range env.NumColumns {
		b.FaceDown[c] = v.FaceDown(c)
		a.faceUp = v.AppendFaceUp(a.faceUp[:0], c)
		up := make([]byte, len(a.faceUp))
		for i, card := range a.faceUp {
			up[i] = byte(card)
		}
		b.FaceUp[c] = up
	}
	return b
}

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// decodeReply reads an agent's reply map; with n >= 0 it must hold n
// actions (when ok). Every length is checked before anything is decoded.
func decodeReply(b []byte) (reply, error) {
	var rep reply
	if size, err := msgpackcheck.Size(b); err != nil {
		return rep, err
	} else if size != len(b) {
		return rep, fmt.Errorf("%d bytes follow the reply map", len(b)-size)
	}
	// A map, not one wrapped in an extension, which DecodeMapLen would
	// unwrap: Size checked the extension as opaque bytes, so the lengths
	// declared inside it (an array of 2^32 actions) are unchecked.
	if c := b[0]; !msgpcode.IsFixedMap(c) && c != msgpcode.Map16 && c != msgpcode.Map32 {
		return rep, fmt.Errorf("the reply is not a map (code 0x%02x)", c)
	}
	d := msgpack.NewDecoder(bytes.NewReader(b))
	fields, err := d.DecodeMapLen()
	if err != nil {
		return rep, fmt.Errorf("the reply is not a map: %v", err)
	}
	hasOK := false
	for range fields {
		key, err := d.DecodeString()
		if err != nil {
			return rep, fmt.Errorf("a key that is not a string: %v", err)
		}
		switch key {
		case "ok":
			if err = notNil(d); err == nil {
				rep.ok, err = d.DecodeBool()
			}
			hasOK = true
		case "id":
			rep.id, err = decodeInt64(d)
			rep.hasID = true
		case "error":
			rep.errMsg, err = d.DecodeString()
			rep.errMsg = cleanText(rep.errMsg, maxErrorText)
		case "version":
			rep.version, err = decodeInt64(d)
			rep.hasVersion = true
		case "name":
			rep.name, err = d.DecodeString()
			rep.name = cleanText(rep.name, maxNameText)
		case "board":
			rep.board, err = d.DecodeBool()
		case "actions":
			rep.actions, err = decodeActions(d)
			rep.hasActions = true
		default:
			err = d.Skip()
		}
		if err != nil {
			return rep, fmt.Errorf("field %q: %v", key, err)
		}
	}
	if !hasOK {
		return rep, errors.New(`no "ok" field`)
	}
	return rep, nil
}

// notNil refuses a nil where a value must be: msgpack's decoders read nil
// as 0, false or "" without an error, so an agent's nil id, ok or action
// would pass for one.
func notNil(d *msgpack.Decoder) error {
	if c, err := d.PeekCode(); err == nil && c == msgpcode.Nil {
		return errors.New("nil where a value must be")
	}
	return nil
}

// decodeInt64 reads an integer an int64 holds. msgpack's DecodeInt64
// reads a uint64 past 2^63-1 as negative, and wait would have skipped such
// an id as the late reply to an earlier request, waiting out the timeout;
// and it reads nil as 0.
func decodeInt64(d *msgpack.Decoder) (int64, error) {
	if err := notNil(d); err != nil {
		return 0, err
	}
	if c, err := d.PeekCode(); err == nil && c == msgpcode.Uint64 {
		u, err := d.DecodeUint64()
		if err == nil && u > math.MaxInt64 {
			err = fmt.Errorf("%d is outside int64's range", u)
		}
		return int64(u), err
	}
	return d.DecodeInt64()
}

// isInt reports whether the msgpack code c starts an integer.
func isInt(c byte) bool {
	return msgpcode.IsFixedNum(c) || c >= msgpcode.Uint8 && c <= msgpcode.Uint64 || c >= msgpcode.Int8 && c <= msgpcode.Int64
}

// badFrame is a reply frame eval refuses to read (of no bytes, or over
// maxReply): the agent sent it, the connection did not fail.
type badFrame struct{ error }

// check reports what is wrong with a reply to a request for n games' actions
// (n < 0: a hello, which has none).
func (rep reply) check(n int) error {
	switch {
	case rep.ok && n >= 0 && !rep.hasActions:
		return errors.New(`no "actions" field`)
	case rep.ok && n >= 0 && len(rep.actions) != n:
		return fmt.Errorf("%d actions for %d games", len(rep.actions), n)
	}
	return nil
}

// The longest agent name and refusal text kept, in bytes: they reach
// every table and report row, and one per failed game.
const (
	maxNameText  = 64
	maxErrorText = 256
)

// cleanText returns an agent's text fit to print (printable.Quote), cut
// to at most max bytes (printable.Cut). Only the first 2*max bytes are
// quoted: enough to fill max, quoted or not.
func cleanText(s string, max int) string {
	if len(s) > 2*max {
		s = printable.Cut(s, 2*max)
	}
	return printable.Cut(printable.Quote(s), max)
}

// decodeActions reads actions as a bin of little-endian uint16s or an
// array of integers. An id out of range becomes env.NumActions, which the
// game refuses as illegal (per game, not for the whole reply).
func decodeActions(d *msgpack.Decoder) ([]env.Action, error) {
	code, err := d.PeekCode()
	if err != nil {
		return nil, err
	}
	if code == 0xc4 || code == 0xc5 || code == 0xc6 {
		b, err := d.DecodeBytes()
		if err != nil {
			return nil, err
		}
		if len(b)%2 != 0 {
			return nil, fmt.Errorf("a bin of %d bytes is not uint16s", len(b))
		}
		out := make([]env.Action, len(b)/2)
		for i := range out {
			out[i] = env.Action(min(binary.LittleEndian.Uint16(b[2*i:]), env.NumActions))
		}
		return out, nil
	}
	m, err := d.DecodeArrayLen()
	if err != nil {
		return nil, fmt.Errorf("want a bin or an array: %v", err)
	}
	out := make([]env.Action, max(m, 0))
	for i := range out {
		// An item that is not an integer (nil, which DecodeInt64 reads
		// as 0, a float, a string) is not an id: that game fails, as for
		// an id out of range, and the other games of the reply go on.
		if c, err := d.PeekCode(); err != nil {
			return nil, fmt.Errorf("action %d: %v", i, err)
		} else if !isInt(c) {
			if err := d.Skip(); err != nil {
				return nil, fmt.Errorf("action %d: %v", i, err)
			}
			out[i] = env.NumActions
			continue
		}
		v, err := decodeInt64(d)
		if err != nil || v < 0 {
			// Past int64 (a uint64 over 2^63-1) or negative: out of range.
			out[i] = env.NumActions
			continue
		}
		out[i] = env.Action(min(v, env.NumActions))
	}
	return out, nil
}

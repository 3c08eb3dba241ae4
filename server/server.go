package server

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log"
	"math"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spiderenv/spider/agents"
	"github.com/spiderenv/spider/env"
)

// Version is the protocol version this server speaks.
const Version = 1

// Config holds the server-wide limits. A zero field selects its value in
// DefaultConfig.
type Config struct {
	MaxConns int // connections served at once
	// MaxPeerConns is the most connections one peer may hold at once: one
	// local user (by uid, on a Unix socket, or over loopback TCP on Linux)
	// or one remote address. It keeps one user from taking every place.
	MaxPeerConns int
	MaxGames     int // games in one connection's batch, at most env.MaxBatch
	MaxTotal     int // games across all connections
	MaxFrame     int // bytes in one request frame
	MaxBytes     int // bytes of observation, mask (and legal list) buffers in one batch
	// MaxMemory is the most memory all connections together may hold:
	// every buffer is counted (each connection's reader, writer, frame and
	// reply buffers, its batch with its games' states and workers, its
	// picture and hint agent). A request that would need more is refused
	// with a limit error. A program that runs the server sets Go's memory
	// limit to MemoryLimit (debug.SetMemoryLimit; spider serve does), so
	// that the collector keeps dead buffers from piling up on top: the
	// process then stays within MaxMemory + Overhead (PROTOCOL.md).
	MaxMemory   int
	IdleTimeout time.Duration // a connection silent this long is closed
	// SetupTimeout is how long a connection may go without making a batch:
	// one that only says hello is closed after it, so idle connections
	// cannot hold every place.
	SetupTimeout time.Duration
	// Workers is the default number of worker goroutines of a batch; 0
	// means GOMAXPROCS when the server is made.
	Workers int
	Log     *log.Logger // where connection errors are logged (default: discarded)
	// Hint makes the agent that answers hint requests, one per connection
	// (default: greedy), called from connections' goroutines at once. A
	// trained network (agents "nn:PATH") answers only for games of the
	// configuration it was trained for.
	Hint agents.Maker
	// HintBytes is the memory one hint agent may hold, reserved from
	// MaxMemory when a connection asks its first hint.
	HintBytes int
	// HintShared is the memory the hint agents share for the server's
	// whole life, such as a trained network's weights: it is taken from
	// MaxMemory before any connection, which gets only the rest.
	HintShared int
	// OwnsMemoryLimit says the process's Go memory limit is this server's
	// (MemoryLimit, which spider serve sets): the server then lowers it by
	// the shared-memory segments it holds, which count against MaxMemory
	// but are not Go memory, so that the collector runs before garbage
	// piles up on top of them.
	OwnsMemoryLimit bool
}

// DefaultConfig returns the default limits, the values New gives the zero
// fields of a Config: 64 connections, 32 of them from one peer, 16384
// games a batch, 65536 games in all, 64 MiB frames, 1 GiB of buffers a
// batch, 4 GiB of memory in all, a 5-minute idle timeout, a batch made
// within a minute of connecting, no log and greedy hints with 1 MiB
// each. Where int has 32 bits, the memory is 2 GiB less a byte and a
// batch's buffers a quarter of it, so that a batch replaced (old and new
// held at once) still fits. Workers stays 0, which New makes GOMAXPROCS
// (of when it runs).
func DefaultConfig() Config {
	return Config{
		MaxConns:     64,
		MaxPeerConns: 32,
		MaxGames:     16384,
		MaxTotal:     65536,
		MaxFrame:     64 << 20,
		MaxBytes:     min(1<<30, math.MaxInt/4),
		MaxMemory:    min(4<<30, math.MaxInt),
		IdleTimeout:  5 * time.Minute,
		SetupTimeout: time.Minute,
		Log:          log.New(io.Discard, "", 0),
		Hint:         func() agents.Agent { return &agents.Greedy{} },
		HintBytes:    1 << 20,
	}
}

// MaxBatchBytes is the largest MaxBytes: a step reply carries a batch's
// buffers in one frame, whose length is a uint32.
const MaxBatchBytes = min(2<<30, math.MaxInt)

// withDefaults fills the zero (or negative) fields of c from DefaultConfig
// and keeps MaxBytes within MaxBatchBytes and MaxGames within env.MaxBatch
// (no batch holds more, so hello says no more).
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	orDefault(&c.MaxConns, d.MaxConns)
	orDefault(&c.MaxPeerConns, d.MaxPeerConns)
	orDefault(&c.MaxGames, d.MaxGames)
	c.MaxGames = min(c.MaxGames, env.MaxBatch)
	orDefault(&c.MaxTotal, d.MaxTotal)
	orDefault(&c.MaxFrame, d.MaxFrame)
	orDefault(&c.MaxBytes, d.MaxBytes)
	c.MaxBytes = min(c.MaxBytes, MaxBatchBytes)
	orDefault(&c.MaxMemory, d.MaxMemory)
	orDefault(&c.IdleTimeout, d.IdleTimeout)
	orDefault(&c.SetupTimeout, d.SetupTimeout)
	orDefault(&c.Workers, runtime.GOMAXPROCS(0))
	orDefault(&c.HintBytes, d.HintBytes)
	if c.Log == nil {
		c.Log = d.Log
	}
	if c.Hint == nil {
		c.Hint = d.Hint
	}
	return c
}

func orDefault[T int | time.Duration](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

// Server serves the connections of one listener (Serve) until its
// context ends. Make one with New: the zero Server's limits are all 0,
// so it refuses every connection.
type Server struct {
	cfg    Config
	served atomic.Bool // Serve was called
	conns  atomic.Int64
	games  atomic.Int64 // games held by all batches
	mem    atomic.Int64 // bytes of MaxMemory the connections hold
	freed  atomic.Int64 // bytes given back since memory was last returned to the system
	freeOS chan struct{}

	shmMu sync.Mutex
	shm   int64 // bytes of the shared-memory segments held, under shmMu

	garbage atomic.Int64 // bytes given back in large pieces and perhaps not yet collected
	gcMu    sync.Mutex   // one collect at a time

	busy     atomic.Int64 // requests being answered now (requestStarts)
	lastDone atomic.Int64 // when the last answer ended, in sinceStart's nanoseconds

	mu    sync.Mutex
	open  map[net.Conn]struct{}
	peers map[string]int // connections per peer
	wg    sync.WaitGroup
}

// New returns a server with the given limits.
func New(cfg Config) *Server {
	return &Server{cfg: cfg.withDefaults(), open: map[net.Conn]struct{}{}, peers: map[string]int{}, freeOS: make(chan struct{}, 1)}
}

// Games returns the number of games held by all connections now. Games,
// Conns and Memory may be called from any goroutine while Serve runs.
func (s *Server) Games() int { return int(s.games.Load()) }

// Conns returns the number of connections being served now.
func (s *Server) Conns() int { return int(s.conns.Load()) }

// Accept's errors are retried after a pause that starts at minAcceptDelay
// and doubles up to maxAcceptDelay, as net/http does: a server out of file
// descriptors for a moment must go on serving the connections it has and
// accept again once some close.
const (
	minAcceptDelay = 5 * time.Millisecond
	maxAcceptDelay = time.Second
)

// Serve accepts connections on ln until ctx ends, then closes ln and every
// connection and waits for their handlers to finish. It returns nil after
// such a shutdown, or the listener's error, after the same shutdown: a
// listener that fails ends every connection too. A temporary error of
// Accept (too many open files, say) is logged and retried after a pause.
// A Server serves one listener: the limits and the shutdown are the
// whole server's, so a second call returns an error at once (make a
// Server for each listener).
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	if s.served.Swap(true) {
		return errors.New("server: Serve called twice: a Server serves one listener")
	}
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	freeCtx, stopFree := context.WithCancel(ctx)
	s.wg.Go(func() { s.returnMemoryLoop(freeCtx) })
	var err error
	var delay time.Duration
	for {
		var c net.Conn
		c, err = ln.Accept()
		if err != nil {
			if ctx.Err() != nil || !retryable(err) {
				break
			}
			delay = min(max(2*delay, minAcceptDelay), maxAcceptDelay)
			s.cfg.Log.Printf("spider serve: accept: %v; retrying in %v", err, delay)
			select {
			case <-time.After(delay):
			case <-ctx.Done():
			}
			continue
		}
		delay = 0
		peer := peerOf(c)
		if re := s.admit(c, peer); re != nil {
			s.refuse(c, re)
			continue
		}
		s.wg.Add(1)
		go s.handle(c, peer)
	}
	stopFree()
	s.mu.Lock()
	for c := range s.open {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// retryable reports whether Accept may succeed again after err: a
// temporary error (out of file descriptors, a connection reset before it
// was accepted, a timeout) or the kernel short of buffers.
func retryable(err error) bool {
	var t interface{ Temporary() bool }
	if errors.As(err, &t) && t.Temporary() {
		return true
	}
	return errors.Is(err, syscall.ENOBUFS) || errors.Is(err, syscall.ENOMEM)
}

// admit takes a place for a new connection from peer: one of MaxConns, one
// of its peer's MaxPeerConns and its fixed buffers' bytes of MaxMemory. It
// returns the failure that refuses the connection, having taken nothing.
func (s *Server) admit(c net.Conn, peer string) *replyError {
	if s.conns.Add(1) > int64(s.cfg.MaxConns) {
		s.conns.Add(-1)
		return fail(codeLimit, "the server already serves %d connections, its limit (--max-conns)", s.cfg.MaxConns)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.peers[peer] >= s.cfg.MaxPeerConns {
		s.conns.Add(-1)
		return fail(codeLimit, "%s already has %d connections, the most one peer may hold (--max-conns-per-peer); close one", peer, s.cfg.MaxPeerConns)
	}
	if !s.reserve(connBytes) {
		s.conns.Add(-1)
		return fail(codeLimit, "the server's memory (--max-memory %s) is all in use", s.maxMemoryText())
	}
	s.peers[peer]++
	s.open[c] = struct{}{}
	return nil
}

// refuseTimeout bounds the write of a refusal. A new connection's send
// buffer is empty and the reply a few hundred bytes, so the write does not
// wait; the deadline is only insurance for the accept loop.
const refuseTimeout = 50 * time.Millisecond

// refuse answers a connection over a limit with one failed reply and
// closes it. It writes in the accept loop itself: on a goroutine, a burst
// of connections was accepted faster than the refusals ran, and past a
// cap on them most were closed with no reply at all.
func (s *Server) refuse(c net.Conn, re *replyError) {
	defer c.Close()
	c.SetWriteDeadline(time.Now().Add(refuseTimeout))
	var en encoder
	en.failure(nil, re)
	c.Write(en.frame())
}

// conn is one connection's state.
type conn struct {
	s         *Server
	c         net.Conn
	peer      string    // who is at the other end (peerOf)
	since     time.Time // when it was accepted
	r         *bufio.Reader
	w         *bufio.Writer
	en        encoder
	req       request
	frame     []byte // the last frame read; req's views point into it
	closing   bool   // close was answered
	serving   bool   // a request is being answered (Server.requestStarts)
	hello     bool
	batch     *env.Batch
	ready     bool // the batch has been reset
	games     int64
	bits      bool         // masks travel bit-packed
	actions   []env.Action // one per game, reused by every step
	resetMask []bool       // one per game, reused by every reset
	seedVals  []uint64     // reset's list of seeds, one per game, reused
	seeded    []bool       // which games the list seeds (nil: no seed)
	packed    []byte       // bit-packed masks
	ids       []int32      // a step's env_ids, one per game at most, reused
	seg       *segment     // the batch's shared memory, when make asked for it
	shmWhy    string       // why make could not share memory, when it asked
	picture   []uint8      // render's rgb_array picture, made on the first one
	hint      agents.Agent // made on the first hint
	held      held         // the bytes of MaxMemory it holds
}

// held is what a connection holds of the server's MaxMemory, by what
// holds it.
type held struct {
	base  int64 // connBytes, from its admission
	frame int64 // the frame buffer's capacity
	batch int64 // the batch and the per-game request state
	reply int64 // the reply buffer's capacity, sized at make
	extra int64 // the picture and the hint agent
}

func (h held) total() int64 { return h.base + h.frame + h.batch + h.reply + h.extra }

func (s *Server) handle(c net.Conn, peer string) {
	cn := &conn{
		s: s, c: c, peer: peer, since: time.Now(),
		r:    bufio.NewReaderSize(c, 1<<16),
		w:    bufio.NewWriterSize(c, 1<<16),
		held: held{base: connBytes},
	}
	defer func() {
		if p := recover(); p != nil {
			// A bug must cost one connection, never the server.
			s.cfg.Log.Printf("spider serve: %v: panic: %v", c.RemoteAddr(), p)
		}
		if cn.serving {
			s.requestEnds() // its answer panicked
		}
		cn.release()
		c.Close()
		s.mu.Lock()
		delete(s.open, c)
		if s.peers[peer]--; s.peers[peer] <= 0 {
			delete(s.peers, peer)
		}
		s.mu.Unlock()
		s.conns.Add(-1)
		s.wg.Done()
	}()
	setupEnds := cn.since.Add(s.cfg.SetupTimeout)
	for !cn.closing {
		var payload []byte
		var err error
		if cn.batch == nil && !time.Now().Before(setupEnds) {
			// Requests already read into the buffer must not keep a
			// connection that made no batch past its setup timeout (a
			// client that writes many and reads slowly).
			err = setupOver(s.cfg.SetupTimeout)
		} else {
			deadline := time.Now().Add(s.cfg.IdleTimeout)
			if cn.batch == nil && setupEnds.Before(deadline) {
				deadline = setupEnds
			}
			c.SetReadDeadline(deadline)
			payload, cn.frame, err = readFrame(cn.r, cn.frame, s.cfg.MaxFrame, cn)
		}
		if err != nil {
			// After a bad frame the stream cannot be trusted: answer it
			// (echoing no id, since no request was read) and close.
			re := (*replyError)(nil)
			if !errors.As(err, &re) && cn.batch == nil && errors.Is(err, os.ErrDeadlineExceeded) && !time.Now().Before(setupEnds) {
				// Say why, so that a client that comes back finds the
				// reason in its next reply.
				re = setupOver(s.cfg.SetupTimeout)
			}
			if re != nil {
				cn.en.failure(nil, re)
				err = cn.flush()
			}
			if err != nil && !errors.Is(err, io.EOF) && !peerGone(err) && !errors.Is(err, net.ErrClosed) {
				// net.ErrClosed: Serve closed it, stopping.
				s.cfg.Log.Printf("spider serve: %v: %v", c.RemoteAddr(), err)
			}
			return
		}
		if err := cn.serve(payload); err != nil {
			if !peerGone(err) && !errors.Is(err, net.ErrClosed) {
				s.cfg.Log.Printf("spider serve: %v: %v", c.RemoteAddr(), err)
			}
			return
		}
		cn.shrinkFrame()
	}
}

// setupOver is the failure a connection gets when it made no batch within
// the setup timeout d.
func setupOver(d time.Duration) *replyError {
	return fail(codeLimit, "no batch was made within %v of connecting (the server's --setup-timeout): a connection keeps its place only to play", d)
}

// setupGrace is how long past its setup timeout a connection without a
// batch may take to read a reply, the last one (which says why it is
// closed) included.
const setupGrace = time.Second

// serve answers one request: its handler's reply, or the failure.
func (cn *conn) serve(payload []byte) error {
	// Counted as answered before the reply is written: a client that
	// does not read its replies must not keep the server from ever being
	// quiet (returnMemoryLoop) while its write waits out the idle timeout.
	cn.s.requestStarts()
	cn.serving = true
	q := &cn.req
	re := decodeRequest(payload, q)
	if re == nil {
		re = cn.dispatch(q)
	}
	if re != nil {
		cn.en.failure(q, re)
	}
	cn.serving = false
	cn.s.requestEnds()
	return cn.flush()
}

// flush writes the reply in cn.en; a make reply that shares memory
// carries the segment's descriptors, which are then closed here (the
// mapping stays).
func (cn *conn) flush() error {
	deadline := time.Now().Add(cn.s.cfg.IdleTimeout)
	if end := cn.since.Add(cn.s.cfg.SetupTimeout + setupGrace); cn.batch == nil && !cn.closing && end.Before(deadline) {
		// A client that does not read its replies would otherwise hold
		// a place without a batch for the idle timeout, not the setup
		// timeout. (Close drops the batch before its reply, which this
		// bound must not cut short.)
		deadline = end
	}
	cn.c.SetWriteDeadline(deadline)
	if sg := cn.seg; sg != nil && sg.fds[0] >= 0 {
		defer sg.closeFDs()
		if err := cn.w.Flush(); err != nil {
			return err
		}
		return sendWithFDs(unixConn(cn.c), cn.en.frame(), sg.fds[:])
	}
	if err := cn.en.writeTo(cn.w); err != nil {
		return err
	}
	return cn.w.Flush()
}

// growFrame reserves the memory for a frame buffer of size bytes beside
// the one it replaces, which is copied into it, or refuses the frame.
func (cn *conn) growFrame(size int) *replyError {
	if !cn.s.reserve(int64(size)) {
		return fail(codeLimit, "a frame of %d bytes does not fit the server's memory (--max-memory %s) now", size, cn.s.maxMemoryText())
	}
	cn.held.frame += int64(size)
	return nil
}

// grewFrame gives back the replaced frame buffer's memory once it is
// copied: the frame buffer is now the one of size bytes.
func (cn *conn) grewFrame(size int) {
	old := cn.held.frame - int64(size)
	// readFrame holds the new buffer; the old one, and the last request's
	// views into it, are let go here, so that giveBack can collect them.
	cn.frame, cn.req = nil, request{}
	cn.held.frame = int64(size)
	cn.s.giveBack(old)
}

// shrinkFrame drops a frame buffer grown past what the connection's
// requests need (keepFrame), after a large request or a hostile one, and
// gives its memory back.
func (cn *conn) shrinkFrame() {
	if cap(cn.frame) <= keepFrame(int(cn.games)) {
		return
	}
	cn.frame = nil
	cn.req = request{} // its views pointed into the frame
	n := cn.held.frame
	cn.held.frame = 0
	cn.s.giveBack(n)
}

// setReply makes the reply buffer's capacity exactly size bytes, reserving
// what it grows by, and reports whether the memory was there.
func (cn *conn) setReply(size int64) bool {
	if !cn.s.reserve(size - cn.held.reply) {
		return false
	}
	cn.s.unreserve(cn.held.reply - size)
	cn.en.buf = make([]byte, 0, size)
	cn.held.reply = size
	return true
}

// release frees the connection's batch, its share of the game limit and
// every byte it holds of the memory limit, and has the memory returned to
// the operating system when it was much.
func (cn *conn) release() {
	cn.dropBatch()
	n := cn.held.base + cn.held.frame
	cn.held = held{}
	cn.frame, cn.req = nil, request{}
	cn.s.giveBack(n)
}

// dropBatch frees the connection's batch, its share of the game limit and
// what it holds of the memory limit beyond its reader, writer and frame
// buffer (held.base and held.frame; the request being answered lies in
// the frame). close calls it before its reply, so that a client that
// makes a batch again as soon as it reads the reply finds the memory
// free.
func (cn *conn) dropBatch() {
	if cn.batch != nil {
		cn.batch.Close()
		cn.batch = nil
	}
	if cn.seg != nil {
		cn.s.closeSegment(cn.seg)
		cn.seg = nil
	}
	cn.s.games.Add(-cn.games)
	cn.games = 0
	total := cn.held.batch + cn.held.reply + cn.held.extra
	cn.held.batch, cn.held.reply, cn.held.extra = 0, 0, 0
	cn.en.buf = nil
	cn.en.dropRefs()
	cn.actions, cn.resetMask, cn.seedVals, cn.seeded, cn.packed, cn.picture, cn.hint = nil, nil, nil, nil, nil, nil, nil
	cn.ids = nil
	cn.s.giveBack(total)
}

// peerGone reports whether err says the client closed its end before its
// reply was written: a client that says close and hangs up at once (the
// Python client does) is not a server problem worth a log line.
func peerGone(err error) bool {
	return errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET)
}

package server

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spiderenv/spider/agents"
	"github.com/spiderenv/spider/env"
)

// Version is the protocol version this server speaks.
const Version = 1

// Config holds the server-wide limits. A zero field selects its value in
// DefaultConfig.
type Config struct {
	MaxConns    int           // connections served at once
	MaxGames    int           // games in one connection's batch
	MaxTotal    int           // games across all connections
	MaxFrame    int           // bytes in one request frame
	MaxBytes    int           // bytes of observation and mask buffers in one batch
	IdleTimeout time.Duration // a connection silent this long is closed
	// Workers is the default number of worker goroutines of a batch; 0
	// means GOMAXPROCS when the server is made.
	Workers int
	Log     *log.Logger // where connection errors are logged (default: discarded)
	// Hint makes the agent that answers hint requests, one per connection
	// (default: greedy). A trained network (agents "nn:PATH") answers only
	// for games of the configuration it was trained for.
	Hint agents.Maker
}

// DefaultConfig returns the default limits, the values New gives the zero
// fields of a Config: 64 connections, 16384 games a batch, 65536 games in
// all, 64 MiB frames, 1 GiB of buffers a batch, a 5-minute idle timeout,
// GOMAXPROCS workers, no log and greedy hints.
func DefaultConfig() Config {
	return Config{
		MaxConns:    64,
		MaxGames:    16384,
		MaxTotal:    65536,
		MaxFrame:    64 << 20,
		MaxBytes:    1 << 30,
		IdleTimeout: 5 * time.Minute,
		Log:         log.New(io.Discard, "", 0),
		Hint:        func() agents.Agent { return &agents.Greedy{} },
	}
}

// MaxBatchBytes is the largest MaxBytes: a step reply carries a batch's
// buffers in one frame, whose length is a uint32.
const MaxBatchBytes = 2 << 30

// withDefaults fills the zero (or negative) fields of c from DefaultConfig
// and keeps MaxBytes within MaxBatchBytes.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	orDefault(&c.MaxConns, d.MaxConns)
	orDefault(&c.MaxGames, d.MaxGames)
	orDefault(&c.MaxTotal, d.MaxTotal)
	orDefault(&c.MaxFrame, d.MaxFrame)
	orDefault(&c.MaxBytes, d.MaxBytes)
	c.MaxBytes = min(c.MaxBytes, MaxBatchBytes)
	orDefault(&c.IdleTimeout, d.IdleTimeout)
	orDefault(&c.Workers, runtime.GOMAXPROCS(0))
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

// Server serves connections on listeners until its context ends.
type Server struct {
	cfg   Config
	conns atomic.Int64
	games atomic.Int64 // games held by all batches

	mu   sync.Mutex
	open map[net.Conn]struct{}
	wg   sync.WaitGroup
}

// New returns a server with the given limits.
func New(cfg Config) *Server {
	return &Server{cfg: cfg.withDefaults(), open: map[net.Conn]struct{}{}}
}

// Games returns the number of games held by all connections now.
func (s *Server) Games() int { return int(s.games.Load()) }

// Conns returns the number of connections being served now.
func (s *Server) Conns() int { return int(s.conns.Load()) }

// Serve accepts connections on ln until ctx ends, then closes ln and every
// connection and waits for their handlers to finish. It returns nil after
// such a shutdown, or the listener's error.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	var err error
	for {
		var c net.Conn
		c, err = ln.Accept()
		if err != nil {
			break
		}
		if s.conns.Add(1) > int64(s.cfg.MaxConns) {
			s.conns.Add(-1)
			go refuse(c, fail(codeLimit, "the server already serves %d connections", s.cfg.MaxConns))
			continue
		}
		s.mu.Lock()
		s.open[c] = struct{}{}
		s.mu.Unlock()
		s.wg.Add(1)
		go s.handle(c)
	}
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

// refuse answers a connection over the limit with one failed reply.
func refuse(c net.Conn, re *replyError) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	var en encoder
	en.failure(nil, re)
	c.Write(en.frame())
}

// conn is one connection's state.
type conn struct {
	s         *Server
	c         net.Conn
	r         *bufio.Reader
	w         *bufio.Writer
	en        encoder
	req       request
	frame     []byte // the last frame read; req's views point into it
	closing   bool   // close was answered
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
	picture   []uint8      // render's rgb_array picture, made on the first one
	hint      agents.Agent // made on the first hint
}

func (s *Server) handle(c net.Conn) {
	cn := &conn{
		s: s, c: c,
		r: bufio.NewReaderSize(c, 1<<16),
		w: bufio.NewWriterSize(c, 1<<16),
	}
	defer func() {
		if p := recover(); p != nil {
			// A bug must cost one connection, never the server.
			s.cfg.Log.Printf("spider serve: %v: panic: %v", c.RemoteAddr(), p)
		}
		cn.release()
		c.Close()
		s.mu.Lock()
		delete(s.open, c)
		s.mu.Unlock()
		s.conns.Add(-1)
		s.wg.Done()
	}()
	for !cn.closing {
		c.SetReadDeadline(time.Now().Add(s.cfg.IdleTimeout))
		var payload []byte
		var err error
		payload, cn.frame, err = readFrame(cn.r, cn.frame, s.cfg.MaxFrame)
		if err != nil {
			// After a bad frame the stream cannot be trusted: answer it
			// (echoing no id, since no request was read) and close.
			if re := (*replyError)(nil); errors.As(err, &re) {
				cn.en.failure(nil, re)
				err = cn.flush()
			}
			if err != nil && !errors.Is(err, io.EOF) {
				s.cfg.Log.Printf("spider serve: %v: %v", c.RemoteAddr(), err)
			}
			return
		}
		if err := cn.serve(payload); err != nil {
			s.cfg.Log.Printf("spider serve: %v: %v", c.RemoteAddr(), err)
			return
		}
	}
}

// serve answers one request: its handler's reply, or the failure.
func (cn *conn) serve(payload []byte) error {
	q := &cn.req
	re := decodeRequest(payload, q)
	if re == nil {
		re = cn.dispatch(q)
	}
	if re != nil {
		cn.en.failure(q, re)
	}
	return cn.flush()
}

// flush writes the reply in cn.en.
func (cn *conn) flush() error {
	cn.c.SetWriteDeadline(time.Now().Add(cn.s.cfg.IdleTimeout))
	if _, err := cn.w.Write(cn.en.frame()); err != nil {
		return err
	}
	return cn.w.Flush()
}

// release frees the connection's batch and its share of the game limit.
func (cn *conn) release() {
	if cn.batch != nil {
		cn.batch.Close()
		cn.batch = nil
	}
	cn.s.games.Add(-cn.games)
	cn.games = 0
}

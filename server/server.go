package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/spiderenv/spider/agents"
	"github.com/spiderenv/spider/env"
)

// Version is the protocol version this server speaks.
const Version = 1

// Config holds the server-wide limits. The zero value of a field selects
// its default.
type Config struct {
	MaxConns    int           // connections served at once (default 64)
	MaxGames    int           // games in one connection's batch (default 16384)
	MaxTotal    int           // games across all connections (default 65536)
	MaxFrame    int           // bytes in one request frame (default 64 MiB)
	MaxBytes    int           // bytes of observation buffers in one batch (default 1 GiB)
	IdleTimeout time.Duration // a connection silent this long is closed (default 5 min)
	Workers     int           // default workers per batch (default GOMAXPROCS)
	Log         *log.Logger   // where connection errors are logged (default: discarded)
	// Hint makes the agent that answers hint requests, one per connection
	// (default: greedy). A trained network (agents "nn:PATH") answers only
	// for games of the configuration it was trained for.
	Hint agents.Maker
}

func (c Config) withDefaults() Config {
	if c.MaxConns <= 0 {
		c.MaxConns = 64
	}
	if c.MaxGames <= 0 {
		c.MaxGames = 16384
	}
	if c.MaxTotal <= 0 {
		c.MaxTotal = 65536
	}
	if c.MaxFrame <= 0 {
		c.MaxFrame = 64 << 20
	}
	if c.MaxBytes <= 0 {
		c.MaxBytes = 1 << 30
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = 5 * time.Minute
	}
	if c.Workers <= 0 {
		c.Workers = runtime.GOMAXPROCS(0)
	}
	if c.Hint == nil {
		c.Hint = func() agents.Agent { return &agents.Greedy{} }
	}
	if c.Log == nil {
		c.Log = log.New(io.Discard, "", 0)
	}
	return c
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
			go refuse(c, fmt.Sprintf("the server already serves %d connections", s.cfg.MaxConns))
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

// refuse answers a connection over the limit with one error reply.
func refuse(c net.Conn, msg string) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	en := newEncoder()
	en.start(false, nil, 2)
	en.str("code", codeLimit)
	en.str("error", msg)
	writeFrame(c, en.buf.Bytes())
}

// conn is one connection's state.
type conn struct {
	s       *Server
	c       net.Conn
	r       *bufio.Reader
	w       *bufio.Writer
	dec     *msgpack.Decoder
	en      *encoder
	req     request
	frame   []byte
	actBuf  []byte
	actions []env.Action
	hello   bool
	batch   *env.Batch
	ready   bool // the batch has been reset
	games   int64
	spec    spec
	hint    agents.Agent // made on the first hint
	packed  []byte       // bit-packed masks
	drawn   uint64       // seeds drawn for seedless resets
}

// spec is the configuration of the connection's batch as make set it.
type spec struct {
	rules env.Rules
	opts  env.BatchOptions
	bits  bool
}

func (s *Server) handle(c net.Conn) {
	cn := &conn{
		s: s, c: c,
		r:   bufio.NewReaderSize(c, 1<<16),
		w:   bufio.NewWriterSize(c, 1<<16),
		dec: msgpack.NewDecoder(nil),
		en:  newEncoder(),
		req: request{seen: map[string]bool{}},
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
	for {
		c.SetReadDeadline(time.Now().Add(s.cfg.IdleTimeout))
		var payload []byte
		var err error
		payload, cn.frame, err = readFrame(cn.r, cn.frame, s.cfg.MaxFrame)
		if err != nil {
			var re *replyError
			if errors.As(err, &re) {
				cn.req.op = "" // the bad frame was never read: echo no earlier id
				cn.replyErr(re)
			} else if !errors.Is(err, io.EOF) {
				s.cfg.Log.Printf("spider serve: %v: %v", c.RemoteAddr(), err)
			}
			return
		}
		done, err := cn.serve(payload)
		if err != nil {
			s.cfg.Log.Printf("spider serve: %v: %v", c.RemoteAddr(), err)
			return
		}
		if done {
			return
		}
	}
}

// serve answers one request and reports whether the connection is done.
func (cn *conn) serve(payload []byte) (done bool, err error) {
	var rerr *replyError
	cn.actBuf, err = decodeRequest(cn.dec, payload, &cn.req, cn.actBuf)
	if err != nil {
		errors.As(err, &rerr)
	} else {
		done, rerr = cn.dispatch(&cn.req)
	}
	if rerr != nil {
		return rerr.fatal, cn.replyErr(rerr)
	}
	return done, cn.flush()
}

func (cn *conn) replyErr(re *replyError) error {
	q := &cn.req
	if q.op == "" {
		q = nil
	}
	cn.en.start(false, q, 2)
	cn.en.str("code", re.code)
	cn.en.str("error", re.msg)
	return cn.flush()
}

func (cn *conn) flush() error {
	cn.c.SetWriteDeadline(time.Now().Add(cn.s.cfg.IdleTimeout))
	if err := writeFrame(cn.w, cn.en.buf.Bytes()); err != nil {
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

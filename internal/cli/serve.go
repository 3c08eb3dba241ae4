package cli

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/spiderenv/spider/agents"
	"github.com/spiderenv/spider/server"
)

// serveOptions are the serve command's flags.
type serveOptions struct {
	addr     string
	unix     string
	maxConns int
	maxGames int
	maxTotal int
	maxFrame int
	maxBytes int
	idle     time.Duration
	workers  int
	quiet    bool
	hint     string
	ready    func(addr net.Addr) // tests learn the address here
}

// DefaultAddr is where spider serve listens unless told otherwise.
const DefaultAddr = "127.0.0.1:7878"

func serveCommand(fs *pflag.FlagSet) func(context.Context, []string, io.Reader, io.Writer, io.Writer) error {
	var o serveOptions
	fs.StringVar(&o.addr, "addr", DefaultAddr, "TCP address to listen on (host:port; port 0 picks a free one). Only loopback unless you say otherwise, e.g. 0.0.0.0:7878")
	fs.StringVar(&o.unix, "unix", "", "listen on this Unix socket path instead of TCP")
	fs.IntVar(&o.maxConns, "max-conns", 64, "connections served at once")
	fs.IntVar(&o.maxGames, "max-games", 16384, "games in one connection's batch")
	fs.IntVar(&o.maxTotal, "max-total", 65536, "games across all connections")
	fs.IntVar(&o.maxFrame, "max-frame", 64<<20, "largest request frame in bytes")
	fs.IntVar(&o.maxBytes, "max-batch-bytes", 1<<30, "largest observation and mask buffers of one batch, in bytes")
	fs.DurationVar(&o.idle, "idle-timeout", 5*time.Minute, "close a connection silent for this long")
	fs.IntVar(&o.workers, "workers", 0, "default worker goroutines per batch (0: GOMAXPROCS)")
	fs.BoolVar(&o.quiet, "quiet", false, "do not log connection errors to stderr")
	fs.StringVar(&o.hint, "hint", "greedy", "policy that answers hint requests: greedy, search, or nn:CHECKPOINT")
	return func(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
		return runServe(ctx, o, stdout, stderr)
	}
}

// runServe listens and serves until ctx ends (SIGINT or SIGTERM).
func runServe(ctx context.Context, o serveOptions, stdout, stderr io.Writer) error {
	if o.maxConns < 1 || o.maxGames < 1 || o.maxTotal < 1 || o.maxFrame < 64 || o.maxBytes < 1 || o.idle <= 0 || o.workers < 0 {
		return usageError{fmt.Errorf("limits must be positive (max-frame at least 64 bytes)")}
	}
	hint, err := hintMaker(o.hint)
	if err != nil {
		return err
	}
	network, addr := "tcp", o.addr
	if o.unix != "" {
		network, addr = "unix", o.unix
		if fi, err := os.Lstat(addr); err == nil && fi.Mode()&os.ModeSocket != 0 {
			// A socket file left by a server that died; a live one would
			// still answer, so try it before removing it.
			if c, err := net.Dial("unix", addr); err == nil {
				c.Close()
				return fmt.Errorf("%s: another server is listening there", addr)
			}
			os.Remove(addr)
		}
	}
	ln, err := net.Listen(network, addr)
	if err != nil {
		return err
	}
	if o.unix != "" {
		defer os.Remove(o.unix)
	}
	logger := log.New(stderr, "", log.LstdFlags)
	if o.quiet {
		logger = log.New(io.Discard, "", 0)
	}
	srv := server.New(server.Config{
		MaxConns: o.maxConns, MaxGames: o.maxGames, MaxTotal: o.maxTotal, MaxFrame: o.maxFrame, MaxBytes: o.maxBytes,
		IdleTimeout: o.idle, Workers: o.workers, Log: logger, Hint: hint,
	})
	fmt.Fprintf(stderr, "spider serve: listening on %s %s (protocol %d)\n", ln.Addr().Network(), ln.Addr(), server.Version)
	if o.ready != nil {
		o.ready(ln.Addr())
	}
	err = srv.Serve(ctx, ln)
	fmt.Fprintln(stderr, "spider serve: stopped")
	return err
}

// hintMaker returns the maker of the agent that answers hints (--hint):
// greedy when name is empty, never the oracle, whose hints would give the
// hidden cards away.
func hintMaker(name string) (agents.Maker, error) {
	if name == "" {
		name = "greedy"
	}
	if strings.EqualFold(name, "oracle") {
		return nil, usageError{fmt.Errorf("--hint oracle: the oracle sees the hidden cards, so its hints would give them away")}
	}
	m, err := agents.NewWith(name, agents.Options{})
	if err != nil {
		return nil, usageError{err}
	}
	return m, nil
}

package cli

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/spiderenv/spider/agents"
	"github.com/spiderenv/spider/server"
)

// serveOptions are the serve command's flags.
type serveOptions struct {
	addr  string
	unix  string
	cfg   server.Config // the limits; Log and Hint are set by runServe
	quiet bool
	hint  string
	ready func(addr net.Addr) // tests learn the address here
}

// DefaultAddr is where spider serve listens unless told otherwise.
const DefaultAddr = "127.0.0.1:7878"

// minFrame is the smallest --max-frame: room for any request a client
// needs before make.
const minFrame = 64

func serveCommand(fs *pflag.FlagSet) func(context.Context, []string, io.Reader, io.Writer, io.Writer) error {
	var o serveOptions
	d := server.DefaultConfig()
	fs.StringVar(&o.addr, "addr", DefaultAddr, "TCP address to listen on (host:port; port 0 picks a free one). Only loopback unless you say otherwise, e.g. 0.0.0.0:7878")
	fs.StringVar(&o.unix, "unix", "", "listen on this Unix socket path instead of TCP")
	fs.IntVar(&o.cfg.MaxConns, "max-conns", d.MaxConns, "connections served at once")
	fs.IntVar(&o.cfg.MaxGames, "max-games", d.MaxGames, "games in one connection's batch")
	fs.IntVar(&o.cfg.MaxTotal, "max-total", d.MaxTotal, "games across all connections")
	fs.IntVar(&o.cfg.MaxFrame, "max-frame", d.MaxFrame, "largest request frame in bytes")
	fs.IntVar(&o.cfg.MaxBytes, "max-batch-bytes", d.MaxBytes, "largest observation and mask buffers of one batch, in bytes")
	fs.DurationVar(&o.cfg.IdleTimeout, "idle-timeout", d.IdleTimeout, "close a connection silent for this long")
	fs.IntVar(&o.cfg.Workers, "workers", d.Workers, "default worker goroutines per batch (0: GOMAXPROCS)")
	fs.BoolVar(&o.quiet, "quiet", false, "do not log connection errors to stderr")
	fs.StringVar(&o.hint, "hint", "greedy", "policy that answers hint requests: greedy, search, or nn:CHECKPOINT")
	return func(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
		return runServe(ctx, o, stdout, stderr)
	}
}

// runServe listens and serves until ctx ends (SIGINT or SIGTERM).
func runServe(ctx context.Context, o serveOptions, stdout, stderr io.Writer) error {
	cfg := o.cfg
	if cfg.MaxConns < 1 || cfg.MaxGames < 1 || cfg.MaxTotal < 1 || cfg.MaxFrame < minFrame || cfg.MaxBytes < 1 || cfg.IdleTimeout <= 0 || cfg.Workers < 0 {
		return usageError{fmt.Errorf("limits must be positive (max-frame at least %d bytes)", minFrame)}
	}
	if cfg.MaxBytes > server.MaxBatchBytes {
		return usageError{fmt.Errorf("max-batch-bytes %d is over %d: a step reply must fit one frame", cfg.MaxBytes, server.MaxBatchBytes)}
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
	cfg.Log = log.New(stderr, "", log.LstdFlags)
	if o.quiet {
		cfg.Log = log.New(io.Discard, "", 0)
	}
	cfg.Hint = hint
	srv := server.New(cfg)
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

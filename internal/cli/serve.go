package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"math"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/spiderenv/spider/agents"
	"github.com/spiderenv/spider/agents/nn"
	"github.com/spiderenv/spider/env"
	"github.com/spiderenv/spider/internal/bytesize"
	"github.com/spiderenv/spider/internal/printable"
	"github.com/spiderenv/spider/server"
)

// serveOptions are the serve command's flags.
type serveOptions struct {
	addr      string
	addrSet   bool // --addr was given, not defaulted
	unix      string
	cfg       server.Config // the limits; Log, Hint and HintBytes are set by runServe
	maxMemory byteSize      // cfg.MaxMemory, with a unit
	memorySet bool          // --max-memory was given
	anyAddr   bool          // --insecure-listen-all
	quiet     bool
	hint      string
	moveMs    int  // --move-ms: the time a search hint may plan
	stdinEOF  bool // --exit-with-stdin
	stdin     io.Reader
	ready     func(addr net.Addr) // tests learn the address here
}

// DefaultAddr is where spider serve listens unless told otherwise.
const DefaultAddr = "127.0.0.1:7878"

// minFrame is the smallest --max-frame: room for any request a client
// needs before make.
const minFrame = 64

// minMemory is the smallest --max-memory: a few connections' buffers and
// a small batch.
const minMemory = 16 << 20

func serveCommand(fs *pflag.FlagSet) func(context.Context, []string, io.Reader, io.Writer, io.Writer) error {
	var o serveOptions
	d := server.DefaultConfig()
	o.maxMemory = byteSize(d.MaxMemory)
	fs.StringVar(&o.addr, "addr", DefaultAddr, "TCP address to listen on (host:port; port 0 picks a free one); loopback only unless --insecure-listen-all")
	fs.StringVar(&o.unix, "unix", "", "listen on this Unix socket path instead of TCP (the socket is made owner-only, mode 0600)")
	fs.BoolVar(&o.anyAddr, "insecure-listen-all", false, "allow an --addr that is not loopback (0.0.0.0, :PORT, a LAN address): anyone who reaches it can use the server, which has no authentication")
	fs.IntVar(&o.cfg.MaxConns, "max-conns", d.MaxConns, "connections served at once")
	fs.IntVar(&o.cfg.MaxPeerConns, "max-conns-per-peer", d.MaxPeerConns, "connections one peer may hold at once: one local user (by uid, on the Unix socket or loopback TCP on Linux), else one remote address")
	fs.IntVar(&o.cfg.MaxGames, "max-games", d.MaxGames, "games in one connection's batch (at most 1048576)")
	fs.IntVar(&o.cfg.MaxTotal, "max-total", d.MaxTotal, "games across all connections")
	o.cfg.MaxFrame, o.cfg.MaxBytes = d.MaxFrame, d.MaxBytes
	fs.Var(intBytes{&o.cfg.MaxFrame}, "max-frame", "largest request frame")
	fs.Var(intBytes{&o.cfg.MaxBytes}, "max-batch-bytes", "largest observation and mask buffers of one batch")
	fs.Var(&o.maxMemory, "max-memory", "memory all connections may hold together, every buffer counted (batches, game states, frames, replies); the process stays within it plus "+bytesize.Format(server.Overhead))
	fs.DurationVar(&o.cfg.IdleTimeout, "idle-timeout", d.IdleTimeout, "close a connection silent for this long")
	fs.DurationVar(&o.cfg.SetupTimeout, "setup-timeout", d.SetupTimeout, "close a connection that has not made a batch this long after connecting")
	fs.IntVar(&o.cfg.Workers, "workers", d.Workers, "default worker goroutines per batch (0: GOMAXPROCS)")
	fs.BoolVar(&o.quiet, "quiet", false, "do not log connection errors to stderr")
	fs.StringVar(&o.hint, "hint", "greedy", "policy that answers hint requests: "+hintNames()+" (empty: greedy; never the oracle, which sees the hidden cards)")
	fs.IntVar(&o.moveMs, "move-ms", 0, "milliseconds a search hint may plan, next to its node budget (0: no limit)")
	fs.BoolVar(&o.stdinEOF, "exit-with-stdin", false, exitWithStdinUsage)
	return func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
		o.addrSet, o.memorySet = fs.Changed("addr"), fs.Changed("max-memory")
		if fs.Changed("unix") && o.unix == "" {
			return usageError{fmt.Errorf("--unix needs a socket path")}
		}
		o.stdin = stdin
		return runServe(ctx, o, stdout, stderr)
	}
}

// hintBytes is the memory one hint agent of the named policy, made by
// m, may hold: an agent that plays by a node budget (search, either
// value) keeps up to it (20000 positions of about 1.2 KB) of game
// states; greedy and a network's agent keep a few buffers, 1 MiB or, for
// a network wide enough, what its agent says it allocates (its forward
// pass) and 64 KiB more for the positions one hint remembers.
func hintBytes(name string, m agents.Maker) int {
	if agents.TraitsOf(name).Budget {
		return 48 << 20
	}
	n := int64(1 << 20)
	if b, ok := m().(interface{ Bytes() int64 }); ok {
		n = max(n, b.Bytes()+64<<10)
	}
	return int(min(n, math.MaxInt))
}

// runServe listens and serves until ctx ends (SIGINT or SIGTERM).
func runServe(ctx context.Context, o serveOptions, stdout, stderr io.Writer) error {
	cfg := o.cfg
	if o.maxMemory == 0 && !o.memorySet {
		o.maxMemory = byteSize(server.DefaultConfig().MaxMemory)
	}
	for _, c := range []struct {
		flag   string
		v, min int64
	}{
		{"max-conns", int64(cfg.MaxConns), 1}, {"max-conns-per-peer", int64(cfg.MaxPeerConns), 1},
		{"max-games", int64(cfg.MaxGames), 1}, {"max-total", int64(cfg.MaxTotal), 1},
		{"max-frame", int64(cfg.MaxFrame), minFrame}, {"max-batch-bytes", int64(cfg.MaxBytes), 1},
		{"workers", int64(cfg.Workers), 0},
	} {
		if c.v < c.min {
			return usageError{fmt.Errorf("--%s %d: want at least %d", c.flag, c.v, c.min)}
		}
	}
	for _, c := range []struct {
		flag string
		v    time.Duration
	}{{"idle-timeout", cfg.IdleTimeout}, {"setup-timeout", cfg.SetupTimeout}} {
		if c.v <= 0 {
			return usageError{fmt.Errorf("--%s %v: want a positive duration", c.flag, c.v)}
		}
	}
	if cfg.MaxGames > env.MaxBatch {
		return usageError{fmt.Errorf("--max-games %d is over %d, the most games one batch holds", cfg.MaxGames, env.MaxBatch)}
	}
	if cfg.MaxBytes > server.MaxBatchBytes {
		return usageError{fmt.Errorf("--max-batch-bytes %s is over %s: a step reply must fit one frame", bytesize.Format(int64(cfg.MaxBytes)), bytesize.Format(server.MaxBatchBytes))}
	}
	if o.maxMemory < minMemory {
		return usageError{fmt.Errorf("--max-memory %s is under %s", o.maxMemory, bytesize.Format(minMemory))}
	}
	if _, total, ok := machineMemory(); ok && int64(o.maxMemory) > total {
		if o.memorySet {
			return usageError{fmt.Errorf("--max-memory %s is more than this machine's %s", o.maxMemory, bytesize.Format(total))}
		}
		// The default is more than this machine has: take half of it.
		o.maxMemory = byteSize(max(total/2, minMemory))
		fmt.Fprintf(stderr, "spider serve: --max-memory %s, half this machine's memory\n", o.maxMemory)
	}
	// A 32-bit build counts memory in an int: more would wrap around.
	if int64(o.maxMemory) > math.MaxInt {
		return usageError{fmt.Errorf("--max-memory %s is over %s, the most a %d-bit build can count", o.maxMemory, bytesize.Format(math.MaxInt), strconv.IntSize)}
	}
	cfg.MaxMemory = int(o.maxMemory)
	if o.unix != "" && o.addrSet {
		return usageError{fmt.Errorf("give --addr or --unix, not both: the server listens on one")}
	}
	// The memory limit makes the collector run before garbage takes the
	// process past --max-memory and the server's overhead, from before a
	// hint network is loaded; the old limit comes back for a caller (a
	// test) that goes on.
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(server.MemoryLimitFor(cfg.MaxMemory)))
	hint, shared, err := serveHint(o.hint, o.moveMs, int64(cfg.MaxMemory))
	if err != nil {
		return err
	}
	var ln net.Listener
	if o.unix != "" {
		var remove func()
		if ln, remove, err = listenUnix(o.unix); err != nil {
			return err
		}
		defer atExit(ctx, remove)() // a second Ctrl-C exits before the deferred calls
		defer remove()
	} else {
		if err := checkLoopback(o.addr, o.anyAddr); err != nil {
			return err
		}
		if ln, err = net.Listen("tcp", o.addr); err != nil {
			return err
		}
		if err := checkListening(ln, o.addr, o.anyAddr, stderr); err != nil {
			ln.Close()
			return err
		}
	}
	cfg.Log = log.New(stderr, "", log.LstdFlags)
	if o.quiet {
		cfg.Log = log.New(io.Discard, "", 0)
	}
	cfg.Hint, cfg.HintBytes, cfg.HintShared = hint, hintBytes(o.hint, hint), int(shared)
	cfg.OwnsMemoryLimit = true // set above; the server lowers it by its shared memory
	srv := server.New(cfg)
	stdinEnded := func() bool { return false }
	if o.stdinEOF {
		var cancel context.CancelFunc
		ctx, cancel, stdinEnded = untilStdinEnds(ctx, o.stdin)
		defer cancel()
	}
	fmt.Fprintf(stderr, "spider serve: listening on %s %s (protocol %d; at most %s of memory)\n", ln.Addr().Network(), printable.Escape(ln.Addr().String()), server.Version, o.maxMemory)
	if o.ready != nil {
		o.ready(ln.Addr())
	}
	err = srv.Serve(ctx, ln)
	if stdinEnded() {
		fmt.Fprintln(stderr, "spider serve: stdin ended (--exit-with-stdin)")
	}
	fmt.Fprintln(stderr, "spider serve: stopped")
	return err
}

// checkLoopback refuses an --addr that names every interface (an empty
// host, 0.0.0.0, ::) or an IP that is not loopback, unless anyAddr: the
// server has no authentication, so reaching it must stay a local matter
// unless the user says otherwise.
func checkLoopback(addr string, anyAddr bool) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return usageError{fmt.Errorf("--addr %q: %v (want host:port, e.g. %s)", addr, err, DefaultAddr)}
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return usageError{fmt.Errorf("--addr %q: port %q is not a port number from 0 to 65535 (0 picks a free one)", addr, port)}
	}
	if anyAddr {
		return nil
	}
	what := ""
	switch ip := net.ParseIP(host); {
	case host == "":
		what = "every interface"
	case ip != nil && ip.IsUnspecified():
		what = "every interface"
	case ip != nil && !ip.IsLoopback():
		what = "an address other hosts can reach"
	}
	if what != "" {
		return usageError{fmt.Errorf("--addr %s listens on %s, and the server has no authentication: use a loopback address (127.0.0.1, [::1]) or --unix, or pass --insecure-listen-all", addr, what)}
	}
	return nil
}

// checkListening checks the address a TCP listener really has, before
// anything is accepted: a host name passes checkLoopback, and only here is
// what it resolved to known. An address other hosts can reach is refused
// without anyAddr, and warned about on stderr with it.
func checkListening(ln net.Listener, addr string, anyAddr bool, stderr io.Writer) error {
	a, ok := ln.Addr().(*net.TCPAddr)
	if !ok || a.IP.IsLoopback() {
		return nil
	}
	if !anyAddr {
		return usageError{fmt.Errorf("--addr %s listens on %s, which is not loopback: pass --insecure-listen-all to serve the network", addr, a.IP)}
	}
	fmt.Fprintf(stderr, "spider serve: WARNING: listening on %s, reachable from the network (--insecure-listen-all) with no authentication: anyone who can reach this port can use the server's CPU and memory\n", a)
	return nil
}

// connRefused reports whether a dial's err says that nobody listens:
// ECONNREFUSED, which Windows calls WSAECONNREFUSED, another number.
func connRefused(err error) bool {
	const wsaeconnrefused = 10061
	var errno syscall.Errno
	return errors.Is(err, syscall.ECONNREFUSED) || (runtime.GOOS == "windows" && errors.As(err, &errno) && errno == wsaeconnrefused)
}

// listenUnix listens on a Unix socket at path that only its owner can
// connect to (mode 0600). The socket is bound inside a new directory of
// mode 0700 next to path, made owner-only there, and only then linked to
// path: binding at path directly would create it with the mode the umask
// leaves (0777 under umask 000) and leave a moment, before a chmod, in
// which another user could connect; changing the umask instead would
// change it for the whole process. The link fails rather than replace a
// file already at path. A socket file left by a server that died is
// removed first; a live one refuses the start. The function it returns
// removes path if it is still this socket.
func listenUnix(path string) (net.Listener, func(), error) {
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&os.ModeSocket != 0 {
		// A live server would still answer, so try it before removing it.
		// Only a refused connection says nobody listens: a live server
		// whose queue of waiting connections is full answers "try again",
		// and another user's socket "permission denied", and removing
		// either would cut that server off from its clients.
		c, err := net.Dial("unix", path)
		switch {
		case err == nil:
			c.Close()
			return nil, nil, fmt.Errorf("%s: another server is listening there", path)
		case !connRefused(err):
			return nil, nil, fmt.Errorf("%s: a socket that may be another server's (connecting to it: %v); remove it if no server uses it", path, errors.Unwrap(err))
		}
		os.Remove(path)
	}
	// A short name: a socket's path has at most 107 bytes (checked below).
	removeStalePrivate(filepath.Dir(path), time.Now())
	dir, err := os.MkdirTemp(filepath.Dir(path), privatePrefix)
	if err != nil {
		err = fmt.Errorf("--unix %s: %w", path, err)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
			// No folder there, or not one this user may write in: the
			// path given cannot be used, as a record's path that cannot
			// be is not. A full disk is another matter.
			err = usageError{err}
		}
		return nil, nil, err
	}
	defer os.RemoveAll(dir)
	private := filepath.Join(dir, "s")
	if len(private) > maxSocketPath {
		return nil, nil, usageError{fmt.Errorf("--unix %s: the path is too long: the socket is first made in a private folder beside it, whose path must stay under %d bytes; use a shorter one", path, maxSocketPath+1)}
	}
	ln, err := net.Listen("unix", private)
	if err != nil {
		return nil, nil, fmt.Errorf("--unix %s: %w", path, err)
	}
	ul := ln.(*net.UnixListener)
	ul.SetUnlinkOnClose(false) // the caller removes path
	if err := os.Chmod(private, 0o600); err != nil {
		ln.Close()
		return nil, nil, err
	}
	if err := os.Link(private, path); err != nil {
		ln.Close()
		if errors.Is(err, fs.ErrExist) {
			return nil, nil, usageError{fmt.Errorf("--unix %s: a file that is not a socket is there; remove it or choose another path", path)}
		}
		return nil, nil, fmt.Errorf("--unix %s: %w", path, err)
	}
	// Removed at the end only while it is still this socket: a server
	// started on the same path after this one's socket was removed (by a
	// cleaner of /tmp, say) keeps its own.
	mine, err := os.Lstat(private)
	if err != nil {
		ln.Close()
		os.Remove(path)
		return nil, nil, err
	}
	remove := func() {
		if fi, err := os.Lstat(path); err == nil && os.SameFile(fi, mine) {
			os.Remove(path)
		}
	}
	return publicListener{ln, &net.UnixAddr{Name: path, Net: "unix"}}, remove, nil
}

// privatePrefix begins the name of the folder listenUnix binds in. The
// folder lives for a moment, but a server killed in that moment leaves it
// (with its socket), and the next listenUnix beside it removes those
// over staleAfter old.
const (
	privatePrefix = ".spider-s"
	staleAfter    = time.Minute
)

// removeStalePrivate removes from dir the folders listenUnix left that
// were made before now less staleAfter: named privatePrefix and the digits
// os.MkdirTemp adds, and holding nothing but the socket "s". Anything else
// of such a name (a user's ".spider-saves") is not one of them, and stays.
func removeStalePrivate(dir string, now time.Time) {
	names, _ := filepath.Glob(filepath.Join(dir, privatePrefix+"[0-9]*"))
	for _, name := range names {
		fi, err := os.Lstat(name)
		digits := strings.TrimPrefix(filepath.Base(name), privatePrefix)
		if err != nil || !fi.IsDir() || now.Sub(fi.ModTime()) <= staleAfter || strings.Trim(digits, "0123456789") != "" {
			continue
		}
		entries, err := os.ReadDir(name)
		if err != nil || len(entries) > 1 || len(entries) == 1 && (entries[0].Name() != "s" || entries[0].Type() != fs.ModeSocket) {
			continue
		}
		os.Remove(filepath.Join(name, "s"))
		os.Remove(name) // another user's, in a sticky /tmp, stays
	}
}

// maxSocketPath is the longest path of a Unix socket: sockaddr_un's
// sun_path holds 108 bytes with the terminating zero.
const maxSocketPath = 107

// publicListener is a listener that gives its address as the path it was
// linked to, not the private one it was bound at.
type publicListener struct {
	net.Listener
	addr net.Addr
}

func (l publicListener) Addr() net.Addr { return l.addr }

// weightBytes returns what the weights and biases of n take.
func weightBytes(n *nn.Net) int64 {
	b := int64(0)
	for _, p := range n.Params() {
		b += 4 * int64(len(p))
	}
	return b
}

// serveHint is hintMaker for a server of maxMemory bytes (--max-memory),
// which also returns the bytes its agents share for the server's life: a
// network's weights (--hint nn:PATH), which count against --max-memory
// like every connection's buffers. A checkpoint that could not be loaded
// within maxMemory, keeping minMemory for the connections (loading holds
// its file and the weights read from it, at most as large again), is
// refused before it is read.
func serveHint(name string, moveMs int, maxMemory int64) (agents.Maker, int64, error) {
	path, ok := strings.CutPrefix(name, "nn:")
	if !ok {
		m, err := hintMaker(name, moveMs)
		return m, 0, err
	}
	if err := checkMoveMs(moveMs); err != nil {
		return nil, 0, err
	}
	if moveMs != 0 {
		return nil, 0, moveMsUnread(name)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, 0, usageError{fmt.Errorf("--hint %s: %v", name, err)}
	}
	if need := 2 * fi.Size(); need > maxMemory-minMemory {
		return nil, 0, usageError{fmt.Errorf("--hint %s: loading its %s checkpoint takes up to %s, and the server must keep %s of --max-memory %s for its connections",
			name, bytesize.Format(fi.Size()), bytesize.Format(need), bytesize.Format(minMemory), bytesize.Format(maxMemory))}
	}
	net, _, err := nn.Load(path)
	if err != nil {
		return nil, 0, usageError{fmt.Errorf("--hint %s: %v", name, err)}
	}
	shared := weightBytes(net)
	m, err := agents.NeuralMaker(net)
	if err != nil {
		return nil, 0, usageError{fmt.Errorf("--hint %s: %v", name, err)}
	}
	return m, shared, nil
}

// hintMaker returns the maker of the agent that answers hints (--hint):
// greedy when name is empty, never an agent that peeks (the oracle),
// whose hints would give the hidden cards away. moveMs is --move-ms, the time a search may plan.
func hintMaker(name string, moveMs int) (agents.Maker, error) {
	if name == "" {
		name = "greedy"
	}
	if agents.TraitsOf(name).Peeks {
		return nil, usageError{fmt.Errorf("--hint %s: it sees the hidden cards, so its hints would give them away", name)}
	}
	if !strings.HasPrefix(name, "nn:") && !slices.Contains(agents.Names(), strings.ToLower(name)) { // agents reads names in any case
		// agents' own error lists every policy, the oracle too, which
		// --hint refuses.
		return nil, usageError{fmt.Errorf("--hint %q: unknown policy; want %s", name, hintNames())}
	}
	if err := checkMoveMs(moveMs); err != nil {
		return nil, err
	}
	m, err := agents.NewWith(name, agents.Options{MoveTime: moveTime(moveMs)})
	if err != nil {
		return nil, usageError{fmt.Errorf("--hint %s: %w", name, err)}
	}
	if moveMs != 0 && !agents.TraitsOf(name).Budget {
		return nil, moveMsUnread(name)
	}
	return m, nil
}

// moveMsUnread is the error for --move-ms given with a hint that does not
// plan, which it would bound nothing of, silently.
func moveMsUnread(hint string) error {
	return usageError{fmt.Errorf("--move-ms bounds a search's plan, and --hint %s does not plan (%s do)", hint, listed(agents.NamesWith(func(t agents.Traits) bool { return t.Budget && !t.Peeks }), "and"))}
}

// hintNames lists the policies --hint takes: every built-in one that does
// not peek, and a network.
func hintNames() string {
	return listed(append(agents.NamesWith(func(t agents.Traits) bool { return !t.Peeks }), "nn:CHECKPOINT"), "or")
}

// maxMoveMs is the largest --move-ms, an hour: far past any use, and far
// from where milliseconds overflow a time.Duration.
const maxMoveMs = 3_600_000

// checkMoveMs reports a --move-ms out of its range.
func checkMoveMs(ms int) error {
	if ms < 0 || ms > maxMoveMs {
		return usageError{fmt.Errorf("--move-ms %d is out of range: 0 (no limit) to %d", ms, maxMoveMs)}
	}
	return nil
}

// moveTime is --move-ms as a duration.
func moveTime(ms int) time.Duration { return time.Duration(ms) * time.Millisecond }

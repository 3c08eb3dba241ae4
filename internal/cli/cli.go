package cli

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/spiderenv/spider/env"
	"github.com/spiderenv/spider/internal/atomicfile"
	"github.com/spiderenv/spider/internal/printable"
)

// command is one subcommand: flags bind into its options, then run runs.
type command struct {
	summary string
	args    string // the positional arguments it takes, as usage shows them ("" for none)
	more    string // what --help says after the summary, before the flags ("" for nothing)
	// setup registers the flags on fs and returns the function that runs
	// the command with the parsed options.
	setup func(fs *pflag.FlagSet) func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error
}

var commands = map[string]command{
	"demo":    {"play one seeded game with a random policy and show it", "", "", demoCommand},
	"bench":   {"measure the batch stepper's env-steps per second with random legal actions", "", "", benchCommand},
	"serve":   {"serve batches of games over a socket (msgpack, PROTOCOL.md)", "", "", serveCommand},
	"eval":    {"compare policies on the same deals, with confidence intervals and paired tests", "", "", evalCommand},
	"play":    {"play a game in the terminal, with undo and hints", "", "in the game, type ? for these " + playHelp, playCommand},
	"replay":  {"step through a recorded game", "FILE", "", replayCommand},
	"results": {"tabulate spider eval --suite --json files as Markdown (docs/results.md), JSON or CSV", "FILE...", "", resultsCommand},
	"train":   {"train a neural policy with PPO (gorgonia) on the batch stepper", "", "", trainCommand},
	"version": {"print the program's version and the commit it was built from", "", "", versionCommand},
}

// Main runs the command line args and returns the process exit code:
// 0 on success, 1 when the command failed or was stopped, 2 for a usage
// error (usageError): a command line that cannot be run as given.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 2 && args[0] == "help" {
		args = []string{args[1], "--help"} // spider help COMMAND is spider COMMAND --help
	}
	if len(args) == 0 {
		// A command is missing: a usage error, whose usage goes with the
		// errors (stdout may be a file the caller meant for results).
		usage(stderr)
		return 2
	}
	if args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		out := &stickyWriter{w: stdout}
		usage(out) // asked for: the command's output
		return helpStatus(out, stderr, "spider")
	}
	if args[0] == "--version" {
		args = append([]string{"version"}, args[1:]...)
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "spider: unknown command %q\n", args[0])
		usage(stderr)
		return 2
	}
	fs := pflag.NewFlagSet("spider "+args[0], pflag.ContinueOnError)
	fs.SetOutput(stderr)
	name := args[0]
	// Asked for (--help, -h: the only way a ContinueOnError set shows it),
	// the usage is the command's output, as `spider --help` is.
	help := &stickyWriter{w: stdout}
	fs.Usage = func() { commandUsage(help, name, cmd, fs) }
	run := cmd.setup(fs)
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return helpStatus(help, stderr, "spider "+name)
		}
		fmt.Fprintf(stderr, "spider %s: %s\n", args[0], printable.Escape(err.Error()))
		return 2
	}
	// An argument ending in "..." takes one or more.
	if want := len(strings.Fields(cmd.args)); fs.NArg() != want && !(strings.HasSuffix(cmd.args, "...") && fs.NArg() >= want) {
		if want == 0 {
			fmt.Fprintf(stderr, "spider %s: unexpected arguments %q\n", args[0], fs.Args())
		} else {
			// Never 1: every command that takes arguments takes one.
			fmt.Fprintf(stderr, "spider %s: want %s, got %d arguments %q\n", args[0], cmd.args, fs.NArg(), fs.Args())
		}
		return 2
	}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, stopSignals()...)
	defer signal.Stop(sigs)
	ctx, stop := interruptible(context.Background(), "spider "+args[0], sigs, repeatedSignal, stderr, os.Exit)
	defer stop()
	if err := run(ctx, fs.Args(), stdin, stdout, stderr); err != nil {
		err = stopWords(err)
		// An error may name a file or echo an argument: escapes in them
		// must not reach the terminal.
		unlessExiting(ctx, func() { fmt.Fprintf(stderr, "spider %s: %s\n", args[0], printable.Escape(err.Error())) })
		var u usageError
		if errors.As(err, &u) {
			return 2
		}
		return 1
	}
	return 0
}

// stopSignals are the signals that stop a command's work cleanly, as
// Ctrl-C does: SIGINT, SIGTERM and SIGHUP, which a closed terminal sends
// (play then saves its game, where the default action killed it unsaved),
// unless SIGHUP was ignored when the program started, as under nohup,
// which must keep the work going.
func stopSignals() []os.Signal {
	sigs := []os.Signal{syscall.SIGINT, syscall.SIGTERM}
	if !signal.Ignored(syscall.SIGHUP) {
		sigs = append(sigs, syscall.SIGHUP)
	}
	return sigs
}

// repeatedSignal is how soon after the first a signal counts as the same
// one delivered twice rather than a second Ctrl-C: coreutils' timeout sends
// its signal to the command and then to the command's process group, a
// few microseconds apart, and a person cannot press twice that fast.
const repeatedSignal = 100 * time.Millisecond

// interruptible returns a context that the first signal on sigs cancels,
// after saying on stderr that the command (name) is stopping and that a
// second signal exits at once; the second calls exit with the shell's
// code for the signal (130 for SIGINT). The command then has the time it
// needs to stop cleanly (a trainer keeps its last checkpoint), and a
// user who will not wait does not have to. A signal within repeat of the
// first is taken for the first delivered again and ignored. stop releases
// it.
func interruptible(parent context.Context, name string, sigs <-chan os.Signal, repeat time.Duration, stderr io.Writer, exit func(code int)) (ctx context.Context, stop func()) {
	hooks := &exitHooks{}
	ctx, cancel := context.WithCancel(context.WithValue(parent, exitHooksKey{}, hooks))
	done := make(chan struct{})
	go func() {
		var first os.Signal
		var at time.Time
		for {
			select {
			case <-done:
				return
			case sig := <-sigs:
				if first == nil {
					first, at = sig, time.Now()
					// On a terminal the line ends the progress line (and the
					// ^C it echoed); elsewhere it would be an empty line.
					if isTerminal(stderr) {
						fmt.Fprintln(stderr)
					}
					fmt.Fprintf(stderr, "%s: stopping (%v): finishing cleanly; press Ctrl-C again to exit at once\n", name, sig)
					cancel()
					continue
				}
				if time.Since(at) < repeat {
					continue
				}
				fmt.Fprintf(stderr, "%s: exiting at once (%v)\n", name, sig)
				code := 1
				if s, ok := sig.(syscall.Signal); ok {
					code = 128 + int(s)
				}
				// A file being written keeps its old whole self, and no
				// part of the new one is left under a temporary name.
				// Under the hooks' lock, so that the command cannot report
				// the write this breaks (unlessExiting waits) before the
				// exit; and before the hooks, so that a hook removing a
				// folder it made finds no temporary there (the hooks
				// write no file, which would wait for the exit).
				var resume func()
				var once sync.Once
				removeTemps := func() { once.Do(func() { resume = removeInFlight() }) }
				hooks.run(exitHooksLimit, removeTemps)
				removeTemps() // if the lock was not had within the limit
				exit(code)
				resume() // exit returned: a test's
				return
			}
		}
	}()
	var once sync.Once
	return ctx, func() {
		once.Do(func() { close(done) })
		cancel()
	}
}

// exitWithStdinUsage is the help of --exit-with-stdin, which serve and
// eval take.
const exitWithStdinUsage = "stop, as on Ctrl-C, when stdin ends: a program that starts this one and holds a pipe to its stdin never leaves it running behind, however it dies (meant for a pipe, not a terminal)"

// untilStdinEnds returns a context that ends when stdin does (or parent
// ends), and whether that is why: the parent's end of a pipe closes when
// it exits, whatever kills it, and from any thread (PR_SET_PDEATHSIG
// follows the thread that started the child, and Linux only). The
// goroutine reading stdin lives until stdin ends.
func untilStdinEnds(parent context.Context, stdin io.Reader) (ctx context.Context, cancel func(), ended func() bool) {
	ctx, cancel = context.WithCancel(parent)
	var done atomic.Bool
	if stdin != nil {
		go func() {
			io.Copy(io.Discard, stdin)
			done.Store(true)
			cancel()
		}()
	}
	return ctx, cancel, done.Load
}

// removeInFlight is atomicfile.RemoveInFlight, a variable so that a test
// can see what holds when the exit calls it.
var removeInFlight = atomicfile.RemoveInFlight

// exitHooks are what must be undone even when a second signal exits at
// once, skipping the command's deferred calls: a Unix socket's file, say.
type exitHooks struct {
	mu    sync.Mutex
	next  int
	hooks map[int]func()
}

type exitHooksKey struct{}

// atExit has f run if a second signal exits at once while the command
// runs with ctx (a context of interruptible), and returns what removes it
// again: the command calls that once it has undone the thing itself.
func atExit(ctx context.Context, f func()) (remove func()) {
	h, ok := ctx.Value(exitHooksKey{}).(*exitHooks)
	if !ok {
		return func() {}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.hooks == nil {
		h.hooks = map[int]func(){}
	}
	id := h.next
	h.next++
	h.hooks[id] = f
	return func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		delete(h.hooks, id)
	}
}

// unlessExiting runs f unless a second signal is exiting at once (its
// hooks have run): then it waits for the exit, so that what the exit cut
// short (a rename whose temporary it removed) is not reported after
// "exiting at once".
func unlessExiting(ctx context.Context, f func()) {
	if h, ok := ctx.Value(exitHooksKey{}).(*exitHooks); ok {
		h.mu.Lock()
		defer h.mu.Unlock()
	}
	f()
}

// exitHooksLimit is how long a second signal waits for the hooks before
// it exits anyway: removing a file takes microseconds, and a user who
// pressed Ctrl-C twice must not wait on a stuck file system.
const exitHooksLimit = time.Second

// run runs first, then the hooks still registered, under the hooks'
// lock, for at most limit. It keeps the lock, so nothing is added or
// removed, and no command reports through unlessExiting, while the
// process exits.
func (h *exitHooks) run(limit time.Duration, first func()) {
	done := make(chan struct{})
	go func() {
		h.mu.Lock()
		first()
		for _, f := range h.hooks {
			f()
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(limit):
	}
}

// usageError marks a command line that cannot be run as given, for exit
// code 2: a bad or conflicting flag or argument, or a file it names
// (a record, a report, a checkpoint, the document to update) that is
// missing, unreadable or not what it should be. One rule for every file,
// whether a flag or an argument names it, so that a script can tell
// input it must fix (2) from work that failed or was stopped (1).
type usageError struct{ error }

// outputFlags are the --json and --csv switches of the commands that print
// tables.
type outputFlags struct{ json, csv bool }

func (o *outputFlags) register(fs *pflag.FlagSet) {
	fs.BoolVar(&o.json, "json", false, "write the results as JSON")
	fs.BoolVar(&o.csv, "csv", false, "write the results as CSV")
}

// write prints v as indented JSON with --json, or header and rows as CSV
// with --csv, and reports whether it did; otherwise the caller prints its
// table.
func (o outputFlags) write(w io.Writer, v any, header []string, rows func() [][]string) (bool, error) {
	switch {
	case o.json:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false) // a move is 3>7, not 3\u003e7, as in the CSV
		return true, enc.Encode(v)
	case o.csv:
		c := csv.NewWriter(w)
		c.Write(header)
		c.WriteAll(rows())
		return true, c.Error()
	}
	return false, nil
}

func (o outputFlags) check() error {
	if o.json && o.csv {
		return usageError{fmt.Errorf("choose one of --json and --csv")}
	}
	return nil
}

// commandUsage is a command's --help: its usage line with the arguments
// it takes, what it does, and its flags.
func commandUsage(w io.Writer, name string, cmd command, fs *pflag.FlagSet) {
	line := "spider " + name
	if cmd.args != "" {
		line += " " + cmd.args
	}
	fmt.Fprintf(w, "usage: %s [flags]\n\n%s\n", line, cmd.summary)
	if cmd.more != "" {
		fmt.Fprintf(w, "\n%s", cmd.more)
	}
	if fs.HasFlags() {
		fmt.Fprintf(w, "\nflags:\n%s", fs.FlagUsages())
	}
}

// helpStatus is the exit code of help written through out: 0, or 1 with
// the error said on stderr as name's. The help is written in many small
// writes, and one that failed (a full disk) exited 0 with nothing said,
// where every other output's failure exits 1. (A closed pipe on stdout
// ends the process with SIGPIPE first, exit 141, as it ends any program
// writing there.)
func helpStatus(out *stickyWriter, stderr io.Writer, name string) int {
	if out.err == nil {
		return 0
	}
	fmt.Fprintf(stderr, "%s: writing the help: %v\n", name, out.err)
	return 1
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: spider COMMAND [flags]   (flags take the --long form; see spider COMMAND --help; spider --version)")
	fmt.Fprintln(w, "\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-8s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nexit status: 0 done; 1 the work failed or was stopped (serve, whose work ends with a stop, exits 0 then);")
	fmt.Fprintln(w, "  2 the command line cannot be used as given: a bad flag or argument, or a file named that is")
	fmt.Fprintln(w, "  missing, unreadable or not what it should be")
}

// optionColumns appends to a CSV header a column for each option it does
// not have yet, read from env's table so that an option added later gets
// its column, at the end; it returns the header and the function that
// appends those options' values to a row.
func optionColumns(header []string) ([]string, func(row []string, o env.Options) []string) {
	var others []env.OptionField
	for _, f := range env.OptionFields() {
		if !slices.Contains(header, f.Key) {
			others = append(others, f)
			header = append(header, f.Key)
		}
	}
	return header, func(row []string, o env.Options) []string {
		for _, f := range others {
			row = append(row, f.Text(o))
		}
		return row
	}
}

// plainJSON is json.MarshalIndent (indent "" for json.Marshal's one
// line) without the escapes for HTML: the text as the CSV has it.
func plainJSON(v any, indent string) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", indent)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// stopped is a command's error when a signal stops it: its words, not
// the context's ("context canceled"), which it still wraps.
type stopped struct {
	msg string
	err error
}

func (s stopped) Error() string { return s.msg }
func (s stopped) Unwrap() error { return s.err }

// stopWords puts a stop in the program's words: a command that returns
// no more than its context's error (bench, replay) says "stopped", not
// Go's "context canceled".
func stopWords(err error) error {
	if err == context.Canceled || err == context.DeadlineExceeded {
		return stopped{"stopped", err}
	}
	return err
}

// stickyWriter keeps the first error of its writes, so that a command
// whose text went, line by line, to a full disk or a closed pipe says so
// and fails, rather than exit 0 having lost its answer.
type stickyWriter struct {
	w   io.Writer
	err error
}

func (s *stickyWriter) Write(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	n, err := s.w.Write(p)
	s.err = err
	return n, err
}

// failed returns the error of the first write that failed, or nil.
func (s *stickyWriter) failed() error {
	if s.err != nil {
		return fmt.Errorf("writing the output: %w", s.err)
	}
	return nil
}

package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/spiderenv/spider/agents"
	"github.com/spiderenv/spider/env"
	"github.com/spiderenv/spider/internal/printable"
	"github.com/spiderenv/spider/record"
)

// playOptions are the play command's flags.
type playOptions struct {
	game   env.Options
	seed   uint64
	record string
	hint   string
	moveMs int // --move-ms: the time a search hint may plan
}

func playCommand(fs *pflag.FlagSet) func(context.Context, []string, io.Reader, io.Writer, io.Writer) error {
	var o playOptions
	o.game = env.DefaultOptions()
	o.game.MaxSteps = -1 // a person plays without a step limit
	registerGameFlags(fs, &o.game)
	fs.Uint64Var(&o.seed, "seed", 1, "deal seed of the first game (new deals take the next seeds)")
	// The strongest policy that does not peek answers a player's hints: a
	// player who follows them lets search follow its plan, so a hint costs
	// what a move costs in eval (serve keeps greedy: there every hint is
	// planned afresh).
	fs.StringVar(&o.hint, "hint", "search", "policy that answers hint: "+hintNames()+" (empty: search; never the oracle, which sees the hidden cards)")
	fs.IntVar(&o.moveMs, "move-ms", 0, "milliseconds a search hint may plan, next to its node budget (0: no limit)")
	fs.StringVar(&o.record, "record", "", "save each finished or abandoned game with a move to this file (the last one wins)")
	return func(ctx context.Context, args []string, stdin io.Reader, stdout, _ io.Writer) error {
		// A failed write (a full disk, a closed pipe) ends the game, saved,
		// rather than play on unseen. Go ends a program on a write to a
		// closed pipe on its standard output unless SIGPIPE is asked for:
		// asked for, the write fails with EPIPE and the game is saved.
		pipes := make(chan os.Signal, 1)
		signal.Notify(pipes, syscall.SIGPIPE)
		defer signal.Stop(pipes)
		out := &stickyWriter{w: stdout}
		if err := runPlay(ctx, o, stdin, out); err != nil {
			return err
		}
		return out.failed()
	}
}

const playHelp = `commands:
  3>7x4     move 4 cards from column 3 to column 7 (columns 1-10)
  3>7       the same when only one count fits
  d, deal   deal from the stock
  u, undo   take back the last action
  h, hint   the hint policy's suggestion and why
  m, moves  list the legal actions
  n, new    a new deal (the next seed)
  q, quit   leave
`

// checkReplaceable refuses a file at path that holds something other
// than what a command writes there: notWhat says why the file is not of
// that kind, or "" when it is. A slip in --gif, --record or --export must
// not replace a trained network or another run's checkpoint; a file of
// the same kind (the last run's picture, say), an empty one or none may
// be written.
func checkReplaceable(path string, notWhat func(path string) string) error {
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() == 0 {
		return nil
	}
	if why := notWhat(path); why != "" {
		return fmt.Errorf("exists and %s: not replaced; remove it first, or give another file name", why)
	}
	return nil
}

// notRecord says why the file at path is not a game record, or "".
func notRecord(path string) string {
	if _, err := record.Load(path); err != nil {
		return "is not a readable game record"
	}
	return ""
}

// checkFilePath reports whether a file can be written at path: it is
// not a folder, and its folder exists and takes new files, and what is
// there is not another user's in a sticky folder. example is a
// file name to suggest when path is a folder.
func checkFilePath(path, example string) error {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("is a folder; give a file name, e.g. %s", filepath.Join(path, example))
	} else if err == nil && !fi.Mode().IsRegular() {
		// The file is written to a temporary and renamed over the path,
		// which would replace a pipe, a device or a link to one (a
		// reader waiting on a FIFO, /dev/stdout) with a plain file.
		kind := "something else"
		switch m := fi.Mode(); {
		case m&fs.ModeNamedPipe != 0:
			kind = "a named pipe"
		case m&fs.ModeSocket != 0:
			kind = "a socket"
		case m&fs.ModeDevice != 0:
			kind = "a device"
		}
		return fmt.Errorf("is %s, not a regular file; give a file name", kind)
	}
	dir := filepath.Dir(path)
	switch fi, err := os.Stat(dir); {
	case err == nil && !fi.IsDir():
		return fmt.Errorf("%s is not a folder", dir)
	case err != nil:
		return fmt.Errorf("its folder %s does not exist", dir)
	}
	if why := stickyRefusal(dir, path); why != "" {
		return errors.New(why)
	}
	return probeWritable(dir)
}

// linkTarget returns the file a link at path leads to, through a chain
// of links, where it exists or would be made (a link to a file not yet
// written), or path when it is no link. A relative target is taken from
// its link's folder as the kernel takes it, that folder's own links
// resolved first (a plain join would drop a ".." before a linked folder).
// It fails on a loop of links.
func linkTarget(path string) (string, error) {
	cur := path
	for range maxLinks + 1 { // maxLinks links, then the file
		t, err := os.Readlink(cur)
		if err != nil {
			return cur, nil // no link, or nothing there yet: the file itself
		}
		if !filepath.IsAbs(t) {
			dir := filepath.Dir(cur)
			if real, err := filepath.EvalSymlinks(dir); err == nil {
				dir = real
			}
			t = filepath.Join(dir, t)
		}
		if _, err := os.Lstat(t); err != nil {
			if _, err := os.Stat(cur); err == nil {
				// A link the kernel resolves by itself (/proc/self/fd/1
				// to "pipe:[N]"): what it leads to is the file, which the
				// checks name (a named pipe).
				return cur, nil
			}
		}
		cur = t
	}
	return "", fmt.Errorf("more than %d links, a loop", maxLinks)
}

// maxLinks is how many links linkTarget follows, as Linux's path lookup.
const maxLinks = 40

// stdioFile reports whether path is the same file as one of files that
// is an open *os.File (a shell's < or > file), which a record saved there
// would replace.
func stdioFile(path string, files ...any) bool {
	fi, err := os.Stat(path)
	if err != nil {
		return false
	}
	for _, f := range files {
		if s, ok := f.(*stickyWriter); ok {
			f = s.w
		}
		if f, ok := f.(*os.File); ok && f != nil {
			if g, err := f.Stat(); err == nil && os.SameFile(fi, g) {
				return true
			}
		}
	}
	return false
}

// samePath reports whether a and b name the same file: the same file on
// disk where both exist (through links too), else the same absolute path.
func samePath(a, b string) bool {
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	if errA == nil && errB == nil {
		return os.SameFile(fa, fb)
	}
	x, errA := filepath.Abs(a)
	y, errB := filepath.Abs(b)
	return errA == nil && errB == nil && x == y
}

// checkCreatable reports whether the folder dir exists or could be made,
// and would take new files, without making it: its nearest existing
// ancestor must be a folder that takes new files. A command that will
// write into dir later checks it first, and a refused run leaves no empty
// folder behind.
func checkCreatable(dir string) error {
	for p := dir; ; {
		fi, err := os.Stat(p)
		switch {
		case err == nil && !fi.IsDir():
			return fmt.Errorf("%s is not a folder", p)
		case err == nil:
			return probeWritable(p)
		case !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR):
			return err
		}
		// Missing, or under a file (ENOTDIR): the parent says which.
		parent := filepath.Dir(p)
		if parent == p {
			return err
		}
		p = parent
	}
}

// runPlay is an interactive game on stdin/stdout.
func runPlay(ctx context.Context, o playOptions, stdin io.Reader, stdout io.Writer) error {
	r, err := gameRules(o.game)
	if err != nil {
		return err
	}
	name := o.hint
	if name == "" {
		name = "search" // play's default, as the flag's
	}
	maker, err := hintMaker(name, o.moveMs)
	if err != nil {
		return err
	}
	hint := maker()
	if err := agents.CheckRules(hint, r); err != nil {
		return usageError{fmt.Errorf("--hint %s: %v", o.hint, err)}
	}
	shown := o.record // the record as the player named it
	if o.record != "" {
		// A link is written through, as results --update writes: the
		// rename would replace the link itself with a plain file.
		target, err := linkTarget(o.record)
		if err != nil {
			return usageError{fmt.Errorf("--record %s: %v", o.record, err)}
		}
		if target != o.record {
			shown = fmt.Sprintf("%s (a link to %s)", o.record, target)
		}
		o.record = target
		// The game is saved when it ends: a path that cannot take it must
		// fail now, not after the game.
		if err := checkFilePath(o.record, "game.spider"); err != nil {
			return usageError{fmt.Errorf("--record %s: %v", shown, err)}
		}
		if net, ok := strings.CutPrefix(name, "nn:"); ok && samePath(o.record, net) {
			return usageError{fmt.Errorf("--record %s is the network --hint plays: the game would replace it; give another file name", shown)}
		}
		// /dev/stdin or /dev/stdout lead, through /proc, to the file the
		// shell opened for play: the record would replace the moves or
		// the transcript.
		if stdioFile(o.record, stdin, stdout, os.Stdin, os.Stdout, os.Stderr) {
			return usageError{fmt.Errorf("--record %s is a file play reads or writes as it plays; give another file name", shown)}
		}
		if err := checkReplaceable(o.record, notRecord); err != nil {
			return usageError{fmt.Errorf("--record %s: %v", shown, err)}
		}
	}
	e := env.New(r)
	seed := o.seed
	var actions []env.Action
	// save saves the game, if there is a record to keep and a move in it,
	// and reports whether it did.
	save := func() (bool, error) {
		if o.record == "" || len(actions) == 0 {
			return false, nil
		}
		s := e.State()
		if err := record.Save(o.record, record.New(r, seed, "human", actions, &s)); err != nil {
			return false, fmt.Errorf("saving the game of deal %d to --record %s: %w", seed, shown, err)
		}
		return true, nil
	}
	// lost is the first game a new deal could not keep: said at once,
	// and the command's error at the end, so that a script knows.
	var lost error
	// end saves the game and returns why play ended (nil: the player
	// quit), with what was lost.
	end := func(why error) error {
		saved, err := save()
		switch {
		case err != nil:
			why = errors.Join(why, err)
		case saved && why != nil:
			why = fmt.Errorf("%w; the game is saved in %s", why, shown)
		case saved:
			fmt.Fprintf(stdout, "the game is saved in %s\n", printable.Escape(shown))
		}
		if lost != nil {
			why = errors.Join(why, fmt.Errorf("an earlier game was not kept: %w", lost))
		}
		return why
	}
	written, _ := stdout.(interface{ failed() error })
	start := func() {
		e.Reset(seed)
		hint.Begin(seed)
		actions = actions[:0]
		fmt.Fprintf(stdout, "spider %v, deal %d. Type ? for help.\n\n%s", r, seed, e.Render())
	}
	start()
	// Lines are read on their own goroutine, so that a Ctrl-C is heard
	// while the player thinks, not after the next line.
	lines := make(chan inputLine)
	done := make(chan struct{})
	defer close(done)
	go readLines(stdin, lines, done)
	for {
		if written != nil && written.failed() != nil {
			return end(written.failed())
		}
		fmt.Fprint(stdout, "> ")
		var in inputLine
		// A stop already asked for wins over a line already read: select
		// picks at random among what is ready.
		if ctx.Err() == nil {
			select {
			case <-ctx.Done():
			case in = <-lines:
			}
		}
		if ctx.Err() != nil {
			fmt.Fprintln(stdout)
			// Not the context's words ("context canceled"): the player
			// stopped the game.
			return end(stopped{"stopped", ctx.Err()})
		}
		if in.err != nil {
			fmt.Fprintln(stdout)
			if in.err != io.EOF {
				return end(fmt.Errorf("reading the moves: %w", in.err))
			}
			return end(nil)
		}
		if in.tooLong {
			fmt.Fprintf(stdout, "a line of more than %d bytes is not a command (type ? for help)\n", maxLine)
			continue
		}
		line := strings.ToLower(strings.TrimSpace(in.text))
		switch line {
		case "":
			continue
		case "?", "help":
			fmt.Fprint(stdout, playHelp)
			continue
		case "q", "quit", "exit":
			if f, ok := stdin.(*os.File); !ok || !isTerminal(f) || !isTerminal(stdout) {
				// The line typed was not echoed after the prompt: end it,
				// as the end of the input does.
				fmt.Fprintln(stdout)
			}
			return end(nil)
		case "n", "new":
			if saved, err := save(); saved {
				fmt.Fprintf(stdout, "the game of deal %d is saved in %s\n", seed, printable.Escape(shown))
			} else if err != nil {
				// The new deal is still dealt: the player sees why the
				// last game was not kept. The error names the file, whose
				// escapes must not reach the terminal.
				fmt.Fprintln(stdout, printable.Escape(err.Error()))
				if lost == nil {
					lost = err
				}
			}
			seed++
			start()
			continue
		case "u", "undo":
			if _, _, err := e.Undo(); err != nil {
				fmt.Fprintln(stdout, "nothing to undo")
				continue
			}
			actions = actions[:len(actions)-1]
			fmt.Fprint(stdout, e.Render())
			continue
		case "m", "moves":
			var names []string
			for _, a := range env.AppendMasked(nil, e.Mask()) {
				names = append(names, a.String())
			}
			if len(names) == 0 {
				fmt.Fprintln(stdout, gameOver)
				continue
			}
			fmt.Fprintf(stdout, "%d legal: %s\n", len(names), strings.Join(names, " "))
			continue
		case "h", "hint":
			s := e.State()
			legal := s.AppendLegal(nil)
			if len(legal) == 0 {
				fmt.Fprintln(stdout, gameOver)
				continue
			}
			last, has := env.Action(0), len(actions) > 0
			if has {
				last = actions[len(actions)-1]
			}
			d := hint.Act(agents.NewView(&s, legal, last, has))
			fmt.Fprintf(stdout, "hint: %v (%s)\n", d.Action, d.Reason)
			continue
		}
		if s := e.State(); s.Over() {
			// Not env's words to a program ("call Reset").
			fmt.Fprintln(stdout, gameOver)
			continue
		}
		a, err := resolve(in.text, e.Mask())
		if err != nil {
			fmt.Fprintln(stdout, err)
			continue
		}
		_, reward, term, trunc, info, err := e.Step(a)
		if err != nil {
			fmt.Fprintln(stdout, strings.TrimPrefix(err.Error(), "env: "))
			continue
		}
		actions = append(actions, a)
		fmt.Fprintf(stdout, "%v: %s\n%s", a, signedReward(reward), e.Render())
		if term || trunc {
			switch {
			case info.Won:
				fmt.Fprintf(stdout, "You won with a score of %d in %d moves. n for a new deal, q to quit.\n", info.Score, info.Moves)
			case term:
				fmt.Fprintf(stdout, "No move and no deal is left: the game is lost (score %d). u to undo, n for a new deal.\n", info.Score)
			default:
				fmt.Fprintf(stdout, "The step limit is reached. u to undo, n for a new deal.\n")
			}
		}
	}
}

// gameOver is what play says to a move once the game has ended.
const gameOver = "the game is over: u to undo, n for a new deal, q to quit"

// maxLine is the longest line play reads as a command; longer ones are
// skipped whole.
const maxLine = 4096

// inputLine is one line of the player's input, or why there is none.
type inputLine struct {
	text    string
	tooLong bool  // the line was longer than maxLine; text is empty
	err     error // io.EOF at the end of the input
}

// readLines sends r's lines on out until r ends or fails (the last message
// then carries the error) or done is closed.
func readLines(r io.Reader, out chan<- inputLine, done <-chan struct{}) {
	br := bufio.NewReader(r)
	for {
		in := readLine(br)
		select {
		case out <- in:
		case <-done:
			return
		}
		if in.err != nil {
			return
		}
	}
}

// readLine reads one line of at most maxLine bytes (without its end), or
// skips a longer one whole and says so. A last line without a newline is
// a line; the end of the input after it is io.EOF.
func readLine(br *bufio.Reader) inputLine {
	var line []byte
	tooLong := false
	for {
		part, err := br.ReadSlice('\n')
		// Room for the line and its end ("\r\n" at most): whether the
		// line itself is too long is decided once its end is cut off.
		if !tooLong && len(line)+len(part) <= maxLine+2 {
			line = append(line, part...)
		} else {
			tooLong, line = true, nil
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil && !(err == io.EOF && (len(line) > 0 || tooLong)) {
			return inputLine{err: err}
		}
		text := strings.TrimRight(string(line), "\r\n")
		if len(text) > maxLine {
			return inputLine{tooLong: true}
		}
		return inputLine{text: text, tooLong: tooLong}
	}
}

// resolve reads a move as typed, in any case: full notation, or "S>D"
// when one count fits. Its errors quote what was typed.
func resolve(typed string, mask []uint8) (env.Action, error) {
	line := strings.ToLower(strings.TrimSpace(typed))
	a, err := env.ParseAction(line)
	if err == nil {
		return a, nil
	}
	src, dst, ok := strings.Cut(line, ">")
	if !ok {
		return 0, fmt.Errorf("%q is not a command or a move (type ? for help)", typed)
	}
	if strings.Contains(dst, "x") {
		// A count was typed, so this is the full notation and its own
		// error says what is wrong (a count of 13, 0 or none); the short
		// form below would only blame the columns.
		return 0, fmt.Errorf("%s (type ? for help)", strings.TrimPrefix(err.Error(), "env: "))
	}
	from, err1 := strconv.Atoi(strings.TrimSpace(src))
	to, err2 := strconv.Atoi(strings.TrimSpace(dst))
	if err1 != nil || err2 != nil || from < 1 || from > env.NumColumns || to < 1 || to > env.NumColumns || from == to {
		return 0, fmt.Errorf("%q: columns are 1 to 10 and must differ (type ? for help)", typed)
	}
	var fits []env.Action
	for n := 1; n <= env.MaxMove; n++ {
		if a := env.MoveAction(from-1, to-1, n); mask[a] == 1 {
			fits = append(fits, a)
		}
	}
	switch len(fits) {
	case 0:
		return 0, fmt.Errorf("no legal move from column %d to column %d", from, to)
	case 1:
		return fits[0], nil
	}
	return 0, fmt.Errorf("%d counts fit (1 to %d cards): say how many, like %v", len(fits), len(fits), fits[len(fits)-1])
}

// signedReward prints a step's reward with its sign and no more digits
// than a float32 holds: shaping is computed in float32, and its float64
// (4.399999618530273) is noise to a player.
func signedReward(r float64) string {
	s := strconv.FormatFloat(r, 'g', -1, 32)
	if r >= 0 {
		s = "+" + s
	}
	return s
}

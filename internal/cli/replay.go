package cli

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/csv"
	"fmt"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/spiderenv/spider/agents"
	"github.com/spiderenv/spider/env"
	"github.com/spiderenv/spider/internal/atomicfile"
	"github.com/spiderenv/spider/internal/bytesize"
	"github.com/spiderenv/spider/internal/printable"
	"github.com/spiderenv/spider/picture"
	"github.com/spiderenv/spider/record"
)

// replayOptions are the replay command's flags.
type replayOptions struct {
	every  int
	gif    string
	frames string
	delay  time.Duration
	out    outputFlags

	turning bool // --turning-point
	nodes   int  // the oracle's budget for --turning-point
}

// replayRow is one position of a replayed game, for --json and --csv: the
// move that led to it (none for the deal, move 0) and what a reader of
// many games wants to find where a game stalled.
type replayRow struct {
	Move      int    `json:"move"`
	Action    string `json:"action"`
	Score     int    `json:"score"`
	Runs      int    `json:"runs"`
	FaceDown  int    `json:"face_down"`
	StockLeft int    `json:"stock_left"`
	Empty     int    `json:"empty_columns"`
	Status    string `json:"status"`
}

// replaySummary is the whole game, for --json.
type replaySummary struct {
	File string `json:"file"`
	// Options are the game's, at the top as eval's and bench's reports
	// have them ("rules" is the rule set's name there and here).
	env.Options
	Seed      uint64        `json:"seed"`
	Player    string        `json:"player"`
	Positions []replayRow   `json:"positions"` // written by writeReplayTable, a row at a time
	Turning   *turningPoint `json:"turning_point,omitempty"`
}

// turningPoint is where a game that was not won stopped being winnable
// for the oracle (search seeing the hidden cards): the move after the
// last position from which the oracle, playing on, still wins
// (findTurningPoint).
type turningPoint struct {
	// OracleWinsDeal says whether the oracle wins the deal from the
	// start; when it does not, the rest is empty.
	OracleWinsDeal bool `json:"oracle_wins_deal"`
	// OracleWinsEnd says the oracle still wins from the last position: a
	// game stopped before its end (spider play saves one its player
	// quits) was not lost, and the rest is empty.
	OracleWinsEnd bool `json:"oracle_wins_end,omitempty"`
	// Move is the move (from 1) after which the oracle no longer wins,
	// Action what was played there and Before the position it was played
	// from, from which the oracle wins in OracleMoves moves.
	Move        int        `json:"move,omitempty"`
	Action      string     `json:"action,omitempty"`
	Before      *replayRow `json:"before,omitempty"`
	OracleMoves int        `json:"oracle_moves,omitempty"`
	// Games is how many oracle games the search played, DeadEnds how many
	// positions it passed over without one, since no card could ever be
	// turned from them (deadEnd), and Nodes the oracle's budget a plan
	// (--nodes, the default filled in), which the answer depends on.
	Games    int `json:"games"`
	DeadEnds int `json:"dead_ends"`
	Nodes    int `json:"nodes"`
}

var replayHeader = []string{"move", "action", "score", "runs", "face_down", "stock_left", "empty_columns", "status"}

func newReplayRow(move int, a string, s *env.State) replayRow {
	empty := 0
	for c := range env.NumColumns {
		if s.Height(c) == 0 {
			empty++
		}
	}
	return replayRow{Move: move, Action: a, Score: s.Score(), Runs: s.Runs(), FaceDown: s.TotalFaceDown(),
		StockLeft: s.StockLeft(), Empty: empty, Status: statusOf(s)}
}

// statusOf names how s stands, "truncated" for a game stopped by the step
// limit (whose Status is still playing).
func statusOf(s *env.State) string {
	if s.Truncated() {
		return "truncated"
	}
	return s.Status().String()
}

// How long the animation holds the deal and the final position: long
// enough to read them before the moves start and before it loops.
const (
	gifFirstHold = time.Second
	gifLastHold  = 3 * time.Second
)

func replayCommand(fs *pflag.FlagSet) func(context.Context, []string, io.Reader, io.Writer, io.Writer) error {
	o := replayOptions{delay: 300 * time.Millisecond}
	fs.IntVar(&o.every, "every", 1, "show the board, or with --json/--csv a row, every this many moves (0: only the first and last); pictures keep every move")
	fs.StringVar(&o.gif, "gif", "", "also write the game to this file as an animated GIF, a frame per move")
	fs.StringVar(&o.frames, "frames", "", "also write a PNG picture of every position into this folder (0000.png is the deal)")
	fs.DurationVar(&o.delay, "delay", o.delay, "how long the GIF shows each move (the deal at least 1s, the end at least 3s)")
	fs.BoolVar(&o.turning, "turning-point", false, "for a game not won, find the move after the last position from which the oracle (search seeing the hidden cards) still wins (within what is left of the step limit, and within 1000 moves of each position), playing it from every position, the last first, but dead ends (no card can ever be turned)")
	fs.IntVar(&o.nodes, "nodes", 0, "with --turning-point, the oracle's budget: positions explored per plan (0: 20000; at most 1048576)")
	o.out.register(fs)
	return func(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
		if err := o.out.check(); err != nil {
			return err
		}
		if o.turning && o.out.csv {
			return usageError{fmt.Errorf("--turning-point writes text or --json, not --csv")}
		}
		if o.nodes < 0 || o.nodes > agents.MaxNodes {
			return usageError{fmt.Errorf("--nodes %d: want 0 to %d", o.nodes, agents.MaxNodes)}
		}
		if fs.Changed("nodes") && !o.turning {
			return usageError{fmt.Errorf("--nodes is the oracle's budget for --turning-point: give both or neither")}
		}
		if o.turning {
			// The oracle reserves its whole budget at its first plan.
			if err := checkAvailable((&agents.Search{Nodes: o.nodes, Peek: true}).Bytes(), fmt.Sprintf("the oracle's search of --nodes %d", o.nodes), "lower --nodes"); err != nil {
				return err
			}
		}
		if o.every < 0 {
			return usageError{fmt.Errorf("--every %d: want 0 or more", o.every)}
		}
		out := &stickyWriter{w: stdout}
		if err := runReplay(ctx, o, args[0], out, stderr); err != nil {
			return err
		}
		return out.failed()
	}
}

// runReplay shows a recorded game move by move and checks it ends as
// recorded; with --gif or --frames it also draws every position. With
// --json or --csv it writes, instead of boards, a row per position with
// its score, runs, face-down cards, stock and empty columns, and says on
// stderr what it drew. With --turning-point it also finds, for a game not
// won, the move after which the oracle no longer wins.
func runReplay(ctx context.Context, o replayOptions, path string, stdout, stderr io.Writer) error {
	if o.gif != "" || o.frames != "" {
		if o.delay < picture.MinDelay || o.delay > picture.MaxDelay {
			return usageError{fmt.Errorf("--delay %v: want %v to %v", o.delay, picture.MinDelay, picture.MaxDelay)}
		}
	}
	// Where the pictures go is checked before the record is read.
	if err := checkPicturePaths(o, path); err != nil {
		return err
	}
	g, err := record.Load(path)
	if err != nil {
		return usageError{err}
	}
	table := o.out.json || o.out.csv
	// Pictures of more positions than are drawn are refused before the
	// check below, which takes seconds for the longest record.
	if err := checkPictureCount(o, len(g.Actions)); err != nil {
		return err
	}
	// A record that does not replay is refused before anything is shown:
	// no pictures, no table, no boards. Checking it whole first takes
	// microseconds for a game, seconds for the longest record.
	if _, err := record.Replay(g, nil); err != nil {
		return usageError{fmt.Errorf("%s: %v", path, err)}
	}
	pics, err := newPictures(o, len(g.Actions), stderr)
	if err != nil {
		return err
	}
	defer pics.discard() // unless finish kept them
	r, _ := g.RulesOf()
	first := env.NewGame(r, g.Seed)
	if !table {
		fmt.Fprintf(stdout, "%s: %v, deal %d, played by %s, %d actions\n\n%s", printable.Escape(path), r, g.Seed, printable.Quote(g.Player), len(g.Actions), first.Render())
	}
	pics.add(&first, len(g.Actions) == 0)
	final, err := record.Replay(g, func(i int, a env.Action, s *env.State) {
		if ctx.Err() != nil {
			return
		}
		if !table && shown(o.every, i, len(g.Actions)) {
			fmt.Fprintf(stdout, "\n%d. %v\n%s", i+1, a, s.Render())
		}
		pics.add(s, i == len(g.Actions)-1)
	})
	if err != nil {
		return usageError{fmt.Errorf("%s: %v", path, err)}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	var tp *turningPoint
	if o.turning && final.Status() != env.Won {
		if tp, err = findTurningPoint(ctx, g, o.nodes, stderr); err != nil {
			return err
		}
	}
	if !table {
		fmt.Fprintf(stdout, "\nreplayed exactly: %s, score %d, %d runs in %d moves\n", statusOf(&final), final.Score(), final.Runs(), final.Steps())
		switch {
		case tp == nil && o.turning:
			fmt.Fprintln(stdout, "turning point: none, the game was won")
		case tp != nil && !tp.OracleWinsDeal:
			fmt.Fprintf(stdout, "turning point: none, the oracle (%d nodes) does not win this deal either\n", tp.Nodes)
		case tp != nil && tp.OracleWinsEnd:
			fmt.Fprintf(stdout, "turning point: none, the oracle (%d nodes) still wins from the last position: the game stopped before it was lost\n", tp.Nodes)
		case tp != nil:
			b := tp.Before
			fmt.Fprintf(stdout, "turning point: move %d (%s), after which the oracle no longer wins; before it (stock %d, %d face down, %d runs, %d empty columns) the oracle wins in %d moves (%d oracle games of %d nodes a plan)\n",
				tp.Move, tp.Action, b.StockLeft, b.FaceDown, b.Runs, b.Empty, tp.OracleMoves, tp.Games, tp.Nodes)
		}
		return pics.finish(stdout)
	}
	if err := pics.finish(stderr); err != nil {
		return err
	}
	return writeReplayTable(ctx, stdout, o, replaySummary{File: path, Options: r.Options(), Seed: g.Seed, Player: g.Player, Turning: tp}, g)
}

// writeReplayTable writes a row per position of g (replayed again) as
// --json (sum with its positions) or --csv, a row at a time: a record may
// hold millions of actions, whose rows held at once would take gigabytes.
// Like the boards, the rows are the deal, every o.every-th move and the
// last. A stop (ctx) cuts the table short and is returned; the JSON is
// closed even then, with "stopped": true after the positions it holds,
// as a stopped eval's report says, so stdout stays one JSON document (a
// CSV ends at its last whole row).
func writeReplayTable(ctx context.Context, stdout io.Writer, o replayOptions, sum replaySummary, g record.Game) error {
	w := bufio.NewWriter(stdout)
	var row func(x replayRow) error
	var end func() error
	cut := false // stopped before the last row
	if o.out.csv {
		c := csv.NewWriter(w)
		c.Write(replayHeader)
		row = func(x replayRow) error {
			return c.Write([]string{strconv.Itoa(x.Move), x.Action, strconv.Itoa(x.Score), strconv.Itoa(x.Runs),
				strconv.Itoa(x.FaceDown), strconv.Itoa(x.StockLeft), strconv.Itoa(x.Empty), x.Status})
		}
		end = func() error { c.Flush(); return c.Error() }
	} else {
		// The summary as encoding/json indents it, with the positions
		// written into its array one by one.
		head, err := plainJSON(sum, "  ")
		if err != nil {
			return err
		}
		before, after, ok := bytes.Cut(head, []byte(`"positions": null`))
		if !ok {
			return fmt.Errorf("replay: the summary has no positions field")
		}
		w.Write(before)
		w.WriteString(`"positions": [`)
		n := 0
		row = func(x replayRow) error {
			b, err := plainJSON(x, "")
			if n > 0 {
				w.WriteByte(',')
			}
			w.WriteString("\n    ")
			w.Write(b)
			n++
			return err
		}
		end = func() error {
			w.WriteString("\n  ]")
			if cut {
				w.WriteString(",\n  \"stopped\": true")
			}
			w.Write(after)
			w.WriteByte('\n')
			return nil
		}
	}
	r, _ := g.RulesOf()
	first := env.NewGame(r, g.Seed)
	err := row(newReplayRow(0, "", &first))
	if _, rerr := record.Replay(g, func(i int, a env.Action, s *env.State) {
		if err == nil && i%4096 == 0 {
			err = ctx.Err()
		}
		if err == nil && shown(o.every, i, len(g.Actions)) {
			err = row(newReplayRow(i+1, a.String(), s))
		}
	}); rerr != nil {
		return rerr
	}
	cut = err != nil && err == ctx.Err()
	if err == nil || cut {
		if eerr := end(); err == nil {
			err = eerr
		}
	}
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
	return err
}

// shown reports whether the position after action i of n is shown with
// --every: every every-th, and the last (0: only the last).
func shown(every, i, n int) bool {
	return (every > 0 && (i+1)%every == 0) || i == n-1
}

// oracleHorizon is how many moves the oracle may play from a position:
// the default step limit. A game without a step limit, or with one far
// beyond it (a record may hold up to 2^30), would let the oracle play on
// for years from a position it cannot win.
const oracleHorizon = 1000

// findTurningPoint finds, in a game that was not won and whose record
// replays, the last position from which the oracle, playing on (within
// what is left of the step limit, and within oracleHorizon moves of the
// position), still wins: it plays the oracle from every position, the
// last first, until one wins. Position 0 is the deal and position
// len(g.Actions) the final one, which is not won; when the oracle wins
// from it (a game stopped before its end), nothing turned the game. A
// bisection would play a few dozen games, but the oracle's search is
// bounded, so it can lose from a position and win from a later one: a
// bisection named moves after which it still won (s76: 4 of 7 lost deals
// scanned). Positions from which no card can ever be turned (deadEnd) cost
// no game, so a game that jammed costs one for each position between its
// last winnable one and the jam.
func findTurningPoint(ctx context.Context, g record.Game, nodes int, stderr io.Writer) (*turningPoint, error) {
	tp := &turningPoint{Nodes: cmp.Or(nodes, agents.DefaultNodes)}
	r, err := g.RulesOf()
	if err != nil {
		return nil, err
	}
	n := len(g.Actions)
	// Every checkpointEvery-th position is kept, and a position replays
	// from the one before it: keeping every one (1.2 KB each) would let a
	// long record claim gigabytes, and replaying each from the deal would
	// take its length squared.
	const checkpointEvery = 1024
	var marks []env.State
	s := env.NewGame(r, g.Seed)
	for i := 0; ; i++ {
		if i%checkpointEvery == 0 {
			marks = append(marks, s)
		}
		if i == n {
			break
		}
		s.Step(env.Action(g.Actions[i])) // legal: the record replayed whole before
	}
	raw := func(i int) env.State {
		s := marks[i/checkpointEvery]
		for _, a := range g.Actions[i/checkpointEvery*checkpointEvery : i] {
			s.Step(env.Action(a))
		}
		return s
	}
	// framed is position i (s) as the oracle plays it.
	framed := func(i int, s env.State) env.State {
		if r.MaxSteps() < 0 || r.MaxSteps()-i > oracleHorizon {
			// A game without a step limit (spider play records such
			// games), or with a distant one: the oracle, which plays on
			// when it sees no way forward, would not end one it cannot
			// win.
			o := r.Options()
			o.MaxSteps = i + oracleHorizon
			if h, err := env.NewRules(o); err == nil {
				if t, err := s.Reframe(h); err == nil {
					s = t // on an error the zero State would replace the game
				}
			}
		}
		return s
	}
	// wins plays the oracle from position i, which s is.
	wins := func(i int, s env.State) (agents.Result, error) {
		// PlayFrom stops at once on a stopped ctx; its game then counts for nothing.
		stop := heartbeat(stderr, func() string { return fmt.Sprintf("turning point: still playing the oracle from move %d of %d", i, n) })
		res := playOracle(ctx, framed(i, s), g.Seed, nodes)
		stop()
		if err := ctx.Err(); err != nil {
			return agents.Result{}, err
		}
		tp.Games++
		fmt.Fprintf(stderr, "turning point: the oracle from move %d of %d %s\n", i, n, map[bool]string{true: "wins", false: "does not win"}[res.Won])
		return res, nil
	}
	res, err := wins(0, raw(0))
	if err != nil || !res.Won {
		return tp, err
	}
	tp.OracleWinsDeal = true
	lo, loMoves := 0, res.Moves // the last position the oracle wins from, so far
	known := map[uint64]bool{}  // positions deadEnd found dead, closures shared
	for i := n; i > 0; i-- {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		s := raw(i)
		if deadEnd(&s, known) {
			tp.DeadEnds++
			continue
		}
		res, err := wins(i, s)
		if err != nil {
			return nil, err
		}
		if res.Won {
			lo, loMoves = i, res.Moves
			break
		}
	}
	if lo == n {
		// A game stopped before its end (or a record of no moves).
		tp.OracleWinsEnd = true
		return tp, nil
	}
	tp.Move, tp.Action, tp.OracleMoves = lo+1, env.Action(g.Actions[lo]).String(), loMoves
	before := framed(lo, raw(lo))
	row := newReplayRow(lo, "", &before)
	tp.Before = &row
	if lo > 0 {
		tp.Before.Action = env.Action(g.Actions[lo-1]).String()
	}
	return tp, nil
}

// playOracle plays the oracle from s to its end: a variable, so that a test
// can stand in an oracle whose wins it chooses.
var playOracle = func(ctx context.Context, s env.State, seed uint64, nodes int) agents.Result {
	return agents.PlayFrom(ctx, s, seed, &agents.Search{Nodes: nodes, Peek: true})
}

// deadEndLimit bounds the positions deadEnd walks before it gives up (and
// an oracle game decides): the lost games of docs/results.md jam in 1 to
// 69,900 (s73), and each position walked is kept (1.2 KB).
const deadEndLimit = 50_000

// deadEnd reports whether no card can ever be turned from s: its stock is
// dealt, cards lie face down, and no position that moves reach without
// turning one (tried up to deadEndLimit, with no step limit) has a move
// that turns one. Nobody wins from such a position, the oracle included:
// a win needs every card face up. A game over is one too. known holds the
// keys of positions found dead before (a dead position's reach is dead)
// and gains the ones walked; positions that differ only in hidden cards
// share a key, and moves that turn nothing reveal none, so a key decides.
func deadEnd(s *env.State, known map[uint64]bool) bool {
	if s.Over() {
		return true
	}
	down := s.TotalFaceDown()
	if s.StockLeft() > 0 || down == 0 {
		return false
	}
	if known[s.Key()] {
		return true
	}
	o := s.Rules().Options()
	o.MaxSteps = -1
	h, err := env.NewRules(o)
	if err != nil {
		return false
	}
	start, err := s.Reframe(h)
	if err != nil {
		return false
	}
	seen := map[uint64]bool{start.Key(): true}
	stack := []env.State{start}
	var legal []env.Action
	for len(stack) > 0 {
		p := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		legal = p.AppendLegal(legal[:0])
		for _, a := range legal {
			q := p
			if _, err := q.Step(a); err != nil {
				return false
			}
			if q.TotalFaceDown() < down {
				return false // a card turned
			}
			k := q.Key()
			if seen[k] || known[k] {
				continue
			}
			if len(seen) >= deadEndLimit {
				return false
			}
			seen[k] = true
			stack = append(stack, q)
		}
	}
	for k := range seen {
		known[k] = true
	}
	return true
}

// pictures draws the positions of a replay into an animated GIF and PNG
// frames, whichever were asked for.
type pictures struct {
	o      replayOptions
	pix    []uint8
	anim   *picture.Animation
	n      int   // positions drawn
	digits int   // in a frame's file name, so the names sort in order
	err    error // the first PNG that could not be written
	png    bytes.Buffer
	total  int       // positions to draw
	prog   *progress // on stderr, for long games
	undo   func()    // removes the --frames folders this replay made, if empty
	kept   bool      // finish wrote and reported the pictures
}

// frameName is the path of the picture of position i.
func (p *pictures) frameName(i int) string {
	return filepath.Join(p.o.frames, fmt.Sprintf("%0*d.png", p.digits, i))
}

// discard removes the frames of a replay that fails before finish reports
// them (a stop, a picture that cannot be written, a turning-point search
// cut short), and the --frames folders it made, left empty: unreported
// pictures, perhaps part of a game's, would pass for a whole game's, and
// would make the same command refuse the folder when run again.
func (p *pictures) discard() {
	if p.o.frames == "" || p.kept {
		return
	}
	for i := range p.n {
		os.Remove(p.frameName(i))
	}
	p.undo()
}

// notGIF says why the file at path is not a GIF picture, or "".
func notGIF(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return "cannot be read"
	}
	defer f.Close()
	head := make([]byte, 6)
	if _, err := io.ReadFull(f, head); err != nil || string(head) != "GIF87a" && string(head) != "GIF89a" {
		return "is not a GIF picture"
	}
	return ""
}

// checkPicturePaths checks, before anything is read or drawn, that --gif
// and --frames name places that can take them: the GIF is written once
// every frame is drawn, and must not fail then. Nor may the GIF replace
// the record replayed (record), one of the frames, or a file that holds
// anything but a GIF.
func checkPicturePaths(o replayOptions, record string) error {
	if o.gif != "" {
		if err := checkFilePath(o.gif, "game.gif"); err != nil {
			return usageError{fmt.Errorf("--gif %s: %v", o.gif, err)}
		}
		if samePath(o.gif, record) {
			return usageError{fmt.Errorf("--gif %s is the record replayed: the picture would replace the game; give another file name", o.gif)}
		}
		if o.frames != "" && isFrameName(filepath.Base(o.gif)) && samePath(filepath.Dir(o.gif), o.frames) {
			return usageError{fmt.Errorf("--gif %s is a frame's name in --frames %s: a frame would replace it, or it a frame; give another file name", o.gif, o.frames)}
		}
		if err := checkReplaceable(o.gif, notGIF); err != nil {
			return usageError{fmt.Errorf("--gif %s: %v", o.gif, err)}
		}
	}
	if o.frames != "" {
		if err := checkCreatable(o.frames); err != nil {
			return usageError{fmt.Errorf("--frames %s: %v", o.frames, err)}
		}
		// Frames of another game left in the folder would read as this
		// one's beyond its end.
		entries, _ := os.ReadDir(o.frames)
		for _, e := range entries {
			if isFrameName(e.Name()) {
				return usageError{fmt.Errorf("--frames %s already holds pictures of positions (%s, ...): remove them or choose another folder", o.frames, e.Name())}
			}
		}
	}
	return nil
}

// isFrameName reports whether name is a frame's file name: digits and .png.
func isFrameName(name string) bool {
	digits, ok := strings.CutSuffix(name, ".png")
	return ok && digits != "" && strings.Trim(digits, "0123456789") == ""
}

// Bounds on the pictures of one replay: a record may hold millions of
// actions. maxFrames is the most PNG files --frames writes; gifFrameBytes
// is what a frame of the animation costs at the peak of the process's
// memory (RSS), while the file is assembled: 20-21 KB a frame measured
// for 200,001 frames (3.98 and 4.12 GB), where a refusal matters; a
// smaller game's varies more with the collector's timing (15-26 KB for
// 20,001 frames), within what the rest of the machine leaves spare.
const (
	maxFrames     = 100_000
	gifFrameBytes = 20 << 10
)

// checkPictureCount refuses pictures of a game of the given number of
// actions that are too many (--frames) or need more memory than the
// machine has (--gif).
func checkPictureCount(o replayOptions, actions int) error {
	total := actions + 1
	if o.frames != "" && total > maxFrames {
		return usageError{fmt.Errorf("--frames: the game has %d positions, and at most %d pictures are written", total, maxFrames)}
	}
	if o.gif != "" {
		need := int64(total) * gifFrameBytes
		if avail, _, ok := machineMemory(); ok && need > avail {
			return usageError{fmt.Errorf("--gif: an animation of %d frames needs about %s of memory, over the %s available on this machine", total, bytesize.Format(need), bytesize.Format(avail))}
		}
	}
	return nil
}

// newPictures prepares the pictures of a game of the given number of
// actions (a picture of each position), refusing more frames than
// maxFrames, or an animation that would not fit the memory available.
// Progress goes to stderr.
func newPictures(o replayOptions, actions int, stderr io.Writer) (*pictures, error) {
	p := &pictures{o: o, digits: max(4, len(strconv.Itoa(actions))), total: actions + 1}
	if o.gif == "" && o.frames == "" {
		return p, nil
	}
	if err := checkPictureCount(o, actions); err != nil {
		return nil, err
	}
	if o.frames != "" {
		undo, err := makeFolder(o.frames)
		if err != nil {
			return nil, fmt.Errorf("--frames %s: %v", o.frames, err)
		}
		p.undo = undo
	}
	p.prog = newProgress(stderr)
	p.pix = make([]uint8, picture.Size)
	if o.gif != "" {
		p.anim = picture.NewAnimation()
	}
	return p, nil
}

// add draws s, the next position; last says it is the final one, which
// the animation holds longer.
func (p *pictures) add(s *env.State, last bool) {
	if p.pix == nil || p.err != nil {
		return
	}
	picture.Draw(p.pix, s)
	if p.anim != nil {
		d := p.o.delay
		switch {
		case last:
			d = max(d, gifLastHold)
		case p.n == 0:
			d = max(d, gifFirstHold)
		}
		p.anim.Add(p.pix, d)
	}
	if p.o.frames != "" {
		p.png.Reset()
		name := p.frameName(p.n)
		if err := png.Encode(&p.png, picture.Paletted(p.pix)); err != nil {
			p.err = err
		} else if err := atomicfile.Write(name, p.png.Bytes()); err != nil {
			p.err = err
		}
	}
	p.n++
	if p.n < p.total && p.prog.due(p.n, p.total) { // a line every 10 s (on a terminal, 0.2 s) of a long game
		p.prog.write(fmt.Sprintf("replay: drew %d of %d pictures", p.n, p.total))
	}
}

// finish writes the GIF and says what was written.
func (p *pictures) finish(stdout io.Writer) error {
	if p.prog != nil {
		p.prog.end()
	}
	if p.err != nil {
		return p.err
	}
	var b []byte
	if p.anim != nil {
		b = p.anim.Bytes()
		if err := atomicfile.Write(p.o.gif, b); err != nil {
			return err
		}
	}
	p.kept = true
	if p.o.frames != "" {
		noun := "pictures"
		if p.n == 1 {
			noun = "picture" // a record of no moves: the deal alone
		}
		fmt.Fprintf(stdout, "wrote %d %s into %s\n", p.n, noun, printable.Escape(p.o.frames))
	}
	if p.anim != nil {
		fmt.Fprintf(stdout, "wrote %s: %d frames, %d KB\n", printable.Escape(p.o.gif), p.anim.Frames(), (len(b)+1023)/1024)
	}
	return nil
}

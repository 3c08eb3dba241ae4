package cli

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unsafe"

	"github.com/spf13/pflag"

	"github.com/spiderenv/spider/agents"
	"github.com/spiderenv/spider/agents/nn"
	"github.com/spiderenv/spider/agents/remote"
	"github.com/spiderenv/spider/agents/suites"
	"github.com/spiderenv/spider/env"
	"github.com/spiderenv/spider/internal/bytesize"
	"github.com/spiderenv/spider/internal/msgpackcheck"
	"github.com/spiderenv/spider/internal/printable"
	"github.com/spiderenv/spider/internal/stats"
	"github.com/spiderenv/spider/record"
)

// evalOptions are the eval command's flags.
type evalOptions struct {
	stdinEOF bool // --exit-with-stdin
	game     env.Options
	policies string
	seeds    string
	games    int
	start    uint64
	workers  int
	nodes    int
	moveMs   int
	draw     uint64
	record   string
	out      outputFlags
	// suite names a benchmark suite (agents/suites): its deals, rules,
	// suits and step limit. listSuites prints them instead of playing.
	suite      string
	listSuites bool
	// remoteTimeout bounds each answer of a remote agent; remoteWidth is
	// how many of its games one request carries.
	remoteTimeout time.Duration
	remoteWidth   int
	// perGame adds every game's result to the JSON.
	perGame bool
	// set holds the flags given on the command line, to tell a --suits 1
	// that contradicts a suite from the default.
	set map[string]bool
}

func evalCommand(fs *pflag.FlagSet) func(context.Context, []string, io.Reader, io.Writer, io.Writer) error {
	var o evalOptions
	o.game = env.DefaultOptions()
	registerGameFlags(fs, &o.game)
	stepLimitNeeded(fs, "by eval, whose games must end")
	budgeted := listed(agents.NamesWith(func(t agents.Traits) bool { return t.Budget }), "and")
	fs.StringVar(&o.policies, "policies", "random,greedy", "comma-separated policies to compare: "+strings.Join(agents.Names(), ", ")+", nn:CHECKPOINT, remote:ADDRESS (an agent on unix:/path or a loopback host:port; PROTOCOL.md); at most 256")
	fs.StringVar(&o.suite, "suite", "", "play a benchmark suite's deals under its rules, suits and step limit: "+strings.Join(suites.Names(), ", "))
	fs.BoolVar(&o.listSuites, "list-suites", false, "list the benchmark suites and exit")
	fs.DurationVar(&o.remoteTimeout, "remote-timeout", remote.DefaultTimeout, "how long a remote agent may take to answer one request; past it the request's games fail (0: the default)")
	fs.BoolVar(&o.perGame, "per-game", false, "with --json, also list every game's result (seed, score, moves, a hash of its actions)")
	fs.IntVar(&o.remoteWidth, "remote-batch", remote.DefaultWidth, "games a remote agent is sent per request (1 to 4096; 0: the default)")
	fs.StringVar(&o.seeds, "seeds", "", "deals to play: a list and ranges, e.g. 1,5,10-19, each deal once (overrides --games)")
	fs.IntVar(&o.games, "games", 100, "deals to play: seeds --start to --start+games-1")
	fs.Uint64Var(&o.start, "start", 1, "first seed with --games")
	fs.IntVar(&o.workers, "workers", 0, "games played in parallel (0: GOMAXPROCS; at most 4096)")
	fs.IntVar(&o.nodes, "nodes", 0, "per-move search budget of "+budgeted+": positions explored per plan (0: 20000; at most 1048576, which takes about 1.4 GB of memory for each searching policy of each worker; an eval that would need more than the machine has available is refused)")
	fs.IntVar(&o.moveMs, "move-ms", 0, "milliseconds "+budgeted+" may plan a move, next to --nodes (0: no limit, so results are reproducible; with a limit they depend on the machine's speed and load)")
	fs.Uint64Var(&o.draw, "draw", 0, "which draw of their sampled hidden cards "+listed(agents.NamesWith(func(t agents.Traits) bool { return t.Draws }), "and")+" play (0: the default draw the reported results use); another draw plays the same search with other luck")
	fs.StringVar(&o.record, "record", "", "save every game into this folder as POLICY-SEED.spider, with a game's options away from the defaults before the seed (see spider replay; a file there that is not a record, or a folder where a record goes, is refused before any game); a stopped evaluation saves none, and a stop while they are saved keeps those saved")
	fs.BoolVar(&o.stdinEOF, "exit-with-stdin", false, exitWithStdinUsage)
	o.out.register(fs)
	return func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
		o.set = map[string]bool{}
		fs.Visit(func(f *pflag.Flag) { o.set[f.Name] = true })
		if !o.stdinEOF {
			return runEval(ctx, o, stdout, stderr)
		}
		// Python's evaluate() runs eval so: if Python dies, eval stops.
		ctx, cancel, ended := untilStdinEnds(ctx, stdin)
		defer cancel()
		err := runEval(ctx, o, stdout, stderr)
		if err != nil && ended() {
			return fmt.Errorf("stdin ended (--exit-with-stdin): %w", err)
		}
		return err
	}
}

// applySuite sets o's deals and game options from its suite, refusing
// flags that contradict it. A suite fixes every option of kind game
// (env.OptionField.Game: the rules, suits, step limit, clock and any
// added later); the others (--obs, --face-up-slots, --shaping) change
// only what a policy is shown or rewarded, not the games.
func applySuite(o *evalOptions) (*suites.Suite, []uint64, error) {
	s, err := suites.Lookup(o.suite)
	if err != nil {
		return nil, nil, usageError{err}
	}
	for _, f := range []string{"seeds", "games", "start"} {
		if o.set[f] {
			return nil, nil, usageError{fmt.Errorf("--suite %s fixes the deals: drop --%s", s.Name, f)}
		}
	}
	want := s.Options()
	for _, f := range env.OptionFields() {
		if !f.Game {
			continue
		}
		if o.set[f.Flag] && f.Text(o.game) != f.Text(want) {
			return nil, nil, usageError{fmt.Errorf("--suite %s plays --%s %s, not %s: drop --%s", s.Name, f.Flag, f.Text(want), f.Text(o.game), f.Flag)}
		}
		f.Copy(&o.game, want)
	}
	return &s, s.Seeds(), nil
}

// suiteRow is a suite as --list-suites shows it.
type suiteRow struct {
	suites.Suite
	LastSeed uint64 `json:"last_seed"`
}

func listSuites(w io.Writer, o evalOptions) error {
	var rows []suiteRow
	for _, s := range suites.All() {
		rows = append(rows, suiteRow{s, s.First + uint64(s.Count) - 1})
	}
	header := []string{"name", "version", "purpose", "rules", "suits", "max_steps", "first_seed", "last_seed", "deals"}
	done, err := o.out.write(w, rows, header, func() (out [][]string) {
		for _, r := range rows {
			out = append(out, []string{r.Name, r.Version, r.Purpose, r.RuleSet.String(), strconv.Itoa(r.Suits), strconv.Itoa(r.MaxSteps),
				strconv.FormatUint(r.First, 10), strconv.FormatUint(r.LastSeed, 10), strconv.Itoa(r.Count)})
		}
		return out
	})
	if done || err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "suite\tversion\tpurpose\trules\tsuits\tstep limit\tseeds\tdeals")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%d-%d\t%d\n", r.Name, r.Version, r.Purpose, r.RuleSet, r.Suits, r.MaxSteps, r.First, r.LastSeed, r.Count)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\ntest suites: report results on them, never tune on them; dev suites: tune on them (seeds 1-50000)")
	return nil
}

// parseSeeds reads "1,5,10-19".
func parseSeeds(s string) ([]uint64, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("--seeds is empty: give deals such as 1,5,10-19")
	}
	var out []uint64
	var ranges [][2]uint64 // to find a deal named twice
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.ParseUint(strings.TrimSpace(lo), 10, 64)
		if err != nil {
			// "-1" splits as a range with an empty LOW, so name the whole part.
			return nil, fmt.Errorf("seed %q is not a number from 0 to 2^64-1", part)
		}
		b := a
		if isRange {
			if b, err = strconv.ParseUint(strings.TrimSpace(hi), 10, 64); err != nil || b < a {
				return nil, fmt.Errorf("seed range %q: want LOW-HIGH with LOW <= HIGH", part)
			}
		}
		if b-a >= 10_000_000 || uint64(len(out))+(b-a) >= 10_000_000 {
			return nil, fmt.Errorf("seed range %q is too long: at most 10,000,000 deals in all", part)
		}
		for v := a; ; v++ {
			out = append(out, v)
			if v == b {
				break
			}
		}
		ranges = append(ranges, [2]uint64{a, b})
	}
	// A deal played twice would count twice in every mean, interval and
	// paired test as if it were two deals.
	slices.SortFunc(ranges, func(x, y [2]uint64) int { return cmp.Compare(x[0], y[0]) })
	for i := 1; i < len(ranges); i++ {
		if ranges[i][0] <= ranges[i-1][1] {
			return nil, fmt.Errorf("seed %d is listed twice: each deal is played once", ranges[i][0])
		}
	}
	return out, nil
}

// policySummary is one policy's line of the table.
type policySummary struct {
	Policy string `json:"policy"`
	// Spec is the policy as --policies named it (remote:unix:/tmp/a.sock).
	Spec string `json:"spec"`
	// Failures counts the games that stopped early because a remote agent
	// answered an illegal action, too late or not at all; they count as
	// not won, at the lowest score they could have ended with.
	Failures  int     `json:"failures"`
	Games     int     `json:"games"`
	Wins      int     `json:"wins"`
	WinRate   float64 `json:"win_rate"`
	WinLo     float64 `json:"win_rate_lo95"`
	WinHi     float64 `json:"win_rate_hi95"`
	Score     float64 `json:"mean_score"`
	ScoreHalf ci95    `json:"mean_score_ci95"`
	Runs      float64 `json:"mean_runs"`
	RunsHalf  ci95    `json:"mean_runs_ci95"`
	Moves     float64 `json:"mean_moves"`
	MsPerGame float64 `json:"ms_per_game"`
	MsPerMove float64 `json:"ms_per_move"`
	// Checkpoint is the SHA-256 of an nn: policy's file (hex, as sha256sum
	// prints it), the same before and after it was read, since a trainer
	// rewrites its checkpoints under the same names; empty for the others.
	Checkpoint string `json:"checkpoint_sha256,omitempty"`
}

// ci95 is the half-width of a mean's 95% interval, NaN where there is
// none (a policy of one game): null in JSON, an empty CSV cell and "n/a"
// in text, since a width of 0 would read as certainty.
type ci95 float64

// MarshalJSON writes h, or null for NaN.
func (h ci95) MarshalJSON() ([]byte, error) {
	if math.IsNaN(float64(h)) {
		return []byte("null"), nil
	}
	return json.Marshal(float64(h))
}

// UnmarshalJSON reads a number, or null as NaN.
func (h *ci95) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*h = ci95(math.NaN())
		return nil
	}
	return json.Unmarshal(b, (*float64)(h))
}

// csvText is text for a CSV cell that a spreadsheet must not run: a cell
// starting with =, +, -, @, a tab or a carriage return is a formula
// there, and a remote agent names itself (`=HYPERLINK(...)`), so such
// text gets a leading apostrophe, as OWASP advises. Only text cells take
// it, never a number's (-1.5).
func csvText(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}

// plusMinus writes mean ± h with prec decimals, or the mean and "± n/a".
func plusMinus(mean float64, h ci95, prec int) string {
	if math.IsNaN(float64(h)) {
		return strconv.FormatFloat(mean, 'f', prec, 64) + " ± n/a"
	}
	return strconv.FormatFloat(mean, 'f', prec, 64) + " ± " + strconv.FormatFloat(float64(h), 'f', prec, 64)
}

// comparison is one pair of policies on the same deals.
type comparison struct {
	A          string  `json:"a"`
	B          string  `json:"b"`
	OnlyAWon   int     `json:"only_a_won"`
	OnlyBWon   int     `json:"only_b_won"`
	WinsP      float64 `json:"mcnemar_p"`
	ScoreDiff  float64 `json:"mean_score_diff"`
	ScoreP     float64 `json:"score_paired_t_p"`
	RunsDiff   float64 `json:"mean_runs_diff"`
	RunsP      float64 `json:"runs_paired_t_p"`
	GamesPairs int     `json:"pairs"`
}

// evalSchema names the layout of eval's JSON (docs/results.md, "The eval
// JSON schema"): a field may be added under the same name, never removed
// or changed in meaning.
const evalSchema = "spider-eval/1"

// evalReport is the whole result. The game's options are embedded, so
// JSON carries each under its own key (rules, suits, max_steps, ...). It
// is JSON only: embedded, env.Options' DecodeMsgpack would read a whole
// msgpack report as game options.
type evalReport struct {
	Schema string `json:"schema"`
	// Suite is the benchmark suite played, nil for deals named by seed.
	Suite *suites.Suite `json:"suite"`
	env.Options
	Seeds    int    `json:"deals"`
	SeedList string `json:"seeds"`
	Program  string `json:"program_version"`
	// Nodes is --nodes, the search and oracle budget, default filled in
	// (reports written before it was filled in say 0 for the default),
	// since it changes how those policies play.
	Nodes int `json:"nodes"`
	// MoveMs is --move-ms, the time search and oracle may plan a move
	// (0: no limit), since with it their moves depend on the machine.
	MoveMs int `json:"move_ms"`
	// Draw is --draw, the draw of hidden cards search and search-hand
	// sample (0: the default), since another draw plays other games.
	Draw uint64 `json:"draw"`
	// Workers is how many games were played at once, which the times a
	// game and a move depend on (and, with MoveMs, the moves).
	Workers     int             `json:"workers"`
	Policies    []policySummary `json:"policies"`
	Comparisons []comparison    `json:"comparisons"`
	Failures    []gameFailure   `json:"failures"`
	// Games is every game, policy by policy, with --per-game.
	Games []gameRow `json:"games,omitempty"`
	// Stopped says the evaluation was stopped (Ctrl-C, a signal) and the
	// report holds only the deals every policy had finished.
	Stopped bool `json:"stopped,omitempty"`
	// FailedScore says how a failed game's score is counted: "lowest",
	// the lowest score it could still have ended with
	// (env.State.LowestScore). Reports written before it lack it: their
	// failed games kept the score they had, and results --pair does not
	// mix the two where games failed.
	FailedScore string `json:"failed_score,omitempty"`
}

// failedLowest is evalReport.FailedScore's value.
const failedLowest = "lowest"

// gameRow is one game's result. ActionsHash (the first 16 hex digits of
// the SHA-256 of the actions as little-endian uint16s) tells whether two
// policies played the same game move for move.
type gameRow struct {
	Policy      string `json:"policy"`
	Seed        uint64 `json:"seed"`
	Won         bool   `json:"won"`
	Score       int    `json:"score"`
	Runs        int    `json:"runs"`
	Moves       int    `json:"moves"`
	Failure     string `json:"failure,omitempty"`
	ActionsHash string `json:"actions_sha256"`
}

func actionsHash(actions []env.Action) string {
	h := sha256.New()
	var b [2]byte
	for _, a := range actions {
		binary.LittleEndian.PutUint16(b[:], uint16(a))
		h.Write(b[:])
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// gameFailure is one game that stopped early.
type gameFailure struct {
	Policy string `json:"policy"`
	Seed   uint64 `json:"seed"`
	Moves  int    `json:"moves"`
	Reason string `json:"reason"`
}

// seedRanges writes seeds as "1-200" or "1,5,10-19".
func seedRanges(seeds []uint64) string {
	var b strings.Builder
	for i := 0; i < len(seeds); {
		j := i
		for j+1 < len(seeds) && seeds[j+1] == seeds[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		if j == i {
			fmt.Fprintf(&b, "%d", seeds[i])
		} else {
			fmt.Fprintf(&b, "%d-%d", seeds[i], seeds[j])
		}
		i = j + 1
	}
	return b.String()
}

func runEval(ctx context.Context, o evalOptions, stdout, stderr io.Writer) error {
	if o.listSuites {
		if err := o.out.check(); err != nil {
			return err
		}
		for _, f := range slices.Sorted(maps.Keys(o.set)) { // the same flag named each time
			if f != "list-suites" && f != "json" && f != "csv" {
				return usageError{fmt.Errorf("--list-suites lists the suites and plays nothing: drop --%s", f)}
			}
		}
		return listSuites(stdout, o)
	}
	if err := checkMoveMs(o.moveMs); err != nil {
		return err
	}
	if o.nodes < 0 || o.nodes > agents.MaxNodes {
		return usageError{fmt.Errorf("--nodes %d: want 0 (search's default, 20000) to %d", o.nodes, agents.MaxNodes)}
	}
	aopts := agents.Options{Nodes: o.nodes, MoveTime: moveTime(o.moveMs), Draw: o.draw}
	var suite *suites.Suite
	var seeds []uint64
	var err error
	if o.suite != "" {
		if suite, seeds, err = applySuite(&o); err != nil {
			return err
		}
	}
	r, err := gameRules(o.game)
	if err != nil {
		return err
	}
	switch {
	case suite != nil:
	case o.seeds != "" || o.set["seeds"]:
		for _, f := range []string{"games", "start"} {
			if o.set[f] {
				return usageError{fmt.Errorf("--seeds names the deals: drop --%s", f)}
			}
		}
		if seeds, err = parseSeeds(o.seeds); err != nil {
			return usageError{err}
		}
	default:
		if o.games < 1 || o.games > 10_000_000 {
			return usageError{fmt.Errorf("--games %d: want 1 to 10,000,000", o.games)}
		}
		// Seeds are uint64: past the last, the deals would wrap to seed 0.
		if o.start > math.MaxUint64-uint64(o.games-1) {
			return usageError{fmt.Errorf("--start %d with --games %d runs past the last seed, %d", o.start, o.games, uint64(math.MaxUint64))}
		}
		for i := range o.games {
			seeds = append(seeds, o.start+uint64(i))
		}
	}
	// The policies, counted and their checkpoints sized before any maker
	// is made: an nn: policy reads its checkpoint (up to 2 GiB) whole
	// when its maker is made, and holds its weights to the end.
	var names []string
	for _, p := range strings.Split(o.policies, ",") {
		if p = strings.TrimSpace(p); p != "" {
			names = append(names, p)
		}
	}
	if len(names) > maxReportPolicies {
		// Its report would list more than spider results reads.
		return usageError{fmt.Errorf("%d policies: at most %d in one evaluation", len(names), maxReportPolicies)}
	}
	// Loading holds a file and the weights read from it, at most as
	// large again: checkpoints the machine cannot hold are refused before
	// any is read.
	var files, largest int64
	for _, p := range names {
		if path, ok := strings.CutPrefix(p, "nn:"); ok {
			if fi, err := os.Stat(path); err == nil {
				files += fi.Size()
				largest = max(largest, fi.Size())
			}
		}
	}
	if err := checkAvailable(files+largest, fmt.Sprintf("loading %s of nn: checkpoints", bytesize.Format(files)), "evaluate fewer networks at a time"); err != nil {
		return err
	}
	var specs []string
	// Each local policy's maker, made once, and each nn: policy's file's
	// hash.
	makers := map[string]agents.Maker{}
	checkpoints := map[string]string{}
	for _, p := range names {
		if !printable.Is(p) {
			// Reports and tables print it as it is, and spider results
			// refuses text that is not printable.
			return usageError{fmt.Errorf("policy %q is not printable text", p)}
		}
		if addr, ok := strings.CutPrefix(p, "remote:"); ok {
			if _, _, err := remote.ParseAddress(addr); err != nil {
				return usageError{err}
			}
		} else {
			// An nn: file is hashed before and after it is read, so that
			// the hash is of what was played even if a trainer rewrites
			// it meanwhile (it would differ, and the run stops).
			path, isNet := strings.CutPrefix(p, "nn:")
			if isNet {
				if checkpoints[p], err = fileSHA256(path); err != nil {
					return usageError{err}
				}
			}
			if makers[p], err = agents.NewWith(p, aopts); err != nil {
				return usageError{err}
			}
			// A network made for other rules is the command line's
			// mistake, as play's --hint says, not the run's failure.
			// (Only a network checks rules; a search made here would
			// take its tables before the memory check.)
			if isNet {
				if err := agents.CheckRules(makers[p](), r); err != nil {
					return usageError{fmt.Errorf("%s: %v", p, err)}
				}
				if after, err := fileSHA256(path); err != nil || after != checkpoints[p] {
					return fmt.Errorf("%s changed while it was read (was it being written?): run again", path)
				}
			}
		}
		if slices.Contains(specs, p) {
			// Its games would be written twice under one name.
			return usageError{fmt.Errorf("policy %q is listed twice", p)}
		}
		specs = append(specs, p)
	}
	if len(specs) == 0 {
		return usageError{fmt.Errorf("no policy to evaluate")}
	}
	// A flag no listed policy reads would change nothing, silently.
	budget, draws := func(t agents.Traits) bool { return t.Budget }, func(t agents.Traits) bool { return t.Draws }
	for _, f := range []struct {
		flag  string
		reads func(agents.Traits) bool
	}{{"nodes", budget}, {"move-ms", budget}, {"draw", draws}} {
		flag, reads := f.flag, f.reads
		if o.set[flag] && !slices.ContainsFunc(specs, func(p string) bool { return reads(agents.TraitsOf(p)) }) {
			return usageError{fmt.Errorf("--%s: no policy listed reads it (%s do)", flag, listed(agents.NamesWith(reads), "and"))}
		}
	}
	if o.workers < 0 || o.workers > maxWorkers {
		return usageError{fmt.Errorf("--workers %d: want 0 (GOMAXPROCS) to %d", o.workers, maxWorkers)}
	}
	if r.MaxSteps() < 0 {
		// A policy that loops (random, greedy, a search that sees no way
		// forward) would play one game for ever.
		return usageError{fmt.Errorf("--max-steps %d: eval needs a step limit to end every game", o.game.MaxSteps)}
	}
	if o.record != "" && r.MaxSteps() > record.MaxActions {
		return usageError{fmt.Errorf("--max-steps %d with --record: a record holds at most %d actions", r.MaxSteps(), record.MaxActions)}
	}
	switch {
	case o.remoteTimeout < 0:
		return usageError{fmt.Errorf("--remote-timeout %v is negative", o.remoteTimeout)}
	case o.remoteTimeout == 0:
		o.remoteTimeout = remote.DefaultTimeout
	}
	if o.remoteWidth == 0 {
		o.remoteWidth = remote.DefaultWidth
	}
	if o.perGame && !o.out.json {
		return usageError{errors.New("--per-game lists the games in the JSON report: add --json")}
	}
	if o.remoteWidth < 1 || o.remoteWidth > remote.MaxWidth {
		return usageError{fmt.Errorf("--remote-batch %d: want 1 to %d", o.remoteWidth, remote.MaxWidth)}
	}
	for _, flag := range []string{"remote-batch", "remote-timeout"} {
		if o.set[flag] && !slices.ContainsFunc(specs, func(p string) bool { return strings.HasPrefix(p, "remote:") }) {
			return usageError{fmt.Errorf("--%s: no policy listed reads it (remote:ADDRESS policies do)", flag)}
		}
	}
	if o.record != "" {
		// The games are saved after the last one is played: a folder that
		// cannot take them must fail now, not after the whole evaluation.
		// It is made only then (saveRecords), so that a refused run leaves
		// none behind.
		if err := checkCreatable(o.record); err != nil {
			return usageError{fmt.Errorf("--record %s: %v", o.record, err)}
		}
		stems := recordStems(specs, r, evalReport{Nodes: cmp.Or(o.nodes, agents.DefaultNodes), MoveMs: o.moveMs, Draw: o.draw})
		if err := checkRecordTargets(o.record, stems, seeds); err != nil {
			return usageError{fmt.Errorf("--record %s: %v", o.record, err)}
		}
	}
	if err := o.out.check(); err != nil {
		return err
	}
	if err := checkEvalMemory(specs, makers, o, r.MaxSteps(), len(seeds)); err != nil {
		return err
	}
	// What it holds is checked against the memory available, and the
	// collector keeps to it: left to its pacing, the heap of results grows
	// to twice what is live before each collection (measured: 452 MB of
	// RSS for 209 MB held, with --record).
	defer limitToAvailable()()
	// Remote agents are connected last, once every flag is known good, and
	// before any game: an agent that is not there fails the eval at once.
	policies := make([]agents.Policy, len(specs))
	labels := make([]string, len(specs))
	for i, p := range specs {
		policies[i].Name, labels[i] = p, agents.Label(p)
		addr, ok := strings.CutPrefix(p, "remote:")
		if !ok {
			policies[i].Maker = makers[p]
			continue
		}
		a, err := remote.Dial(ctx, addr, remote.Options{Rules: r, Timeout: o.remoteTimeout, Width: o.remoteWidth, Policy: p})
		if errors.Is(err, fs.ErrNotExist) {
			return usageError{err} // a socket file named that is not there, as any missing file
		}
		if err != nil {
			return err
		}
		defer a.Close()
		policies[i].Batch = a
		if a.Name() != "" {
			labels[i] = a.Name() + " (remote)"
		}
	}
	labels = uniqueLabels(labels, specs)
	prog := newProgress(stderr)
	// Each game's moves are hashed for --per-game as it ends, and kept
	// only for --record (copied to their size): held to the end, the move
	// lists of millions of games would take gigabytes.
	hashes := make([][]string, len(policies))
	for i := range hashes {
		if o.perGame {
			hashes[i] = make([]string, len(seeds))
		}
	}
	each := func(p, g int, res *agents.Result) {
		if o.perGame {
			hashes[p][g] = actionsHash(res.Actions)
		}
		if o.record == "" {
			res.Actions = nil
		} else {
			res.Actions = slices.Clone(res.Actions)
		}
	}
	ev, err := agents.EvaluateEach(ctx, r, policies, seeds, o.workers, func(deals, total int) {
		if !prog.due(deals, total) {
			return
		}
		const width = 30
		bar := strings.Repeat("#", deals*width/len(seeds)) + strings.Repeat(".", width-deals*width/len(seeds))
		prog.write(fmt.Sprintf("eval [%s] %d/%d deals", bar, deals, len(seeds)))
	}, each)
	prog.end()
	stopped := err
	if err != nil && ctx.Err() != nil && (ev == nil || len(ev.Seeds) == 0) {
		return fmt.Errorf("stopped before every policy had finished a deal, so there is nothing to report: %w", err)
	}
	if err != nil && (ev == nil || len(ev.Seeds) == 0 || ctx.Err() == nil) {
		return err
	}
	// A stop keeps the deals every policy finished: their results follow,
	// marked as stopped, and the command still fails.
	rep := summarize(ev, labels)
	for i := range rep.Policies {
		rep.Policies[i].Checkpoint = checkpoints[rep.Policies[i].Spec]
	}
	rep.Nodes, rep.MoveMs, rep.Draw = cmp.Or(o.nodes, agents.DefaultNodes), o.moveMs, o.draw
	local := 0
	for _, p := range policies {
		if p.Maker != nil {
			local++
		}
	}
	rep.Workers = evalWorkers(o.workers, local*len(seeds))
	rep.Suite = suite
	rep.Stopped = stopped != nil
	if o.perGame {
		// ev holds the deals every policy finished, in seed order: those
		// whose every game was hashed.
		kept := func(g int) bool {
			for p := range hashes {
				if hashes[p][g] == "" {
					return false
				}
			}
			return true
		}
		for p, results := range ev.Results {
			j := 0
			for g := range seeds {
				if !kept(g) {
					continue
				}
				x := results[j]
				j++
				rep.Games = append(rep.Games, gameRow{Policy: rep.Policies[p].Policy, Seed: x.Seed, Won: x.Won, Score: x.Score, Runs: x.Runs,
					Moves: x.Moves, Failure: x.Failure, ActionsHash: hashes[p][g]})
			}
		}
	}
	if err := writeEval(stdout, rep, o); err != nil {
		return err
	}
	// The records come after the results, so that a record that cannot
	// be saved (a full disk) does not cost the evaluation's report. A
	// stopped run saves none: saving takes a millisecond or two a game, and
	// the work must end within seconds of the stop.
	if stopped != nil {
		none := ""
		if o.record != "" {
			none = " (no records are saved after a stop)"
		}
		return fmt.Errorf("stopped after %d of %d deals, whose results are written%s: %w", len(ev.Seeds), len(seeds), none, stopped)
	}
	if o.record != "" {
		if err := saveRecords(ctx, o.record, ev, rep); err != nil {
			return fmt.Errorf("the results are written, but not every game's record: %w", err)
		}
	}
	return nil
}

// uniqueLabels makes labels distinct, so that two remote agents giving the
// same name stay apart in the tables: a repeated label gets its spec.
func uniqueLabels(labels, specs []string) []string {
	count := map[string]int{}
	for _, l := range labels {
		count[l]++
	}
	out := make([]string, len(labels))
	for i, l := range labels {
		out[i] = l
		if count[l] > 1 && l != specs[i] {
			out[i] = l + " [" + specs[i] + "]"
		}
	}
	return out
}

// saveRecords writes every game of ev into dir. A search or oracle played
// away from its defaults (rep's budget and draw) says so in its records'
// player and file names ("search (500 nodes, draw 1)" in
// search-n500-draw1-3.spider), and a game away from the default adds its
// options to the file names (search-cardems-suits2-3.spider), so that the
// records of two draws or two games saved into one folder do not
// overwrite each other. It stops with an error once ctx ends; each record
// it saved is whole.
func saveRecords(ctx context.Context, dir string, ev *agents.Evaluation, rep evalReport) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	names := recordStems(ev.Policies, ev.Rules, rep)
	total, saved := 0, 0
	for _, results := range ev.Results {
		total += len(results)
	}
	for p, results := range ev.Results {
		for _, res := range results {
			if ctx.Err() != nil {
				return fmt.Errorf("stopped after saving %d of %d, each whole: %w", saved, total, context.Cause(ctx))
			}
			s := env.NewGame(ev.Rules, res.Seed)
			for _, a := range res.Actions {
				s.Step(a)
			}
			name := filepath.Join(dir, fmt.Sprintf("%s-%d.spider", names[p], res.Seed))
			player := agents.Label(ev.Policies[p]) + budgetNote(ev.Policies[p], rep) // as the tables name it
			if err := saveRecord(name, record.New(ev.Rules, res.Seed, player, res.Actions, &s)); err != nil {
				return err
			}
			saved++
		}
	}
	return nil
}

// saveRecord is record.Save, a variable so that a test can fail it: what
// could fail it in a test (a folder where a record goes, a folder that
// takes no files) is refused before the evaluation.
var saveRecord = record.Save

// recordStems returns, for each policy of specs, the part of its records'
// file names before the seed (saveRecords), as rep's budget and draw and
// r's options away from the defaults name them.
func recordStems(specs []string, r env.Rules, rep evalReport) []string {
	game := gameTags(r.Options())
	tagged := make([]string, len(specs))
	for p, spec := range specs {
		_, tags := budgetOf(spec, rep)
		tagged[p] = strings.Join(append(append([]string{spec}, tags...), game...), "-")
	}
	return recordNames(tagged)
}

// checkRecordTargets reports a file in dir that a record of the eval (a
// stem of stems, then one of seeds) would replace but must not: a folder
// or other file that is not a regular one (a folder there failed the save
// after the whole evaluation, losing the records after it), or a file
// that does not start as a game record does (replaced without a word). A
// symbolic link is replaced by the record, its target untouched, so it
// passes. It reads dir's listing once, then each file it would replace
// only as far as its first entry: a rerun into the same folder may find
// millions.
func checkRecordTargets(dir string, stems []string, seeds []uint64) error {
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) == 0 {
		return nil // a folder still to make (checkCreatable has vetted it)
	}
	type target struct {
		name, stem string
	}
	found := map[uint64][]target{} // the files a record could replace, by seed
	for _, e := range entries {
		base, ok := strings.CutSuffix(e.Name(), ".spider")
		i := strings.LastIndexByte(base, '-')
		if !ok || i < 0 || !slices.Contains(stems, base[:i]) {
			continue
		}
		seed, err := strconv.ParseUint(base[i+1:], 10, 64)
		if err != nil || strconv.FormatUint(seed, 10) != base[i+1:] {
			continue
		}
		found[seed] = append(found[seed], target{e.Name(), base[:i]})
	}
	for _, seed := range seeds {
		for _, f := range found[seed] {
			path := filepath.Join(dir, f.name)
			st, err := os.Lstat(path)
			switch {
			case err != nil || st.Mode()&fs.ModeSymlink != 0:
			case !st.Mode().IsRegular():
				return fmt.Errorf("%s is not a regular file, where the record of %s on seed %d goes; remove it first, or give another folder", path, f.stem, seed)
			case st.Size() > 0 && !startsAsRecord(path):
				return fmt.Errorf("%s exists and is not a game record: not replaced; remove it first, or give another folder", path)
			}
		}
		delete(found, seed) // a seed listed twice is checked once
	}
	return nil
}

// startsAsRecord reports whether the file at path begins as a game record
// of this program's version does: its first entry, the format's version.
// The whole record is not read (eval may find millions); a file of
// another kind fails at its first bytes.
func startsAsRecord(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 64)
	n, _ := io.ReadFull(f, head)
	lead, err := msgpackcheck.Leading(head[:n], "version")
	if err != nil {
		return false
	}
	var h struct {
		Version int `msgpack:"version"`
	}
	return msgpackcheck.Decode(lead, &h) == nil && h.Version == record.Version
}

// gameTags names the options of kind game that o sets away from their
// defaults, for records' file names: "cardems", "suits2", "max-steps300".
// A record holds its game's options, but its name is all that keeps two
// evals of other games saved into one folder from overwriting each
// other's records of the same policy and seed.
func gameTags(o env.Options) []string {
	var tags []string
	def := env.DefaultOptions()
	for _, f := range env.OptionFields() {
		if !f.Game || f.Text(o) == f.Text(def) {
			continue
		}
		if f.Numeric || f.Float {
			tags = append(tags, f.Flag+f.Text(o))
		} else {
			tags = append(tags, f.Text(o))
		}
	}
	return tags
}

// maxRecordName is the longest policy part of a record's file name: with
// the seed and the temporary suffix of a save it stays far below the 255
// bytes a file name may have.
const maxRecordName = 80

// recordNames returns the part of their records' file names for each
// policy: fileSafe's, unless that is longer than maxRecordName or two
// policies share it (remote:unix:/tmp/a.sock and remote:unix:/tmp/a_sock),
// when it is cut and followed by a hash of the whole name, so that no
// policy's records overwrite another's.
func recordNames(policies []string) []string {
	count := map[string]int{}
	for _, p := range policies {
		count[fileSafe(p)]++
	}
	out := make([]string, len(policies))
	for i, p := range policies {
		name := fileSafe(p)
		if len(name) > maxRecordName || count[name] > 1 {
			h := fnv.New32a()
			h.Write([]byte(p))
			name = fmt.Sprintf("%s-%08x", name[:min(len(name), maxRecordName-9)], h.Sum32())
		}
		out[i] = name
	}
	return out
}

// fileSafe turns a policy name (nn:run/checkpoint.spider, say) into part
// of a file name.
func fileSafe(name string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, name)
}

// summarize computes the report of ev; labels[p] names policy p in the
// tables (nil: agents.Label of its name).
func summarize(ev *agents.Evaluation, labels []string) evalReport {
	if labels == nil {
		for _, p := range ev.Policies {
			labels = append(labels, agents.Label(p))
		}
	}
	rep := evalReport{Schema: evalSchema, Options: ev.Rules.Options(), Seeds: len(ev.Seeds), SeedList: seedRanges(ev.Seeds), Program: programVersion(), FailedScore: failedLowest,
		Policies: []policySummary{}, Comparisons: []comparison{}, Failures: []gameFailure{}}
	column := func(res []agents.Result, f func(agents.Result) float64) []float64 {
		out := make([]float64, len(res))
		for i, x := range res {
			out[i] = f(x)
		}
		return out
	}
	score := func(x agents.Result) float64 { return float64(x.Score) }
	runs := func(x agents.Result) float64 { return float64(x.Runs) }
	for p, res := range ev.Results {
		s := policySummary{Policy: labels[p], Spec: ev.Policies[p], Games: len(res)}
		var moves, ms float64
		for _, x := range res {
			if x.Won {
				s.Wins++
			}
			if x.Failure != "" {
				s.Failures++
				rep.Failures = append(rep.Failures, gameFailure{Policy: labels[p], Seed: x.Seed, Moves: x.Moves, Reason: x.Failure})
			}
			moves += float64(x.Moves)
			ms += float64(x.Elapsed) / 1e6
		}
		s.WinRate = float64(s.Wins) / float64(len(res))
		s.WinLo, s.WinHi = stats.Wilson(s.Wins, len(res))
		var scoreHalf, runsHalf float64
		s.Score, scoreHalf = stats.Mean(column(res, score))
		s.Runs, runsHalf = stats.Mean(column(res, runs))
		s.ScoreHalf, s.RunsHalf = ci95(scoreHalf), ci95(runsHalf)
		s.Moves, s.MsPerGame = moves/float64(len(res)), ms/float64(len(res))
		if moves > 0 {
			s.MsPerMove = ms / moves
		}
		rep.Policies = append(rep.Policies, s)
	}
	for a := range ev.Results {
		for b := a + 1; b < len(ev.Results); b++ {
			rep.Comparisons = append(rep.Comparisons, compare(labels[a], labels[b], ev.Results[a], ev.Results[b]))
		}
	}
	return rep
}

// compare pairs two policies' games, game i of each on the same deal:
// McNemar's exact test on wins, paired t-tests on score and runs.
func compare(a, b string, x, y []agents.Result) comparison {
	c := comparison{A: a, B: b, GamesPairs: len(x)}
	score, runs := make([][]float64, 2), make([][]float64, 2)
	for i := range x {
		if x[i].Won && !y[i].Won {
			c.OnlyAWon++
		}
		if y[i].Won && !x[i].Won {
			c.OnlyBWon++
		}
		score[0], score[1] = append(score[0], float64(x[i].Score)), append(score[1], float64(y[i].Score))
		runs[0], runs[1] = append(runs[0], float64(x[i].Runs)), append(runs[1], float64(y[i].Runs))
	}
	c.WinsP = stats.McNemar(c.OnlyAWon, c.OnlyBWon)
	c.ScoreDiff, c.ScoreP = stats.PairedT(score[0], score[1])
	c.RunsDiff, c.RunsP = stats.PairedT(runs[0], runs[1])
	return c
}

func writeEval(w io.Writer, rep evalReport, o evalOptions) error {
	// The columns after stopped came later, at the end so that older
	// readers' column numbers still hold: what else the JSON says of how
	// the games were played and timed, then the other options, last and
	// read from env's table, so that a new one adds a column at the end
	// (what a remote agent is shown changes its games too).
	header := []string{"rules", "suits", "policy", "games", "wins", "win_rate", "win_lo95", "win_hi95", "mean_score", "score_ci95", "mean_runs", "runs_ci95", "mean_moves", "ms_per_game", "ms_per_move", "failures", "suite", "max_steps", "stopped",
		"nodes", "move_ms", "draw", "seeds", "suite_version", "workers", "program_version", "checkpoint_sha256"}
	header, others := optionColumns(header)
	done, err := o.out.write(w, rep, header, func() (rows [][]string) {
		f := func(v float64) string { return strconv.FormatFloat(v, 'f', 4, 64) }
		half := func(h ci95) string { // empty where there is no interval
			if math.IsNaN(float64(h)) {
				return ""
			}
			return f(float64(h))
		}
		for _, p := range rep.Policies {
			row := []string{rep.RuleSet.String(), strconv.Itoa(rep.Suits), csvText(p.Policy), strconv.Itoa(p.Games), strconv.Itoa(p.Wins), f(p.WinRate), f(p.WinLo), f(p.WinHi),
				f(p.Score), half(p.ScoreHalf), f(p.Runs), half(p.RunsHalf), f(p.Moves), f(p.MsPerGame), f(p.MsPerMove),
				strconv.Itoa(p.Failures), suiteName(rep.Suite), strconv.Itoa(rep.MaxSteps), strconv.FormatBool(rep.Stopped)}
			version := ""
			if rep.Suite != nil {
				version = rep.Suite.Version
			}
			row = append(row, strconv.Itoa(rep.Nodes), strconv.Itoa(rep.MoveMs), strconv.FormatUint(rep.Draw, 10),
				rep.SeedList, version, strconv.Itoa(rep.Workers), rep.Program, p.Checkpoint)
			rows = append(rows, others(row, rep.Options))
		}
		return rows
	})
	if done || err != nil {
		return err
	}
	if rep.Suite != nil {
		fmt.Fprintf(w, "suite %s (version %s): ", rep.Suite.Name, rep.Suite.Version)
	}
	stopped := ""
	if rep.Stopped {
		stopped = " (stopped early: the deals every policy finished)"
	}
	workers := ""
	if rep.Workers > 0 { // 0: every policy was remote
		workers = fmt.Sprintf(", %d worker(s)", rep.Workers)
	}
	fmt.Fprintf(w, "%s, %d suit(s), %d deals (seeds %s)%s, step limit %d%s%s\n\n", rep.RuleSet, rep.Suits, rep.Seeds,
		cutSeeds(rep.SeedList, 60), stopped, rep.MaxSteps, otherOptions(rep.Options), workers)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "policy\tgames\twins\twin rate (95% CI)\tmean score (95% CI)\tmean runs (95% CI)\tmean moves\tms/game\tms/move\t")
	for _, p := range rep.Policies {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.1f%% (%.1f-%.1f)\t%s\t%s\t%.0f\t%.1f\t%.2f\t\n",
			p.Policy+budgetNote(p.Spec, rep), p.Games, p.Wins, 100*p.WinRate, 100*p.WinLo, 100*p.WinHi, plusMinus(p.Score, p.ScoreHalf, 1), plusMinus(p.Runs, p.RunsHalf, 2), p.Moves, p.MsPerGame, p.MsPerMove)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	// A checkpoint's path says little once a trainer rewrites the file:
	// its hash says which network played, as the JSON and CSV say.
	for _, p := range rep.Policies {
		if p.Checkpoint != "" {
			fmt.Fprintf(w, "%s: checkpoint sha256 %s\n", p.Policy, p.Checkpoint)
		}
	}
	writeFailures(w, rep)
	if len(rep.Comparisons) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\npaired comparisons (same deals): McNemar's exact test on wins, paired t-test on score and runs")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "A\tB\tonly A won\tonly B won\twins p\tscore A-B\tscore p\truns A-B\truns p\t")
	for _, c := range rep.Comparisons {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%+.1f\t%s\t%+.2f\t%s\t\n", c.A, c.B, c.OnlyAWon, c.OnlyBWon, stats.FormatP(c.WinsP, 3), c.ScoreDiff, stats.FormatP(c.ScoreP, 3), c.RunsDiff, stats.FormatP(c.RunsP, 3))
	}
	return tw.Flush()
}

func suiteName(s *suites.Suite) string {
	if s == nil {
		return ""
	}
	return s.Name
}

// failuresShown is how many failed games per policy the text output lists;
// --json lists them all.
const failuresShown = 20

// writeFailures lists the games that stopped early, per policy.
func writeFailures(w io.Writer, rep evalReport) {
	if len(rep.Failures) == 0 {
		return
	}
	fmt.Fprintln(w, "\nfailed games (stopped early; counted as not won, at the lowest score they could still have ended with):")
	shown := map[string]int{}
	for _, f := range rep.Failures {
		if shown[f.Policy]++; shown[f.Policy] <= failuresShown {
			fmt.Fprintf(w, "  %s, seed %d, after %d moves: %s\n", f.Policy, f.Seed, f.Moves, f.Reason)
		}
	}
	for _, p := range rep.Policies {
		if n := shown[p.Policy] - failuresShown; n > 0 {
			fmt.Fprintf(w, "  %s: %d more (--json lists every one)\n", p.Policy, n)
		}
	}
}

// programVersion is the version line of spider version without "spider ":
// the version, the commit when Go recorded it, and the toolchain.
func programVersion() string {
	info, _ := debug.ReadBuildInfo()
	return strings.TrimPrefix(versionLine(Version, info), "spider ")
}

// maxWorkers bounds --workers: each worker is a goroutine holding an
// agent of every policy, and far more than the machine's cores only
// costs memory.
const maxWorkers = 4096

// Bytes eval holds for each game to the end: its agents.Result (twice
// after a stop, which copies the finished deals' results) and the
// evaluation's flags; with --per-game its hash, its row and its share of
// the JSON report, which is built whole (measured: about 1.3 KB
// allocated a row).
const (
	evalResultBytes  = 2*int64(unsafe.Sizeof(agents.Result{})) + 8
	evalPerGameBytes = 48 + int64(unsafe.Sizeof(gameRow{})) + 16 + 1400
)

// checkEvalMemory refuses an evaluation that needs more memory than the
// machine has available, before any game: each worker holds an agent of
// every local policy, and a search reserves its whole node budget at its
// first plan (over a gigabyte at --nodes 1048576); the nn: policies'
// weights are shared; a worker's game in play, and each greedy or nn:
// agent it keeps, holds agents.MoveBytes a move up to the step limit, and
// each of a remote agent's games in play its move list; and each game's
// result is held to the end, with its row for --per-game and its moves
// (up to the step limit) for --record. Too large a run must be refused
// now, with the figure, not met by the kernel's out-of-memory killer
// partway through the games.
func checkEvalMemory(specs []string, makers map[string]agents.Maker, o evalOptions, maxSteps, deals int) error {
	var perWorker, shared int64
	local, remembering, searching := 0, 0, false
	for _, p := range specs {
		m, ok := makers[p]
		if !ok {
			continue // remote: its agent is another process
		}
		local++
		switch a := m().(type) {
		case *agents.Search:
			perWorker += a.Bytes()
			searching = true
		case *agents.Neural:
			// A columns network's forward pass can be several times
			// its weights, which the workers share.
			perWorker += a.Bytes()
			remembering++
			shared += weightBytes(a.Net)
		case *agents.Greedy:
			remembering++
		}
	}
	workers := evalWorkers(o.workers, local*deals)
	// A worker's game in play holds its moves so far, up to the step
	// limit; a greedy or nn: agent, which a worker keeps for the whole
	// run, holds the positions of the longest game it played (clearing a
	// map keeps its memory): MoveBytes a move for each, at least one.
	inPlay := agents.MoveBytes * int64(maxSteps)
	perWorker += int64(max(1, remembering)) * inPlay
	// A remote agent's games in play hold only their move lists here, and
	// each remote policy's connection its requests' buffers.
	remoteWidth := min(cmp.Or(o.remoteWidth, remote.DefaultWidth), deals)
	remoteGames := int64(len(specs)-local) * int64(remoteWidth)
	remoteInPlay := agents.MoveListBytes * int64(maxSteps)
	var requests int64
	if remoteGames > 0 {
		requests = int64(len(specs)-local) * remote.RequestBytes(env.MustRules(o.game), remoteWidth)
	}
	perGame := evalResultBytes
	if o.perGame {
		perGame += evalPerGameBytes
	}
	if o.record != "" {
		perGame += 2 * int64(maxSteps)
	}
	games := int64(len(specs)) * int64(deals)
	need := shared + int64(workers)*perWorker + remoteGames*remoteInPlay + requests + games*perGame
	what := fmt.Sprintf("%d games (%s each, held to the end)", games, bytesize.Format(perGame))
	if shared > 0 {
		what += fmt.Sprintf(", networks' weights (%s)", bytesize.Format(shared))
	}
	if workers > 0 {
		what += fmt.Sprintf(" and %d workers (%s each: games in play at %s a move up to the step limit", workers, bytesize.Format(perWorker), bytesize.Format(agents.MoveBytes))
		if searching {
			what += ", and search positions"
		}
		what += ")"
	}
	if remoteGames > 0 {
		what += fmt.Sprintf(" and %d remote games in play (%s each, and %s of requests a remote policy)", remoteGames, bytesize.Format(remoteInPlay), bytesize.Format(requests/int64(len(specs)-local)))
	}
	return checkAvailable(need, "an evaluation of "+what, "lower --workers, --nodes, --max-steps or --remote-batch, or split the seeds into ranges (--seeds A-B) and pair the parts with spider results --pair")
}

// cutSeeds shortens a list of seed ranges to at most about max bytes at a
// comma, so that no seed is cut in two: "1-5,9,12,..." .
func cutSeeds(list string, max int) string {
	if len(list) <= max {
		return list
	}
	if i := strings.LastIndexByte(list[:max], ','); i > 0 {
		return list[:i] + ",..."
	}
	return printable.Cut(list, max)
}

// fileSHA256 returns the SHA-256 of the file at path in hex, read a
// little at a time.
func fileSHA256(path string) (string, error) {
	// A regular file only, read no further than a checkpoint can be: a
	// device (nn:/dev/zero) was hashed for ever, a named pipe with no
	// writer blocked the open, and a pipe cannot be read twice anyway.
	f, _, err := msgpackcheck.OpenFile(path, false)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(f, nn.MaxSize+1))
	switch {
	case err != nil:
		return "", fmt.Errorf("%s: %w", path, err)
	case n > nn.MaxSize:
		return "", fmt.Errorf("%s: more than %d bytes, more than any checkpoint can have", path, int64(nn.MaxSize))
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// evalWorkers is how many games of the policies in this process an eval
// plays at once, as agents.EvaluatePolicies starts them: --workers (0:
// GOMAXPROCS), at most one a game.
func evalWorkers(flag, games int) int {
	if flag <= 0 {
		flag = runtime.GOMAXPROCS(0)
	}
	return min(flag, games)
}

// otherOptions names the options, besides the rule set, suits and step
// limit the summary names anyway, that o sets away from their defaults
// (", time-per-action-ms 1500", ", obs float32"), so that the text of a
// run of another game, or of one that showed a remote agent another
// observation, does not read as the default's.
func otherOptions(o env.Options) string {
	var b strings.Builder
	def := env.DefaultOptions()
	for _, f := range env.OptionFields() {
		if f.Key != "rules" && f.Key != "suits" && f.Key != "max_steps" && f.Text(o) != f.Text(def) {
			fmt.Fprintf(&b, ", %s %s", f.Flag, f.Text(o))
		}
	}
	return b.String()
}

// listed joins names as a sentence does: "a, b and c" (conj "and").
func listed(names []string, conj string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " " + conj + " " + names[len(names)-1]
}

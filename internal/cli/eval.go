package cli

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/pflag"

	"github.com/spiderenv/spider/agents"
	"github.com/spiderenv/spider/env"
	"github.com/spiderenv/spider/internal/stats"
	"github.com/spiderenv/spider/record"
)

// evalOptions are the eval command's flags.
type evalOptions struct {
	game     env.Options
	policies string
	seeds    string
	games    int
	start    uint64
	workers  int
	nodes    int
	record   string
	out      outputFlags
}

func evalCommand(fs *pflag.FlagSet) func(context.Context, []string, io.Reader, io.Writer, io.Writer) error {
	var o evalOptions
	o.game = env.DefaultOptions()
	registerGameFlags(fs, &o.game)
	fs.StringVar(&o.policies, "policies", "random,greedy", "comma-separated policies to compare: "+strings.Join(agents.Names(), ", ")+", nn:CHECKPOINT")
	fs.StringVar(&o.seeds, "seeds", "", "deals to play: a list and ranges, e.g. 1,5,10-19 (overrides --games)")
	fs.IntVar(&o.games, "games", 100, "deals to play: seeds --start to --start+games-1")
	fs.Uint64Var(&o.start, "start", 1, "first seed with --games")
	fs.IntVar(&o.workers, "workers", 0, "games played in parallel (0: GOMAXPROCS)")
	fs.IntVar(&o.nodes, "nodes", 0, "per-move search budget of search and oracle: positions explored per plan (0: 20000)")
	fs.StringVar(&o.record, "record", "", "save every game into this folder as POLICY-SEED.spider (see spider replay)")
	o.out.register(fs)
	return func(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
		return runEval(ctx, o, stdout, stderr)
	}
}

// parseSeeds reads "1,5,10-19".
func parseSeeds(s string) ([]uint64, error) {
	var out []uint64
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.ParseUint(strings.TrimSpace(lo), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("seed %q is not a number", lo)
		}
		b := a
		if isRange {
			if b, err = strconv.ParseUint(strings.TrimSpace(hi), 10, 64); err != nil || b < a {
				return nil, fmt.Errorf("seed range %q: want LOW-HIGH with LOW <= HIGH", part)
			}
		}
		if b-a >= 10_000_000 || uint64(len(out))+(b-a) >= 10_000_000 {
			return nil, fmt.Errorf("seed range %q is too long", part)
		}
		for v := a; ; v++ {
			out = append(out, v)
			if v == b {
				break
			}
		}
	}
	return out, nil
}

// policySummary is one policy's line of the table.
type policySummary struct {
	Policy    string  `json:"policy"`
	Games     int     `json:"games"`
	Wins      int     `json:"wins"`
	WinRate   float64 `json:"win_rate"`
	WinLo     float64 `json:"win_rate_lo95"`
	WinHi     float64 `json:"win_rate_hi95"`
	Score     float64 `json:"mean_score"`
	ScoreHalf float64 `json:"mean_score_ci95"`
	Runs      float64 `json:"mean_runs"`
	RunsHalf  float64 `json:"mean_runs_ci95"`
	Moves     float64 `json:"mean_moves"`
	MsPerGame float64 `json:"ms_per_game"`
	MsPerMove float64 `json:"ms_per_move"`
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

// evalReport is the whole result. The game's options are embedded, so
// JSON carries each under its own key (rules, suits, max_steps, ...).
type evalReport struct {
	env.Options
	Seeds       int             `json:"deals"`
	Policies    []policySummary `json:"policies"`
	Comparisons []comparison    `json:"comparisons"`
}

func runEval(ctx context.Context, o evalOptions, stdout, stderr io.Writer) error {
	r, err := gameRules(o.game)
	if err != nil {
		return err
	}
	var seeds []uint64
	if o.seeds != "" {
		if seeds, err = parseSeeds(o.seeds); err != nil {
			return usageError{err}
		}
	} else {
		if o.games < 1 || o.games > 10_000_000 {
			return usageError{fmt.Errorf("games must be 1 to 10,000,000")}
		}
		// Seeds are uint64: past the last, the deals would wrap to seed 0.
		if o.start > math.MaxUint64-uint64(o.games-1) {
			return usageError{fmt.Errorf("--start %d with --games %d runs past the last seed, %d", o.start, o.games, uint64(math.MaxUint64))}
		}
		for i := range o.games {
			seeds = append(seeds, o.start+uint64(i))
		}
	}
	var policies []string
	for _, p := range strings.Split(o.policies, ",") {
		if p = strings.TrimSpace(p); p != "" {
			if _, err := agents.NewWith(p, agents.Options{Nodes: o.nodes}); err != nil {
				return usageError{err}
			}
			policies = append(policies, p)
		}
	}
	if len(policies) == 0 {
		return usageError{fmt.Errorf("no policy to evaluate")}
	}
	if o.workers < 0 {
		return usageError{fmt.Errorf("--workers %d is negative (0: GOMAXPROCS)", o.workers)}
	}
	if o.record != "" {
		// The games are saved after the last one is played: a folder that
		// cannot take them must fail now, not after the whole evaluation.
		if err := os.MkdirAll(o.record, 0o755); err != nil {
			return usageError{fmt.Errorf("--record %s: %v", o.record, err)}
		}
		if err := probeWritable(o.record); err != nil {
			return usageError{fmt.Errorf("--record %s: %v", o.record, err)}
		}
	}
	if err := o.out.check(); err != nil {
		return err
	}
	prog := newProgress(stderr)
	ev, err := agents.Evaluate(ctx, r, policies, seeds, o.workers, agents.Options{Nodes: o.nodes}, func(done, total int) {
		if !prog.due(done, total) {
			return
		}
		// Evaluate counts games, every policy's on every deal, handing
		// them out deal by deal; the user asked for deals, so count those.
		deals := done / len(policies)
		const width = 30
		bar := strings.Repeat("#", deals*width/len(seeds)) + strings.Repeat(".", width-deals*width/len(seeds))
		prog.write(fmt.Sprintf("eval [%s] %d/%d deals", bar, deals, len(seeds)))
	})
	prog.end()
	if err != nil {
		return err
	}
	if o.record != "" {
		if err := saveRecords(o.record, ev); err != nil {
			return err
		}
	}
	return writeEval(stdout, summarize(ev), o)
}

// saveRecords writes every game of ev into dir.
func saveRecords(dir string, ev *agents.Evaluation) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for p, results := range ev.Results {
		for _, res := range results {
			s := env.NewGame(ev.Rules, res.Seed)
			for _, a := range res.Actions {
				s.Step(a)
			}
			name := filepath.Join(dir, fmt.Sprintf("%s-%d.spider", fileSafe(ev.Policies[p]), res.Seed))
			if err := record.Save(name, record.New(ev.Rules, res.Seed, ev.Policies[p], res.Actions, &s)); err != nil {
				return err
			}
		}
	}
	return nil
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

func summarize(ev *agents.Evaluation) evalReport {
	rep := evalReport{Options: ev.Rules.Options(), Seeds: len(ev.Seeds)}
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
		s := policySummary{Policy: agents.Label(ev.Policies[p]), Games: len(res)}
		var moves, ms float64
		for _, x := range res {
			if x.Won {
				s.Wins++
			}
			moves += float64(x.Moves)
			ms += float64(x.Elapsed) / 1e6
		}
		s.WinRate = float64(s.Wins) / float64(len(res))
		s.WinLo, s.WinHi = stats.Wilson(s.Wins, len(res))
		s.Score, s.ScoreHalf = stats.Mean(column(res, score))
		s.Runs, s.RunsHalf = stats.Mean(column(res, runs))
		s.Moves, s.MsPerGame = moves/float64(len(res)), ms/float64(len(res))
		if moves > 0 {
			s.MsPerMove = ms / moves
		}
		rep.Policies = append(rep.Policies, s)
	}
	for a := range ev.Results {
		for b := a + 1; b < len(ev.Results); b++ {
			c := comparison{A: agents.Label(ev.Policies[a]), B: agents.Label(ev.Policies[b]), GamesPairs: len(ev.Seeds)}
			for i := range ev.Seeds {
				wa, wb := ev.Results[a][i].Won, ev.Results[b][i].Won
				if wa && !wb {
					c.OnlyAWon++
				}
				if wb && !wa {
					c.OnlyBWon++
				}
			}
			c.WinsP = stats.McNemar(c.OnlyAWon, c.OnlyBWon)
			c.ScoreDiff, c.ScoreP = stats.PairedT(column(ev.Results[a], score), column(ev.Results[b], score))
			c.RunsDiff, c.RunsP = stats.PairedT(column(ev.Results[a], runs), column(ev.Results[b], runs))
			rep.Comparisons = append(rep.Comparisons, c)
		}
	}
	return rep
}

func writeEval(w io.Writer, rep evalReport, o evalOptions) error {
	header := []string{"rules", "suits", "policy", "games", "wins", "win_rate", "win_lo95", "win_hi95", "mean_score", "score_ci95", "mean_runs", "runs_ci95", "mean_moves", "ms_per_game", "ms_per_move"}
	done, err := o.out.write(w, rep, header, func() (rows [][]string) {
		f := func(v float64) string { return strconv.FormatFloat(v, 'f', 4, 64) }
		for _, p := range rep.Policies {
			rows = append(rows, []string{rep.RuleSet.String(), strconv.Itoa(rep.Suits), p.Policy, strconv.Itoa(p.Games), strconv.Itoa(p.Wins), f(p.WinRate), f(p.WinLo), f(p.WinHi),
				f(p.Score), f(p.ScoreHalf), f(p.Runs), f(p.RunsHalf), f(p.Moves), f(p.MsPerGame), f(p.MsPerMove)})
		}
		return rows
	})
	if done || err != nil {
		return err
	}
	fmt.Fprintf(w, "%s, %d suit(s), %d deals, step limit %d\n\n", rep.RuleSet, rep.Suits, rep.Seeds, rep.MaxSteps)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "policy\tgames\twins\twin rate (95% CI)\tmean score (95% CI)\tmean runs (95% CI)\tmean moves\tms/game\tms/move\t")
	for _, p := range rep.Policies {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.1f%% (%.1f-%.1f)\t%.1f ± %.1f\t%.2f ± %.2f\t%.0f\t%.1f\t%.2f\t\n",
			p.Policy, p.Games, p.Wins, 100*p.WinRate, 100*p.WinLo, 100*p.WinHi, p.Score, p.ScoreHalf, p.Runs, p.RunsHalf, p.Moves, p.MsPerGame, p.MsPerMove)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(rep.Comparisons) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\npaired comparisons (same deals): McNemar's exact test on wins, paired t-test on score and runs")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "A\tB\tonly A won\tonly B won\twins p\tscore A-B\tscore p\truns A-B\truns p\t")
	for _, c := range rep.Comparisons {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.3g\t%+.1f\t%.3g\t%+.2f\t%.3g\t\n", c.A, c.B, c.OnlyAWon, c.OnlyBWon, c.WinsP, c.ScoreDiff, c.ScoreP, c.RunsDiff, c.RunsP)
	}
	return tw.Flush()
}

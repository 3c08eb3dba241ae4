package cli

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/spiderenv/spider/env"
	"github.com/spiderenv/spider/internal/bytesize"
	"github.com/spiderenv/spider/server"
)

// benchOverhead is what spider bench holds beside its batch: the program
// itself, 16-18 MiB in the pure-Go build and 28-29 MiB with OpenBLAS
// (peak RSS of --n 1), with room to spare. The heap's own bookkeeping,
// which grows with the batch, is counted beside it (benchHeapShare).
const benchOverhead = 40 << 20

// benchHeapShare is the share of the batch the Go heap's bookkeeping
// (its spans and bitmaps) adds: about 2.6 MiB for 3.3 GB measured, so a
// 256th leaves room. With the fixed 32 MiB alone, a batch of 65,536
// float32 games went 3 MiB past its --max-memory in the OpenBLAS build.
const benchHeapShare = 256

// benchOptions are the bench command's flags.
type benchOptions struct {
	game      env.Options
	n         int
	workers   int
	steps     int
	warmup    int
	autoreset string
	seed      uint64
	maxMemory byteSize
	out       outputFlags
}

// benchResult is one measured run, as the table, JSON and CSV print it.
type benchResult struct {
	// Options are the game's, defaults filled in: rules, suits and obs
	// under their keys as before, beside every option that changes what a
	// step does, such as the face-up slots an observation writes.
	env.Options
	Seed        uint64  `json:"seed"`
	Warmup      int     `json:"warmup"`
	Program     string  `json:"program_version"`
	Autoreset   string  `json:"autoreset"`
	N           int     `json:"n"`
	Workers     int     `json:"workers"`
	Steps       int     `json:"steps"`
	EnvSteps    int64   `json:"env_steps"`
	Seconds     float64 `json:"seconds"`
	StepsPerSec float64 `json:"env_steps_per_sec"`
	NsPerStep   float64 `json:"ns_per_env_step"`
	Episodes    int64   `json:"episodes"`
	SpeedUp     float64 `json:"speedup_vs_1_worker"`
}

func benchCommand(fs *pflag.FlagSet) func(context.Context, []string, io.Reader, io.Writer, io.Writer) error {
	var o benchOptions
	o.game = env.DefaultOptions()
	registerGameFlags(fs, &o.game)
	fs.IntVar(&o.n, "n", 4096, "games stepped together")
	fs.IntVar(&o.workers, "workers", 0, "worker goroutines (0: GOMAXPROCS); 1 worker is also measured for the speed-up")
	fs.IntVar(&o.steps, "steps", 500, "batch steps to time (each steps every game once)")
	fs.IntVar(&o.warmup, "warmup", 100, "batch steps before timing")
	fs.StringVar(&o.autoreset, "autoreset", "next-step", "autoreset mode: next-step or same-step (disabled never restarts a game, which a benchmark needs)")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the deals and of the random policy")
	fs.Var(&o.maxMemory, "max-memory", "refuse a run whose process (its batch, the heap's bookkeeping of it and the program's own "+bytesize.Format(benchOverhead)+") needs more memory than this (default: what the machine has available)")
	fs.Lookup("max-memory").DefValue = "0" // no "(default 0B)" after the help's own default
	o.out.register(fs)
	return func(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
		return runBench(ctx, o, stdout, stderr)
	}
}

// runBench measures the batch stepper playing random legal actions drawn
// from its masks (Batch.SampleLegal, in parallel) with the configured
// workers and with one, and prints both with the speed-up.
func runBench(ctx context.Context, o benchOptions, stdout, stderr io.Writer) error {
	r, err := gameRules(o.game)
	if err != nil {
		return err
	}
	mode, err := env.ParseAutoreset(o.autoreset)
	if err != nil {
		return usageError{err}
	}
	if mode == env.Disabled {
		return usageError{fmt.Errorf("bench needs an autoreset mode that restarts games: next-step or same-step")}
	}
	switch {
	case o.n < 1 || o.n > env.MaxBatch:
		return usageError{fmt.Errorf("--n %d: want 1 to %d", o.n, env.MaxBatch)}
	case o.steps < 1:
		return usageError{fmt.Errorf("--steps %d: want at least 1", o.steps)}
	case o.warmup < 0:
		return usageError{fmt.Errorf("--warmup %d: want 0 or more", o.warmup)}
	case o.workers < 0:
		return usageError{fmt.Errorf("--workers %d: want 0 (GOMAXPROCS) or more", o.workers)}
	}
	if err := o.out.check(); err != nil {
		return err
	}
	workers := o.workers
	if workers == 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, o.n)
	// One batch lives at a time (each run's is collected before the next
	// is made), with the actions.
	// The limit bounds the process: the program and the heap's
	// bookkeeping beside its batch (peak RSS measured against the
	// estimate).
	batch := server.BatchBytes(r, env.BatchOptions{N: o.n, Workers: workers, Autoreset: mode, Presample: true}) + 2*int64(o.n)
	need := batch + batch/benchHeapShare + benchOverhead
	what := fmt.Sprintf("a batch of %d games (%s)", o.n, r)
	lower := "lower --n"
	if workers > runtime.GOMAXPROCS(0) {
		lower = "lower --n or --workers" // each worker has buffers of its own
	}
	if err := checkMemory(need, o.maxMemory, what, lower); err != nil {
		return err
	}
	counts := []int{workers}
	if workers > 1 {
		counts = []int{1, workers}
	}
	var results []benchResult
	for _, w := range counts {
		res, err := benchOnce(ctx, r, o, mode, w, stderr)
		if err != nil && ctx.Err() != nil && len(results) > 0 {
			// A stop keeps the runs measured whole, as eval keeps the
			// deals played.
			speedUps(results)
			if werr := writeBench(stdout, results, o); werr != nil {
				return werr
			}
			return stopped{fmt.Sprintf("stopped after %d of %d runs, whose results are written", len(results), len(counts)), err}
		}
		if err != nil {
			return err
		}
		results = append(results, res)
		// The closed batch is garbage now: collect it before the next one
		// is made, so the two are never in memory together.
		runtime.GC()
	}
	speedUps(results)
	return writeBench(stdout, results, o)
}

// speedUps sets each result's speed-up over the first, of one worker.
func speedUps(results []benchResult) {
	for i := range results {
		results[i].SpeedUp = results[i].StepsPerSec / results[0].StepsPerSec
	}
}

func benchOnce(ctx context.Context, r env.Rules, o benchOptions, mode env.Autoreset, workers int, stderr io.Writer) (benchResult, error) {
	b, err := env.NewBatch(r, env.BatchOptions{N: o.n, Workers: workers, Autoreset: mode, Presample: true})
	if err != nil {
		return benchResult{}, err
	}
	defer b.Close()
	b.Reset(o.seed)
	actions := make([]env.Action, o.n)
	step := func() error {
		b.SampleLegal(actions)
		return b.Step(actions)
	}
	p := newProgress(stderr)
	defer p.end()
	last := time.Now()
	for i := 1; i <= o.warmup; i++ {
		// At every step, untimed: a step of a million games takes half a
		// second on one worker.
		if err := ctx.Err(); err != nil {
			return benchResult{}, err
		}
		if err := step(); err != nil {
			return benchResult{}, err
		}
		// Said as it goes: the warm-up of a wide batch takes minutes.
		if now := time.Now(); now.Sub(last) > 500*time.Millisecond {
			last = now
			if p.due(i, o.warmup) {
				p.write(fmt.Sprintf("bench: %d worker(s): warm-up %d/%d steps (untimed)", workers, i, o.warmup))
			}
		}
	}
	var episodes int64
	start := time.Now()
	last = start
	end := start // the last step's end, read before its progress line is written
	for i := 1; i <= o.steps; i++ {
		if err := step(); err != nil {
			return benchResult{}, err
		}
		for g := range o.n {
			if b.Terminated[g] || b.Truncated[g] {
				episodes++
			}
		}
		if now := time.Now(); now.Sub(last) > 500*time.Millisecond || i == o.steps {
			last, end = now, now
			if p.due(i, o.steps) {
				done := float64(i) * float64(o.n)
				p.write(fmt.Sprintf("bench: %d worker(s): %d/%d steps, %.0f env-steps/s", workers, i, o.steps, done/now.Sub(start).Seconds()))
			}
			if err := ctx.Err(); err != nil && i < o.steps {
				return benchResult{}, err // a stop after the last step cut nothing
			}
		}
	}
	sec := max(end.Sub(start).Seconds(), 1e-9) // a rate, never a division by zero
	total := int64(o.steps) * int64(o.n)
	return benchResult{
		Options: r.Options(), Seed: o.seed, Warmup: o.warmup, Program: programVersion(), Autoreset: mode.String(),
		N: o.n, Workers: workers, Steps: o.steps, EnvSteps: total, Seconds: sec,
		StepsPerSec: float64(total) / sec, NsPerStep: sec * 1e9 / float64(total), Episodes: episodes,
	}, nil
}

func writeBench(w io.Writer, results []benchResult, o benchOptions) error {
	// The columns after speedup_vs_1_worker came later, at the end so that
	// older readers' column numbers still hold: the seed, the untimed
	// steps and the build, then the other options, last and read from
	// env's table, so that a new one adds a column at the end.
	header := []string{"rules", "suits", "obs", "autoreset", "n", "workers", "steps", "env_steps", "seconds", "env_steps_per_sec", "ns_per_env_step", "episodes", "speedup_vs_1_worker",
		"seed", "warmup", "program_version"}
	header, others := optionColumns(header)
	done, err := o.out.write(w, results, header, func() (rows [][]string) {
		for _, r := range results {
			row := []string{r.RuleSet.String(), strconv.Itoa(r.Suits), r.Encoding.String(), r.Autoreset, strconv.Itoa(r.N), strconv.Itoa(r.Workers),
				strconv.Itoa(r.Steps), strconv.FormatInt(r.EnvSteps, 10), fmt.Sprintf("%.3f", r.Seconds),
				fmt.Sprintf("%.0f", r.StepsPerSec), fmt.Sprintf("%.1f", r.NsPerStep), strconv.FormatInt(r.Episodes, 10), fmt.Sprintf("%.2f", r.SpeedUp),
				strconv.FormatUint(r.Seed, 10), strconv.Itoa(r.Warmup), r.Program}
			rows = append(rows, others(row, r.Options))
		}
		return rows
	})
	if done || err != nil {
		return err
	}
	// The table's columns give rules, suits and obs; the line above it
	// every option, so that two runs that differ say so.
	if len(results) > 0 {
		fmt.Fprintf(w, "%s, seed %d\n\n", env.MustRules(results[0].Options), results[0].Seed)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "rules\tsuits\tobs\tautoreset\tN\tworkers\tenv-steps/s\tns/env-step\tepisodes\tspeed-up\t")
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%d\t%d\t%.0f\t%.1f\t%d\t%.2fx\t\n",
			r.RuleSet, r.Suits, r.Encoding, r.Autoreset, r.N, r.Workers, r.StepsPerSec, r.NsPerStep, r.Episodes, r.SpeedUp)
	}
	return tw.Flush()
}

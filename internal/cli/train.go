package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/spiderenv/spider/agents/nn"
	"github.com/spiderenv/spider/env"
	"github.com/spiderenv/spider/internal/bytesize"
	"github.com/spiderenv/spider/internal/printable"
	"github.com/spiderenv/spider/server"
	"github.com/spiderenv/spider/train"
)

// trainOptions are the train command's flags.
type trainOptions struct {
	cfg        train.Config
	hidden     []int
	iterations int
	steps      int64
	budget     time.Duration
	out        string
	resume     bool
	every      int
	jsonl      bool
	maxMemory  byteSize
	export     string // write the network of from (or out's checkpoint) here, and stop
	from       string
	// set holds the game and network flags given on the command line: a
	// resumed run takes the others from its checkpoint.
	set map[string]bool
}

func trainCommand(fs *pflag.FlagSet) func(context.Context, []string, io.Reader, io.Writer, io.Writer) error {
	o := trainOptions{cfg: train.DefaultConfig()}
	c := &o.cfg
	registerGameFlags(fs, &c.Game)
	// Shaping is for the learner's discount: its default here is --gamma.
	sg := fs.Lookup("shaping-gamma")
	sg.Usage, sg.DefValue = "the learner's discount, for reward shaping: --gamma unless given (another is refused)", "0"
	stepLimitNeeded(fs, "with a warm start or validation, whose games must end")
	fs.IntSliceVar(&o.hidden, "hidden", c.Hidden, "hidden layer widths (--arch columns: the one mixing layer's, default 256)")
	fs.StringVar(&c.Arch, "arch", nn.MLP, "the network: mlp (layers over the whole observation) or columns (one encoder shared by the ten columns, and moves scored from their source and destination columns)")
	fs.IntVar(&c.Column, "column", 0, "--arch columns: the column encoder's width (default 128)")
	fs.IntVar(&c.Pair, "pair", 0, "--arch columns: the width of the source and destination vectors a move is scored from (default 32)")
	fs.IntVar(&c.Games, "games", c.Games, "games stepped together")
	fs.IntVar(&c.Rollout, "rollout", c.Rollout, "steps per game per iteration")
	fs.IntVar(&c.Epochs, "epochs", c.Epochs, "PPO passes over each rollout (1 to 65536)")
	fs.IntVar(&c.Minibatch, "minibatch", c.Minibatch, "rows per gradient update")
	fs.Float64Var(&c.LR, "lr", c.LR, "PPO learning rate (Adam)")
	fs.Float64Var(&c.Gamma, "gamma", c.Gamma, "discount")
	fs.Float64Var(&c.Lambda, "lambda", c.Lambda, "GAE lambda")
	fs.Float64Var(&c.Clip, "clip", c.Clip, "PPO clip range")
	fs.Float64Var(&c.EntCoef, "entropy", c.EntCoef, "entropy bonus coefficient")
	fs.Float64Var(&c.ValueCoef, "value-coef", c.ValueCoef, "value loss coefficient")
	fs.Float64Var(&c.RewardScale, "reward-scale", c.RewardScale, "multiplier of the score change used as reward")
	fs.IntVar(&c.AnnealLR, "anneal-lr", c.AnnealLR, "lower PPO's learning rate linearly over this many iterations, from --lr to --lr/N, and keep it there (0: constant); give --iterations' value to anneal over the run, as CleanRL's --anneal-lr")
	fs.Float64Var(&c.TargetKL, "target-kl", c.TargetKL, "end an iteration's updates once a minibatch's approximate KL from the rollout's policy exceeds 1.5 times this, skipping that minibatch, as Stable-Baselines3's target_kl (0: never)")
	fs.IntVar(&c.CloneGames, "clone-games", c.CloneGames, "warm start: imitate the teacher in this many games first (0: none)")
	fs.StringVar(&c.Teacher, "teacher", c.Teacher, "the teacher of the warm start and the DAgger rounds: greedy, search or random (it sees what a player sees)")
	fs.IntVar(&c.CloneEpochs, "clone-epochs", c.CloneEpochs, "warm start and DAgger: passes over the labelled positions (at most 65536)")
	fs.IntVar(&c.DaggerRounds, "dagger-rounds", c.DaggerRounds, "after the warm start, rounds of DAgger: the network plays, the teacher labels its positions, the network retrains on all labels")
	fs.IntVar(&c.DaggerGames, "dagger-games", c.DaggerGames, "deals the network plays in each DAgger round")
	fs.Float64Var(&c.CloneLR, "clone-lr", c.CloneLR, "warm start learning rate")
	fs.BoolVar(&c.CloneSets, "clone-sets", c.CloneSets, "warm start and DAgger: count every move that does what the teacher's does (the same cards onto an equal top card, or onto another empty column) as the teacher's")
	fs.BoolVar(&c.CloneDecay, "clone-decay", c.CloneDecay, "warm start and DAgger: lower the learning rate linearly to zero over the passes")
	fs.BoolVar(&c.CloneAverage, "clone-average", c.CloneAverage, "warm start and DAgger: end with the mean of the weights over the last pass's updates (Polyak averaging)")
	fs.BoolVar(&c.CloneUnshapedValue, "clone-unshaped-value", c.CloneUnshapedValue, "warm start and DAgger: fit the value head to the score's changes alone, not the shaped returns PPO will see (with --shaping)")
	fs.BoolVar(&c.CloneBootstrap, "clone-bootstrap", c.CloneBootstrap, "warm start and DAgger: end the value targets of a game cut before its end (step limit, --clone-idle, --clone-trim, DAgger's 500-move cap) with the network's value of where it was cut, as PPO does at the step limit; =false ends them with 0, as runs before 2026-12-07 did")
	fs.BoolVar(&c.CloneTrim, "clone-trim", c.CloneTrim, "warm start and DAgger: imitate each game only up to its last move that turned a card, completed a run or dealt (a lost game then wanders to the step limit)")
	fs.IntVar(&c.CloneIdle, "clone-idle", c.CloneIdle, "warm start and DAgger: end each labelled game after this many moves in a row that turn no card, complete no run and deal nothing (0: play it out); saves labelling with --clone-trim")
	fs.BoolVar(&c.CloneWonOnly, "clone-won-only", c.CloneWonOnly, "warm start: imitate only the games the teacher won (a lost game is mostly moves at the step limit)")
	fs.IntVar(&c.ValEvery, "val-every", c.ValEvery, "validate the greedy network every this many iterations, and after the warm start (0: never)")
	fs.IntVar(&c.ValGames, "val-games", c.ValGames, "validation deals")
	fs.Uint64Var(&c.ValStart, "val-start", c.ValStart, "first validation deal's seed (keep it in the tuning seeds, 1-50000)")
	fs.Uint64Var(&c.Seed, "seed", c.Seed, "seed of the network, the games and the sampling")
	fs.IntVar(&o.iterations, "iterations", 0, "stop after this many PPO iterations in all (0: no limit)")
	fs.Int64Var(&o.steps, "steps", 0, "stop once this many environment steps are done in all (0: no limit)")
	fs.DurationVar(&o.budget, "time", 0, "stop starting phases (the warm start, DAgger rounds, iterations) after this long, e.g. 25m (0: no limit)")
	fs.StringVar(&o.out, "out", "run", "folder for checkpoint.spider, metrics and curve.png")
	fs.BoolVar(&o.resume, "resume", false, "continue the run saved in --out (its settings come from the checkpoint)")
	fs.IntVar(&o.every, "checkpoint-every", 5, "save a checkpoint every this many iterations (and at a new best validation, which starts the count again, and at the end)")
	fs.BoolVar(&o.jsonl, "jsonl", false, "write metrics.jsonl instead of metrics.csv (a resumed run keeps the format it has)")
	fs.StringVar(&o.export, "export", "", "instead of training, write the network of --from (default: --out's checkpoint.spider) to this file, without the trainer's state: the file to ship as nn:FILE")
	fs.StringVar(&o.from, "from", "", "with --export: the checkpoint to read (best.spider, warmstart.spider, ...)")
	fs.Var(&o.maxMemory, "max-memory", "refuse a run whose batch, rollout, learner and checkpoint saves need more memory than this (default: what the machine has available); when given, the process stays within it plus "+bytesize.Format(server.Overhead)+" once the warm start and DAgger rounds, whose imitation data is not counted, are over")
	fs.Lookup("max-memory").DefValue = "0" // no "(default 0B)" after the help's own default
	return func(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
		o := o
		o.set = map[string]bool{}
		for _, f := range env.OptionFields() {
			o.set[f.Flag] = fs.Changed(f.Flag)
		}
		for _, name := range []string{"hidden", "arch", "column", "pair"} {
			o.set[name] = fs.Changed(name)
		}
		for _, f := range trainingFlags {
			o.set[f.flag] = fs.Changed(f.flag)
		}
		o.set["jsonl"] = fs.Changed("jsonl")
		// Flags that would silently do nothing are refused.
		imitates := o.cfg.CloneGames > 0 || o.cfg.DaggerRounds > 0
		ignored := exportIgnores(fs)
		switch {
		case o.resume:
			// A resumed run's settings come from its checkpoint.
		case fs.Changed("teacher") && !imitates:
			return usageError{errors.New("--teacher teaches only a warm start (--clone-games) or DAgger rounds (--dagger-rounds)")}
		case fs.Changed("dagger-games") && o.cfg.DaggerRounds == 0:
			return usageError{errors.New("--dagger-games needs --dagger-rounds")}
		case fs.Changed("shaping-gamma") && o.cfg.Game.Shaping == env.NoShaping:
			return usageError{errors.New("--shaping-gamma needs --shaping progress")}
		case fs.Changed("clone-unshaped-value") && (o.cfg.Game.Shaping == env.NoShaping || !imitates):
			return usageError{errors.New("--clone-unshaped-value needs --shaping progress and a warm start (--clone-games) or DAgger rounds (--dagger-rounds)")}
		case o.export != "" && len(ignored) > 0:
			return usageError{fmt.Errorf("--export writes a trained network and trains nothing: give only --out or --from with it, not %s", strings.Join(ignored, ", "))}
		case (fs.Changed("column") || fs.Changed("pair")) && o.cfg.Arch != nn.Columns:
			// 0, the default, passed the network's own check in silence.
			return usageError{errors.New("--column and --pair size the columns network: they need --arch columns")}
		case fs.Changed("clone-won-only") && o.cfg.CloneGames == 0:
			return usageError{errors.New("--clone-won-only picks the warm start's games: it needs --clone-games")}
		}
		if !o.resume && !imitates {
			for _, name := range []string{"clone-epochs", "clone-lr", "clone-sets", "clone-decay", "clone-average", "clone-trim", "clone-idle", "clone-bootstrap"} {
				if fs.Changed(name) {
					return usageError{fmt.Errorf("--%s sets how a warm start (--clone-games) or DAgger rounds (--dagger-rounds) learn, and this run has neither", name)}
				}
			}
		}
		if !o.resume && o.cfg.Game.Shaping != env.NoShaping && !fs.Changed("shaping-gamma") {
			// Shaping is for the learner's discount (train refuses another).
			o.cfg.Game.ShapingGamma = o.cfg.Gamma
		}
		archDefaults(&o, fs.Changed("hidden"))
		return runTrain(ctx, o, stdout, stderr)
	}
}

// lockOut is lockFolder, a variable so that a test can have another run
// take the folder between this one's making it and locking it.
var lockOut = lockFolder

// exportIgnores lists the flags given that an export would ignore: every
// flag but the three it reads (a training setting given with --export
// was accepted and did nothing).
func exportIgnores(fs *pflag.FlagSet) []string {
	var names []string
	fs.Visit(func(f *pflag.Flag) {
		if f.Name != "export" && f.Name != "from" && f.Name != "out" {
			names = append(names, "--"+f.Name)
		}
	})
	return names
}

func runTrain(ctx context.Context, o trainOptions, stdout, stderr io.Writer) error {
	if o.export != "" {
		return exportPolicy(o, stdout)
	}
	if o.from != "" {
		return usageError{errors.New("--from goes with --export")}
	}
	check := gameRules
	if o.resume {
		check = flagRules
	}
	if _, err := check(o.cfg.Game); err != nil {
		return err
	}
	c := o.cfg
	c.Hidden = o.hidden
	// A negative budget would never be reached: the run would go on
	// forever.
	switch {
	case o.iterations < 0:
		return usageError{fmt.Errorf("--iterations %d is negative (0: no limit)", o.iterations)}
	case o.steps < 0:
		return usageError{fmt.Errorf("--steps %d is negative (0: no limit)", o.steps)}
	case o.budget < 0:
		return usageError{fmt.Errorf("--time %v is negative (0: no limit)", o.budget)}
	case o.iterations == 0 && o.steps == 0 && o.budget == 0:
		return usageError{errors.New("give a budget: --iterations, --steps or --time")}
	case o.every < 1:
		return usageError{errors.New("--checkpoint-every must be at least 1")}
	case o.out == "":
		return usageError{errors.New("--out needs a folder")}
	}
	ckpt := filepath.Join(o.out, "checkpoint.spider")
	best := filepath.Join(o.out, "best.spider")      // the best validation so far
	warm := filepath.Join(o.out, "warmstart.spider") // right after the warm start
	metricsCSV, metricsJSONL := filepath.Join(o.out, "metrics.csv"), filepath.Join(o.out, "metrics.jsonl")
	curvePNG := filepath.Join(o.out, "curve.png")
	ownMetrics := metricsCSV // a new run's; a resumed run's is its file's (resumeMetrics)
	if o.jsonl {
		ownMetrics = metricsJSONL
	}
	// Everything that can refuse the run is checked before --out is
	// created: a refused run leaves nothing behind. A folder where a file
	// of the run goes was found only when it was written, after the work.
	// A link is replaced by the file, its target untouched.
	written := []string{ckpt, best, warm, ownMetrics, curvePNG}
	if o.resume {
		written = append(written, metricsCSV, metricsJSONL) // either may be the run's
	}
	for _, f := range written {
		if st, err := os.Lstat(f); err == nil && st.Mode()&fs.ModeSymlink == 0 && !st.Mode().IsRegular() {
			return usageError{fmt.Errorf("%s: not a regular file, where the run writes one", f)}
		}
	}
	if o.resume {
		if _, err := os.Stat(ckpt); err != nil {
			return usageError{fmt.Errorf("--resume: %v", err)}
		}
	} else {
		if err := c.Validate(); err != nil {
			return usageError{err}
		}
		// A resumed run's settings are in its checkpoint, checked once it
		// is read; a new run is checked before New allocates it all.
		if err := checkTrainMemory(c, o.maxMemory, "lower --games, --rollout, --minibatch, --face-up-slots, or with validation --val-games or --max-steps"); err != nil {
			return err
		}
		// The imitation data is not in --max-memory's count (its phases
		// come before the limit is set), but it must fit the machine: the
		// last phase learns from all of it at once.
		if err := checkAvailable(c.ImitationBound(), fmt.Sprintf("the imitation data of %d warm-start games and %d DAgger rounds of %d games (at most a position a move and one a game, %s each)",
			c.CloneGames, c.DaggerRounds, c.DaggerGames, bytesize.Format(train.SampleBytes)), "lower --clone-games, --dagger-rounds, --dagger-games or --max-steps"); err != nil {
			return err
		}
	}
	// A run stopped or refused before it wrote anything leaves no empty
	// --out behind, when it made it.
	undo, err := makeFolder(o.out)
	if err != nil {
		// A place that cannot take the folder is input to fix, as every
		// other output path's is: a usage error's 2.
		return usageError{fmt.Errorf("--out %s: %v", o.out, err)}
	}
	unlock, held := lockOut(o.out)
	if held {
		// The run that holds it may have found the folder this one just
		// made, and needs it: it is not undone.
		return usageError{fmt.Errorf("--out %s: another spider train is running on this folder; wait for it to end, or give another --out", o.out)}
	}
	defer unlock()
	defer undo()
	// A second Ctrl-C exits before the deferred calls, and a phase can
	// take seconds to notice the first.
	defer atExit(ctx, undo)()
	// The first checkpoint is written after the warm start or the first
	// iterations: find out now, not then, that it cannot be.
	if err := probeWritable(o.out); err != nil {
		return usageError{fmt.Errorf("--out %s: %v", o.out, err)}
	}
	var t *train.Trainer
	if o.resume {
		// The metrics file holds the run's whole history, written again at
		// each save: a resumed run keeps the format it has, and a file in
		// the other would leave a stale copy beside it.
		if err := o.resumeMetrics(); err != nil {
			return err
		}
		// The checkpoint's settings hold, and a game, network or training
		// flag given here must agree with them. Its buffers are checked
		// against --max-memory (or the memory available) as a new run's
		// are, before they are made: a small file can ask for gigabytes.
		admit := func(got train.Config) error {
			if d := resumeDiff(o, c, got); d != "" {
				return usageError{fmt.Errorf("%s: the checkpoint does not match the requested run: %s", ckpt, d)}
			}
			lower := "its settings are the checkpoint's: resume it where there is more memory"
			if o.maxMemory != 0 {
				lower = "its settings are the checkpoint's: raise --max-memory"
			}
			return checkTrainMemory(got, o.maxMemory, lower)
		}
		if t, err = train.ResumeIf(ckpt, nil, admit); err == nil {
			// Its imitation data, which the buffers' check does not count,
			// must fit in the memory left once they are made, with what the
			// rounds still to play add: the last learns from all of it at
			// once. ImitationBound, as for a new run, counts every game
			// at its cap; the games held are within it.
			need := t.ImitationBytes()
			if t.Imitating() {
				need = max(need, t.Config.ImitationBound())
			}
			if err := checkAvailable(need, "the checkpoint's imitation data and the DAgger rounds still to play (the last learns from all of it at once)", "resume it where there is more memory"); err != nil {
				t.Close()
				return err
			}
		}
	} else {
		// The best and warm-start checkpoints of another run would pass for
		// this run's, and its metrics and curve would be replaced unasked.
		for _, f := range []string{ckpt, best, warm, metricsCSV, metricsJSONL, curvePNG} {
			if _, statErr := os.Lstat(f); statErr == nil {
				return usageError{fmt.Errorf("%s exists: pass --resume to continue its run, or choose another --out", f)}
			}
		}
		t, err = train.New(c)
	}
	if err != nil {
		// A checkpoint that cannot be resumed is refused input, as a bad
		// flag is: nothing has run.
		return usageError{err}
	}
	// Closed on return, unless a stop abandoned a phase still running in
	// its goroutine (runPhases), which would use the network after it.
	abandoned := false
	defer func() {
		if !abandoned {
			t.Close()
		}
	}()
	// With --max-memory the collector runs before garbage takes the
	// process past the limit, as in serve, once no imitation phase
	// remains: their labelled positions are not in the estimate, and a
	// limit below them would make the collector run without end. A
	// quarter of the overhead goes to the heap: the rest is what the
	// process holds outside the Go limit (its code, libraries and their
	// data), 15-30 MiB (TestTrainRSS). The old limit comes back for a
	// caller (a test) that goes on.
	// OpenBLAS's buffers are outside the heap, and in the estimate: the
	// heap's limit leaves them room.
	bounded, old := false, int64(0)
	bound := func() {
		if o.maxMemory != 0 && !bounded && !t.Imitating() {
			old, bounded = debug.SetMemoryLimit(int64(o.maxMemory)+server.Overhead/4-train.BLASBytes(t.Config)), true
		}
	}
	bound()
	defer func() {
		if bounded {
			debug.SetMemoryLimit(old)
		}
	}()
	// A search teacher's warm start, and each DAgger round, take minutes
	// before their line.
	var prog *progress
	wrote := false // a line of this phase was written
	t.Progress = func(phase string, done, total int) {
		if done == 0 {
			prog, wrote = newProgress(stderr), false // a new phase: time it from here
			return
		}
		if prog == nil || (phase == "ppo" && time.Since(prog.start) < progressEvery) || !prog.due(done, total) {
			// An iteration's updates take seconds at the defaults: on a
			// terminal too, they draw a line only once they have run as
			// long as a plain line waits, or every iteration would leave one.
			return
		}
		if (phase == "validate" || phase == "ppo") && done == total && !wrote {
			// Only a validation long enough for a line has its last:
			// one after every iteration would drown the iterations' own.
			return
		}
		wrote = true
		switch phase {
		case "learn":
			prog.write(fmt.Sprintf("train: learning the labelled moves: %d of %d updates", done, total))
		case "validate":
			prog.write(fmt.Sprintf("train: validating: the network played %d of %d deals", done, total))
		case "ppo":
			prog.write(fmt.Sprintf("train: iteration %d: learning from its rollout: %d of %d updates", t.Iterations()+1, done, total))
		case "dagger":
			prog.write(fmt.Sprintf("train: DAgger round: the network played %d of %d games, %s labelling its positions", done, total, t.Config.TeacherName()))
		default:
			prog.write(fmt.Sprintf("train: warm start: %s played %d of %d games", t.Config.TeacherName(), done, total))
		}
		if done == total {
			prog.end()
		}
	}
	metrics, curve := metricsCSV, curvePNG
	if o.jsonl { // as resumeMetrics has set it for a resumed run
		metrics = metricsJSONL
	}
	// The title names every option of the game and the seed, so that two
	// curves of other runs do not read alike (the checkpoint beside it
	// holds the whole configuration).
	title := fmt.Sprintf("PPO, %v, seed %d", env.MustRules(t.Config.Game), t.Config.Seed)
	// Under --max-memory the garbage is collected before a checkpoint is
	// written: Save allocates tens of megabytes at once for a large
	// network, and the heap's limit cannot stop one allocation while a
	// collection runs, so left to itself the heap peaked that much past
	// its limit (291 MB against 273 for two 1024-wide layers at
	// --max-memory 261MiB). A collection costs a fraction of the write.
	saveAs := func(path string) error {
		if bounded {
			runtime.GC()
		}
		return t.Save(path)
	}
	save := func() error {
		if err := saveAs(ckpt); err != nil {
			return fmt.Errorf("saving %s: %w", ckpt, err)
		}
		if err := train.SaveMetrics(metrics, t.History, o.jsonl); err != nil {
			return err
		}
		switch err := train.SaveCurve(curve, t.History, title); {
		case errors.Is(err, train.ErrNoEpisodes):
			if t.Iterations() > 0 {
				fmt.Fprintln(stderr, "train: no curve yet: no game has ended")
			}
		case err != nil:
			return fmt.Errorf("saving %s: %w", curve, err)
		}
		return nil
	}
	start := time.Now()
	stop := func(iter int, steps int64) bool {
		return (o.iterations > 0 && iter >= o.iterations) || (o.steps > 0 && steps >= o.steps) ||
			(o.budget > 0 && time.Since(start) >= o.budget)
	}
	// writeFromCheckpoint writes the network the checkpoint holds as
	// warmstart.spider, after an imitation phase (the network the
	// reinforcement learning starts from), and as best.spider, when its
	// validation is the best.
	writeFromCheckpoint := func(imitated, improved bool) error {
		if imitated {
			if err := saveAs(warm); err != nil {
				return fmt.Errorf("saving %s: %w", warm, err)
			}
		}
		if improved {
			if err := saveAs(best); err != nil {
				return fmt.Errorf("saving %s: %w", best, err)
			}
		}
		return nil
	}
	if o.resume {
		// A stop inside the validation after the checkpoint's last phase
		// kept the phase without it: run it now, so that the history and
		// the best network are the uninterrupted run's. A stop between the
		// checkpoint and warmstart.spider or best.spider left those behind
		// it: the checkpoint holds their network, written again here.
		ran, verr := t.Revalidate(ctx)
		if verr != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("interrupted while validating the checkpoint's last phase (a stop had cut its validation short); %s is unchanged (continue with --resume --out %s)", ckpt, o.out)
			}
			return verr
		}
		if ran {
			// The checkpoint first, as after every phase.
			if err := save(); err != nil {
				return err
			}
		}
		if n := len(t.History); n > 0 {
			if err := writeFromCheckpoint(t.History[n-1].Phase != "ppo", train.NewBest(t.History)); err != nil {
				return err
			}
		}
	}
	since := 0
	abandoned, err = runPhases(ctx, t, stop, func(m train.Metrics) error {
		if prog != nil {
			prog.end() // a line a target KL left drawn before its total
		}
		bound() // after the last imitation phase
		if m.Phase != "ppo" {
			if m.Phase == "clone" {
				fmt.Fprintf(stderr, "train: warm start on %d %s games (teacher: %.2f runs, %.0f%% won; %.0f s): cross-entropy %.3f, %.1f updates/s\n",
					m.Finished, t.Config.TeacherName(), m.MeanRuns, 100*m.WinRate, m.LabelSeconds, m.PolicyLoss, m.UpdatesPerS)
			} else {
				fmt.Fprintf(stderr, "train: DAgger round %d: the network won %.0f%% of %d deals (%.2f runs), played %s's move %.0f%% of the time; %d labels in all (%.0f s labelling): cross-entropy %.3f, %.1f updates/s\n",
					m.Round, 100*m.WinRate, m.Finished, m.MeanRuns, t.Config.TeacherName(), 100*m.Agreement, m.Labels, m.LabelSeconds, m.PolicyLoss, m.UpdatesPerS)
			}
		} else {
			fmt.Fprintf(stderr, "train: iter %d  steps %d  episodes %d  return %.1f  runs %.2f  won %.0f%%  entropy %.2f  %.0f steps/s  %.1f updates/s  (env %.1fs, act %.1fs, learn %.1fs)\n",
				m.Iter, m.EnvSteps, m.Episodes, m.MeanReturn, m.MeanRuns, 100*m.WinRate, m.Entropy, m.EnvStepsPerS, m.UpdatesPerS,
				m.EnvSeconds, m.ActSeconds, m.LearnSeconds)
		}
		// The checkpoint is saved first, then warmstart.spider and
		// best.spider from the same network: a run stopped between them
		// resumes from that checkpoint, which writes them again
		// (writeFromCheckpoint). Written before it, a stop left a
		// best.spider the resumed history did not know (stale or
		// missing for good), or before the first checkpoint a folder that
		// neither a new run nor --resume takes.
		improved := train.NewBest(t.History)
		if since++; improved || since >= o.every || m.Phase != "ppo" {
			since = 0
			if err := save(); err != nil {
				return err
			}
		}
		if err := writeFromCheckpoint(m.Phase != "ppo", improved); err != nil {
			return err
		}
		note := ""
		if improved {
			note = ", the best so far: " + best
		}
		if m.ValGames > 0 {
			fmt.Fprintf(stderr, "train: validation on %d deals from seed %d: won %.1f%%, %.2f runs%s\n",
				m.ValGames, t.Config.ValStart, 100*m.ValWinRate, m.ValRuns, note)
		}
		return nil
	})
	// kept says what a run stopped inside a phase leaves to resume from.
	kept := func() string {
		_, serr := os.Stat(ckpt)
		switch {
		case serr == nil && errors.Is(err, train.ErrNotFinite):
			// Resuming replays the same updates exactly, into the same stop.
			return fmt.Sprintf("%s keeps the last checkpointed state, but a run resumed from it stops the same way: start a new run (another --out) with a lower --lr or --clone-lr", ckpt)
		case serr == nil:
			return fmt.Sprintf("%s keeps the last checkpointed state (continue with --resume --out %s)", ckpt, o.out)
		}
		return "no checkpoint was written yet"
	}
	if abandoned {
		return fmt.Errorf("interrupted inside a phase, whose update in flight was still running %v after the stop and was abandoned; %s", abandonAfter, kept())
	}
	if !t.Consistent() {
		// Stopped inside an iteration or the warm start: saving now would
		// replace the last checkpoint with a state between two.
		kept := kept()
		if ctx.Err() != nil {
			return fmt.Errorf("interrupted inside a phase (the warm start, a DAgger round or an iteration); %s", kept)
		}
		return fmt.Errorf("%w; %s", err, kept)
	}
	if serr := save(); serr != nil {
		return serr
	}
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("interrupted after iteration %d; the checkpoint is saved: continue with --resume --out %s", t.Iterations(), o.out)
		}
		return err
	}
	return writeTrainSummary(stdout, t, []string{ckpt, warm, best}, metrics, curve)
}

// abandonAfter is how long a stopped run waits for the phase in flight to
// notice the stop. Every phase checks for it between two steps of the
// rollout, two games' moves or two minibatches, but gorgonia's update of
// one minibatch cannot be cut short: at the defaults it takes
// milliseconds, but a minibatch of 65,536 rows through two 1024-wide
// layers took a minute on 2 cores, and the work must stop within seconds
// of a Ctrl-C.
var abandonAfter = 3 * time.Second

// trainRun is Trainer.Run, a variable so that a test can stand in for a
// phase that does not notice a stop.
var trainRun = (*train.Trainer).Run

// runPhases runs t's phases (trainRun) in a goroutine of their own and
// returns their error, or, when ctx ends and they have not returned
// abandonAfter later, abandoned true: the goroutine goes on until
// the process ends, but after is not called again (a call already under
// way is waited for, so a checkpoint being written is written whole), so
// nothing is saved from a phase cut short. t must then not be closed.
func runPhases(ctx context.Context, t *train.Trainer, stop func(int, int64) bool, after func(train.Metrics) error) (abandoned bool, err error) {
	var mu sync.Mutex
	gone := false // set under mu once abandoned
	done := make(chan error, 1)
	go func() {
		done <- trainRun(t, ctx, stop, func(m train.Metrics) error {
			mu.Lock()
			defer mu.Unlock()
			if gone {
				return context.Cause(ctx)
			}
			return after(m)
		})
	}()
	select {
	case err := <-done:
		return false, err
	case <-ctx.Done():
	}
	select {
	case err := <-done:
		return false, err
	case <-time.After(abandonAfter):
		mu.Lock()
		gone = true
		mu.Unlock()
		return true, context.Cause(ctx)
	}
}

// resumeMetrics sets o.jsonl, for a resumed run, to the format of the
// metrics file in --out, and refuses a --jsonl given against it.
func (o *trainOptions) resumeMetrics() error {
	has := func(name string) bool {
		_, err := os.Stat(filepath.Join(o.out, name))
		return err == nil
	}
	csv, jsonl := has("metrics.csv"), has("metrics.jsonl")
	if csv == jsonl {
		return nil // neither (or both): --jsonl decides
	}
	if o.set["jsonl"] && o.jsonl != jsonl {
		file := "metrics.csv"
		if jsonl {
			file = "metrics.jsonl"
		}
		return usageError{fmt.Errorf("--jsonl=%t: the run in %s writes %s (a resumed run keeps its format); drop --jsonl", o.jsonl, o.out, file)}
	}
	o.jsonl = jsonl
	return nil
}

// checkTrainMemory refuses a run of c that needs more memory than limit
// (or the machine has available): its batch, its rollout, acting and
// learning buffers, what a save holds and what a validation holds. lower
// says what the user can change.
func checkTrainMemory(c train.Config, limit byteSize, lower string) error {
	r, err := c.Rules()
	if err != nil {
		return usageError{err}
	}
	own, err := c.BufferBytes()
	if err != nil {
		return usageError{err}
	}
	// Saving a checkpoint allocates on top of the run's buffers.
	save, err := c.SaveBytes()
	if err != nil {
		return usageError{err}
	}
	spec, _ := c.Spec()
	val := c.ValidationBytes()
	need := server.BatchBytes(r, env.BatchOptions{N: c.Games, Autoreset: env.SameStep}) + own + save + val
	what := fmt.Sprintf("training %d games x %d rollout steps (%s, %s, minibatch %d)", c.Games, c.Rollout, r, netName(spec), c.Minibatch)
	if val > 0 {
		what += fmt.Sprintf(" with validation on %d deals (%s)", c.ValGames, bytesize.Format(val))
	}
	return checkMemory(need, limit, what, lower)
}

// probeWritable reports whether files can be created in dir, by creating
// and removing one.
func probeWritable(dir string) error {
	f, err := os.CreateTemp(dir, ".spider-write-test-*")
	if err != nil {
		// The probe's own name would only puzzle: why is what matters.
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fmt.Errorf("cannot write there: %w", err)
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// phaseName says which phase m is: the warm start or a PPO iteration.
func phaseName(m train.Metrics) string {
	switch m.Phase {
	case "clone":
		return "the warm start"
	case "dagger":
		return fmt.Sprintf("DAgger round %d", m.Round)
	}
	return fmt.Sprintf("iteration %d", m.Iter)
}

// writeTrainSummary prints where the time went and what was written.
// ckpts are the last, warm-start and best checkpoints' paths.
func writeTrainSummary(w io.Writer, t *train.Trainer, ckpts []string, metrics, curve string) error {
	var env, act, learn, val, elapsed float64
	updates := 0.0
	var best train.Metrics
	for _, m := range t.History {
		env += m.EnvSeconds
		act += m.ActSeconds
		learn += m.LearnSeconds
		val += m.ValSeconds
		elapsed = m.ElapsedSecond
		updates += m.UpdatesPerS * m.LearnSeconds
		if train.BetterValidation(m, best) {
			best = m
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "iterations\t%d\n", t.Iterations())
	fmt.Fprintf(tw, "environment steps\t%d\n", t.EnvSteps())
	fmt.Fprintf(tw, "time\t%.0f s (games %.0f s, acting %.0f s, learning %.0f s, validating %.0f s)\n", elapsed, env, act, learn, val)
	if learn > 0 {
		fmt.Fprintf(tw, "updates\t%.0f (%.2f/s)\n", updates, updates/learn)
	}
	if best.ValGames > 0 {
		fmt.Fprintf(tw, "best validation\twon %.1f%%, %.2f runs on %d deals, after %s\n", 100*best.ValWinRate, best.ValRuns, best.ValGames, phaseName(best))
	}
	for i, what := range []string{"checkpoint", "warm start", "best"} {
		if _, err := os.Stat(ckpts[i]); err == nil {
			name := printable.Escape(ckpts[i])
			fmt.Fprintf(tw, "%s\t%s (use as nn:%s)\n", what, name, name)
		}
	}
	// A run with no finished episode, or only imitation, has no curve.
	for _, f := range [][2]string{{"metrics", metrics}, {"curve", curve}} {
		if _, err := os.Stat(f[1]); err == nil {
			fmt.Fprintf(tw, "%s\t%s\n", f[0], printable.Escape(f[1]))
		}
	}
	return tw.Flush()
}

// exportPolicy writes the network of a checkpoint without the trainer's
// state (Adam's moments, the games in progress, the imitation data): a
// third of the file, and all that nn:FILE, eval, play and serve read.
func exportPolicy(o trainOptions, stdout io.Writer) error {
	if o.resume {
		return usageError{errors.New("--export reads a checkpoint and trains nothing: drop --resume")}
	}
	from := o.from
	if from == "" {
		from = filepath.Join(o.out, "checkpoint.spider")
	}
	// Where the policy goes is checked before the checkpoint is read, as
	// every other command checks where it will write.
	if err := checkFilePath(o.export, "policy.spider"); err != nil {
		return usageError{fmt.Errorf("--export %s: %v", o.export, err)}
	}
	if samePath(o.export, from) {
		return usageError{fmt.Errorf("--export %s is the checkpoint it reads: the policy alone would replace the run's state; give another file name", o.export)}
	}
	if err := checkReplaceable(o.export, notPolicy); err != nil {
		return usageError{fmt.Errorf("--export %s: %v", o.export, err)}
	}
	net, _, err := nn.Load(from)
	if err != nil {
		return usageError{err}
	}
	if err := nn.Save(o.export, net, nil); err != nil {
		return err
	}
	info, err := os.Stat(o.export)
	if err != nil {
		return err
	}
	r := net.Spec.Game
	_, err = fmt.Fprintf(stdout, "wrote %s (%d bytes): the network of %s, %s %d suit(s), %s\n",
		printable.Escape(o.export), info.Size(), printable.Escape(from), r.RuleSet, r.Suits, netName(net.Spec))
	return err
}

// netName describes a network's architecture and sizes.
func netName(s nn.Spec) string {
	if s.Arch == nn.Columns {
		return fmt.Sprintf("columns network: column %d, mixing %d, pair %d", s.Column, s.Hidden[0], s.Pair)
	}
	return fmt.Sprintf("hidden %v", s.Hidden)
}

// trainingFlags are the flags of the training settings a checkpoint holds,
// each with its value in a configuration: given with --resume, each must
// agree with the checkpoint, as the game and network flags must, since a
// resumed run continues exactly rather than with other settings.
var trainingFlags = []struct {
	flag string
	get  func(c train.Config) any
}{
	{"games", func(c train.Config) any { return c.Games }},
	{"rollout", func(c train.Config) any { return c.Rollout }},
	{"epochs", func(c train.Config) any { return c.Epochs }},
	{"minibatch", func(c train.Config) any { return c.Minibatch }},
	{"lr", func(c train.Config) any { return c.LR }},
	{"gamma", func(c train.Config) any { return c.Gamma }},
	{"lambda", func(c train.Config) any { return c.Lambda }},
	{"clip", func(c train.Config) any { return c.Clip }},
	{"entropy", func(c train.Config) any { return c.EntCoef }},
	{"value-coef", func(c train.Config) any { return c.ValueCoef }},
	{"reward-scale", func(c train.Config) any { return c.RewardScale }},
	{"anneal-lr", func(c train.Config) any { return c.AnnealLR }},
	{"target-kl", func(c train.Config) any { return c.TargetKL }},
	{"clone-games", func(c train.Config) any { return c.CloneGames }},
	{"teacher", func(c train.Config) any { return strings.ToLower(cmp.Or(c.Teacher, "greedy")) }},
	{"clone-epochs", func(c train.Config) any { return c.CloneEpochs }},
	{"dagger-rounds", func(c train.Config) any { return c.DaggerRounds }},
	{"dagger-games", func(c train.Config) any { return c.DaggerGames }},
	{"clone-lr", func(c train.Config) any { return c.CloneLR }},
	{"clone-sets", func(c train.Config) any { return c.CloneSets }},
	{"clone-decay", func(c train.Config) any { return c.CloneDecay }},
	{"clone-average", func(c train.Config) any { return c.CloneAverage }},
	{"clone-unshaped-value", func(c train.Config) any { return c.CloneUnshapedValue }},
	{"clone-bootstrap", func(c train.Config) any { return c.CloneBootstrap }},
	{"clone-trim", func(c train.Config) any { return c.CloneTrim }},
	{"clone-idle", func(c train.Config) any { return c.CloneIdle }},
	{"clone-won-only", func(c train.Config) any { return c.CloneWonOnly }},
	{"val-every", func(c train.Config) any { return c.ValEvery }},
	{"val-games", func(c train.Config) any { return c.ValGames }},
	{"val-start", func(c train.Config) any { return c.ValStart }},
	{"seed", func(c train.Config) any { return c.Seed }},
}

// resumeDiff lists how the game, network and training flags given with
// --resume differ from the checkpoint's settings got ("" if they agree);
// flags not given are the checkpoint's. want is the configuration of the
// flags.
func resumeDiff(o trainOptions, want, got train.Config) string {
	var d []string
	wg := want.Game.Filled()
	for _, f := range env.OptionFields() {
		if w, g := f.Text(wg), f.Text(got.Game); o.set[f.Flag] && w != g {
			d = append(d, fmt.Sprintf("--%s is %s, the checkpoint's %s", f.Flag, w, g))
		}
	}
	arch := func(s string) string { return cmp.Or(s, nn.MLP) }
	if o.set["hidden"] && !slices.Equal(o.hidden, got.Hidden) {
		d = append(d, fmt.Sprintf("--hidden is %v, the checkpoint's %v", o.hidden, got.Hidden))
	}
	if o.set["arch"] && arch(want.Arch) != arch(got.Arch) {
		d = append(d, fmt.Sprintf("--arch is %s, the checkpoint's %s", arch(want.Arch), arch(got.Arch)))
	}
	if o.set["column"] && want.Column != got.Column {
		d = append(d, fmt.Sprintf("--column is %d, the checkpoint's %d", want.Column, got.Column))
	}
	if o.set["pair"] && want.Pair != got.Pair {
		d = append(d, fmt.Sprintf("--pair is %d, the checkpoint's %d", want.Pair, got.Pair))
	}
	for _, f := range trainingFlags {
		if w, g := f.get(want), f.get(got); o.set[f.flag] && w != g {
			d = append(d, fmt.Sprintf("--%s is %v, the checkpoint's %v", f.flag, w, g))
		}
	}
	return strings.Join(d, "; ")
}

// archDefaults fills in the sizes of the network --arch names that its
// flags left unset (docs/training.md's table): the columns network's
// mixing width (when --hidden was not given), column and pair widths. The
// MLP's are the config's own, and its name is left empty, as runs before
// the flag recorded it.
func archDefaults(o *trainOptions, hiddenSet bool) {
	switch o.cfg.Arch {
	case nn.MLP:
		o.cfg.Arch = ""
	case nn.Columns:
		if !hiddenSet {
			o.hidden = []int{256}
		}
		o.cfg.Column = cmp.Or(o.cfg.Column, 128)
		o.cfg.Pair = cmp.Or(o.cfg.Pair, 32)
	}
}

// notPolicy says why the file at path is not an exported policy (a
// network without a run's training state), or "": an export replaces an
// earlier export, never a checkpoint a run resumes from.
func notPolicy(path string) string {
	_, state, err := nn.Load(path)
	switch {
	case err != nil:
		return "is not a readable spider network"
	case len(state) > 0:
		return "is a checkpoint with a run's training state (--resume continues from it)"
	}
	return ""
}

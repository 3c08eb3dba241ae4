package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/spiderenv/spider/agents"
	"github.com/spiderenv/spider/agents/nn"
	"github.com/spiderenv/spider/agents/remote"
	"github.com/spiderenv/spider/env"
	"github.com/spiderenv/spider/internal/alloccount"
	"github.com/spiderenv/spider/internal/bytesize"
	"github.com/spiderenv/spider/train"
)

// fakeMachine makes machineMemory read a machine of 32 GiB with 16 GiB
// available, for the rest of the test.
func fakeMachine(t *testing.T) { fakeMemory(t, 32<<30, 16<<30) }

// skipOn32Bits skips a test of 2 GiB or more of memory where int has 32 bits
// (make test-ports): there no process holds more than 2 GiB, so the
// figures it checks are refused (TestCheckMemoryCapsAt32Bits).
func skipOn32Bits(t *testing.T) {
	if strconv.IntSize == 32 {
		t.Skip("figures of 2 GiB or more; a 32-bit build holds at most 2 GiB less a byte")
	}
}

// TestCheckMemoryCapsAt32Bits: where int has 32 bits, a 16 GiB machine
// still holds at most what an int counts, and the message says so: beyond
// it, buffers' sizes would wrap around and panic instead of refusing.
func TestCheckMemoryCapsAt32Bits(t *testing.T) {
	if strconv.IntSize != 32 {
		t.Skip("for 32-bit builds (make test-ports)")
	}
	fakeMemory(t, 32<<30, 16<<30)
	if err := checkMemory(math.MaxInt, 0, "the test", "lower it"); err != nil {
		t.Errorf("2 GiB less a byte: %v", err)
	}
	over := int64(math.MaxInt)
	over++ // a variable: as a constant it overflows where int has 64 bits
	wantUsage(t, "2 GiB", checkMemory(over, 0, "the test", "lower it"), "the test needs 2GiB of memory, over the 2.0GiB most a 32-bit build can hold: lower it")
	// --max-memory past it is capped the same.
	wantUsage(t, "2 GiB under --max-memory 8GiB", checkMemory(over, 8<<30, "the test", "lower it"), "the test needs 2GiB of memory, over the 2.0GiB most a 32-bit build can hold: lower it")
}

// fakeMemory makes machineMemory read a machine of total bytes with
// available bytes available, for the rest of the test.
func fakeMemory(t *testing.T, total, available int64) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "meminfo")
	text := fmt.Sprintf("MemTotal:       %d kB\nMemFree:         1000 kB\nMemAvailable:   %d kB\n", total>>10, available>>10)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	old := meminfo
	meminfo = path
	t.Cleanup(func() { meminfo = old })
}

// withTimeout returns a context that ends after d: a refusal that does
// not come makes the command run, and the test must still end.
func withTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func wantUsage(t *testing.T, what string, err error, text string) {
	t.Helper()
	var u usageError
	if !errors.As(err, &u) || !strings.Contains(err.Error(), text) {
		t.Errorf("%s: %v; want a usage error saying %q", what, err, text)
	}
}

// TestBenchRefusesWhatMemoryCannotHold refuses, before allocating, a batch
// larger than the memory available or --max-memory, saying how much it
// needs; the default batch passes.
func TestBenchRefusesWhatMemoryCannotHold(t *testing.T) {
	skipOn32Bits(t)
	fakeMachine(t)
	o := smallBench()
	o.n, o.game, o.autoreset = 1<<20, env.Options{Suits: 4, Encoding: env.Float32}, "next-step"
	wantUsage(t, "bench --n 1048576 --obs float32 --suits 4", runBench(withTimeout(t, 5*time.Second), o, &bytes.Buffer{}, &bytes.Buffer{}),
		"a batch of 1048576 games (classic 4-suit, max-steps 1000, slots 78, float32) needs 54.4GiB of memory, over the 16GiB available on this machine")
	o = smallBench()
	o.n, o.maxMemory = 4096, 1<<20
	wantUsage(t, "bench --max-memory 1MiB", runBench(withTimeout(t, 5*time.Second), o, &bytes.Buffer{}, &bytes.Buffer{}), "over the 1MiB --max-memory: lower --n")
	// More workers than cores take buffers of their own: the advice names them.
	o.n, o.maxMemory, o.workers = 1000, 40<<20, 1_000_000
	wantUsage(t, "bench --workers 1000000 --max-memory 40MiB", runBench(withTimeout(t, 5*time.Second), o, &bytes.Buffer{}, &bytes.Buffer{}), "over the 40MiB --max-memory: lower --n or --workers")
	if err := runBench(withTimeout(t, 20*time.Second), smallBench(), &bytes.Buffer{}, &bytes.Buffer{}); err != nil {
		t.Errorf("a small bench: %v", err)
	}
}

// TestTrainRefusesWhatMemoryCannotHold refuses the run that died with a
// 74 GB allocation, before allocating anything.
func TestTrainRefusesWhatMemoryCannotHold(t *testing.T) {
	skipOn32Bits(t)
	fakeMachine(t)
	o := tinyTrain(t.TempDir(), 1)
	o.cfg.Games, o.cfg.Rollout, o.cfg.Game.FaceUpSlots, o.cfg.Game.Suits = 16384, 64, 104, 4
	o.cfg.Minibatch, o.hidden = 512, []int{256, 256} // the defaults
	var stderr bytes.Buffer
	// 74.3 GiB in the pure-Go build; OpenBLAS's buffers add what the learner's operands take.
	want := "needs 74.3GiB of memory, over the 16GiB available on this machine"
	if nn.BLASCallBytes > 0 {
		want = "needs 74.4GiB of memory, over the 16GiB available on this machine"
	}
	wantUsage(t, "train --games 16384 --rollout 64 --face-up-slots 104 --suits 4", runTrain(withTimeout(t, 5*time.Second), o, &bytes.Buffer{}, &stderr), want)
	o = tinyTrain(t.TempDir(), 1)
	o.maxMemory = 1 << 20
	wantUsage(t, "train --max-memory 1MiB", runTrain(withTimeout(t, 5*time.Second), o, &bytes.Buffer{}, &stderr), "over the 1MiB --max-memory")
	// The imitation data, outside --max-memory's count, must still fit
	// the machine: 20000 warm-start games at 1000 steps may take 24 GB.
	dir := t.TempDir()
	o = tinyTrain(dir, 1)
	o.cfg.CloneGames, o.cfg.Game.MaxSteps = 20000, 1000
	wantUsage(t, "train --clone-games 20000", runTrain(withTimeout(t, 5*time.Second), o, &bytes.Buffer{}, &stderr), "the imitation data of 20000 warm-start games")
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("a refused run left %d files in --out", len(ents))
	}
	o = tinyTrain(t.TempDir(), 1)
	o.cfg.CloneGames, o.cfg.DaggerRounds, o.cfg.DaggerGames = 0, 1000, 100_000 // 500 moves a game at most
	wantUsage(t, "train --dagger-rounds 1000 --dagger-games 100000", runTrain(withTimeout(t, 5*time.Second), o, &bytes.Buffer{}, &stderr), "lower --clone-games, --dagger-rounds")
}

// TestTrainRefusesGamesWithoutEnd: a warm start's or a validation's games
// are played to their end, so without a step limit a looping player
// would never finish one.
func TestTrainRefusesGamesWithoutEnd(t *testing.T) {
	o := tinyTrain(t.TempDir(), 1)
	o.cfg.Game.MaxSteps = -1
	wantUsage(t, "train --max-steps -1 with a warm start", runTrain(withTimeout(t, 5*time.Second), o, &bytes.Buffer{}, &bytes.Buffer{}), "need a step limit")
	o.cfg.CloneGames = 0 // validation is on by default
	wantUsage(t, "train --max-steps -1 with validation", runTrain(withTimeout(t, 5*time.Second), o, &bytes.Buffer{}, &bytes.Buffer{}), "need a step limit")
	o.cfg.ValEvery = 0 // PPO alone: rollouts have a fixed length
	if err := runTrain(withTimeout(t, 60*time.Second), o, &bytes.Buffer{}, &bytes.Buffer{}); err != nil {
		t.Errorf("PPO alone without a step limit: %v", err)
	}
}

// TestTrainRefusesNegativeBudgets: a negative budget is never reached, so
// the run would go on forever.
func TestTrainRefusesNegativeBudgets(t *testing.T) {
	for flag, spoil := range map[string]func(*trainOptions){
		"--iterations -1":                func(o *trainOptions) { o.iterations = -1 },
		"--steps -1":                     func(o *trainOptions) { o.iterations, o.steps = 0, -1 },
		"--time -1s":                     func(o *trainOptions) { o.iterations, o.budget = 0, -time.Second },
		"--time -1s with --iterations 1": func(o *trainOptions) { o.budget = -time.Second },
	} {
		o := tinyTrain(t.TempDir(), 1)
		spoil(&o)
		wantUsage(t, flag, runTrain(withTimeout(t, 5*time.Second), o, &bytes.Buffer{}, &bytes.Buffer{}), "is negative (0: no limit)")
	}
}

// TestTrainRefusesEmptyOut: an empty --out is a usage error, not mkdir's.
func TestTrainRefusesEmptyOut(t *testing.T) {
	wantUsage(t, "--out ''", runTrain(withTimeout(t, 5*time.Second), tinyTrain("", 1), &bytes.Buffer{}, &bytes.Buffer{}), "--out needs a folder")
}

// TestEvalRefusesOutOfRangeNodes names --nodes for a budget outside 0 to
// agents.MaxNodes, before any game.
func TestEvalRefusesOutOfRangeNodes(t *testing.T) {
	for _, n := range []int{-1, agents.MaxNodes + 1} {
		o := smallEval()
		o.nodes = n
		wantUsage(t, fmt.Sprint("--nodes ", n), runEval(context.Background(), o, &bytes.Buffer{}, &bytes.Buffer{}), fmt.Sprintf("--nodes %d: want 0", n))
	}
}

// TestEvalStoppedBeforeAnyDeal says why nothing is reported, and is still
// the context's error.
func TestEvalStoppedBeforeAnyDeal(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out bytes.Buffer
	err := runEval(ctx, smallEval(), &out, &bytes.Buffer{})
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "nothing to report") || out.Len() != 0 {
		t.Fatalf("%v (stdout %q); want context.Canceled, saying there is nothing to report, and no output", err, out.String())
	}
}

// TestTrainRefusesFlagsThatDoNothing: a flag train would ignore is a
// usage error, before --out is made.
func TestTrainRefusesFlagsThatDoNothing(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--teacher", "search"}, "--teacher teaches only"},
		{[]string{"--dagger-games", "5"}, "--dagger-games needs --dagger-rounds"},
		{[]string{"--clone-unshaped-value", "--clone-games", "2"}, "--clone-unshaped-value needs --shaping progress"},
		{[]string{"--clone-unshaped-value", "--shaping", "progress"}, "and a warm start (--clone-games) or DAgger rounds"},
		{[]string{"--clone-games", "2", "--clone-epochs", "0"}, "at least one pass over its labels"},
		{[]string{"--export", "x.spider"}, "--export writes a trained network"},
	} {
		out := filepath.Join(t.TempDir(), "run")
		fs := pflag.NewFlagSet("train", pflag.ContinueOnError)
		run := trainCommand(fs)
		if err := fs.Parse(append([]string{"--iterations", "1", "--out", out}, tc.args...)); err != nil {
			t.Fatal(err)
		}
		err := run(withTimeout(t, 5*time.Second), nil, nil, &bytes.Buffer{}, &bytes.Buffer{})
		wantUsage(t, fmt.Sprint(tc.args), err, tc.want)
		if _, serr := os.Stat(out); serr == nil {
			t.Errorf("%v: the refused run made %s", tc.args, out)
		}
	}
}

// TestTrainOutNotWritable fails before training when --out cannot take
// files (/proc refuses them, even to root), not at the first checkpoint.
func TestTrainOutNotWritable(t *testing.T) {
	if _, err := os.Stat("/proc/self"); err != nil {
		t.Skip("no /proc")
	}
	var stderr bytes.Buffer
	err := runTrain(withTimeout(t, 20*time.Second), tinyTrain("/proc", 1), &bytes.Buffer{}, &stderr)
	wantUsage(t, "--out /proc", err, "--out /proc: cannot write there")
	if stderr.Len() != 0 {
		t.Errorf("it trained before failing: %q", stderr.String())
	}
}

// TestTrainOutUnderAFile: an --out that cannot be a folder (under a
// file) is input to fix, a usage error, as every other output path's is;
// it was mkdir's error and exit 1.
func TestTrainOutUnderAFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "afile")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{file, filepath.Join(file, "run")} {
		err := runTrain(withTimeout(t, 20*time.Second), tinyTrain(out, 1), &bytes.Buffer{}, &bytes.Buffer{})
		wantUsage(t, "--out "+out, err, "--out "+out+": ")
	}
}

// TestEvalRefusesBadWorkersAndSeeds refuses a negative worker count and
// deals that run past the last seed (which wrapped to seed 0).
func TestEvalRefusesBadWorkersAndSeeds(t *testing.T) {
	o := smallEval()
	o.workers = -1
	wantUsage(t, "eval --workers -1", runEval(withTimeout(t, 10*time.Second), o, &bytes.Buffer{}, &bytes.Buffer{}), "--workers -1: want 0 (GOMAXPROCS) to 4096")
	o = smallEval()
	o.seeds, o.start, o.games = "", math.MaxUint64, 2
	wantUsage(t, "eval --start 18446744073709551615 --games 2", runEval(withTimeout(t, 10*time.Second), o, &bytes.Buffer{}, &bytes.Buffer{}),
		"--start 18446744073709551615 with --games 2 runs past the last seed")
	o.games, o.policies = 1, "random"
	if err := runEval(withTimeout(t, 10*time.Second), o, &bytes.Buffer{}, &bytes.Buffer{}); err != nil {
		t.Errorf("the last seed alone: %v", err)
	}
	o = smallEval()
	o.record = "/proc/records"
	wantUsage(t, "eval --record /proc/records", runEval(withTimeout(t, 10*time.Second), o, &bytes.Buffer{}, &bytes.Buffer{}), "--record /proc/records")
	o = smallEval()
	o.policies = "random,greedy,random"
	wantUsage(t, "eval --policies random,greedy,random", runEval(withTimeout(t, 10*time.Second), o, &bytes.Buffer{}, &bytes.Buffer{}), `policy "random" is listed twice`)
	// A name spider results would refuse to print is refused here.
	o = smallEval()
	o.policies = "greedy,nn:/tmp/we\tird/c.spider"
	wantUsage(t, "eval --policies with a tab", runEval(withTimeout(t, 10*time.Second), o, &bytes.Buffer{}, &bytes.Buffer{}), `policy "nn:/tmp/we\tird/c.spider" is not printable text`)
	// A report lists at most what spider results reads.
	o = smallEval()
	var many []string
	for i := range maxReportPolicies + 1 {
		many = append(many, fmt.Sprintf("remote:unix:/nonexistent/agent-%d.sock", i))
	}
	o.policies = strings.Join(many, ",")
	wantUsage(t, "eval --policies of 257 agents", runEval(withTimeout(t, 10*time.Second), o, &bytes.Buffer{}, &bytes.Buffer{}), "257 policies: at most 256 in one evaluation")
	// A run refused after its flags were read leaves no --record folder.
	dir := filepath.Join(t.TempDir(), "a", "records")
	o = smallEval()
	o.record, o.out.json, o.out.csv = dir, true, true
	wantUsage(t, "eval --record --json --csv", runEval(withTimeout(t, 10*time.Second), o, &bytes.Buffer{}, &bytes.Buffer{}), "--json")
	if _, err := os.Stat(filepath.Dir(dir)); !os.IsNotExist(err) {
		t.Errorf("a refused eval made its --record folder (%v)", err)
	}
	o.out.csv, o.policies, o.seeds = false, "random", "1-2"
	if err := runEval(withTimeout(t, 10*time.Second), o, &bytes.Buffer{}, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	if names, err := os.ReadDir(dir); err != nil || len(names) != 2 {
		t.Errorf("eval --record made %d records: %v", len(names), err)
	}
}

// TestPlayRecordNotWritable fails at once, before the game, when the
// record cannot be written, rather than when the game ends.
func TestPlayRecordNotWritable(t *testing.T) {
	for path, text := range map[string]string{
		"/proc/game.spider": "cannot write there",
		t.TempDir():         "is a folder",
		filepath.Join(t.TempDir(), "missing", "game.spider"): "does not exist",
	} {
		var out bytes.Buffer
		o := playOptions{game: env.Options{Suits: 1, MaxSteps: -1}, seed: 3, record: path}
		err := runPlay(withTimeout(t, 5*time.Second), o, strings.NewReader("deal\nq\n"), &out)
		wantUsage(t, "play --record "+path, err, text)
		if out.Len() != 0 {
			t.Errorf("play --record %s: the game started: %q", path, out.String())
		}
	}
}

func TestByteSize(t *testing.T) {
	for in, want := range map[string]int64{
		"4GiB": 4 << 30, "512MiB": 512 << 20, "2g": 2 << 30, "1.5GB": 1.5e9, "1e9": 1e9, "100": 100, "64 KiB": 64 << 10, "0": 0,
	} {
		var b byteSize
		if err := b.Set(in); err != nil || int64(b) != want {
			t.Errorf("Set(%q) = %d, %v; want %d", in, b, err, want)
		}
	}
	for _, bad := range []string{"", "x", "-1GiB", "GiB", "1e30", "NaN"} {
		var b byteSize
		if err := b.Set(bad); err == nil {
			t.Errorf("Set(%q) = %d; want an error", bad, b)
		}
	}
	if got := byteSize(1536 << 20).String(); got != "1.5GiB" { // bytesize.Format's tests cover the rest
		t.Errorf("byteSize(1.5GiB).String() = %s", got)
	}
}

// TestCheckMemoryAtTheLimit: what needs exactly the limit fits, a byte
// more does not, under --max-memory and under the machine's available
// memory alike.
func TestCheckMemoryAtTheLimit(t *testing.T) {
	skipOn32Bits(t)
	fakeMemory(t, 32<<30, 16<<30)
	for _, tc := range []struct {
		need  int64
		limit byteSize
		fits  bool
	}{
		{1 << 30, 1 << 30, true}, {1<<30 + 1, 1 << 30, false},
		{16 << 30, 0, true}, {16<<30 + 1, 0, false},
	} {
		err := checkMemory(tc.need, tc.limit, "the test", "lower it")
		if (err == nil) != tc.fits {
			t.Errorf("checkMemory(%d, --max-memory %d): %v; want fits %v", tc.need, tc.limit, err, tc.fits)
		}
	}
}

// TestTrainResumeChecksImitationMemory resumes a run between its DAgger
// rounds on a machine with almost no memory available: the checkpoint's
// imitation data, which the next round learns from, is refused by name,
// and a machine with room resumes it.
func TestTrainResumeChecksImitationMemory(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run")
	o := tinyTrain(out, 2)
	o.cfg.DaggerRounds, o.cfg.DaggerGames = 2, 2
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	err := runTrain(ctx, o, &bytes.Buffer{}, &cancelOn{text: "DAgger round 1:", cancel: cancel})
	if err == nil || !strings.Contains(err.Error(), "the checkpoint is saved") {
		t.Fatalf("stopping after the first DAgger round: %v", err)
	}
	fakeMemory(t, 32<<30, 1<<10) // 1 kB available; fakeMachine below replaces it
	o.resume = true
	// The buffers come first, against the memory available as a new
	// run's are; --max-memory makes room for them, so the imitation data
	// is what the 1 kB refuses.
	wantUsage(t, "resume with 1 kB available", runTrain(context.Background(), o, &bytes.Buffer{}, &bytes.Buffer{}),
		"training 4 games x 16 rollout steps")
	o.maxMemory = 1 << 30
	wantUsage(t, "resume with 1 kB available and --max-memory 1GiB", runTrain(context.Background(), o, &bytes.Buffer{}, &bytes.Buffer{}),
		"the checkpoint's imitation data and the DAgger rounds still to play (the last learns from all of it at once) needs")
	// What the rounds still to play will add counts too: memory for the
	// data held but not for the bound is refused.
	tr, err := train.Resume(filepath.Join(out, "checkpoint.spider"), nil)
	if err != nil {
		t.Fatal(err)
	}
	held, bound := tr.ImitationBytes(), tr.Config.ImitationBound()
	tr.Close()
	if held == 0 || bound <= held {
		t.Fatalf("imitation data held %d, bound %d", held, bound)
	}
	fakeMemory(t, 32<<30, (held+bound)/2)
	wantUsage(t, "resume with memory for the data held only", runTrain(context.Background(), o, &bytes.Buffer{}, &bytes.Buffer{}),
		"the DAgger rounds still to play (the last learns from all of it at once) needs")
	o.maxMemory = 0
	fakeMachine(t)
	if err := runTrain(context.Background(), o, &bytes.Buffer{}, &bytes.Buffer{}); err != nil {
		t.Fatalf("resume with 16 GiB available: %v", err)
	}
}

// TestTrainResumeChecksBuffersFirst: a checkpoint whose settings ask for
// 4 games of 262144 rollout steps is refused by what those buffers need
// before any is made. Before, a resume checked them only with
// --max-memory, and only after allocating them: gigabytes from a file of
// a few kilobytes.
func TestTrainResumeChecksBuffersFirst(t *testing.T) {
	skipOn32Bits(t)
	out := filepath.Join(t.TempDir(), "run")
	o := tinyTrain(out, 1)
	if err := runTrain(context.Background(), o, &bytes.Buffer{}, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	editConfig(t, filepath.Join(out, "checkpoint.spider"), func(c map[string]any) { c["rollout"] = 1 << 18 })
	fakeMemory(t, 32<<30, 1<<30)
	o.resume, o.iterations = true, 2
	var run error
	got := alloccount.Bytes(func() { run = runTrain(context.Background(), o, &bytes.Buffer{}, &bytes.Buffer{}) })
	wantUsage(t, "the crafted resume", run, "training 4 games x 262144 rollout steps")
	if !strings.Contains(run.Error(), "over the 1GiB available") || !strings.Contains(run.Error(), "resume it where there is more memory") {
		t.Errorf("the refusal: %v", run)
	}
	if got > 64<<20 {
		t.Errorf("refusing it allocated %d bytes", got)
	}
	o.maxMemory = 2 << 30
	wantUsage(t, "the crafted resume under --max-memory 2GiB", runTrain(context.Background(), o, &bytes.Buffer{}, &bytes.Buffer{}),
		"over the 2GiB --max-memory: its settings are the checkpoint's: raise --max-memory")
	// A step limit of 2^30 with validation: each game validated holds its
	// moves, up to 64 GiB at agents.MoveBytes a move. Before, a resume
	// under --max-memory 64MiB grew past 100 MB and on, a game taking
	// hours.
	long := tinyTrain(filepath.Join(t.TempDir(), "long"), 1)
	long.cfg.Game.MaxSteps, long.cfg.CloneGames, long.cfg.ValEvery = 1<<30, 0, 0
	if err := runTrain(context.Background(), long, &bytes.Buffer{}, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	editConfig(t, filepath.Join(long.out, "checkpoint.spider"), func(c map[string]any) { c["val_every"], c["val_games"] = 1, 2 })
	fakeMachine(t)
	long.resume, long.iterations = true, 2
	wantUsage(t, "a resume with validation at a step limit of 2^30", runTrain(context.Background(), long, &bytes.Buffer{}, &bytes.Buffer{}),
		"with validation on 2 deals (")
	// So is a new run asking for it.
	n := tinyTrain(filepath.Join(t.TempDir(), "new"), 1)
	n.cfg.Game.MaxSteps, n.cfg.ValEvery, n.cfg.ValGames = 1<<30, 1, 2
	wantUsage(t, "a new run with validation at a step limit of 2^30", runTrain(context.Background(), n, &bytes.Buffer{}, &bytes.Buffer{}),
		"lower --games, --rollout, --minibatch, --face-up-slots, or with validation --val-games or --max-steps")
}

// editConfig rewrites the training configuration of the checkpoint at
// path with edit, sealed as a trainer seals it: a crafted checkpoint.
func editConfig(t *testing.T, path string, edit func(config map[string]any)) {
	t.Helper()
	net, raw, err := nn.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	var st map[string]any
	if err := msgpack.Unmarshal(raw, &st); err != nil {
		t.Fatal(err)
	}
	edit(st["config"].(map[string]any))
	if raw, err = msgpack.Marshal(st); err != nil {
		t.Fatal(err)
	}
	if err := nn.Save(path, net, raw); err != nil {
		t.Fatal(err)
	}
}

// TestFlagsOutOfRangeRefused: values a flag's help rules out are usage
// errors, not quietly replaced or ignored.
func TestFlagsOutOfRangeRefused(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"replay", "x.spider", "--every", "-3"}, "--every -3: want 0 or more"},
		{[]string{"demo", "--show", "-5"}, "--show -5 is negative"},
		{[]string{"eval", "--games", "1", "--remote-timeout", "-5s"}, "--remote-timeout -5s is negative"},
		{[]string{"eval", "--games", "1", "--per-game"}, "--per-game lists the games in the JSON report: add --json"},
	} {
		var stdout, stderr bytes.Buffer
		if code := Main(tc.args, strings.NewReader(""), &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), tc.want) || stdout.Len() != 0 {
			t.Errorf("%v: exit %d, stderr %q, stdout %q; want exit 2 saying %q", tc.args, code, stderr.String(), stdout.String(), tc.want)
		}
	}
}

// TestReplayRefusesGIFOverMemory: an animation is refused before it is
// drawn when its frames, at what one costs at the peak of a replay's
// memory (gifFrameBytes, measured), would pass the memory available
// (16 GiB here: about 840,000 frames).
func TestReplayRefusesGIFOverMemory(t *testing.T) {
	fakeMachine(t)
	o := replayOptions{gif: filepath.Join(t.TempDir(), "g.gif"), delay: time.Second}
	_, err := newPictures(o, 900_000, io.Discard)
	wantUsage(t, "a GIF of 900,001 frames", err, "an animation of 900001 frames needs about")
	if _, err := newPictures(o, 700_000, io.Discard); err != nil {
		t.Fatalf("a GIF of 700,001 frames: %v", err)
	}
}

// TestDemoRefusesWhatMemoryCannotHold: a demo's undo history grows a
// record a move, so a step limit whose records would not fit the memory
// available (16 GiB here) is refused before the game starts.
func TestDemoRefusesWhatMemoryCannotHold(t *testing.T) {
	fakeMachine(t)
	o := demoOptions{game: env.Options{Suits: 1, MaxSteps: 1 << 30}, seed: 1, policy: 1}
	var out bytes.Buffer
	wantUsage(t, "demo --max-steps 2^30", runDemo(withTimeout(t, 5*time.Second), o, &out, io.Discard), "lower --max-steps")
	if out.Len() != 0 {
		t.Fatalf("a refused demo wrote %q", out.String())
	}
	o.game.MaxSteps = 200
	if err := runDemo(context.Background(), o, &out, io.Discard); err != nil {
		t.Fatalf("a demo of 200 moves: %v", err)
	}
}

// TestEvalRefusesWhatMemoryCannotHold: every worker holds each
// searching policy's whole node budget, and every game's result is held
// to the end (with its row for --per-game, its moves for --record), so an
// eval that needs more than the memory available is refused before any
// game, saying how much; workers beyond the games to play hold nothing.
func TestEvalRefusesWhatMemoryCannotHold(t *testing.T) {
	skipOn32Bits(t)
	fakeMachine(t) // 16 GiB available
	big := agents.Options{Nodes: agents.MaxNodes}
	makers := func(specs ...string) map[string]agents.Maker {
		m := map[string]agents.Maker{}
		for _, p := range specs {
			if !strings.HasPrefix(p, "remote:") {
				mk, err := agents.NewWith(p, big)
				if err != nil {
					t.Fatal(err)
				}
				m[p] = mk
			}
		}
		return m
	}
	per := (&agents.Search{Nodes: agents.MaxNodes}).Bytes()
	wantUsage(t, "16 workers of search and oracle at MaxNodes",
		checkEvalMemory([]string{"search", "oracle"}, makers("search", "oracle"), evalOptions{workers: 16}, 1000, 100),
		fmt.Sprintf("and 16 workers (%s each: games in play at 64B a move up to the step limit, and search positions)", bytesize.Format(2*per+agents.MoveBytes*1000)))
	// A game in play holds its moves: at a step limit of 2^30, 64 GiB.
	err := checkEvalMemory([]string{"random"}, makers("random"), evalOptions{workers: 2}, 1<<30, 10)
	wantUsage(t, "two workers at a step limit of 2^30", err, "and 2 workers (64GiB each: games in play at 64B a move up to the step limit)")
	// Each greedy or nn: agent a worker keeps holds the positions of its
	// longest game: two of them, twice.
	greedy := makers("greedy")["greedy"]
	two := map[string]agents.Maker{"g1": greedy, "g2": greedy}
	if err := checkEvalMemory([]string{"g1"}, two, evalOptions{workers: 1}, 1<<27, 10_000); err != nil {
		t.Errorf("one greedy policy at a step limit of 2^27 (8 GiB): %v", err)
	}
	wantUsage(t, "two greedy policies at a step limit of 2^27",
		checkEvalMemory([]string{"g1", "g2"}, two, evalOptions{workers: 1}, 1<<27, 10_000), "and 1 workers (16GiB each")
	// A remote agent's games in play hold their move lists here, as many
	// as its width, or as the deals when fewer.
	wantUsage(t, "a remote agent's 64 games at a step limit of 2^30",
		checkEvalMemory([]string{"remote:unix:/x"}, makers(), evalOptions{workers: 1, remoteWidth: 64}, 1<<30, 100),
		fmt.Sprintf("an evaluation of 100 games (%s each, held to the end) and 64 remote games in play (5GiB each, and ", bytesize.Format(evalResultBytes)))
	wantUsage(t, "a remote agent's 4 deals at a step limit of 2^30",
		checkEvalMemory([]string{"remote:unix:/x"}, makers(), evalOptions{workers: 1, remoteWidth: 64}, 1<<30, 4),
		"and 4 remote games in play (5GiB each, and ")
	// Each remote policy's connection holds its requests: 4096 games of
	// four-suit float32 observations are hundreds of megabytes, counted
	// (measured: 893 MB of RSS for one such policy, before its frame was
	// made at its size). Forty of them are refused on 16 GiB.
	wide := evalOptions{workers: 1, remoteWidth: remote.MaxWidth, game: env.Options{Suits: 4, Encoding: env.Float32}}
	req := remote.RequestBytes(env.MustRules(wide.game), remote.MaxWidth)
	if req < 400<<20 || req > 1<<30 {
		t.Errorf("RequestBytes of 4096 four-suit float32 games: %s", bytesize.Format(req))
	}
	var forty []string
	for i := range 40 {
		forty = append(forty, fmt.Sprintf("remote:unix:/%d", i))
	}
	wantUsage(t, "forty remote policies of 4096 float32 games", checkEvalMemory(forty, makers(), wide, 5, 4096),
		fmt.Sprintf("and 163840 remote games in play (25B each, and %s of requests a remote policy)", bytesize.Format(req)))
	if err := checkEvalMemory(forty[:1], makers(), wide, 5, 4096); err != nil {
		t.Errorf("one remote policy of 4096 float32 games: %v", err)
	}
	wantUsage(t, "ten million deals of two policies, per game",
		checkEvalMemory([]string{"random", "greedy"}, makers("random", "greedy"), evalOptions{workers: 2, perGame: true}, 1000, 10_000_000),
		"an evaluation of 20000000 games")
	wantUsage(t, "a million deals recorded at a step limit of 10000",
		checkEvalMemory([]string{"random"}, makers("random"), evalOptions{workers: 2, record: "x"}, 10000, 1_000_000),
		"split the seeds into ranges")
	for _, tc := range []struct {
		specs []string
		o     evalOptions
		deals int
	}{
		{[]string{"search"}, evalOptions{workers: 16}, 1},                    // one game: one worker
		{[]string{"search"}, evalOptions{workers: 4}, 100},                   // 4 x 1.3 GB
		{[]string{"random", "greedy"}, evalOptions{workers: 64}, 10_000_000}, // results alone: 2 GB
		{[]string{"remote:unix:/x", "random"}, evalOptions{workers: 64, perGame: true}, 100_000},
	} {
		if err := checkEvalMemory(tc.specs, makers(tc.specs...), tc.o, 1000, tc.deals); err != nil {
			t.Errorf("%v, %+v, %d deals: %v", tc.specs, tc.o, tc.deals, err)
		}
	}
	// Through the command: refused before any game is played.
	for _, args := range [][]string{
		{"--policies", "search", "--nodes", fmt.Sprint(agents.MaxNodes), "--workers", "64", "--games", "100"},
		{"--policies", "random,greedy", "--games", "10000000", "--json", "--per-game"},
	} {
		code, out, errs := runMain(append([]string{"eval"}, args...)...)
		if code != 2 || out != "" || !strings.Contains(errs, "split the seeds into ranges") || strings.Contains(errs, "--max-memory") {
			t.Errorf("eval %v: exit %d, stdout %q, stderr %q", args, code, out, errs)
		}
	}
	// Settings that would never end or never save are refused too.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--policies", "random", "--games", "1", "--max-steps", "-1"}, "eval needs a step limit"},
		{[]string{"--policies", "random", "--games", "1", "--workers", "5000"}, "--workers 5000: want 0 (GOMAXPROCS) to 4096"},
		{[]string{"--policies", "random", "--games", "1", "--max-steps", "20000000", "--record", t.TempDir()}, "a record holds at most"},
	} {
		if code, _, errs := runMain(append([]string{"eval"}, tc.args...)...); code != 2 || !strings.Contains(errs, tc.want) {
			t.Errorf("eval %v: exit %d, %q; want 2 and %q", tc.args, code, errs, tc.want)
		}
	}
}

// TestReplayRefusesAnOracleMemoryCannotHold: --turning-point's oracle
// reserves its whole budget, so a budget over the memory available is
// refused before the record is replayed.
func TestReplayRefusesAnOracleMemoryCannotHold(t *testing.T) {
	fakeMemory(t, 2<<30, 1<<30)
	game, _ := saveRandomGame(t, t.TempDir(), env.Options{Suits: 1, MaxSteps: 10}, 2)
	code, out, errs := runMain("replay", "--turning-point", "--nodes", fmt.Sprint(agents.MaxNodes), game)
	if code != 2 || out != "" || !strings.Contains(errs, "the oracle's search of --nodes 1048576 needs") || !strings.Contains(errs, "lower --nodes") {
		t.Errorf("a 1 GiB machine: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if code, _, errs := runMain("replay", "--turning-point", "--nodes", "2000", game); code != 0 {
		t.Errorf("--nodes 2000 on a 1 GiB machine: exit %d, %s", code, errs)
	}
}

// TestResultsPairRefusesWhatMemoryCannotHold: every report of a pair is
// held decoded until the pairs are counted, so reports the machine could
// not hold are refused before any is read.
func TestResultsPairRefusesWhatMemoryCannotHold(t *testing.T) {
	fakeMemory(t, 2<<20, 1<<20)
	dir := t.TempDir()
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, bytes.Repeat([]byte(" "), 1<<20), 0o644); err != nil { // 1 MiB: 8 MiB held, over 1 MiB available
		t.Fatal(err)
	}
	code, _, errs := runMain("results", "--pair", big, big+"x")
	if code != 2 || !strings.Contains(errs, "pairing 1MiB of eval reports needs 8.0MiB") {
		t.Errorf("results --pair on a 1 MiB machine: exit %d, %q", code, errs)
	}
}

// TestEvalRefusesCheckpointsMemoryCannotHold: an nn: policy's checkpoint
// is read whole, and its weights held to the end, so checkpoints the
// machine could not load are refused before any is read, and the weights
// count in the evaluation's memory.
func TestEvalRefusesCheckpointsMemoryCannotHold(t *testing.T) {
	net, path, fi, weights := savedNet(t, 512)
	if fi.Size() < 1<<20 || weights < 1<<20 {
		t.Fatalf("a checkpoint of %d bytes, %d of weights: too small to tell", fi.Size(), weights)
	}
	fakeMemory(t, 32<<30, fi.Size()) // room for the file, not for loading it
	o := smallEval()
	o.policies = "random,nn:" + path
	wantUsage(t, "eval of a checkpoint the machine cannot load", runEval(withTimeout(t, 10*time.Second), o, &bytes.Buffer{}, &bytes.Buffer{}),
		fmt.Sprintf("loading %s of nn: checkpoints needs %s", bytesize.Format(fi.Size()), bytesize.Format(2*fi.Size())))
	// Loaded, the weights count once, beside the workers'.
	fakeMemory(t, 32<<30, weights)
	mk, err := agents.NeuralMaker(net)
	if err != nil {
		t.Fatal(err)
	}
	wantUsage(t, "the weights held to the end",
		checkEvalMemory([]string{"nn"}, map[string]agents.Maker{"nn": mk}, evalOptions{workers: 1}, 1000, 1),
		fmt.Sprintf("networks' weights (%s)", bytesize.Format(weights)))
	fakeMachine(t)
	if err := checkEvalMemory([]string{"nn"}, map[string]agents.Maker{"nn": mk}, evalOptions{workers: 1}, 1000, 1); err != nil {
		t.Errorf("on a machine of 16 GiB available: %v", err)
	}
}

// savedNet saves a fresh one-suit network of one hidden layer of hidden
// units and returns it, its file, the file's size and its weights' bytes
// (counted here, apart from the code under test).
func savedNet(t *testing.T, hidden int) (net *nn.Net, path string, fi os.FileInfo, weights int64) {
	t.Helper()
	net, err := nn.New(nn.SpecFor(env.MustRules(env.Options{Suits: 1}), []int{hidden}), 1)
	if err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(t.TempDir(), "net.spider")
	if err := nn.Save(path, net, nil); err != nil {
		t.Fatal(err)
	}
	if fi, err = os.Stat(path); err != nil {
		t.Fatal(err)
	}
	for _, p := range net.Params() {
		weights += 4 * int64(len(p))
	}
	return net, path, fi, weights
}

// TestEvalRefusesANetworkForOtherRules: a network made for one suit
// evaluated on two is the command line's mistake, exit 2, as play's
// --hint says it (it failed the run, exit 1).
func TestEvalRefusesANetworkForOtherRules(t *testing.T) {
	_, path, _, _ := savedNet(t, 8)
	code, _, errs := runMain("eval", "--policies", "nn:"+path, "--games", "1", "--suits", "2")
	if code != 2 || !strings.Contains(errs, "nn:"+path+": the game does not match the network: a 2-suit game, the network's 1-suit") {
		t.Errorf("exit %d: %s", code, errs)
	}
}

// TestGameFlagErrorsNameTheFlag: a game option refused by env is named as
// its flag, without env's advice to use a negative step limit (which
// eval refuses), and a shaping discount without shaping is refused by
// every command, as train refused it (eval, bench, demo and play took it
// and did nothing with it).
func TestGameFlagErrorsNameTheFlag(t *testing.T) {
	wantRefusals(t, []refusal{
		{[]string{"eval", "--max-steps", "2000000000", "--games", "1"}, "spider eval: --max-steps 2000000000 is over the limit 1073741824\n"},
		{[]string{"demo", "--face-up-slots", "200"}, "spider demo: --face-up-slots must be 1 to"},
		{[]string{"bench", "--rules", "cardems", "--time-per-action-ms", "5"}, "spider bench: --time-per-action-ms applies only to classic scoring"},
		{[]string{"eval", "--shaping-gamma", "0.9", "--games", "1"}, "spider eval: --shaping-gamma 0.9 needs --shaping progress"},
		{[]string{"bench", "--shaping-gamma", "0.9"}, "spider bench: --shaping-gamma 0.9 needs --shaping progress"},
		{[]string{"play", "--shaping-gamma", "0.5"}, "spider play: --shaping-gamma 0.5 needs --shaping progress"},
	})
}

// TestEvalRefusesFlagsThatDoNothing: flags no part of the run reads are
// refused, as train refuses them (eval took them and ignored them).
func TestEvalRefusesFlagsThatDoNothing(t *testing.T) {
	wantRefusals(t, []refusal{
		{[]string{"eval", "--seeds", "1-3", "--start", "5"}, "--seeds names the deals: drop --start"},
		{[]string{"eval", "--seeds", "1-3", "--games", "5"}, "--seeds names the deals: drop --games"},
		{[]string{"eval", "--list-suites", "--policies", "bogus"}, "--list-suites lists the suites and plays nothing: drop --policies"},
		{[]string{"eval", "--games", "1", "--policies", "random,greedy", "--nodes", "500"}, "--nodes: no policy listed reads it (oracle, search and search-hand do)"},
		{[]string{"eval", "--games", "1", "--policies", "greedy", "--move-ms", "5"}, "--move-ms: no policy listed reads it"},
		{[]string{"eval", "--games", "1", "--policies", "greedy,oracle", "--draw", "2"}, "--draw: no policy listed reads it"},
	})
	// A policy that reads it, in any case, takes it.
	if code, _, errs := runMain("eval", "--games", "1", "--policies", "greedy,Search", "--nodes", "200", "--max-steps", "20"); code != 0 {
		t.Errorf("--nodes with search: exit %d, %s", code, errs)
	}
}

// TestTimeAndBudgetFlagsNeedWhatReadsThem: --move-ms for a hint that
// does not plan, and replay's --nodes without --turning-point, are
// refused (they were taken and did nothing).
func TestTimeAndBudgetFlagsNeedWhatReadsThem(t *testing.T) {
	wantRefusals(t, []refusal{
		{[]string{"play", "--hint", "greedy", "--move-ms", "5"}, "spider play: --move-ms bounds a search's plan, and --hint greedy does not plan"},
		{[]string{"replay", "--nodes", "5", "no-such.spider"}, "spider replay: --nodes is the oracle's budget for --turning-point"},
		// An unknown hint is said as such first.
		{[]string{"play", "--hint", "serach", "--move-ms", "100"}, "unknown"},
		// And the policies it lists are those --hint takes: not the oracle.
		{[]string{"serve", "--hint", "bogus"}, `spider serve: --hint "bogus": unknown policy; want first, greedy, `},
		{[]string{"play", "--shaping-gamma", "2"}, "spider play: --shaping-gamma 2 is outside 0 to 1"},
		// The first flag no policy reads, in a fixed order.
		{[]string{"eval", "--games", "1", "--policies", "greedy", "--draw", "1", "--nodes", "5"}, "spider eval: --nodes: no policy"},
		// The warm start's flags with no warm start were taken too.
		{[]string{"train", "--out", "never-made", "--iterations", "1", "--clone-lr", "0.01"}, "spider train: --clone-lr sets how a warm start (--clone-games) or DAgger rounds (--dagger-rounds) learn, and this run has neither"},
		{[]string{"train", "--out", "never-made", "--iterations", "1", "--clone-trim"}, "spider train: --clone-trim sets how"},
		{[]string{"train", "--out", "never-made", "--iterations", "1", "--clone-bootstrap=false"}, "spider train: --clone-bootstrap sets how"},
		{[]string{"train", "--out", "never-made", "--iterations", "1", "--dagger-rounds", "1", "--clone-won-only"}, "spider train: --clone-won-only picks the warm start's games: it needs --clone-games"},
		// The remote agents' flags with no remote agent were taken too.
		{[]string{"eval", "--games", "1", "--policies", "random", "--remote-batch", "100"}, "spider eval: --remote-batch: no policy listed reads it (remote:ADDRESS policies do)"},
		{[]string{"eval", "--games", "1", "--policies", "random", "--remote-timeout", "1h"}, "spider eval: --remote-timeout: no policy listed reads it"},
		{[]string{"eval", "--seeds", "1-99999999999"}, "is too long: at most 10,000,000 deals in all"},
	})
	// serve's default hint, greedy (called, not run: a serve that took
	// the flag would serve until stopped).
	var u usageError
	if _, _, err := serveHint("", 5, 0); !errors.As(err, &u) || !strings.Contains(err.Error(), "--hint greedy does not plan") {
		t.Errorf("serve --move-ms 5: %v", err)
	}
	_, path, _, _ := savedNet(t, 8)
	if _, _, err := serveHint("nn:"+path, 5, 1<<40); !errors.As(err, &u) || !strings.Contains(err.Error(), "does not plan") {
		t.Errorf("serve --hint nn: --move-ms 5: %v", err)
	}
	if _, err := hintMaker("search", 5); err != nil {
		t.Errorf("--hint search --move-ms 5: %v", err)
	}
	// A policy's name in another case is the policy, as everywhere else.
	if _, err := hintMaker("Greedy", 0); err != nil {
		t.Errorf("--hint Greedy: %v", err)
	}
}

// TestTrainResumeTakesAShapingGammaAlone: train --resume checks a
// --shaping-gamma given alone against its checkpoint (which says the
// shaping); it was refused as needing --shaping progress before the
// checkpoint was read.
func TestTrainResumeTakesAShapingGammaAlone(t *testing.T) {
	o := tinyTrain(filepath.Join(t.TempDir(), "none"), 1)
	o.resume = true
	o.cfg.Game.ShapingGamma = 0.99
	err := runTrain(context.Background(), o, io.Discard, io.Discard)
	if err == nil || strings.Contains(err.Error(), "needs --shaping progress") || !strings.Contains(err.Error(), "none") {
		t.Errorf("resume of a run that is not there: %v", err)
	}
}

// refusal is a command line refused as a usage error, with what the
// error must say.
type refusal struct {
	args []string
	want string
}

// wantRefusals runs each command line and wants exit 2 and its words on
// stderr.
func wantRefusals(t *testing.T, cases []refusal) {
	t.Helper()
	for _, c := range cases {
		code, _, errs := runMain(c.args...)
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, %s", c.args, code, errs)
		}
	}
}

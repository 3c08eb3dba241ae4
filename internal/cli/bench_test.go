package cli

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/spiderenv/spider/env"
)

func smallBench() benchOptions {
	return benchOptions{game: env.Options{Suits: 2, MaxSteps: 20}, n: 16, workers: 2, steps: 30, warmup: 2, autoreset: "same-step", seed: 1}
}

func TestBenchJSON(t *testing.T) {
	o := smallBench()
	o.out.json = true
	var out, errb bytes.Buffer
	if err := runBench(context.Background(), o, &out, &errb); err != nil {
		t.Fatal(err)
	}
	var res []benchResult
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if len(res) != 2 || res[0].Workers != 1 || res[1].Workers != 2 {
		t.Fatalf("want runs with 1 and 2 workers, got %+v", res)
	}
	for _, r := range res {
		if r.EnvSteps != 16*30 || r.StepsPerSec <= 0 || r.NsPerStep <= 0 || r.Encoding != env.Compact || r.Autoreset != "same-step" || r.Suits != 2 || r.MaxSteps != 20 || r.Seed != 1 {
			t.Errorf("bad result %+v", r)
		}
		// 16 games of at most 20 steps over 32 steps: every one has ended.
		if r.Episodes == 0 {
			t.Errorf("no episode ended: %+v", r)
		}
	}
	if res[0].SpeedUp != 1 || res[1].SpeedUp != res[1].StepsPerSec/res[0].StepsPerSec {
		t.Errorf("speed-ups %v %v", res[0].SpeedUp, res[1].SpeedUp)
	}
	if !strings.Contains(errb.String(), "env-steps/s") {
		t.Errorf("no progress on stderr: %q", errb.String())
	}
	if strings.Contains(errb.String(), "\r") {
		t.Errorf("progress into a file or pipe redraws with carriage returns: %q", errb.String())
	}
}

// TestBenchTableAndCSV also checks that every format says what was
// measured: every option (face-up slots and shaping change a step's cost)
// and the seed, each CSV column of before in its place.
func TestBenchTableAndCSV(t *testing.T) {
	o := smallBench()
	o.game.Encoding, o.game.FaceUpSlots, o.game.Shaping, o.seed = env.Float32, 12, env.Progress, 9
	var out bytes.Buffer
	if err := runBench(context.Background(), o, &out, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 5 || lines[0] != env.MustRules(o.game).String()+", seed 9" || !strings.Contains(lines[2], "env-steps/s") || !strings.Contains(lines[4], "float32") {
		t.Fatalf("table:\n%s", out.String())
	}
	o.out.csv = true
	out.Reset()
	if err := runBench(context.Background(), o, &out, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&out).ReadAll()
	if err != nil || len(rows) != 3 || strings.Join(rows[0][:13], ",") != "rules,suits,obs,autoreset,n,workers,steps,env_steps,seconds,env_steps_per_sec,ns_per_env_step,episodes,speedup_vs_1_worker" {
		t.Fatalf("csv %v %v", rows, err)
	}
	want := map[string]string{"seed": "9", "warmup": "2", "program_version": programVersion()}
	for _, f := range env.OptionFields() {
		want[f.Key] = f.Text(env.MustRules(o.game).Options())
	}
	checkColumns(t, rows, want, 13, "program_version")
	if want["face_up_slots"] != "12" || want["shaping"] != "progress" {
		t.Fatalf("options %v", want)
	}
}

func TestBenchRefusesBadFlags(t *testing.T) {
	for _, mut := range []func(*benchOptions){
		func(o *benchOptions) { o.game.Encoding = 7 },
		func(o *benchOptions) { o.autoreset = "disabled" },
		func(o *benchOptions) { o.autoreset = "sometimes" },
		func(o *benchOptions) { o.n = 0 },
		func(o *benchOptions) { o.out.json, o.out.csv = true, true },
		func(o *benchOptions) { o.game.Suits = 5 },
		// Each bound of the counts: a negative warm-up or worker count
		// would otherwise run as 0, not as the user asked.
		func(o *benchOptions) { o.warmup = -1 },
		func(o *benchOptions) { o.workers = -1 },
		func(o *benchOptions) { o.steps = 0 },
		func(o *benchOptions) { o.n = env.MaxBatch + 1 },
	} {
		o := smallBench()
		mut(&o)
		err := runBench(context.Background(), o, &bytes.Buffer{}, &bytes.Buffer{})
		if _, ok := err.(usageError); !ok {
			t.Errorf("%+v: error %v, want a usage error", o, err)
		}
	}
}

// TestBenchWarmupStops: a stop during the warm-up (as long as the user
// likes) ends the bench at once, as one during the timed steps does.
func TestBenchWarmupStops(t *testing.T) {
	o := smallBench()
	o.warmup = 1 << 30
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	done := make(chan error, 1)
	go func() { done <- runBench(ctx, o, io.Discard, io.Discard) }()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("a stopped bench returned %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the bench went on warming up after its context ended")
	}
}

// TestBenchCapsWorkersAtGames: more workers than games cannot step more
// games at once, so bench measures one run with as many workers as games
// and reports that count, not a second run whose workers sit idle under
// the --workers asked for.
func TestBenchCapsWorkersAtGames(t *testing.T) {
	o := smallBench()
	o.n, o.workers, o.steps, o.out.json = 1, 3, 5, true
	var out bytes.Buffer
	if err := runBench(context.Background(), o, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	var res []benchResult
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if len(res) != 1 || res[0].Workers != 1 || res[0].SpeedUp != 1 {
		t.Fatalf("--n 1 --workers 3: want one run with 1 worker, got %+v", res)
	}
}

// TestBenchStoppedKeepsFinishedRuns: a stop during the second run (two
// workers) writes the run of one worker, measured whole, and says so
// (it wrote nothing); a stop that comes as the last step ends cuts nothing.
func TestBenchStoppedKeepsFinishedRuns(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o := smallBench()
	o.out.json = true
	var out bytes.Buffer
	err := runBench(ctx, o, &out, &cancelOn{text: "1 worker(s): 30/30 steps", cancel: cancel})
	if err == nil || !errors.Is(err, context.Canceled) || err.Error() != "stopped after 1 of 2 runs, whose results are written" {
		t.Fatalf("stopped in the second run: %v", err)
	}
	var res []benchResult
	if err := json.Unmarshal(out.Bytes(), &res); err != nil || len(res) != 1 || res[0].Workers != 1 || res[0].Steps != 30 || res[0].SpeedUp != 1 {
		t.Fatalf("%v: %s", err, out.String())
	}
}

// TestBenchNamesTheFlagItRefuses: each refused number names its flag.
func TestBenchNamesTheFlagItRefuses(t *testing.T) {
	for flag, want := range map[string]string{
		"--n":       "--n 0: want 1 to",
		"--steps":   "--steps 0: want at least 1",
		"--warmup":  "--warmup -1: want 0 or more",
		"--workers": "--workers -1: want 0 (GOMAXPROCS) or more",
	} {
		v := "0"
		if flag == "--warmup" || flag == "--workers" {
			v = "-1"
		}
		code, _, errs := runMain("bench", flag, v)
		if code != 2 || !strings.Contains(errs, "spider bench: "+want) {
			t.Errorf("bench %s %s: exit %d, %s", flag, v, code, errs)
		}
	}
}

// TestStopWordsSayStopped: a command stopped before it has anything to
// show returns its context's error, which the program says as "stopped"
// (it said Go's "context canceled").
func TestStopWordsSayStopped(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := stopWords(runBench(ctx, smallBench(), io.Discard, io.Discard))
	if err == nil || err.Error() != "stopped" || !errors.Is(err, context.Canceled) {
		t.Errorf("bench stopped at once: %v", err)
	}
	if err := stopWords(errors.New("other")); err.Error() != "other" {
		t.Errorf("another error became %v", err)
	}
}

// slowWriter takes a second for every write, as a stderr piped to a
// stalled reader can.
type slowWriter struct{}

func (slowWriter) Write(p []byte) (int, error) { time.Sleep(time.Second); return len(p), nil }

// TestBenchTimesNotItsProgressLine: the last progress line is written
// after the clock stops, so a slow stderr does not count as stepping
// (one step of one game took the second a write took, and reported 1
// env-step/s).
func TestBenchTimesNotItsProgressLine(t *testing.T) {
	o := benchOptions{game: env.Options{Suits: 1}, n: 1, workers: 1, steps: 1, autoreset: "same-step", seed: 1}
	r := env.MustRules(o.game)
	res, err := benchOnce(context.Background(), r, o, env.SameStep, 1, slowWriter{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Seconds >= 0.5 {
		t.Fatalf("one step of one game timed at %.3f s: the progress line's write was counted", res.Seconds)
	}
}

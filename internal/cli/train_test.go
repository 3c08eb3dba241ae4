package cli

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/spiderenv/spider/agents"
	"github.com/spiderenv/spider/agents/nn"
	"github.com/spiderenv/spider/env"
	"github.com/spiderenv/spider/train"
)

func tinyTrain(out string, iterations int) trainOptions {
	o := trainOptions{cfg: train.DefaultConfig()}
	o.cfg.Game = env.Options{Suits: 1, MaxSteps: 40, FaceUpSlots: 2, Encoding: env.Float32}
	o.cfg.Games, o.cfg.Rollout, o.cfg.Minibatch, o.cfg.Epochs = 4, 16, 32, 1
	o.cfg.CloneGames, o.cfg.CloneEpochs = 2, 1
	o.hidden = []int{8}
	o.iterations, o.out, o.every = iterations, out, 1
	return o
}

// cancelOn cancels a context once the text it watches for is written.
type cancelOn struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	text   string
	cancel context.CancelFunc
}

func (c *cancelOn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buf.Write(p)
	if strings.Contains(c.buf.String(), c.text) {
		c.cancel()
	}
	return len(p), nil
}

func netWeights(t *testing.T, path string) []float32 {
	t.Helper()
	n, _, err := nn.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return slices.Concat(n.Params()...)
}

// TestTrainInterruptedAndResumed interrupts a run after its second
// iteration (as SIGINT does, through the context), resumes it to four, and
// compares it with a run of four straight: the checkpoints must be equal.
func TestTrainInterruptedAndResumed(t *testing.T) {
	dir := t.TempDir()
	straight, broken := filepath.Join(dir, "straight"), filepath.Join(dir, "broken")
	var out bytes.Buffer
	if err := runTrain(context.Background(), tinyTrain(straight, 4), &out, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "iterations         4") {
		t.Fatalf("summary:\n%s", out.String())
	}
	for _, f := range []string{"checkpoint.spider", "metrics.csv", "curve.png"} {
		if fi, err := os.Stat(filepath.Join(straight, f)); err != nil || fi.Size() == 0 {
			t.Fatalf("%s: %v", f, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := &cancelOn{text: "iter 2 ", cancel: cancel}
	err := runTrain(ctx, tinyTrain(broken, 4), &bytes.Buffer{}, w)
	if err == nil || !strings.Contains(err.Error(), "interrupted after iteration 2") {
		t.Fatalf("interrupted run: %v", err)
	}
	if err := runTrain(context.Background(), tinyTrain(broken, 4), &bytes.Buffer{}, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "--resume") {
		t.Fatalf("starting over an existing run: %v", err)
	}
	o := tinyTrain(broken, 4)
	o.resume = true
	if err := runTrain(context.Background(), o, &bytes.Buffer{}, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(netWeights(t, filepath.Join(straight, "checkpoint.spider")), netWeights(t, filepath.Join(broken, "checkpoint.spider"))) {
		t.Fatal("the resumed run ended with other weights than the straight run")
	}
	a, _ := os.ReadFile(filepath.Join(straight, "metrics.csv"))
	b, _ := os.ReadFile(filepath.Join(broken, "metrics.csv"))
	if lines := strings.Count(string(a), "\n"); lines != 6 || lines != strings.Count(string(b), "\n") {
		t.Fatalf("metrics of %d and %d lines; want 6 (header, warm start, 4 iterations)", lines, strings.Count(string(b), "\n"))
	}
	o.cfg.Game.Suits = 2
	o.iterations = 5
	if err := runTrain(context.Background(), o, &bytes.Buffer{}, &bytes.Buffer{}); err != nil {
		t.Fatalf("resuming with --suits not given (the checkpoint's settings hold): %v", err)
	}
	o.set = map[string]bool{"suits": true}
	o.iterations = 6
	if err := runTrain(context.Background(), o, &bytes.Buffer{}, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "--suits is 2, the checkpoint's 1") {
		t.Fatalf("resuming with other suits: %v", err)
	}
	// A training setting the checkpoint holds is not silently replaced
	// either: a resumed run goes on exactly, or not at all.
	o.cfg.Game.Suits = 1
	o.set = map[string]bool{"lr": true, "entropy": true}
	o.cfg.LR, o.cfg.EntCoef = 0.5, 0.9
	if err := runTrain(context.Background(), o, &bytes.Buffer{}, &bytes.Buffer{}); !isUsage(err) || !strings.Contains(err.Error(), "--lr is 0.5, the checkpoint's 0.00025; --entropy is 0.9, the checkpoint's") {
		t.Fatalf("resuming with another --lr and --entropy: %v", err)
	}
	o = tinyTrain(filepath.Join(dir, "none"), 0)
	if _, ok := runTrain(context.Background(), o, &bytes.Buffer{}, &bytes.Buffer{}).(usageError); !ok {
		t.Fatal("a run without a budget was not refused as a usage error")
	}
	if err := runTrain(context.Background(), o, &bytes.Buffer{}, &bytes.Buffer{}); err == nil || err.Error() != "give a budget: --iterations, --steps or --time" {
		t.Fatalf("a run without a budget: %v", err)
	}
}

// TestEvalNetworkPolicy evaluates a checkpoint as nn:PATH next to random,
// records its games under a file-safe name and replays one.
func TestEvalNetworkPolicy(t *testing.T) {
	dir := t.TempDir()
	if err := runTrain(context.Background(), tinyTrain(filepath.Join(dir, "run"), 1), &bytes.Buffer{}, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	ckpt := filepath.Join(dir, "run", "checkpoint.spider")
	o := smallEval()
	o.policies, o.seeds, o.record = "random,nn:"+ckpt, "1-2", filepath.Join(dir, "rec")
	var out bytes.Buffer
	if err := runEval(context.Background(), o, &out, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "nn:"+ckpt) {
		t.Fatalf("the table does not name the network:\n%s", out.String())
	}
	files, _ := filepath.Glob(filepath.Join(dir, "rec", "nn_*.spider"))
	if len(files) != 2 {
		t.Fatalf("network records %v, want 2", files)
	}
	if err := runReplay(context.Background(), replayOptions{}, files[0], &bytes.Buffer{}, io.Discard); err != nil {
		t.Fatal(err)
	}
	o.game.Suits = 2
	if err := runEval(context.Background(), o, &bytes.Buffer{}, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "a 2-suit game, the network's 1-suit") {
		t.Fatalf("a 2-suit eval of a 1-suit network: %v", err)
	}
}

func TestHintRefusesOracle(t *testing.T) {
	o := serveOpts()
	o.hint = "oracle"
	if err := runServe(refusing(t), o, &bytes.Buffer{}, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "hidden cards") {
		t.Fatalf("serve --hint oracle: %v", err)
	}
	p := playOptions{game: env.Options{Suits: 1, MaxSteps: -1}, hint: "oracle"}
	if err := runPlay(context.Background(), p, strings.NewReader("q\n"), &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "hidden cards") {
		t.Fatalf("play --hint oracle: %v", err)
	}
}

// TestTrainGameFlags runs spider train through Main: the game flags are
// env.Options' flags and land in the network's specification, with the
// trainer's defaults (8 face-up slots, float32) for those not given.
func TestTrainGameFlags(t *testing.T) {
	dir := t.TempDir()
	var stderr bytes.Buffer
	args := []string{"train", "--suits", "2", "--max-steps", "40", "--face-up-slots", "3", "--hidden", "8", "--games", "4",
		"--rollout", "16", "--minibatch", "32", "--epochs", "1", "--iterations", "1", "--out", filepath.Join(dir, "a")}
	if code := Main(args, nil, &bytes.Buffer{}, &stderr); code != 0 {
		t.Fatalf("exit %d:\n%s", code, stderr.String())
	}
	net, _, err := nn.Load(filepath.Join(dir, "a", "checkpoint.spider"))
	if err != nil {
		t.Fatal(err)
	}
	want := env.DefaultOptions()
	want.Suits, want.MaxSteps, want.FaceUpSlots, want.Encoding = 2, 40, 3, env.Float32
	if net.Spec.Game != want {
		t.Fatalf("the network's game %+v, want %+v", net.Spec.Game, want)
	}
	stderr.Reset()
	if code := Main([]string{"train", "--slots", "3", "--iterations", "1", "--out", filepath.Join(dir, "b")}, nil, &bytes.Buffer{}, &stderr); code != 2 || !strings.Contains(stderr.String(), "unknown flag: --slots") {
		t.Fatalf("--slots: exit %d:\n%s", code, stderr.String())
	}
	stderr.Reset()
	if code := Main([]string{"train", "--obs", "compact", "--iterations", "1", "--out", filepath.Join(dir, "c")}, nil, &bytes.Buffer{}, &stderr); code != 2 || !strings.Contains(stderr.String(), "train: obs compact: the network reads float32 observations") {
		t.Fatalf("--obs compact: exit %d:\n%s", code, stderr.String())
	}
	// --shaping without --shaping-gamma shapes for the learner's --gamma;
	// another --shaping-gamma is refused, as it would change the best policy.
	small := []string{"--hidden", "8", "--games", "2", "--rollout", "8", "--minibatch", "16", "--epochs", "1", "--iterations", "1"}
	if code := Main(append([]string{"train", "--shaping", "progress", "--gamma", "0.95", "--out", filepath.Join(dir, "d")}, small...), nil, &bytes.Buffer{}, &stderr); code != 0 {
		t.Fatalf("--shaping: exit %d:\n%s", code, stderr.String())
	}
	shaped, _, err := nn.Load(filepath.Join(dir, "d", "checkpoint.spider"))
	if err != nil {
		t.Fatal(err)
	}
	if g := shaped.Spec.Game.ShapingGamma; g != 0.95 {
		t.Fatalf("--shaping with --gamma 0.95: shaping gamma %v", g)
	}
	stderr.Reset()
	if code := Main(append([]string{"train", "--shaping", "progress", "--shaping-gamma", "0.9", "--out", filepath.Join(dir, "e")}, small...), nil, &bytes.Buffer{}, &stderr); code != 2 || !strings.Contains(stderr.String(), "train: shaping for a discount of 0.9 (shaping gamma) under a learner's discount of 0.99 (gamma)") {
		t.Fatalf("--shaping-gamma 0.9: exit %d:\n%s", code, stderr.String())
	}
	stderr.Reset()
	if code := Main(append([]string{"train", "--shaping-gamma", "0.99", "--out", filepath.Join(dir, "f")}, small...), nil, &bytes.Buffer{}, &stderr); code != 2 || !strings.Contains(stderr.String(), "--shaping-gamma needs --shaping progress") {
		t.Fatalf("--shaping-gamma without shaping: exit %d:\n%s", code, stderr.String())
	}
}

// TestTrainKeepsWarmStartAndBestCheckpoints validates after the warm start
// and every iteration: warmstart.spider holds the network right after the
// warm start, and best.spider the network of the best validation, which
// the summary names and an nn:PATH evaluation of that file reproduces.
func TestTrainKeepsWarmStartAndBestCheckpoints(t *testing.T) {
	dir := t.TempDir()
	o := tinyTrain(dir, 3)
	o.cfg.ValEvery, o.cfg.ValGames, o.cfg.ValStart = 1, 4, 77
	var out, errb bytes.Buffer
	if err := runTrain(context.Background(), o, &out, &errb); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(errb.String(), "train: validation on 4 deals from seed 77: won "); n != 4 {
		t.Fatalf("%d validation lines, want 4 (the warm start and 3 iterations):\n%s", n, errb.String())
	}
	for _, f := range []string{"warmstart.spider", "best.spider"} {
		if !strings.Contains(out.String(), filepath.Join(dir, f)) {
			t.Errorf("the summary does not name %s:\n%s", f, out.String())
		}
	}
	r, err := train.Resume(filepath.Join(dir, "checkpoint.spider"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var best train.Metrics
	for i, m := range r.History {
		if train.NewBest(r.History[:i+1]) {
			best = m
		}
	}
	ev, err := agents.Evaluate(context.Background(), env.MustRules(r.Config.Game), []string{"nn:" + filepath.Join(dir, "best.spider")},
		[]uint64{77, 78, 79, 80}, 1, agents.Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	runs := 0
	for _, g := range ev.Results[0] {
		runs += g.Runs
	}
	if float64(runs)/4 != best.ValRuns || !strings.Contains(out.String(), fmt.Sprintf("best validation    won %.1f%%, %.2f runs on 4 deals", 100*best.ValWinRate, best.ValRuns)) {
		t.Fatalf("best.spider completes %d runs on the validation deals; the best validation said %.2f a deal\n%s", runs, best.ValRuns, out.String())
	}
	warm, _, err := nn.Load(filepath.Join(dir, "warmstart.spider"))
	if err != nil {
		t.Fatal(err)
	}
	if slices.Equal(slices.Concat(warm.Params()...), netWeights(t, filepath.Join(dir, "checkpoint.spider"))) {
		t.Fatal("the warm-start checkpoint holds the final network")
	}
	// A new run in the folder would pass the old best for its own.
	os.Remove(filepath.Join(dir, "checkpoint.spider"))
	err = runTrain(context.Background(), o, &bytes.Buffer{}, &bytes.Buffer{})
	if _, ok := err.(usageError); !ok || !strings.Contains(err.Error(), "best.spider exists: pass --resume") {
		t.Fatalf("a new run over an old best.spider: %v", err)
	}
}

// TestTrainResumeWritesWhatAStopLeftBehind stops a run just after the
// checkpoint that follows its warm start's validation and takes away the
// files written after that checkpoint, as a kill there would: the resumed
// run writes warmstart.spider and best.spider again from the checkpoint,
// and ends with the uninterrupted run's. Written before the checkpoint
// (warmstart.spider was), such a stop left them missing or stale for good,
// or before the first checkpoint a folder neither a new run nor --resume
// took.
func TestTrainResumeWritesWhatAStopLeftBehind(t *testing.T) {
	dir := t.TempDir()
	straight, broken := filepath.Join(dir, "straight"), filepath.Join(dir, "broken")
	tiny := func(out string) trainOptions {
		o := tinyTrain(out, 2)
		o.cfg.ValEvery, o.cfg.ValGames, o.cfg.ValStart = 1, 4, 77
		return o
	}
	if err := runTrain(context.Background(), tiny(straight), &bytes.Buffer{}, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := &cancelOn{text: "train: validation on 4 deals", cancel: cancel}
	if err := runTrain(ctx, tiny(broken), &bytes.Buffer{}, w); err == nil || !strings.Contains(err.Error(), "interrupted after iteration 0") {
		t.Fatalf("interrupted run: %v", err)
	}
	for _, f := range []string{"warmstart.spider", "best.spider"} {
		if err := os.Remove(filepath.Join(broken, f)); err != nil {
			t.Fatal(err)
		}
	}
	o := tiny(broken)
	o.resume = true
	if err := runTrain(context.Background(), o, &bytes.Buffer{}, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"checkpoint.spider", "warmstart.spider", "best.spider"} {
		if _, err := os.Stat(filepath.Join(broken, f)); err != nil {
			t.Fatalf("after the resumed run: %v", err)
		}
		if !slices.Equal(netWeights(t, filepath.Join(straight, f)), netWeights(t, filepath.Join(broken, f))) {
			t.Errorf("%s: the resumed run's holds another network than the uninterrupted run's", f)
		}
	}
}

// TestTrainExportsThePolicy exports a run's checkpoint: the file holds the
// same network and specification without the trainer's state, is smaller,
// and plays as nn:FILE.
func TestTrainExportsThePolicy(t *testing.T) {
	dir := t.TempDir()
	o := tinyTrain(dir, 1)
	o.cfg.ValEvery = 0
	var log bytes.Buffer
	if err := runTrain(context.Background(), o, &bytes.Buffer{}, &log); err != nil {
		t.Fatal(err)
	}
	// The warm start's games are reported as they end; the last always.
	if !strings.Contains(log.String(), "train: warm start: greedy played 2 of 2 games, ") {
		t.Fatalf("no progress line for the warm start:\n%s", log.String())
	}
	// So are the updates that learn from its labels, which take minutes
	// on thousands of games; the last always.
	if m := regexp.MustCompile(`train: learning the labelled moves: (\d+) of (\d+) updates, `).FindStringSubmatch(log.String()); m == nil || m[1] != m[2] {
		t.Fatalf("no last progress line for the warm start's updates:\n%s", log.String())
	}
	ckpt, out := filepath.Join(dir, "checkpoint.spider"), filepath.Join(dir, "policy.spider")
	var stdout bytes.Buffer
	if err := runTrain(context.Background(), trainOptions{export: out, out: dir}, &stdout, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout.String(), "wrote "+out) {
		t.Fatalf("stdout %q", stdout.String())
	}
	if !slices.Equal(netWeights(t, ckpt), netWeights(t, out)) {
		t.Fatal("the exported weights differ from the checkpoint's")
	}
	_, state, err := nn.Load(out)
	if err != nil || len(state) != 0 {
		t.Fatalf("exported file: %d bytes of trainer state, error %v", len(state), err)
	}
	a, _ := os.Stat(ckpt)
	b, _ := os.Stat(out)
	if b.Size() >= a.Size() {
		t.Fatalf("exported %d bytes, the checkpoint %d", b.Size(), a.Size())
	}
	n1, _, _ := nn.Load(ckpt)
	n2, _, _ := nn.Load(out)
	if fmt.Sprint(n1.Spec) != fmt.Sprint(n2.Spec) {
		t.Fatalf("specification %+v, the checkpoint's %+v", n2.Spec, n1.Spec)
	}
	eo := smallEval()
	eo.policies, eo.seeds = "nn:"+out, "1-2"
	var table bytes.Buffer
	if err := runEval(context.Background(), eo, &table, &bytes.Buffer{}); err != nil || !strings.Contains(table.String(), "nn:"+out) {
		t.Fatalf("eval of the exported policy: %v\n%s", err, table.String())
	}
	for _, bad := range []trainOptions{
		{export: filepath.Join(dir, "x.spider"), from: filepath.Join(dir, "missing.spider")},
		{export: filepath.Join(dir, "x.spider"), out: dir, resume: true},
		{from: ckpt, out: dir, iterations: 1},
	} {
		if err := runTrain(context.Background(), bad, &bytes.Buffer{}, &bytes.Buffer{}); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "x.spider")); !os.IsNotExist(err) {
		t.Fatalf("a refused export left a file: %v", err)
	}
	// An export over the checkpoint it reads would leave the policy alone
	// where the run's state was.
	before, err := os.ReadFile(ckpt)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []trainOptions{{export: ckpt, out: dir}, {export: filepath.Join(dir, ".", "checkpoint.spider"), from: ckpt}} {
		err := runTrain(context.Background(), o, &bytes.Buffer{}, &bytes.Buffer{})
		if _, ok := err.(usageError); !ok || !strings.Contains(err.Error(), "is the checkpoint it reads") {
			t.Errorf("--export over its checkpoint (%+v): %v", o, err)
		}
	}
	if after, err := os.ReadFile(ckpt); err != nil || !bytes.Equal(after, before) {
		t.Fatalf("the checkpoint changed: %v", err)
	}
	// Nor may it replace another run's checkpoint, or a file that is no
	// network; an earlier export it replaces.
	other, text := filepath.Join(dir, "other-run.spider"), filepath.Join(dir, "notes.txt")
	if os.WriteFile(other, before, 0o644) != nil || os.WriteFile(text, []byte("notes\n"), 0o644) != nil {
		t.Fatal("cannot write the test's files")
	}
	for path, want := range map[string]string{
		other: "exists and is a checkpoint with a run's training state",
		text:  "exists and is not a readable spider network",
	} {
		err := runTrain(context.Background(), trainOptions{export: path, from: ckpt}, &bytes.Buffer{}, &bytes.Buffer{})
		if _, ok := err.(usageError); !ok || !strings.Contains(err.Error(), want) {
			t.Errorf("--export over %s: %v; want a usage error saying %q", path, err, want)
		}
	}
	if after, err := os.ReadFile(other); err != nil || !bytes.Equal(after, before) {
		t.Fatalf("the other run's checkpoint changed: %v", err)
	}
	if after, err := os.ReadFile(text); err != nil || string(after) != "notes\n" {
		t.Fatalf("the text file changed: %v", err)
	}
	if err := runTrain(context.Background(), trainOptions{export: out, from: ckpt}, &bytes.Buffer{}, &bytes.Buffer{}); err != nil {
		t.Fatalf("an export over the last export: %v", err)
	}
}

// TestShippedModels loads every network in the repository's models/ and
// plays two deals with each as nn:FILE, under the rules it names.
func TestShippedModels(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "models", "*.spider"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 4 {
		t.Fatalf("models/ holds %v: want the two one-suit networks (mlp and columns) and their warm starts", files)
	}
	for _, f := range files {
		n, state, err := nn.Load(f)
		if err != nil {
			t.Fatal(err)
		}
		if len(state) != 0 {
			t.Errorf("%s carries %d bytes of trainer state: ship spider train --export's file", f, len(state))
		}
		o := smallEval()
		o.policies, o.seeds = "nn:"+f, "100001-100002"
		o.game.RuleSet, o.game.Suits = n.Spec.Game.RuleSet, n.Spec.Game.Suits
		var table bytes.Buffer
		if err := runEval(context.Background(), o, &table, &bytes.Buffer{}); err != nil || !strings.Contains(table.String(), "nn:"+f) {
			t.Fatalf("%s: %v\n%s", f, err, table.String())
		}
	}
}

// TestTrainColumnsNetwork trains a columns network through Main, resumes
// it, refuses to resume it as another architecture, and plays it with
// spider eval: the architecture travels in the checkpoint.
func TestTrainColumnsNetwork(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "a")
	args := []string{"train", "--arch", "columns", "--column", "6", "--pair", "3", "--hidden", "8", "--face-up-slots", "2", "--games", "4",
		"--rollout", "16", "--minibatch", "32", "--epochs", "1", "--iterations", "1", "--val-every", "0", "--out", out}
	var stdout, stderr bytes.Buffer
	if code := Main(args, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d:\n%s", code, stderr.String())
	}
	ckpt := filepath.Join(out, "checkpoint.spider")
	net, _, err := nn.Load(ckpt)
	if err != nil {
		t.Fatal(err)
	}
	if s := net.Spec; s.Arch != nn.Columns || s.Column != 6 || s.Pair != 3 || !slices.Equal(s.Hidden, []int{8}) {
		t.Fatalf("the checkpoint's network: %+v", s)
	}
	resume := append(slices.Clone(args[:len(args)-2]), "--iterations", "2", "--resume", "--out", out)
	if code := Main(resume, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("resume: exit %d:\n%s", code, stderr.String())
	}
	// --resume alone: every setting, the game's and the network's, comes
	// from the checkpoint, as its help says.
	if code := Main([]string{"train", "--iterations", "3", "--resume", "--out", out}, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("resume with no other flag: exit %d:\n%s", code, stderr.String())
	}
	stderr.Reset()
	mlp := []string{"train", "--arch", "mlp", "--hidden", "8", "--face-up-slots", "3", "--iterations", "4", "--resume", "--out", out}
	if code := Main(mlp, nil, &stdout, &stderr); code == 0 || !strings.Contains(stderr.String(), "--face-up-slots is 3, the checkpoint's 2; --arch is mlp, the checkpoint's columns") {
		t.Fatalf("resume as an MLP: exit %d:\n%s", code, stderr.String())
	}
	stdout.Reset()
	eval := []string{"eval", "--policies", "nn:" + ckpt, "--games", "2", "--max-steps", "40", "--json"}
	if code := Main(eval, nil, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), `"games": 2`) {
		t.Fatalf("eval: exit %d:\n%s\n%s", code, stdout.String(), stderr.String())
	}
	stderr.Reset()
	bad := []string{"train", "--arch", "columns", "--hidden", "8,8", "--iterations", "1", "--out", filepath.Join(dir, "b")}
	if code := Main(bad, nil, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "one hidden (mixing) layer") {
		t.Fatalf("two hidden layers: exit %d:\n%s", code, stderr.String())
	}
	// A refused run leaves nothing behind, not even its folder.
	for _, args := range [][]string{bad, {"train", "--lr", "-1", "--iterations", "1", "--out", filepath.Join(dir, "b")},
		{"train", "--iterations", "1", "--resume", "--out", filepath.Join(dir, "b")}} {
		if code := Main(args, nil, &stdout, &stderr); code != 2 {
			t.Fatalf("%v: exit %d", args, code)
		}
		if _, err := os.Stat(filepath.Join(dir, "b")); !os.IsNotExist(err) {
			t.Fatalf("%v: --out was created (%v)", args, err)
		}
	}
}

// TestTrainFlagsAreAllChecked: every flag of spider train is a game flag,
// a network flag or a training setting that --resume compares with the
// checkpoint, or one of the flags of the invocation itself; a new flag
// must be put in one of them.
func TestTrainFlagsAreAllChecked(t *testing.T) {
	known := map[string]bool{"hidden": true, "arch": true, "column": true, "pair": true,
		"iterations": true, "steps": true, "time": true, "out": true, "resume": true, "checkpoint-every": true,
		"jsonl": true, "export": true, "from": true, "max-memory": true}
	for _, f := range env.OptionFields() {
		known[f.Flag] = true
	}
	for _, f := range trainingFlags {
		known[f.flag] = true
	}
	fs := pflag.NewFlagSet("train", pflag.ContinueOnError)
	trainCommand(fs)
	n := 0
	fs.VisitAll(func(f *pflag.Flag) {
		n++
		if !known[f.Name] {
			t.Errorf("--%s is neither compared by --resume nor a flag of the invocation", f.Name)
		}
	})
	if n < len(trainingFlags)+10 {
		t.Fatalf("only %d flags seen", n)
	}
}

// TestTrainSchedulesFlags: --anneal-lr and --target-kl reach the run
// (its metrics' lr falls by the schedule; its updates are counted) and its
// checkpoint, which a resume with another value is refused against.
func TestTrainSchedulesFlags(t *testing.T) {
	out := filepath.Join(t.TempDir(), "r")
	var stdout, stderr bytes.Buffer
	args := []string{"train", "--out", out, "--iterations", "2", "--games", "2", "--rollout", "8", "--minibatch", "8", "--epochs", "1",
		"--hidden", "8", "--val-every", "0", "--lr", "0.001", "--anneal-lr", "2", "--target-kl", "0.5"}
	if code := Main(args, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d:\n%s", code, stderr.String())
	}
	b, err := os.ReadFile(filepath.Join(out, "metrics.csv"))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil || len(rows) != 3 {
		t.Fatalf("metrics: %d rows (%v), want a header and 2 iterations:\n%s", len(rows), err, b)
	}
	col := func(name string) int { return slices.Index(rows[0], name) }
	for i, want := range []string{"0.001", "0.0005"} {
		if got := rows[i+1][col("lr")]; got != want || rows[i+1][col("updates")] != "2" {
			t.Fatalf("iteration %d: lr %s and %s updates, want %s and 2:\n%s", i+1, got, rows[i+1][col("updates")], want, b)
		}
	}
	stderr.Reset()
	resume := []string{"train", "--iterations", "3", "--resume", "--out", out, "--target-kl", "0.2", "--anneal-lr", "2"}
	if code := Main(resume, nil, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "the checkpoint does not match the requested run: --target-kl is 0.2, the checkpoint's 0.5") {
		t.Fatalf("resume with another target KL: exit %d:\n%s", code, stderr.String())
	}
}

// oneStepRun is the command line of the least training run into out: an
// iteration of one game's one step, a tiny network, no validation.
func oneStepRun(out string) []string {
	return []string{"train", "--out", out, "--iterations", "1", "--games", "1", "--rollout", "1", "--minibatch", "1", "--hidden", "8", "--val-every", "0"}
}

// TestTrainSummaryNamesOnlyWrittenFiles: a run in which no episode ended
// draws no curve, and its summary does not name one.
func TestTrainSummaryNamesOnlyWrittenFiles(t *testing.T) {
	out := filepath.Join(t.TempDir(), "r")
	var stdout, stderr bytes.Buffer
	if code := Main(oneStepRun(out), nil, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d:\n%s", code, stderr.String())
	}
	if _, err := os.Stat(filepath.Join(out, "curve.png")); err == nil {
		t.Fatal("a curve was drawn without an ended episode; the test wants a run without one")
	}
	if strings.Contains(stdout.String(), "curve") || !strings.Contains(stdout.String(), "metrics.csv") {
		t.Fatalf("summary:\n%s", stdout.String())
	}
}

// TestTrainResumeKeepsMetricsFormat: a run begun with --jsonl and resumed
// without it goes on writing metrics.jsonl, not a metrics.csv beside a
// stale metrics.jsonl; --jsonl given against the run's file is refused.
func TestTrainResumeKeepsMetricsFormat(t *testing.T) {
	out := filepath.Join(t.TempDir(), "r")
	o := tinyTrain(out, 1)
	o.jsonl = true
	if err := runTrain(context.Background(), o, &bytes.Buffer{}, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	o = tinyTrain(out, 2)
	o.resume = true
	var stdout bytes.Buffer
	if err := runTrain(context.Background(), o, &stdout, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(out, "metrics.csv")); err == nil {
		t.Fatal("the resumed run wrote metrics.csv beside metrics.jsonl")
	}
	b, err := os.ReadFile(filepath.Join(out, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(string(b), "\n"); lines != 3 {
		t.Fatalf("metrics.jsonl has %d lines; want 3 (warm start, 2 iterations)", lines)
	}
	if !strings.Contains(stdout.String(), "metrics.jsonl") {
		t.Fatalf("summary:\n%s", stdout.String())
	}
	o.iterations, o.set = 3, map[string]bool{"jsonl": true}
	o.jsonl = false
	if err := runTrain(context.Background(), o, &bytes.Buffer{}, &bytes.Buffer{}); !isUsage(err) || !strings.Contains(err.Error(), "writes metrics.jsonl") {
		t.Fatalf("resuming with --jsonl=false: %v", err)
	}
}

// TestTrainStoppedBeforeAnythingLeavesNoFolder: a run stopped before it
// wrote a file removes the --out it made, and leaves a folder it did not
// make.
func TestTrainStoppedBeforeAnythingLeavesNoFolder(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out := filepath.Join(dir, "new")
	err := runTrain(ctx, tinyTrain(out, 2), &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "no checkpoint was written") {
		t.Fatalf("a run stopped at once: %v", err)
	}
	if _, err := os.Stat(out); err == nil {
		t.Fatal("the stopped run left its empty --out")
	}
	if err := runTrain(ctx, tinyTrain(dir, 2), &bytes.Buffer{}, &bytes.Buffer{}); err == nil {
		t.Fatal("a run stopped at once succeeded")
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("the stopped run removed a folder it did not make: %v", err)
	}
}

// TestTrainRefusesAnotherRunsFiles: a new run (no --resume) in a folder
// holding any of another run's checkpoints is refused before it trains,
// each file named, so that none of them passes for this run's (a warm
// start left from the old run would read as this one's starting point).
// Its metrics and curve too: they were replaced without a word. A folder
// where the run writes a file is refused before it trains too (with
// --resume as well): it was found when the file was written, after the
// work, and left a checkpoint that refused a plain rerun.
func TestTrainRefusesAnotherRunsFiles(t *testing.T) {
	for _, name := range []string{"checkpoint.spider", "best.spider", "warmstart.spider", "metrics.csv", "metrics.jsonl", "curve.png"} {
		dir := t.TempDir()
		old := filepath.Join(dir, name)
		if err := os.WriteFile(old, []byte("another run's"), 0o644); err != nil {
			t.Fatal(err)
		}
		err := runTrain(context.Background(), tinyTrain(dir, 1), &bytes.Buffer{}, &bytes.Buffer{})
		if _, ok := err.(usageError); !ok || !strings.Contains(err.Error(), old+" exists: pass --resume") {
			t.Fatalf("a new run beside %s: %v; want a usage error saying it exists", name, err)
		}
		if names, _ := os.ReadDir(dir); len(names) != 1 {
			t.Fatalf("a refused run left %d files in --out, want only %s", len(names), name)
		}
		if b, _ := os.ReadFile(old); string(b) != "another run's" {
			t.Fatalf("a refused run changed %s", name)
		}
		dir = t.TempDir()
		if err := os.Mkdir(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, resume := range []bool{false, true} {
			o := tinyTrain(dir, 1)
			o.resume = resume
			err := runTrain(context.Background(), o, &bytes.Buffer{}, &bytes.Buffer{})
			want := "not a regular file, where the run writes one"
			if name == "metrics.jsonl" && !resume {
				want = "exists: pass --resume" // not this CSV run's file, but another run's
			}
			if _, ok := err.(usageError); !ok || !strings.Contains(err.Error(), want) {
				t.Fatalf("a folder named %s in --out (resume %v): %v; want a usage error saying %q before training", name, resume, err, want)
			}
		}
		if names, _ := os.ReadDir(dir); len(names) != 1 {
			t.Fatalf("a refused run left %d files in --out, want only the folder %s", len(names), name)
		}
	}
}

// TestTrainRefusesFromWithoutExport: --from names the checkpoint --export
// reads; given to a training run it would be ignored, so the run is
// refused before it trains or writes anything.
func TestTrainRefusesFromWithoutExport(t *testing.T) {
	dir := t.TempDir()
	o := tinyTrain(filepath.Join(dir, "run"), 1)
	o.from = filepath.Join(dir, "best.spider")
	err := runTrain(context.Background(), o, &bytes.Buffer{}, &bytes.Buffer{})
	if _, ok := err.(usageError); !ok || err.Error() != "--from goes with --export" {
		t.Fatalf("--from without --export: %v; want the usage error \"--from goes with --export\"", err)
	}
	if _, err := os.Stat(o.out); !os.IsNotExist(err) {
		t.Fatalf("the refused run made --out: %v", err)
	}
}

// TestTrainExportRefusesTrainingFlags: an export trains nothing, so a
// training or game flag given with it (--games 5, --suits 2) would do
// nothing; it was accepted in silence, and is refused before any file is
// read or written.
func TestTrainExportRefusesTrainingFlags(t *testing.T) {
	dir := t.TempDir()
	export := filepath.Join(dir, "policy.spider")
	for _, extra := range [][]string{{"--games", "5"}, {"--suits", "2"}, {"--iterations", "3"}, {"--jsonl"}} {
		var stderr bytes.Buffer
		args := append([]string{"train", "--out", filepath.Join(dir, "run"), "--export", export}, extra...)
		code := Main(args, nil, io.Discard, &stderr)
		if code != 2 || !strings.Contains(stderr.String(), "give only --out or --from with it, not "+extra[0]) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %s named", args, code, stderr.String(), extra[0])
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("refused exports left %v", entries)
	}
}

// TestTrainColumnWidthsNeedColumnsNetwork: --column and --pair size the
// columns network; given with the MLP (even as 0, their default, which
// passed the network's check) they are refused, and with --arch columns
// taken.
func TestTrainColumnWidthsNeedColumnsNetwork(t *testing.T) {
	dir := t.TempDir()
	for _, extra := range [][]string{{"--column", "0"}, {"--pair", "0"}, {"--column", "16", "--arch", "mlp"}} {
		var stderr bytes.Buffer
		args := append([]string{"train", "--out", filepath.Join(dir, "run"), "--iterations", "1"}, extra...)
		if code := Main(args, nil, io.Discard, &stderr); code != 2 || !strings.Contains(stderr.String(), "--column and --pair size the columns network: they need --arch columns") {
			t.Errorf("%q: exit %d, stderr %q; want 2 and the flags refused", args, code, stderr.String())
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("refused runs left %v", entries)
	}
	args := []string{"train", "--out", filepath.Join(dir, "run"), "--arch", "columns", "--column", "8", "--pair", "4", "--hidden", "8",
		"--iterations", "1", "--games", "1", "--rollout", "1", "--minibatch", "1", "--val-every", "0"}
	var stderr bytes.Buffer
	if code := Main(args, nil, io.Discard, &stderr); code != 0 {
		t.Fatalf("%q: exit %d: %s", args, code, stderr.String())
	}
}

// TestResumeDiffFillsGameDefaults: a game flag given as 0 with --resume
// means the game's default, as it does everywhere, so it agrees with a
// checkpoint that holds that default filled in; a flag given as another
// value still disagrees.
func TestResumeDiffFillsGameDefaults(t *testing.T) {
	want := train.DefaultConfig()
	want.Game = env.Options{Suits: 0, MaxSteps: 0}
	got := want
	got.Game = want.Game.Filled()
	o := trainOptions{set: map[string]bool{"suits": true, "max-steps": true}}
	if d := resumeDiff(o, want, got); d != "" {
		t.Fatalf("--suits 0 --max-steps 0 against a checkpoint of the defaults (%+v): %q, want no difference", got.Game, d)
	}
	want.Game.Suits = 2
	if d := resumeDiff(o, want, got); d != "--suits is 2, the checkpoint's 1" {
		t.Fatalf("--suits 2 against a checkpoint of 1 suit: %q", d)
	}
}

// TestArchDefaultsAreTheDocumented: --arch columns without its size flags
// gets the widths docs/training.md's table gives (mixing 256, column 128,
// pair 32), and keeps any the flags set; --arch mlp keeps its hidden
// layers and records no name.
func TestArchDefaultsAreTheDocumented(t *testing.T) {
	o := trainOptions{hidden: []int{256, 256}}
	o.cfg.Arch = nn.Columns
	archDefaults(&o, false)
	if !slices.Equal(o.hidden, []int{256}) || o.cfg.Column != 128 || o.cfg.Pair != 32 {
		t.Fatalf("columns defaults: hidden %v, column %d, pair %d; want [256], 128, 32", o.hidden, o.cfg.Column, o.cfg.Pair)
	}
	o = trainOptions{hidden: []int{8}}
	o.cfg.Arch, o.cfg.Column, o.cfg.Pair = nn.Columns, 6, 3
	archDefaults(&o, true)
	if !slices.Equal(o.hidden, []int{8}) || o.cfg.Column != 6 || o.cfg.Pair != 3 {
		t.Fatalf("columns with its sizes given: hidden %v, column %d, pair %d; want [8], 6, 3", o.hidden, o.cfg.Column, o.cfg.Pair)
	}
	o = trainOptions{hidden: []int{256, 256}}
	o.cfg.Arch = nn.MLP
	archDefaults(&o, false)
	if o.cfg.Arch != "" || !slices.Equal(o.hidden, []int{256, 256}) || o.cfg.Column != 0 {
		t.Fatalf("mlp: arch %q, hidden %v, column %d; want \"\", [256 256], 0", o.cfg.Arch, o.hidden, o.cfg.Column)
	}
}

// TestTrainStopAbandonsAPhaseThatDoesNotNotice: a stopped run returns
// within seconds even when the phase in flight does not notice the stop
// (gorgonia's update of one large minibatch cannot be cut short: a minute
// at --minibatch 65536 --hidden 1024,1024), and that phase, when it ends
// later, saves nothing. Before, the command waited for the update.
func TestTrainStopAbandonsAPhaseThatDoesNotNotice(t *testing.T) {
	release, ended := make(chan struct{}), make(chan error, 1)
	realRun, realAfter := trainRun, abandonAfter
	trainRun = func(tr *train.Trainer, ctx context.Context, stop func(int, int64) bool, after func(train.Metrics) error) error {
		<-release // a phase deaf to ctx
		err := after(train.Metrics{Phase: "ppo", Iter: 1})
		ended <- err
		return err
	}
	abandonAfter = 200 * time.Millisecond
	t.Cleanup(func() { trainRun, abandonAfter = realRun, realAfter })
	dir := filepath.Join(t.TempDir(), "run")
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	t0 := time.Now()
	err := runTrain(ctx, tinyTrain(dir, 4), &bytes.Buffer{}, &bytes.Buffer{})
	if took := time.Since(t0); took > 3*time.Second {
		t.Fatalf("the stopped run returned after %v", took)
	}
	if err == nil || !strings.Contains(err.Error(), "was abandoned; no checkpoint was written yet") {
		t.Fatalf("the stopped run: %v", err)
	}
	close(release)
	if err := <-ended; err == nil {
		t.Fatal("the abandoned phase's end was let save")
	}
	if _, err := os.Stat(filepath.Join(dir, "checkpoint.spider")); err == nil {
		t.Fatal("the abandoned phase saved a checkpoint")
	}
}

// TestTrainSecondSignalLeavesNoFolder: a second Ctrl-C exits at once,
// skipping the deferred calls; the --out folders a run made and had not
// yet written into were left behind, empty, while a phase took its
// seconds to notice the first.
func TestTrainSecondSignalLeavesNoFolder(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	realRun := trainRun
	trainRun = func(tr *train.Trainer, ctx context.Context, stop func(int, int64) bool, after func(train.Metrics) error) error {
		close(entered) // after the run read trainRun, which the cleanup sets back
		<-release      // a phase deaf to ctx, for less than abandonAfter
		return ctx.Err()
	}
	t.Cleanup(func() { trainRun = realRun })
	base := t.TempDir()
	out := filepath.Join(base, "a", "b")
	sigs := make(chan os.Signal, 2)
	left := make(chan []os.DirEntry, 1)
	ctx, stop := interruptible(context.Background(), "spider train", sigs, 0, io.Discard, func(int) {
		entries, _ := os.ReadDir(base) // what the exit leaves
		left <- entries
	})
	defer stop()
	go runTrain(ctx, tinyTrain(out, 4), io.Discard, io.Discard)
	select {
	case <-entered: // the run waits in its phase
	case <-time.After(10 * time.Second):
		t.Fatal("the run did not reach its phase")
	}
	sigs <- os.Interrupt
	<-ctx.Done()
	sigs <- os.Interrupt
	select {
	case entries := <-left:
		if len(entries) != 0 {
			t.Errorf("the exit left %v in the folder above --out", entries)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the second signal did not exit")
	}
	// The exit keeps the hooks' lock, as the process ends: the run, let
	// go, waits on it for ever (after its last read of trainRun and
	// abandonAfter), so it is not waited for here.
	close(release)
}

// TestTrainLocksItsFolder: two runs on one --out interleaved their
// checkpoints and metrics, the last save dropping the other's
// iterations; while one runs, another (new or resumed) is refused, and
// once it has ended the folder is free again.
func TestTrainLocksItsFolder(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	var calls atomic.Int32
	realRun := trainRun
	trainRun = func(tr *train.Trainer, ctx context.Context, stop func(int, int64) bool, after func(train.Metrics) error) error {
		if calls.Add(1) == 1 { // the first run holds the folder until released
			close(entered)
			<-release
		}
		return nil
	}
	t.Cleanup(func() { trainRun = realRun })
	out := filepath.Join(t.TempDir(), "run")
	o := tinyTrain(out, 1)
	o.cfg.CloneGames = 0
	done := make(chan error, 1)
	go func() { done <- runTrain(context.Background(), o, io.Discard, io.Discard) }()
	<-entered
	second := o
	second.out = out + string(filepath.Separator) + "." // the same folder, named otherwise
	err := runTrain(context.Background(), second, io.Discard, io.Discard)
	if _, ok := err.(usageError); !ok || !strings.Contains(err.Error(), "another spider train is running on this folder") {
		t.Fatalf("a second run on a folder in use: %v; want a usage error saying so", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	resumed := tinyTrain(out, 2)
	resumed.resume = true
	if err := runTrain(context.Background(), resumed, io.Discard, io.Discard); err != nil {
		t.Fatalf("resumed once the run had ended: %v", err)
	}
}

// TestTrainRefusedForTheLockLeavesTheFolder: of two new runs on one
// --out, the one that made the folder may lose the lock to the other,
// which found it there; the loser removed the folder (empty, its own) as
// it left, and the winner failed at its first save. The loser now leaves
// it.
func TestTrainRefusedForTheLockLeavesTheFolder(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run")
	var other func()
	real := lockOut
	lockOut = func(dir string) (func(), bool) {
		other, _ = real(dir) // the other run, between this one's mkdir and its lock
		_, held := real(dir)
		return nil, held
	}
	t.Cleanup(func() { lockOut = real })
	err := runTrain(context.Background(), tinyTrain(out, 1), io.Discard, io.Discard)
	if _, ok := err.(usageError); !ok || !strings.Contains(err.Error(), "another spider train is running on this folder") {
		t.Fatalf("the run refused for the lock: %v", err)
	}
	if other == nil {
		t.Fatal("the other run took no lock (no flock on this system?)")
	}
	other()
	if fi, err := os.Stat(out); err != nil || !fi.IsDir() {
		t.Fatalf("the folder the other run holds is gone: %v", err)
	}
}

// TestFileNamesAreWrittenEscaped: a file name the user chose is written
// to stdout escaped, as every error is, so that a name holding terminal
// control sequences cannot drive the terminal that reads the output.
func TestFileNamesAreWrittenEscaped(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "r\x1b[2J")
	var stdout, stderr bytes.Buffer
	if code := Main(oneStepRun(dir), nil, &stdout, &stderr); code != 0 {
		t.Fatalf("train: exit %d:\n%s", code, stderr.String())
	}
	export := filepath.Join(dir, "policy\a.spider")
	if code := Main([]string{"train", "--out", dir, "--export", export}, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("export: exit %d:\n%s", code, stderr.String())
	}
	rec := filepath.Join(dir, "games")
	if code := Main([]string{"eval", "--policies", "greedy", "--seeds", "2", "--max-steps", "20", "--record", rec}, nil, io.Discard, &stderr); code != 0 {
		t.Fatalf("eval: exit %d:\n%s", code, stderr.String())
	}
	if code := Main([]string{"replay", filepath.Join(rec, "greedy-max-steps20-2.spider"), "--every", "20", "--gif", filepath.Join(dir, "g\x1b.gif")}, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("replay: exit %d:\n%s", code, stderr.String())
	}
	out := stdout.String()
	if strings.ContainsAny(out, "\x1b\a") || strings.Count(out, `r\x1b[2J`) < 4 || !strings.Contains(out, `policy\a.spider`) || !strings.Contains(out, `g\x1b.gif`) {
		t.Fatalf("stdout holds the names unescaped, or not at all:\n%q", out)
	}
}

// TestTrainDivergedSaysResumingRepeatsIt: a run whose loss stops being
// finite names its phase, and does not send the user to --resume, which
// replays the same updates into the same stop (before, it said "continue
// with --resume"). A value head pushed to 1e30 stands in for a run that
// diverged after its last checkpoint.
func TestTrainDivergedSaysResumingRepeatsIt(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	if err := runTrain(context.Background(), tinyTrain(dir, 1), &bytes.Buffer{}, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	ckpt := filepath.Join(dir, "checkpoint.spider")
	tr, err := train.Resume(ckpt, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := tr.Net.B[len(tr.Net.B)-1]
	b[0] = 1e30
	err = tr.Save(ckpt)
	tr.Close()
	if err != nil {
		t.Fatal(err)
	}
	o := tinyTrain(dir, 2)
	o.resume = true
	err = runTrain(context.Background(), o, &bytes.Buffer{}, &bytes.Buffer{})
	if !errors.Is(err, train.ErrNotFinite) || !strings.HasPrefix(err.Error(), "iteration 2: train: the loss or its gradient is not finite") ||
		!strings.Contains(err.Error(), "a run resumed from it stops the same way: start a new run (another --out) with a lower --lr") {
		t.Fatalf("%v", err)
	}
}

// TestTrainShowsPPOLearningProgress: an iteration's updates, which take
// minutes with many epochs or wide layers, are reported as they go (they
// were silent until the iteration's line); at the usual pace, a few
// milliseconds, they write nothing.
func TestTrainShowsPPOLearningProgress(t *testing.T) {
	o := tinyTrain(filepath.Join(t.TempDir(), "run"), 1)
	o.cfg.CloneGames, o.cfg.ValEvery = 0, 0
	var quiet bytes.Buffer
	if err := runTrain(context.Background(), o, &bytes.Buffer{}, &quiet); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(quiet.String(), "learning from its rollout") {
		t.Fatalf("a short iteration reported its updates:\n%s", quiet.String())
	}
	real := progressEvery
	progressEvery = 0
	t.Cleanup(func() { progressEvery = real })
	o.out = filepath.Join(t.TempDir(), "run")
	var log bytes.Buffer
	if err := runTrain(context.Background(), o, &bytes.Buffer{}, &log); err != nil {
		t.Fatal(err)
	}
	// 4 games x 16 steps in minibatches of 32, one epoch: 2 updates.
	for _, want := range []string{"train: iteration 1: learning from its rollout: 1 of 2 updates, ", "train: iteration 1: learning from its rollout: 2 of 2 updates, "} {
		if !strings.Contains(log.String(), want) {
			t.Fatalf("no %q in:\n%s", want, log.String())
		}
	}
}

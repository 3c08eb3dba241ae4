package train

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/spiderenv/spider/agents"
	"github.com/spiderenv/spider/agents/nn"
	"github.com/spiderenv/spider/env"
	"github.com/spiderenv/spider/internal/rng"
)

func tinyConfig() Config {
	c := DefaultConfig()
	c.Game.MaxSteps, c.Game.FaceUpSlots, c.Hidden = 60, 2, []int{8}
	c.Games, c.Rollout, c.Minibatch, c.Epochs = 4, 16, 32, 2
	c.CloneGames, c.CloneEpochs = 2, 1
	c.ValEvery, c.ValGames = 2, 3
	c.Seed = 7
	return c
}

func until(n int) func(int, int64) bool { return func(i int, _ int64) bool { return i >= n } }

func weights(n *nn.Net) []float32 { return slices.Concat(n.Params()...) }

// TestResumeIsExact trains four iterations straight, and separately two,
// a checkpoint, a fresh process's worth of state (Resume) and two more:
// weights, optimiser, games and metrics must come out identical.
func TestResumeIsExact(t *testing.T) {
	scheduled := tinyConfig()
	// The learning rate of each iteration comes from the iteration count,
	// and a target KL stops iterations at different updates.
	// (2e-6 stops the first iteration early, whose minibatches' mean KL is
	// 3.8e-6, and none of the later ones.)
	scheduled.AnnealLR, scheduled.TargetKL, scheduled.Epochs = 3, 2e-6, 4
	t.Run("plain", func(t *testing.T) { testResumeIsExact(t, tinyConfig) })
	t.Run("scheduled", func(t *testing.T) {
		history := testResumeIsExact(t, func() Config { return scheduled })
		var updates []int
		for _, m := range history[1:] { // after the warm start
			updates = append(updates, m.Updates)
		}
		if slices.Min(updates) == 8 || slices.Max(updates) < 8 {
			t.Fatalf("updates %v: want some iterations stopped early and some not, to resume across both", updates)
		}
	})
}

// testResumeIsExact runs TestResumeIsExact on tinyConfig's runs and
// returns the uninterrupted run's history.
func testResumeIsExact(t *testing.T, tinyConfig func() Config) []Metrics {
	ctx := context.Background()
	straight, err := New(tinyConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer straight.Close()
	if err := straight.Run(ctx, until(4), nil); err != nil {
		t.Fatal(err)
	}

	first, _ := New(tinyConfig())
	path := filepath.Join(t.TempDir(), "run.ckpt")
	// The first run is stopped after two iterations, as a killed run
	// would be after its last checkpoint.
	if err := first.Run(ctx, until(2), func(Metrics) error { return first.Save(path) }); err != nil {
		t.Fatal(err)
	}
	first.Close()
	want := tinyConfig()
	resumed, err := Resume(path, &want)
	if err != nil {
		t.Fatal(err)
	}
	defer resumed.Close()
	if resumed.Iterations() != 2 {
		t.Fatalf("resumed at iteration %d, want 2", resumed.Iterations())
	}
	if err := resumed.Run(ctx, until(4), nil); err != nil {
		t.Fatal(err)
	}
	fresh, _ := New(tinyConfig())
	fresh.Close()
	if slices.Equal(weights(fresh.Net), weights(straight.Net)) {
		t.Fatal("four iterations did not change the weights")
	}
	if !slices.Equal(weights(straight.Net), weights(resumed.Net)) {
		t.Fatal("the resumed run's weights differ from the uninterrupted run's")
	}
	if len(straight.History) != len(resumed.History) {
		t.Fatalf("history of %d and %d lines", len(straight.History), len(resumed.History))
	}
	for i := range straight.History {
		a, b := straight.History[i], resumed.History[i]
		if a.EnvSteps != b.EnvSteps || a.Episodes != b.Episodes || a.PolicyLoss != b.PolicyLoss || a.MeanReturn != b.MeanReturn || a.LR != b.LR || a.Updates != b.Updates ||
			a.ValGames != b.ValGames || a.ValWinRate != b.ValWinRate || a.ValRuns != b.ValRuns {
			t.Fatalf("metrics line %d differs: %+v and %+v", i, a, b)
		}
	}
	if !slices.Equal(straight.batch.ObsFloat32, resumed.batch.ObsFloat32) {
		t.Fatal("the games differ after resuming")
	}
	return straight.History
}

// TestAnnealAndTargetKL checks the two PPO schedules through a run's
// metrics: under AnnealLR 3 the iterations learn at LR, 2/3 LR, 1/3 LR and
// then stay there; with no TargetKL an iteration makes every update (4
// passes of 2 minibatches), and under a target no update meets it stops
// after the first, whose policy is the rollout's.
func TestAnnealAndTargetKL(t *testing.T) {
	base := tinyConfig()
	base.CloneGames, base.ValEvery, base.Epochs = 0, 0, 4
	for _, tc := range []struct {
		anneal  int
		kl      float64
		lr      []float64
		updates int
	}{
		{0, 0, []float64{1, 1, 1, 1}, 8},
		{3, 0, []float64{1, 2.0 / 3, 1.0 / 3, 1.0 / 3}, 8},
		{0, 1e-12, []float64{1, 1, 1, 1}, 1},
	} {
		c := base
		c.AnnealLR, c.TargetKL = tc.anneal, tc.kl
		tr, err := New(c)
		if err != nil {
			t.Fatal(err)
		}
		w0 := weights(tr.Net)
		if err := tr.Run(context.Background(), until(4), nil); err != nil {
			t.Fatal(err)
		}
		if slices.Equal(w0, weights(tr.Net)) {
			t.Errorf("anneal %d, target KL %v: the weights did not change", tc.anneal, tc.kl)
		}
		for i, m := range tr.History {
			if math.Abs(m.LR-tc.lr[i]*c.LR) > 1e-12 || m.Updates != tc.updates {
				t.Errorf("anneal %d, target KL %v, iteration %d: lr %v and %d updates; want %v and %d",
					tc.anneal, tc.kl, i+1, m.LR, m.Updates, tc.lr[i]*c.LR, tc.updates)
			}
		}
		tr.Close()
	}
}

func TestCheckpointRoundTripAndRefusals(t *testing.T) {
	dir := t.TempDir()
	tr, err := New(tinyConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	path := filepath.Join(dir, "a.ckpt")
	if err := tr.Save(path); err != nil {
		t.Fatal(err)
	}
	net, _, err := nn.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(weights(net), weights(tr.Net)) || !specEqual(net.Spec, tr.Net.Spec) {
		t.Fatal("the loaded network differs from the saved one")
	}
	data, _ := os.ReadFile(path)
	// A checkpoint cut short is called damaged, not a file of another
	// kind: its first entries still say what it is.
	cases := map[string]struct {
		b    []byte
		want string
	}{
		"empty":     {nil, "not a spider checkpoint"},
		"garbage":   {[]byte("not a checkpoint at all"), "not a spider checkpoint"},
		"truncated": {data[:len(data)/2], "damaged checkpoint (cut short?): "},
	}
	for name, c := range cases {
		p := filepath.Join(dir, name+".ckpt")
		os.WriteFile(p, c.b, 0o644)
		if _, _, err := nn.Load(p); err == nil || !strings.HasPrefix(err.Error(), p+": "+c.want) {
			t.Errorf("%s checkpoint: error %v; want a refusal naming the file: %q", name, err, c.want)
		}
		if _, err := Resume(p, nil); err == nil || !strings.HasPrefix(err.Error(), p+": "+c.want) {
			t.Errorf("%s checkpoint resumed: %v", name, err)
		}
	}
	policy := filepath.Join(dir, "policy.ckpt")
	if err := nn.Save(policy, net, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := Resume(policy, nil); err == nil || err.Error() != policy+": a policy without training state: it cannot be resumed" {
		t.Errorf("a policy without training state: %v", err)
	}
	other := tinyConfig()
	other.Game.Suits, other.Hidden = 2, []int{16}
	_, err = Resume(path, &other)
	if want := path + ": the checkpoint does not match the requested run: suits is 2, the checkpoint's 1; hidden layers are [16], the checkpoint's [8]"; err == nil || err.Error() != want {
		t.Fatalf("a mismatched resume gave %v; want %q", err, want)
	}
	// Options are compared with their defaults filled in, and every
	// differing key is named.
	same := tinyConfig()
	same.Game.RuleSet, same.Game.Suits = env.Classic, 0
	if r, err := Resume(path, &same); err != nil {
		t.Fatalf("the same game with suits left at its default: %v", err)
	} else {
		r.Close()
	}
	other = tinyConfig()
	other.Game.FaceUpSlots, other.Game.TimePerActionMs, other.Game.MaxSteps = 3, 500, 0
	_, err = Resume(path, &other)
	for _, want := range []string{"max_steps is 1000, the checkpoint's 60", "time_per_action_ms is 500, the checkpoint's 0", "face_up_slots is 3, the checkpoint's 2"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("resuming with other options: %v; want it to say %q", err, want)
		}
	}
	if err := net.Spec.Check(env.MustRules(env.Options{Suits: 4})); err == nil || !strings.Contains(err.Error(), "a 4-suit game, the network's 1-suit") {
		t.Fatalf("a 4-suit game against a 1-suit network gave %v", err)
	}
	if err := net.Spec.Check(env.MustRules(env.Options{Suits: 1})); err != nil {
		t.Fatalf("a 1-suit game with other slots was refused: %v", err)
	}
}

// TestResumeRefusesStateVersion1 writes a checkpoint whose training state
// has version 1's layout (the game as rule_set, suits, max_steps and
// slots keys of the configuration): Resume must refuse it by its number.
func TestResumeRefusesStateVersion1(t *testing.T) {
	type configV1 struct {
		RuleSet  string `msgpack:"rule_set"`
		Suits    int    `msgpack:"suits"`
		MaxSteps int    `msgpack:"max_steps"`
		Slots    int    `msgpack:"slots"`
		Hidden   []int  `msgpack:"hidden"`
	}
	type stateV1 struct {
		Version int      `msgpack:"version"`
		Config  configV1 `msgpack:"config"`
		Iter    int      `msgpack:"iter"`
	}
	c := tinyConfig()
	r, _ := c.Rules()
	net, err := nn.New(nn.SpecFor(r, c.Hidden), 1)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := msgpack.Marshal(stateV1{Version: 1, Config: configV1{RuleSet: "classic", Suits: 1, MaxSteps: 60, Slots: 2, Hidden: c.Hidden}, Iter: 3})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "v1.ckpt")
	if err := nn.Save(path, net, raw); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("%s: training state version 1, this program reads version %d", path, stateVersion)
	if _, err := Resume(path, nil); err == nil || err.Error() != want {
		t.Fatalf("a version-1 training state: %v; want %q", err, want)
	}
}

func TestConfigValidation(t *testing.T) {
	for name, tc := range map[string]struct {
		mod  func(*Config)
		want string
	}{
		"suits":     {func(c *Config) { c.Game.Suits = 3 }, "env: suits must be 1, 2 or 4, not 3"},
		"rules":     {func(c *Config) { c.Game.RuleSet = 7 }, "env: unknown rule set 7"},
		"obs":       {func(c *Config) { c.Game.Encoding = env.Compact }, "train: obs compact: the network reads float32 observations"},
		"games":     {func(c *Config) { c.Games = 0 }, "train: games 0 outside 1 to 16384"},
		"minibatch": {func(c *Config) { c.Minibatch = 1 << 30 }, "train: minibatch 1073741824 must be 1 to games x rollout (64)"},
		// 3 x 1431655766 is 2 where int has 32 bits (make test-ports).
		"samples":   {func(c *Config) { c.Games, c.Rollout = 3, 1431655766 }, "train: rollout 1431655766 steps x 3 games is outside 1 to 1048576 samples"},
		"lr":        {func(c *Config) { c.LR = 0 }, "train: lr 0 outside (0, 1]"},
		"lr inf":    {func(c *Config) { c.LR = math.Inf(1) }, "train: lr +Inf outside (0, 1]"},
		"clone lr":  {func(c *Config) { c.CloneLR = 2 }, "train: clone lr 2 outside (0, 1]"},
		"value inf": {func(c *Config) { c.ValueCoef = math.Inf(1) }, "train: value coef +Inf outside 0 to 1e+06"},
		"entropy":   {func(c *Config) { c.EntCoef = 1e300 }, "train: entropy 1e+300 outside 0 to 1e+06"},
		"scale":     {func(c *Config) { c.RewardScale = 1e300 }, "train: reward scale 1e+300 outside (0, 1e+06]"},
		"max norm":  {func(c *Config) { c.MaxNorm = math.Inf(1) }, "train: the gradient clip must be finite and not negative"},
		"clip":      {func(c *Config) { c.Clip = 1.5 }, "train: clip 1.5 outside (0, 1)"},
		"gamma":     {func(c *Config) { c.Gamma = 0 }, "train: gamma 0 outside (0, 1]"},
		"lambda":    {func(c *Config) { c.Lambda = 1.1 }, "train: lambda 1.1 outside [0, 1]"},
		// Unbounded, a count of passes wrapped the updates and made the
		// learning rate NaN.
		"epochs":       {func(c *Config) { c.Epochs = 1 << 30 }, "train: epochs 1073741824 outside 1 to 65536"},
		"clone epochs": {func(c *Config) { c.CloneEpochs = 1<<16 + 1 }, "train: clone epochs 65537 outside 0 to 65536"},
		"anneal":       {func(c *Config) { c.AnnealLR = -1 }, "train: anneal lr -1 outside 0 to 1073741824 iterations"},
		"target kl":    {func(c *Config) { c.TargetKL = math.NaN() }, "train: the target KL must be 0 (none) to 1e+06"},
		"teacher":      {func(c *Config) { c.Teacher = "chess" }, `train: teacher "chess": want greedy, search or random (the oracle sees hidden cards)`},
		"hidden":       {func(c *Config) { c.Hidden = []int{0} }, "nn: hidden width 0 outside 1 to 16384"},
		// The layer count too, before the memory thousands of layers take.
		"layers":    {func(c *Config) { c.Hidden = make([]int, 5000) }, "nn: 5000 hidden layers, at most 16"},
		"idle":      {func(c *Config) { c.CloneIdle = -1 }, "train: clone games 2 and idle moves -1 must not be negative"},
		"val every": {func(c *Config) { c.ValEvery = -1 }, "train: validation every -1 iterations on 3 deals: want both at least 0, and at most 100000 deals"},
		"val games": {func(c *Config) { c.ValGames = 0 }, "train: validation every 2 iterations needs at least one deal (val games)"},
		"val start": {func(c *Config) { c.ValStart = math.MaxUint64 - 1 }, "train: validation deals from seed 18446744073709551614 overflow"},
		// Shaping for another discount than the learner's changes which
		// policy is best; its default (0: 1) is not the trainer's 0.99.
		"shaping gamma": {func(c *Config) { c.Game.Shaping, c.Game.ShapingGamma, c.Gamma = env.Progress, 0, 0.99 }, "train: shaping for a discount of 1 (shaping gamma) under a learner's discount of 0.99 (gamma) changes which policy is best; make them equal"},
	} {
		c := tinyConfig()
		tc.mod(&c)
		if _, err := New(c); err == nil || err.Error() != tc.want {
			t.Errorf("%s: %v; want %q", name, err, tc.want)
		}
	}
}

// TestDefaultConfigGame checks the game DefaultConfig trains on: the
// default game, seen as float32 through 8 face-up slots, and that New
// fills in the defaults of a game's zero fields.
func TestDefaultConfigGame(t *testing.T) {
	want := env.DefaultOptions()
	want.FaceUpSlots, want.Encoding = 8, env.Float32
	if got := DefaultConfig().Game; got != want {
		t.Fatalf("DefaultConfig().Game = %+v, want %+v", got, want)
	}
	c := tinyConfig()
	c.Game = env.Options{Suits: 2, Encoding: env.Float32}
	tr, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	want = env.DefaultOptions()
	want.Suits, want.Encoding = 2, env.Float32
	if tr.Config.Game != want || tr.Net.Spec.Game != want {
		t.Fatalf("the run's game %+v and the network's %+v; want %+v", tr.Config.Game, tr.Net.Spec.Game, want)
	}
}

// TestStoppedMidIterationIsNotSaved cancels a run inside its warm start:
// the trainer is then between states, and Save must refuse to overwrite
// the last checkpoint with it.
func TestStoppedMidIterationIsNotSaved(t *testing.T) {
	tr, err := New(tinyConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := tr.Run(ctx, until(1), nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled run returned %v, want context.Canceled", err)
	}
	if tr.Consistent() {
		t.Fatal("a run stopped inside the warm start reports a consistent state")
	}
	p := filepath.Join(t.TempDir(), "x.ckpt")
	if err := tr.Save(p); err == nil || !strings.Contains(err.Error(), "stopped inside an iteration or the warm start; "+p+" keeps its last consistent state") {
		t.Fatalf("Save of a state between two iterations: %v", err)
	}
	if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Save wrote %s: %v", p, err)
	}
}

// TestNonFiniteLossLeavesWeights feeds a NaN observation: the update must
// fail and leave every weight as it was.
func TestNonFiniteLossLeavesWeights(t *testing.T) {
	spec := nn.Spec{ObsLen: 3, NumActions: 4, Hidden: []int{5}}
	net, _ := nn.New(spec, 1)
	l, err := newLearner(net, newAdam(net.Params(), 0.01, 1), 2, PPOLoss, coefs{Value: 0.5, Entropy: 0.01}, 0.2)
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	before := weights(net)
	l.setRow(0, []float32{1, float32(math.NaN()), 0}, []uint8{1, 1, 0, 0}, 1)
	l.setRow(1, []float32{0, 1, 0}, []uint8{0, 0, 1, 1}, 3)
	if _, _, err := l.update(0); err == nil || !strings.Contains(err.Error(), "not finite") {
		t.Fatalf("update with a NaN input: %v", err)
	}
	if !slices.Equal(before, weights(net)) {
		t.Fatal("a failed update changed the weights")
	}
}

// TestNonFiniteLossNamesItsPhase: a run whose loss stops being finite
// stops with ErrNotFinite, naming the phase it stopped in (before, "after
// N updates" alone), whatever the phase. A value head made NaN stands in
// for a diverged run.
func TestNonFiniteLossNamesItsPhase(t *testing.T) {
	for _, tc := range []struct {
		clone int
		want  string
	}{{2, "the warm start: "}, {0, "iteration 1: "}} {
		c := tinyConfig()
		c.CloneGames = tc.clone
		tr, err := New(c)
		if err != nil {
			t.Fatal(err)
		}
		b := tr.Net.B[len(tr.Net.B)-1]
		b[0] = float32(math.NaN())
		err = tr.Run(context.Background(), until(1), nil)
		tr.Close()
		if !errors.Is(err, ErrNotFinite) || !strings.HasPrefix(err.Error(), tc.want+"train: the loss or its gradient is not finite") {
			t.Errorf("clone games %d: %v; want ErrNotFinite, %q first", tc.clone, err, tc.want)
		}
	}
}

// TestValidationIsTheGreedyNetworksEval checks the validation metrics
// against an independent evaluation: the checkpoint, loaded as an nn:PATH
// policy by agents.Evaluate on the same deals, must win and complete runs
// exactly as the last validation says. The warm start and every second
// iteration are validated, the others not.
func TestValidationIsTheGreedyNetworksEval(t *testing.T) {
	c := tinyConfig()
	c.Game.MaxSteps = 200
	c.ValGames, c.ValStart = 6, 123
	tr, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if err := tr.Run(context.Background(), until(4), nil); err != nil {
		t.Fatal(err)
	}
	var validated []string
	for _, m := range tr.History {
		if m.ValGames > 0 {
			validated = append(validated, fmt.Sprintf("%s %d", m.Phase, m.Iter))
			if m.ValGames != 6 || m.ValWinRate < 0 || m.ValWinRate > 1 || m.ValRuns < 0 || m.ValRuns > env.NumRuns || m.ValSeconds <= 0 {
				t.Errorf("validation metrics %+v", m)
			}
		}
	}
	if got := strings.Join(validated, ", "); got != "clone 0, ppo 2, ppo 4" {
		t.Fatalf("validated after %s; want the warm start and iterations 2 and 4", got)
	}
	path := filepath.Join(t.TempDir(), "c.spider")
	if err := tr.Save(path); err != nil {
		t.Fatal(err)
	}
	seeds := []uint64{123, 124, 125, 126, 127, 128}
	ev, err := agents.Evaluate(context.Background(), tr.rules, []string{"nn:" + path}, seeds, 2, agents.Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	wins, runs := 0.0, 0.0
	for _, r := range ev.Results[0] {
		if r.Won {
			wins++
		}
		runs += float64(r.Runs)
	}
	last := tr.History[len(tr.History)-1]
	if last.ValWinRate != wins/6 || last.ValRuns != runs/6 {
		t.Fatalf("validation says won %v, runs %v; agents.Evaluate of the checkpoint: %v, %v", last.ValWinRate, last.ValRuns, wins/6, runs/6)
	}
}

func TestNewBest(t *testing.T) {
	v := func(games int, win, runs float64) Metrics {
		return Metrics{ValGames: games, ValWinRate: win, ValRuns: runs}
	}
	for _, tc := range []struct {
		history []Metrics
		want    bool
	}{
		{nil, false},
		{[]Metrics{v(0, 0, 0)}, false},
		{[]Metrics{v(5, 0, 0)}, true},
		{[]Metrics{v(5, 0.2, 1), v(0, 0, 0), v(5, 0.4, 0.5)}, true},   // more wins beat more runs
		{[]Metrics{v(5, 0.4, 1), v(5, 0.4, 1)}, false},                // a tie is not better
		{[]Metrics{v(5, 0.4, 1), v(5, 0.4, 1.5)}, true},               // equal wins: more runs
		{[]Metrics{v(5, 0.4, 1), v(5, 0.2, 3)}, false},                // fewer wins
		{[]Metrics{v(5, 0.4, 1), v(5, 0.5, 3), v(5, 0.45, 4)}, false}, // only the best counts
	} {
		if got := NewBest(tc.history); got != tc.want {
			t.Errorf("NewBest(%+v) = %v, want %v", tc.history, got, tc.want)
		}
	}
}

// With reward shaping the policy learns from shaped rewards, but the
// metrics' return stays the score's change: whole points summed over the
// finished episodes, within what a score can move.
func TestShapedRunReportsScoreChange(t *testing.T) {
	c := tinyConfig()
	c.Game.Shaping, c.Game.ShapingGamma = env.Progress, c.Gamma
	c.Game.MaxSteps, c.ValEvery = 20, 0
	tr, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if err := tr.Run(context.Background(), until(4), nil); err != nil {
		t.Fatal(err)
	}
	finished := 0
	for _, m := range tr.History {
		if m.Phase != "ppo" || m.Finished == 0 {
			continue
		}
		finished += m.Finished
		sum := m.MeanReturn * float64(m.Finished)
		if math.Abs(sum-math.Round(sum)) > 1e-6 || math.Abs(m.MeanReturn) > env.StartScore+env.NumRuns*env.RunBonus+env.WinBonus {
			t.Fatalf("iteration %d: mean return %v over %d episodes is not a score change", m.Iter, m.MeanReturn, m.Finished)
		}
	}
	if finished == 0 {
		t.Fatal("no episode finished: the test saw nothing")
	}
}

// TestDaggerRoundsResumeExactly runs the warm start and two DAgger rounds
// (greedy teaching, to stay fast) and two PPO iterations straight, and
// again stopped after the first round, checkpointed and resumed: the
// labelled games travel in the checkpoint, so both runs end identical. The
// rounds' metrics count the labels so far and the network's agreement.
func TestDaggerRoundsResumeExactly(t *testing.T) {
	ctx := context.Background()
	c := tinyConfig()
	c.DaggerRounds, c.DaggerGames = 2, 3
	straight, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	defer straight.Close()
	var reports []string
	var learning [][2]int // the "learn" reports, done and total
	straight.Progress = func(phase string, done, total int) {
		if phase == "learn" {
			learning = append(learning, [2]int{done, total})
			if done == total {
				reports = append(reports, fmt.Sprintf("learnt %d", total))
			}
			return
		}
		reports = append(reports, fmt.Sprintf("%s %d/%d", phase, done, total))
	}
	if err := straight.Run(ctx, until(2), nil); err != nil {
		t.Fatal(err)
	}
	// Every imitation phase is reported as it starts, and every game as it
	// ends, counted up to the phase's; then the updates that learn from
	// the labels, from 0 one at a time to their total, which grows as the
	// labels do.
	updates := make([]int, 0, 3)
	for i, r := range learning {
		if r[0] == 0 {
			updates = append(updates, r[1])
		} else if r[0] != learning[i-1][0]+1 || r[1] != learning[i-1][1] {
			t.Fatalf("learn reports %v: %v after %v", learning, r, learning[i-1])
		}
	}
	if len(updates) != 3 || updates[0] <= 0 || updates[1] <= updates[0] || updates[2] <= updates[1] {
		t.Fatalf("the imitation phases learnt in %v updates, want three growing totals", updates)
	}
	// Each validation's deals too (3 a validation): after the warm start,
	// after each round, and after the second iteration (ValEvery 2); and
	// each iteration's updates (4 games x 16 steps in minibatches of 32,
	// two epochs: 4).
	val := "validate 0/3, validate 1/3, validate 2/3, validate 3/3"
	ppo := "ppo 0/4, ppo 1/4, ppo 2/4, ppo 3/4, ppo 4/4"
	want := fmt.Sprintf("clone 0/2, clone 1/2, clone 2/2, learnt %d, %s, dagger 0/3, dagger 1/3, dagger 2/3, dagger 3/3, learnt %d, %s, dagger 0/3, dagger 1/3, dagger 2/3, dagger 3/3, learnt %d, %s, %s, %s, %s", updates[0], val, updates[1], val, updates[2], val, ppo, ppo, val)
	if got := strings.Join(reports, ", "); got != want {
		t.Fatalf("progress reports %s, want %s", got, want)
	}
	var phases []string
	labels := 0
	for _, m := range straight.History {
		phases = append(phases, fmt.Sprintf("%s %d", m.Phase, m.Round))
		if m.Phase == "ppo" {
			continue
		}
		if m.Labels <= labels || m.Agreement < 0 || m.Agreement > 1 || m.LabelSeconds <= 0 {
			t.Errorf("imitation metrics %+v after %d labels", m, labels)
		}
		labels = m.Labels
		if m.Phase == "dagger" && m.Finished != 3 {
			t.Errorf("round %d played %d games, want 3", m.Round, m.Finished)
		}
	}
	if got := strings.Join(phases, ", "); got != "clone 0, dagger 1, dagger 2, ppo 0, ppo 0" {
		t.Fatalf("phases %s", got)
	}
	if straight.imitation != nil {
		t.Fatal("the imitation data outlived the last round")
	}

	stop := errors.New("stop")
	first, _ := New(c)
	path := filepath.Join(t.TempDir(), "run.ckpt")
	err = first.Run(ctx, until(2), func(m Metrics) error {
		if err := first.Save(path); err != nil {
			return err
		}
		if m.Phase == "dagger" {
			return stop // a run killed after its first round's checkpoint
		}
		return nil
	})
	first.Close()
	if !errors.Is(err, stop) {
		t.Fatalf("first run: %v", err)
	}
	resumed, err := Resume(path, &c)
	if err != nil {
		t.Fatal(err)
	}
	defer resumed.Close()
	if resumed.rounds != 1 || len(resumed.imitation) != c.CloneGames+c.DaggerGames {
		t.Fatalf("resumed after %d rounds with %d labelled games", resumed.rounds, len(resumed.imitation))
	}
	// What the command checks against the memory there is: a sample a move.
	moves := 0
	for _, g := range resumed.imitation {
		if len(g.Played) > 0 {
			moves += len(g.Played) + 1 // and where it may have been cut
		}
	}
	if got, want := resumed.ImitationBytes(), int64(moves)*int64(unsafe.Sizeof(sample{})); moves == 0 || got != want || got < int64(moves)*1000 {
		t.Fatalf("ImitationBytes %d for %d moves, want %d", got, moves, want)
	}
	if err := resumed.Run(ctx, until(2), nil); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(weights(straight.Net), weights(resumed.Net)) {
		t.Fatal("the resumed run's weights differ from the uninterrupted run's")
	}
}

// TestDaggerGameLabelsEveryPosition plays one DAgger game and replays it:
// each played move is the network's (agents.Neural's) choice and each label
// the choice of a teacher that followed the same game, seeded as documented.
func TestDaggerGameLabelsEveryPosition(t *testing.T) {
	c := tinyConfig()
	tr, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	// Search, so the labels come from plans kept across moves.
	teach, _ := agents.NewWith("search", agents.Options{Nodes: 300})
	play, err := agents.NeuralMaker(tr.Net)
	if err != nil {
		t.Fatal(err)
	}
	const seed = 99
	g := tr.daggerGame(context.Background(), seed, teach(), play())
	if len(g.Played) == 0 || len(g.Played) != len(g.Labels) || len(g.Played) > c.Game.MaxSteps {
		t.Fatalf("%d moves, %d labels", len(g.Played), len(g.Labels))
	}
	s := env.NewGame(tr.rules, seed)
	teacher, player := teach(), play()
	player.Begin(seed)
	teacher.Begin(seed)
	var legal []env.Action
	for i, a := range g.Played {
		legal = s.AppendLegal(legal[:0])
		var last env.Action
		if i > 0 {
			last = g.Played[i-1]
		}
		if want := teacher.Act(agents.NewView(&s, legal, last, i > 0)).Action; g.Labels[i] != want {
			t.Fatalf("move %d: label %d, the teacher plays %d", i, g.Labels[i], want)
		}
		if want := player.Act(agents.NewView(&s, legal, last, i > 0)).Action; a != want {
			t.Fatalf("move %d: played %d, the network plays %d", i, a, want)
		}
		if _, err := s.Step(a); err != nil {
			t.Fatal(err)
		}
	}
	if g.Score != s.Score() || g.Runs != s.Runs() || g.Won != (s.Status() == env.Won) {
		t.Fatalf("game result %+v, replay: score %d runs %d", g, s.Score(), s.Runs())
	}
}

// TestDaggerTrimAndIdle ends the network's DAgger games after CloneIdle
// moves in a row without progress, as the teacher's warm-start games
// end, and with CloneTrim keeps each only up to its last progress.
func TestDaggerTrimAndIdle(t *testing.T) {
	ctx := context.Background()
	const idle = 20
	c := trimConfig(10, idle, 12)
	tr, warm := warmStarted(t, c)
	teach, err := agents.New("greedy")
	if err != nil {
		t.Fatal(err)
	}
	play, err := agents.NeuralMaker(tr.Net)
	if err != nil {
		t.Fatal(err)
	}
	want, stopped := 0, 0
	for k := range c.DaggerGames {
		seed := rng.Mix(c.Seed^0xda66e7, uint64(k)) // round 0's deals
		g := tr.daggerGame(ctx, seed, teach(), play())
		tr.Config.CloneIdle = 0
		full := tr.daggerGame(ctx, seed, teach(), play())
		tr.Config.CloneIdle = idle
		if len(g.Played) > len(full.Played) || !slices.Equal(g.Played, full.Played[:len(g.Played)]) || !slices.Equal(g.Labels, full.Labels[:len(g.Labels)]) {
			t.Fatalf("game %d: the stopped game (%d moves) is not the start of the whole one (%d)", k, len(g.Played), len(full.Played))
		}
		trimmed := tr.trim(g)
		if len(g.Played) < len(full.Played) {
			stopped++
			if len(g.Played) != len(trimmed.Played)+idle {
				t.Fatalf("game %d stopped %d moves after its last progress; want %d", k, len(g.Played)-len(trimmed.Played), idle)
			}
		}
		want += len(trimmed.Played)
	}
	if stopped == 0 {
		t.Fatalf("no game of %d stopped for want of progress: the test needs some", c.DaggerGames)
	}
	m, err := tr.dagger(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if m.Labels != warm.Labels+want {
		t.Fatalf("DAgger imitated %d labels; want the warm start's %d and %d trimmed", m.Labels, warm.Labels, want)
	}
}

// TestDaggerAgreementIsTheShareOfLabelsPlayed runs a DAgger round (of two,
// so its games stay in the imitation data) and requires its Agreement to
// be the share of the network's moves that were the teacher's labels.
func TestDaggerAgreementIsTheShareOfLabelsPlayed(t *testing.T) {
	c := tinyConfig()
	c.DaggerRounds, c.DaggerGames, c.ValEvery, c.CloneSets = 2, 3, 0, false
	tr, _ := warmStarted(t, c)
	m, err := tr.dagger(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	games := tr.imitation[len(tr.imitation)-c.DaggerGames:]
	same, all := 0, 0
	for _, g := range games {
		for i, a := range g.Played {
			if g.Labels[i] == a {
				same++
			}
		}
		all += len(g.Played)
	}
	if all == 0 {
		t.Fatal("the round played no move: the test sees nothing")
	}
	if want := float64(same) / float64(all); m.Agreement != want {
		t.Fatalf("agreement %v; the network played the label %d times of %d moves (%v)", m.Agreement, same, all, want)
	}
}

// trimConfig is tinyConfig with games of up to 1,000 moves, a warm start
// of games teacher games trimmed and cut after idle moves without
// progress, one DAgger round of dagger games, and no validation.
func trimConfig(games, idle, dagger int) Config {
	c := tinyConfig()
	c.Game.MaxSteps = 1000
	c.CloneGames, c.CloneTrim, c.CloneIdle, c.ValEvery = games, true, idle, 0
	c.DaggerRounds, c.DaggerGames = 1, dagger
	return c
}

// warmStarted returns a trainer of c after its warm start, and the warm
// start's metrics; the trainer closes when t ends.
func warmStarted(t *testing.T, c Config) (*Trainer, Metrics) {
	t.Helper()
	tr, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.Close)
	m, err := tr.clone(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return tr, m
}

// TestCloneWonOnly keeps only the teacher's won games for the warm start,
// reports the teacher's games all the same, and refuses a warm start whose
// teacher won nothing.
func TestCloneWonOnly(t *testing.T) {
	ctx := context.Background()
	c := tinyConfig()
	c.Game.MaxSteps = 1000 // greedy wins about a quarter of whole one-suit games
	c.CloneGames, c.CloneWonOnly, c.ValEvery = 12, true, 0
	tr, m := warmStarted(t, c)
	won := int(math.Round(m.WinRate * float64(m.Finished)))
	if m.Finished != 12 || won == 0 || won == 12 {
		t.Fatalf("the teacher's games: %d played, %d won; the test needs some of each", m.Finished, won)
	}
	// The same teacher's games again, to count the won ones' moves (the
	// trainer drops its data once the warm start is done).
	maker, err := agents.New("greedy")
	if err != nil {
		t.Fatal(err)
	}
	moves, wins := 0, 0
	for k := range c.CloneGames {
		g := tr.teacherGame(ctx, rng.Mix(c.Seed^0xc10e, uint64(k)), maker())
		if g.Won {
			wins++
			moves += len(g.Played)
		}
	}
	if wins != won || m.Labels != moves {
		t.Fatalf("imitated %d labels; want the %d moves of the %d won games (the metrics say %d won)", m.Labels, moves, wins, won)
	}

	c = tinyConfig() // 60 moves a game: greedy wins nothing
	c.CloneWonOnly = true
	tr2, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	defer tr2.Close()
	if _, err := tr2.clone(ctx); err == nil || !strings.Contains(err.Error(), "won none") {
		t.Fatalf("a teacher that won nothing: %v", err)
	}
}

// TestCloneTrim imitates each teacher game up to its last move that
// changed what a player counts as progress (stock, face-down cards, runs):
// won games whole, lost games without the moves that wander after it.
func TestCloneTrim(t *testing.T) {
	ctx := context.Background()
	const idle = 100
	c := trimConfig(30, idle, 1) // one DAgger round, so the trainer keeps the trimmed games after the warm start
	tr, m := warmStarted(t, c)
	maker, err := agents.New("greedy")
	if err != nil {
		t.Fatal(err)
	}
	want, all, won, cutLost, stopped, waited := 0, 0, 0, 0, 0, 0
	for k := range c.CloneGames {
		seed := rng.Mix(c.Seed^0xc10e, uint64(k))
		g := tr.teacherGame(ctx, seed, maker())
		// With CloneIdle the teacher's game stops that many moves after
		// its last progress; played to the end it trims to the same game
		// unless progress came after a longer wait.
		tr.Config.CloneIdle = 0
		full := tr.teacherGame(ctx, seed, maker())
		tr.Config.CloneIdle = idle
		if !slices.Equal(g.Played, full.Played[:min(len(g.Played), len(full.Played))]) {
			t.Fatalf("game %d: the stopped game is not the start of the whole one", k)
		}
		if a, b := tr.trim(g), tr.trim(full); (!slices.Equal(a.Played, b.Played) || a.Score != b.Score || a.Runs != b.Runs || a.Won != b.Won) != (longestWait(tr, full) >= idle) {
			t.Fatalf("game %d: trimmed to %d moves when stopped, %d when whole; its longest wait for progress was %d moves", k, len(a.Played), len(b.Played), longestWait(tr, full))
		}
		if len(g.Played) < len(full.Played) {
			stopped++
		}
		if longestWait(tr, full) >= idle {
			waited++
		}
		s := env.NewGame(tr.rules, g.Seed)
		keep := 0
		for i, a := range g.Played {
			stock, down, runs := s.StockLeft(), s.TotalFaceDown(), s.Runs()
			if _, err := s.Step(a); err != nil {
				t.Fatal(err)
			}
			if s.StockLeft() != stock || s.TotalFaceDown() != down || s.Runs() != runs {
				keep = i + 1
			}
		}
		if g.Won {
			won++
			if keep != len(g.Played) {
				t.Fatalf("won game %d: kept %d of %d moves", k, keep, len(g.Played))
			}
		} else if keep < len(g.Played) {
			cutLost++
		}
		if len(g.Played) < len(full.Played) && len(g.Played) != keep+idle {
			t.Fatalf("game %d stopped %d moves after its last progress; want %d", k, len(g.Played)-keep, idle)
		}
		want += keep
		all += len(g.Played)
	}
	if won == 0 || cutLost == 0 || stopped == waited || waited == 0 {
		t.Fatalf("%d won games, %d lost games cut, %d stopped early, %d of them before later progress: the test needs some of each", won, cutLost, stopped, waited)
	}
	if m.Labels != want || want >= all {
		t.Fatalf("imitated %d labels; want %d (of %d moves)", m.Labels, want, all)
	}
	if len(tr.imitation) != c.CloneGames {
		t.Fatalf("%d games kept for DAgger; want %d", len(tr.imitation), c.CloneGames)
	}
	for _, g := range tr.imitation {
		s := env.NewGame(tr.rules, g.Seed)
		for _, a := range g.Played {
			s.Step(a)
		}
		if g.Score != s.Score() || g.Runs != s.Runs() || g.Won != (s.Status() == env.Won) {
			t.Fatalf("trimmed game %d says score %d runs %d won %v; its moves reach %d, %d, %v", g.Seed, g.Score, g.Runs, g.Won, s.Score(), s.Runs(), s.Status() == env.Won)
		}
	}
}

// longestWait is the most moves in a row g plays without progress before
// a move that makes some.
func longestWait(tr *Trainer, g labelled) int {
	s := env.NewGame(tr.rules, g.Seed)
	longest, last := 0, -1
	for i, a := range g.Played {
		down, runs := s.TotalFaceDown(), s.Runs()
		s.Step(a)
		if a == env.Deal || s.TotalFaceDown() < down || s.Runs() > runs {
			longest, last = max(longest, i-last-1), i
		}
	}
	return longest
}

// TestCloneDecayLowersTheRate runs the imitation passes with and without
// CloneDecay's schedule: with it, the rate falls linearly from the start
// to one update's share of it at the last update; without, it stays.
func TestCloneDecayLowersTheRate(t *testing.T) {
	tr, err := New(tinyConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	const n, rows, passes, base = 64, 16, 3, 1e-3
	for _, decay := range []bool{false, true} {
		opt := newAdam(tr.params(), base, 0.5)
		l, err := newLearner(tr.Net, opt, rows, CloneLoss, coefs{Value: 0.5}, 0.2)
		if err != nil {
			t.Fatal(err)
		}
		obs, mask := make([]float32, tr.Net.Spec.ObsLen), make([]uint8, env.NumActions)
		mask[env.Deal] = 1
		var seen []float64 // the rate at each fill: the one the last update used
		_, updates, err := tr.epochs(context.Background(), l, n, rows, passes, passOptions{decay: decay}, func(r, idx int) {
			if r == 0 {
				seen = append(seen, l.opt.LR)
			}
			l.setRow(r, obs, mask, int(env.Deal))
		})
		l.close()
		if err != nil {
			t.Fatal(err)
		}
		total := passes * n / rows
		if updates != total || len(seen) != total {
			t.Fatalf("%d updates, %d fills; want %d", updates, len(seen), total)
		}
		seen = append(seen, l.opt.LR)
		for k, lr := range seen[1:] {
			want := base
			if decay {
				want = base * (1 - float64(k)/float64(total))
			}
			if math.Abs(lr-want) > 1e-15 {
				t.Fatalf("decay %v: update %d ran at %g, want %g", decay, k, lr, want)
			}
		}
	}
}

// TestImitationReturnsAreTheEnvironments checks the value targets of the
// imitation data against env.Env: each position's target is the discounted
// sum of the rewards Env pays for the moves that follow it, shaped as the
// run shapes them, times the reward scale.
func TestImitationReturnsAreTheEnvironments(t *testing.T) {
	for _, tc := range []struct {
		shaping  env.Shaping
		unshaped bool // CloneUnshapedValue
	}{{env.NoShaping, false}, {env.Progress, false}, {env.Progress, true}} {
		shaping := tc.shaping
		c := tinyConfig()
		c.Game.Shaping, c.Game.ShapingGamma = shaping, 0.9
		c.Gamma, c.CloneUnshapedValue = 0.9, tc.unshaped
		tr, err := New(c)
		if err != nil {
			t.Fatal(err)
		}
		teach, _ := agents.New("greedy")
		const seed = 5
		g := tr.teacherGame(context.Background(), seed, teach())
		rows, _, err := tr.samples([]labelled{g})
		tr.Close()
		if err != nil {
			t.Fatal(err)
		}
		// The environment the targets must match: the run's, or under
		// CloneUnshapedValue the same game unshaped.
		game := tr.rules.Options()
		if tc.unshaped {
			game.Shaping, game.ShapingGamma = env.NoShaping, 0
		}
		e := env.New(env.MustRules(game))
		e.Reset(seed)
		var rewards []float64
		for _, a := range g.Played {
			_, r, _, _, _, err := e.Step(a)
			if err != nil {
				t.Fatal(err)
			}
			rewards = append(rewards, r)
		}
		if len(rows) != len(rewards) || len(rows) < 20 {
			t.Fatalf("%v (unshaped value %v): %d rows for %d moves", shaping, tc.unshaped, len(rows), len(rewards))
		}
		var ret float64
		shaped := false
		for i := len(rewards) - 1; i >= 0; i-- {
			ret = rewards[i]*c.RewardScale + c.Gamma*ret
			if math.Abs(float64(rows[i].ret)-ret) > 1e-4*(1+math.Abs(ret)) {
				t.Fatalf("%v (unshaped value %v): position %d: value target %v, the environment's discounted return %v", shaping, tc.unshaped, i, rows[i].ret, ret)
			}
			if rewards[i] != math.Trunc(rewards[i]) {
				shaped = true // only a shaping term makes a reward fractional
			}
		}
		if shaped != (shaping == env.Progress && !tc.unshaped) {
			t.Fatalf("%v (unshaped value %v): fractional rewards %v", shaping, tc.unshaped, shaped)
		}
	}
}

// TestImitationBootstrapsCutGames checks the value targets of imitated
// games that did not end against PPO's: a game the step limit cuts ends
// its return with the discounted value of the position it was cut at, a
// game the rules end with nothing, and without CloneBootstrap every game
// as if it had ended.
func TestImitationBootstrapsCutGames(t *testing.T) {
	for _, bootstrap := range []bool{true, false} {
		c := tinyConfig() // a step limit of 60 cuts greedy's games
		c.Gamma, c.CloneBootstrap = 0.9, bootstrap
		tr, err := New(c)
		if err != nil {
			t.Fatal(err)
		}
		teach, _ := agents.New("greedy")
		cut := tr.teacherGame(context.Background(), 5, teach())
		// The same deal under a step limit greedy's game does not reach:
		// it ends won or lost.
		long := c
		long.Game.MaxSteps = 2000
		tl, err := New(long)
		if err != nil {
			t.Fatal(err)
		}
		ended := tl.teacherGame(context.Background(), 5, teach())
		rows, cuts, err := tr.samples([]labelled{cut})
		if err != nil {
			t.Fatal(err)
		}
		endedRows, endedCuts, err := tl.samples([]labelled{ended})
		if err != nil {
			t.Fatal(err)
		}
		s := env.NewGame(tr.rules, 5)
		for _, a := range cut.Played {
			s.Step(a)
		}
		e := env.NewGame(tl.rules, 5)
		for _, a := range ended.Played {
			e.Step(a)
		}
		if !s.Truncated() || s.Terminated() || !e.Terminated() || len(cut.Played) != 60 {
			t.Fatalf("the games did not end as the test needs: cut %v/%v after %d moves, ended %v", s.Truncated(), s.Terminated(), len(cut.Played), e.Terminated())
		}
		if len(endedCuts) != 0 || slices.ContainsFunc(endedRows, func(d sample) bool { return d.tail != 0 }) {
			t.Errorf("bootstrap %v: a game the rules ended has a cut (%d) or a tail", bootstrap, len(endedCuts))
		}
		if !bootstrap {
			if len(cuts) != 0 || slices.ContainsFunc(rows, func(d sample) bool { return d.tail != 0 }) {
				t.Errorf("without CloneBootstrap: %d cuts", len(cuts))
			}
			tr.Close()
			tl.Close()
			continue
		}
		if len(cuts) != 1 || cuts[0] != s {
			t.Fatalf("cuts %d; want the one position the game was cut at", len(cuts))
		}
		// The value PPO would bootstrap with, computed here from the
		// observation directly.
		D := tr.Net.Spec.ObsLen
		x, logits, v := make([]float32, D), make([]float32, env.NumActions), make([]float32, 1)
		s.ObserveFloat32(x)
		tr.Net.Forward(logits, v, x, 1, tr.Net.NewScratch(1))
		cutV := []float32{0}
		tr.stateValues(cutV, cuts)
		if cutV[0] != v[0] || v[0] == 0 {
			t.Fatalf("stateValues %v, the network's value %v", cutV[0], v[0])
		}
		tail := 1.0
		for i := len(rows) - 1; i >= 0; i-- {
			tail *= c.Gamma
			want := float64(rows[i].ret) + tail*float64(v[0])
			if got := float64(rows[i].target(cutV)); math.Abs(got-want) > 1e-5 {
				t.Fatalf("position %d: target %v, want the return %v plus %v of the cut's value %v", i, got, rows[i].ret, tail, v[0])
			}
		}
		tr.Close()
		tl.Close()
	}
}

// TestImitationLearnsTheBootstrappedTargets checks that the imitation
// phase fits the value head to the bootstrapped targets: one pass, one
// minibatch of every row, so its value loss is the mean squared error of
// the network as it stands against those targets, computed here again.
func TestImitationLearnsTheBootstrappedTargets(t *testing.T) {
	c := tinyConfig() // a step limit of 60 cuts greedy's games
	c.CloneEpochs = 1
	tr, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	teach, _ := agents.New("greedy")
	tr.imitation = []labelled{tr.teacherGame(context.Background(), 5, teach()), tr.teacherGame(context.Background(), 6, teach())}
	rows, cuts, err := tr.samples(tr.imitation)
	if err != nil || len(cuts) != 2 {
		t.Fatalf("%d cuts (%v); want both games cut", len(cuts), err)
	}
	tr.Config.Minibatch = len(rows)
	cutV := make([]float32, len(cuts))
	tr.stateValues(cutV, cuts)
	D := tr.Net.Spec.ObsLen
	x, logits, v, sc := make([]float32, D), make([]float32, env.NumActions), make([]float32, 1), tr.Net.NewScratch(1)
	var with, without float64
	for i := range rows {
		rows[i].s.ObserveFloat32(x)
		tr.Net.Forward(logits, v, x, 1, sc)
		d1, d0 := float64(v[0]-rows[i].target(cutV)), float64(v[0]-rows[i].ret)
		with, without = with+d1*d1, without+d0*d0
	}
	with, without = with/float64(len(rows)), without/float64(len(rows))
	var m Metrics
	if err := tr.imitate(context.Background(), &m); err != nil {
		t.Fatal(err)
	}
	if math.Abs(m.ValueLoss-with) > 1e-4*with || math.Abs(with-without) < 1e-2*with {
		t.Fatalf("value loss %v; the bootstrapped targets give %v, the targets ending with 0 %v", m.ValueLoss, with, without)
	}
}

// TestCloneAverageIsTheLastPassMean runs the same imitation passes on two
// trainers of the same seed, one keeping its last weights and one
// averaging: the averaged weights are the mean of the first trainer's
// weights after each update of its last pass, which it recorded.
func TestCloneAverageIsTheLastPassMean(t *testing.T) {
	const n, rows, passes = 64, 16, 3
	run := func(average bool) (final []float32, after [][]float32) {
		tr, err := New(tinyConfig())
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Close()
		flat := func() []float32 {
			var w []float32
			for _, p := range tr.params() {
				w = append(w, p...)
			}
			return w
		}
		l, err := newLearner(tr.Net, newAdam(tr.params(), 1e-2, 0.5), rows, CloneLoss, coefs{Value: 0.5}, 0.2)
		if err != nil {
			t.Fatal(err)
		}
		defer l.close()
		g := rng.New(3)
		obs, mask := make([]float32, tr.Net.Spec.ObsLen), make([]uint8, env.NumActions)
		fills := 0
		_, _, err = tr.epochs(context.Background(), l, n, rows, passes, passOptions{average: average}, func(r, idx int) {
			if r == 0 {
				if fills > 0 {
					after = append(after, flat()) // the weights after the update before
				}
				fills++
			}
			for i := range obs {
				obs[i] = float32(g.IntN(2))
			}
			clear(mask)
			mask[env.Deal], mask[idx%50] = 1, 1
			l.setRow(r, obs, mask, idx%50)
		})
		if err != nil {
			t.Fatal(err)
		}
		return flat(), append(after, flat())
	}
	last, after := run(false)
	averaged, _ := run(true)
	perPass := n / rows
	if len(after) != passes*perPass {
		t.Fatalf("%d updates recorded", len(after))
	}
	tail := after[len(after)-perPass:]
	changed, moved := 0, 0
	for j := range last {
		var mean float64
		for _, w := range tail {
			mean += float64(w[j])
		}
		if tail[0][j] != last[j] {
			moved++ // a weight the last pass changed
		}
		mean /= float64(len(tail))
		if math.Abs(float64(averaged[j])-mean) > 1e-6*(1+math.Abs(mean)) {
			t.Fatalf("weight %d: averaged %v, the last pass's mean %v", j, averaged[j], mean)
		}
		if averaged[j] != last[j] {
			changed++
		}
	}
	if moved < 1000 || changed < moved*9/10 {
		t.Fatalf("averaging changed %d of the %d weights the last pass moved (of %d)", changed, moved, len(last))
	}
}

// TestWarmStartDoneBeforeItsCallback: when the warm start's metrics reach
// the callback, the warm start counts as done (no imitation phase remains
// without DAgger rounds), and a checkpoint saved there resumes without
// playing it again.
func TestWarmStartDoneBeforeItsCallback(t *testing.T) {
	c := tinyConfig()
	tr, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	path := filepath.Join(t.TempDir(), "warm.ckpt")
	stop := errors.New("stop")
	err = tr.Run(context.Background(), until(1), func(m Metrics) error {
		if m.Phase != "clone" {
			return fmt.Errorf("phase %s before the warm start's", m.Phase)
		}
		if tr.Imitating() {
			return errors.New("still imitating in the warm start's callback")
		}
		if err := tr.Save(path); err != nil {
			return err
		}
		return stop
	})
	if !errors.Is(err, stop) {
		t.Fatal(err)
	}
	resumed, err := Resume(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resumed.Close()
	var phases []string
	if err := resumed.Run(context.Background(), until(1), func(m Metrics) error {
		phases = append(phases, m.Phase)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(phases, []string{"ppo"}) {
		t.Fatalf("the resumed run played %v; want one PPO iteration and no second warm start", phases)
	}
}

// TestCollectCountsNoCutGame: collect reports 0 as it starts, then only
// games that ended before a stop; one cut short by it is not counted as
// played (the report said "4 of 4 games" after a stop).
func TestCollectCountsNoCutGame(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var heard []int
	_, err := collect(ctx, 4, func(k int, _, _ agents.Agent) labelled {
		cancel() // the stop comes while the first game is played
		return labelled{}
	}, nil, nil, func(done int) { heard = append(heard, done) })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("collect after a stop: %v", err)
	}
	if fmt.Sprint(heard) != "[0]" {
		t.Fatalf("collect reported %v after a stop in its first game; want [0]", heard)
	}
}

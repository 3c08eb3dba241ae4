package train

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spiderenv/spider/env"
	"github.com/spiderenv/spider/train/nn"
)

func tinyConfig() Config {
	c := DefaultConfig()
	c.MaxSteps, c.Slots, c.Hidden = 60, 2, []int{8}
	c.Games, c.Rollout, c.Minibatch, c.Epochs = 4, 16, 32, 2
	c.CloneGames, c.CloneEpochs = 2, 1
	c.Seed = 7
	return c
}

func until(n int) func(int, int64) bool { return func(i int, _ int64) bool { return i >= n } }

func weights(n *nn.Net) []float32 { return slices.Concat(n.Params()...) }

// TestResumeIsExact trains four iterations straight, and separately two,
// a checkpoint, a fresh process's worth of state (Resume) and two more:
// weights, optimiser, games and metrics must come out identical.
func TestResumeIsExact(t *testing.T) {
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
		if a.EnvSteps != b.EnvSteps || a.Episodes != b.Episodes || a.PolicyLoss != b.PolicyLoss || a.MeanReturn != b.MeanReturn {
			t.Fatalf("metrics line %d differs: %+v and %+v", i, a, b)
		}
	}
	if !slices.Equal(straight.batch.ObsFloat32, resumed.batch.ObsFloat32) {
		t.Fatal("the games differ after resuming")
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
	cases := map[string][]byte{
		"empty":     nil,
		"garbage":   []byte("not a checkpoint at all"),
		"truncated": data[:len(data)/2],
	}
	for name, b := range cases {
		p := filepath.Join(dir, name+".ckpt")
		os.WriteFile(p, b, 0o644)
		if _, _, err := nn.Load(p); err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("%s checkpoint: error %v; want a refusal naming the file", name, err)
		}
		if _, err := Resume(p, nil); err == nil {
			t.Errorf("%s checkpoint resumed", name)
		}
	}
	other := tinyConfig()
	other.Suits, other.Hidden = 2, []int{16}
	_, err = Resume(path, &other)
	if err == nil || !strings.Contains(err.Error(), "suits is 2, the checkpoint's 1") || !strings.Contains(err.Error(), "hidden layers") {
		t.Fatalf("a mismatched resume gave %v", err)
	}
	if err := net.Spec.Check(env.MustRules(env.Options{Suits: 4})); err == nil || !strings.Contains(err.Error(), "4 suits, the network's 1") {
		t.Fatalf("a 4-suit game against a 1-suit network gave %v", err)
	}
	if err := net.Spec.Check(env.MustRules(env.Options{Suits: 1})); err != nil {
		t.Fatalf("a 1-suit game with other slots was refused: %v", err)
	}
}

func TestConfigValidation(t *testing.T) {
	for name, mod := range map[string]func(*Config){
		"suits":     func(c *Config) { c.Suits = 3 },
		"rules":     func(c *Config) { c.RuleSet = "klondike" },
		"games":     func(c *Config) { c.Games = 0 },
		"minibatch": func(c *Config) { c.Minibatch = 1 << 30 },
		"lr":        func(c *Config) { c.LR = 0 },
		"clip":      func(c *Config) { c.Clip = 1.5 },
		"teacher":   func(c *Config) { c.Teacher = "chess" },
	} {
		c := tinyConfig()
		mod(&c)
		if _, err := New(c); err == nil {
			t.Errorf("%s: a bad configuration was accepted", name)
		}
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
	if err := tr.Run(ctx, until(1), nil); err == nil {
		t.Fatal("a cancelled run returned no error")
	}
	if tr.Consistent() {
		t.Fatal("a run stopped inside the warm start reports a consistent state")
	}
	if err := tr.Save(filepath.Join(t.TempDir(), "x.ckpt")); err == nil {
		t.Fatal("Save wrote a state between two iterations")
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
	if _, err := l.update(); err == nil || !strings.Contains(err.Error(), "not finite") {
		t.Fatalf("update with a NaN input: %v", err)
	}
	if !slices.Equal(before, weights(net)) {
		t.Fatal("a failed update changed the weights")
	}
}

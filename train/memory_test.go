package train

import (
	"context"
	"path/filepath"
	"runtime"
	"testing"
	"unsafe"

	"github.com/spiderenv/spider/agents"
	"github.com/spiderenv/spider/agents/nn"
	"github.com/spiderenv/spider/env"
)

// TestBufferBytes compares BufferBytes with the heap a run really holds
// after its first iteration, its batch aside: the estimate a command
// refuses a run by must not be under it, nor far over.
func TestBufferBytes(t *testing.T) {
	if testing.Short() {
		t.Skip("trains an iteration")
	}
	c := DefaultConfig()
	c.Games, c.Rollout, c.Minibatch, c.Epochs, c.ValEvery = 32, 32, 768, 1, 0
	t.Run("mlp", func(t *testing.T) { checkBufferBytes(t, c) })
	c.Arch, c.Hidden, c.Column, c.Pair = nn.Columns, []int{256}, 128, 32
	t.Run("columns", func(t *testing.T) { checkBufferBytes(t, c) })
}

func checkBufferBytes(t *testing.T, c Config) {
	r, err := c.Rules()
	if err != nil {
		t.Fatal(err)
	}
	// The batch, as the server's BatchBytes counts it (this package cannot
	// import the server): the observation and final rows, the masks, the
	// states and the small per-game arrays.
	batch := int64(c.Games) * (2*4*int64(r.ObsLen()) + 1081 + int64(unsafe.Sizeof(env.State{})) + 100)
	var before, after runtime.MemStats
	collect := func(ms *runtime.MemStats) {
		// Twice more: gorgonia's values have finalizers, freed a cycle late.
		for range 3 {
			runtime.GC()
		}
		runtime.ReadMemStats(ms)
	}
	collect(&before)
	tr, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if err := tr.Run(context.Background(), until(1), nil); err != nil {
		t.Fatal(err)
	}
	collect(&after)
	runtime.KeepAlive(tr)
	held := int64(after.HeapAlloc) - int64(before.HeapAlloc) - batch
	est, err := c.BufferBytes()
	if err != nil {
		t.Fatal(err)
	}
	est -= BLASBytes(c) // outside Go's heap, where this measures
	t.Logf("BufferBytes %d MiB; the run holds %d MiB beside its batch", est>>20, held>>20)
	if held > est || float64(held) < 0.6*float64(est) {
		t.Fatalf("BufferBytes says %d MiB; the run holds %d MiB beside its batch", est>>20, held>>20)
	}
}

// TestSaveBytes compares SaveBytes with what Save really allocates: it
// makes each buffer once, so all of it (TotalAlloc) is what it holds at
// its peak, and the estimate must be at least that, and not more than
// three times it (48 bytes a weight, set when Save allocated 61-66, against
// 20 now), for a network small and one large enough to dominate.
func TestSaveBytes(t *testing.T) {
	if testing.Short() {
		t.Skip("trains an iteration of a large network")
	}
	for _, hidden := range [][]int{{256, 256}, {2048, 2048}} {
		c := DefaultConfig()
		c.Games, c.Rollout, c.Minibatch, c.Epochs, c.ValEvery, c.CloneGames, c.Hidden = 8, 16, 128, 1, 0, 0, hidden
		tr, err := New(c)
		if err != nil {
			t.Fatal(err)
		}
		if err := tr.Run(context.Background(), until(1), nil); err != nil {
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		if err := tr.Save(filepath.Join(t.TempDir(), "c.spider")); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		tr.Close()
		got := int64(after.TotalAlloc - before.TotalAlloc)
		est, err := c.SaveBytes()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("hidden %v: SaveBytes %d MiB; Save allocated %d MiB", hidden, est>>20, got>>20)
		if est < got || est > 3*got {
			t.Fatalf("hidden %v: SaveBytes says %d MiB; Save allocated %d MiB", hidden, est>>20, got>>20)
		}
	}
}

// TestImitationBound: every warm-start game at the step limit and every
// DAgger game at its cap, a sample a move; and the bound holds the data a
// real warm start keeps.
func TestImitationBound(t *testing.T) {
	c := tinyConfig()
	c.Game.MaxSteps, c.CloneGames, c.DaggerRounds, c.DaggerGames = 40, 10, 2, 3
	if got, want := c.ImitationBound(), int64(10*40+2*3*40+10+2*3)*SampleBytes; got != want {
		t.Errorf("bound %d, want %d (games at 40 steps)", got, want)
	}
	c.Game.MaxSteps = 5000
	if got, want := c.ImitationBound(), int64(10*5000+2*3*daggerMoves+10+2*3)*SampleBytes; got != want {
		t.Errorf("bound %d, want %d (DAgger games capped at %d moves)", got, want, daggerMoves)
	}
	// A configuration Validate refuses has no bound: 0, as documented
	// (before, negative counts gave negative bounds, and games without
	// epochs a positive one).
	for _, edit := range []func(c *Config){
		func(c *Config) { c.CloneGames = -3 },
		func(c *Config) { c.CloneEpochs = 0 },
		func(c *Config) { c.DaggerRounds = -2 },
	} {
		bad := c
		edit(&bad)
		if err := bad.Validate(); err == nil || bad.ImitationBound() != 0 {
			t.Errorf("%+v: Validate %v, bound %d; want an error and 0", bad, err, bad.ImitationBound())
		}
	}
	// A shaping discount other than the learner's, which New refuses and
	// Resume takes, keeps its bound: a resumed run checks its memory by it.
	shaped := c
	shaped.Game.Shaping, shaped.Game.ShapingGamma = env.Progress, 0.9
	if err := shaped.Validate(); err == nil || shaped.ImitationBound() != c.ImitationBound() {
		t.Errorf("a shaping discount of 0.9 under gamma %v: Validate %v, bound %d; want an error and %d", shaped.Gamma, err, shaped.ImitationBound(), c.ImitationBound())
	}
	c = tinyConfig()
	c.DaggerRounds, c.DaggerGames = 1, 2 // the warm start's data is kept for the round
	tr, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if err := tr.Run(context.Background(), func(int, int64) bool { return tr.cloned }, nil); err != nil {
		t.Fatal(err)
	}
	if held, bound := tr.ImitationBytes(), c.ImitationBound(); c.CloneGames == 0 || held == 0 || held > bound {
		t.Errorf("a warm start of %d games holds %d bytes of imitation data; the bound says %d", c.CloneGames, held, bound)
	}
}

// TestValidationBytes: a validation holds, for each worker, a game in
// play at agents.MoveBytes a move up to the step limit and its network
// player (a columns network's forward pass is several times its
// weights); nothing without validation.
func TestValidationBytes(t *testing.T) {
	c := tinyConfig()
	c.ValEvery, c.ValGames = 1, 2
	workers := int64(min(runtime.GOMAXPROCS(0), 2))
	c.Game.MaxSteps = 1 << 30
	if got, least := c.ValidationBytes(), workers*agents.MoveBytes<<30; got < least || got > least+1<<20 {
		t.Errorf("a step limit of 2^30: %d bytes, want a little over %d", got, least)
	}
	c.Game.MaxSteps = 100
	mlp := c.ValidationBytes()
	c.Arch, c.Column, c.Hidden, c.Pair = nn.Columns, 1, []int{1}, 1024
	if cols := c.ValidationBytes(); cols < mlp+workers*500<<10 {
		t.Errorf("a columns network with pairs of 1024: %d bytes, the MLP's %d", cols, mlp)
	}
	c.ValEvery = 0
	if got := c.ValidationBytes(); got != 0 {
		t.Errorf("without validation: %d bytes", got)
	}
}

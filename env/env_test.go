package env_test

import (
	"bytes"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/spiderenv/spider/env"
	"github.com/spiderenv/spider/internal/alloccount"
	"github.com/spiderenv/spider/internal/rng"
)

func TestEnvResetStepInfo(t *testing.T) {
	e := env.New(env.MustRules(env.Options{Suits: 4}))
	if _, _, _, _, _, err := e.Step(env.Deal); !errors.Is(err, env.ErrNotReset) {
		t.Fatalf("Step before Reset: %v", err)
	}
	if !strings.Contains(e.Render(), "Reset") {
		t.Error("Render before Reset should say there is no game")
	}
	obs, info := e.Reset(3)
	if len(obs.Compact) != e.Rules().CompactLen() || obs.Float32 != nil {
		t.Fatalf("compact env returned %d bytes and float32 %v", len(obs.Compact), obs.Float32 != nil)
	}
	s := env.NewGame(e.Rules(), 3)
	want := env.Info{Score: 500, FaceDown: 44, Legal: s.NumLegal(), StockLeft: 50, Status: env.Playing}
	if info != want {
		t.Fatalf("info %+v, want %+v", info, want)
	}
	obs, reward, term, trunc, info, err := e.Step(env.Deal)
	if err != nil || reward != -1 || term || trunc || info.Moves != 1 || info.StockLeft != 40 || info.Score != 499 {
		t.Fatalf("deal: reward %v term %v trunc %v info %+v err %v", reward, term, trunc, info, err)
	}
	if st := e.State(); !bytes.Equal(obs.Compact, st.ObserveCompact(make([]uint8, e.Rules().CompactLen()))) {
		t.Error("observation after the step is not the state's")
	}
}

func TestEnvIllegalActionChangesNothing(t *testing.T) {
	for _, enc := range []env.Encoding{env.Compact, env.Float32} {
		e := env.New(env.MustRules(env.Options{Suits: 2, Encoding: enc}))
		obs, _ := e.Reset(4)
		u8, f32 := slices.Clone(obs.Compact), slices.Clone(obs.Float32)
		mask := slices.Clone(e.Mask())
		state, info := e.State(), e.Info()
		for a := env.Action(0); a < env.NumActions+3; a++ {
			if a < env.NumActions && mask[a] == 1 {
				continue
			}
			_, _, _, _, _, err := e.Step(a)
			var ill *env.IllegalActionError
			if !errors.As(err, &ill) {
				t.Fatalf("Step(%v) = %v, want an IllegalActionError", a, err)
			}
		}
		if e.State() != state || e.Info() != info || !bytes.Equal(e.Mask(), mask) ||
			!bytes.Equal(obs.Compact, u8) || !slices.Equal(obs.Float32, f32) {
			t.Fatal("illegal actions changed the game, the mask or the observation")
		}
	}
}

func TestEnvEpisodeEndAndUndo(t *testing.T) {
	e := env.New(env.MustRules(env.Options{Suits: 1, MaxSteps: 3}))
	e.Reset(5)
	if _, _, err := e.Undo(); !errors.Is(err, env.ErrNoUndo) {
		t.Fatalf("Undo at the start: %v", err)
	}
	var trunc bool
	for i := 0; i < 3; i++ {
		st := e.State()
		legal := st.AppendLegal(nil)
		var err error
		if _, _, _, trunc, _, err = e.Step(legal[0]); err != nil {
			t.Fatal(err)
		}
	}
	if !trunc || e.Info().Legal != 0 || slices.Contains(e.Mask(), 1) {
		t.Fatalf("after the step limit: truncated %v, legal %d", trunc, e.Info().Legal)
	}
	if _, _, _, _, _, err := e.Step(env.Deal); !errors.Is(err, env.ErrEpisodeOver) {
		t.Fatalf("Step after truncation: %v", err)
	}
	obs, info, err := e.Undo()
	if err != nil || info.Moves != 2 || info.Legal == 0 {
		t.Fatalf("Undo after truncation: %+v %v", info, err)
	}
	if st := e.State(); !bytes.Equal(obs.Compact, st.ObserveCompact(make([]uint8, e.Rules().CompactLen()))) {
		t.Fatal("observation after undo is not the state's")
	}
}

func TestEnvRewardIsScoreChangeClampedAtZero(t *testing.T) {
	e := env.New(env.MustRules(env.Options{Suits: 1, MaxSteps: -1}))
	e.Reset(6)
	total := 0.0
	for range 700 {
		st := e.State()
		legal := st.AppendLegal(nil)
		if len(legal) == 0 {
			break
		}
		before := e.Info().Score
		_, reward, _, _, info, err := e.Step(legal[len(legal)/2])
		if err != nil {
			t.Fatal(err)
		}
		if reward != float64(info.Score-before) {
			t.Fatalf("reward %v, score %d -> %d", reward, before, info.Score)
		}
		if before == 0 && reward < 0 {
			t.Fatal("negative reward at a score of 0")
		}
		total += reward
	}
	if got := float64(e.Info().Score - 500); total != got {
		t.Fatalf("rewards sum to %v, score moved %v", total, got)
	}
}

// TestEnvWithoutStepLimitDoesNotAllocate: without a step limit Env.Step
// still allocates nothing for 16,000 steps (the undo history is made for
// 16,384). It counts every allocation of the process during the loop,
// since AllocsPerRun's average rounds a history that grows now and then
// down to 0, and takes the fewest of three games: another goroutine of
// the runtime may allocate during one, but a history that grows allocates
// in each.
func TestEnvWithoutStepLimitDoesNotAllocate(t *testing.T) {
	fewest := uint64(math.MaxUint64)
	for try := range 3 {
		e := env.New(env.MustRules(env.Options{Suits: 1, MaxSteps: -1}))
		e.Reset(5 + uint64(try))
		g := rng.New(1)
		legal := make([]env.Action, 0, env.NumActions)
		fewest = min(fewest, alloccount.Mallocs(func() {
			for step := 0; step < 16000; step++ {
				legal = env.AppendMasked(legal[:0], e.Mask())
				if len(legal) == 0 {
					t.Fatalf("the game ended after %d steps; the test wants a longer one", step)
				}
				if _, _, _, _, _, err := e.Step(legal[g.IntN(len(legal))]); err != nil {
					t.Fatal(err)
				}
			}
		}))
	}
	if fewest != 0 {
		t.Fatalf("16,000 steps without a step limit made %d allocations", fewest)
	}
}

// TestHotPathsDoNotAllocate pins zero allocations for Env.Step (check,
// apply, mask and observation update), State.Step, Mask and both encodings.
func TestHotPathsDoNotAllocate(t *testing.T) {
	for _, enc := range []env.Encoding{env.Compact, env.Float32} {
		r := env.MustRules(env.Options{Suits: 4, Encoding: enc})
		e := env.New(r)
		p := newReplay(recordPlayouts(r, 2), func(seed uint64) { e.Reset(seed) })
		allocs := testing.AllocsPerRun(3000, func() {
			if _, _, _, _, _, err := e.Step(p.next()); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("%v Env.Step: %v allocations per step", enc, allocs)
		}
	}
	r := env.MustRules(env.Options{Suits: 2})
	s := env.NewGame(r, 1)
	mask := make([]uint8, env.NumActions)
	u8 := make([]uint8, r.CompactLen())
	f32 := make([]float32, r.Float32Len())
	for name, f := range map[string]func(){
		"Mask":           func() { s.Mask(mask) },
		"ObserveCompact": func() { s.ObserveCompact(u8) },
		"ObserveFloat32": func() { s.ObserveFloat32(f32) },
		"Step+Undo": func() {
			u, err := s.Step(env.Deal)
			if err != nil {
				t.Fatal(err)
			}
			s.Undo(u)
		},
		"Legal": func() { s.Legal(env.Action(7)) },
		"Clone": func() { c := s; c.Step(env.Deal) },
	} {
		if n := testing.AllocsPerRun(1000, f); n != 0 {
			t.Errorf("%s: %v allocations", name, n)
		}
	}
}

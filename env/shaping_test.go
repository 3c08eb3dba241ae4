package env_test

import (
	"math"
	"testing"

	"github.com/spiderenv/spider/env"
	"github.com/spiderenv/spider/internal/rng"
)

// Over any episode the shaping terms add up to gamma^T*Phi(last) -
// Phi(first) (Phi of an ended game being 0), whatever the actions: so
// shaped and unshaped rewards rank policies alike. Checked on random games
// of the single Env and of a batch against the same games unshaped.
func TestShapingTelescopes(t *testing.T) {
	for _, gamma := range []float64{1, 0.9} {
		for _, rs := range []env.RuleSet{env.Classic, env.Cardems} {
			o := env.Options{RuleSet: rs, Suits: 2, MaxSteps: 300, Shaping: env.Progress, ShapingGamma: gamma}
			shaped, plain := env.New(env.MustRules(o)), env.New(env.MustRules(env.Options{RuleSet: rs, Suits: 2, MaxSteps: 300}))
			for seed := uint64(1); seed <= 6; seed++ {
				shaped.Reset(seed)
				plain.Reset(seed)
				g := rng.New(seed)
				first := progress(shaped.State())
				sum, discount := 0.0, 1.0
				var legal []env.Action
				for {
					legal = env.AppendMasked(legal[:0], plain.Mask())
					a := legal[g.IntN(len(legal))]
					_, rs, term, trunc, _, err := shaped.Step(a)
					if err != nil {
						t.Fatal(err)
					}
					_, rp, _, _, _, _ := plain.Step(a)
					sum += discount * (rs - rp)
					discount *= gamma
					if term || trunc {
						s := shaped.State()
						last := progress(s)
						if term {
							last = 0
						}
						// discount is now gamma^T; the last term carries gamma^T too.
						if want := discount*last - first; math.Abs(sum-want) > 1e-3*(1+math.Abs(want)) {
							t.Fatalf("gamma %v, %v seed %d: shaping terms add to %v, want %v", gamma, rs, seed, sum, want)
						}
						break
					}
				}
			}
		}
	}
}

// progress is the progress potential written out again from the
// documentation: 5 per face-down card turned since the deal (44 face down
// then) and 1 per card in suit on the one below it at a column's top.
func progress(s env.State) float64 {
	phi := 5.0 * float64(44-s.TotalFaceDown())
	for c := range env.NumColumns {
		if n := s.RunLength(c); n > 1 {
			phi += float64(n - 1)
		}
	}
	return phi
}

// A batch shapes its rewards exactly as the single Env does, and without
// shaping its rewards are the score's change.
func TestBatchShapesLikeEnv(t *testing.T) {
	r := env.MustRules(env.Options{Suits: 1, MaxSteps: 80, Shaping: env.Progress, ShapingGamma: 0.95})
	b, err := env.NewBatch(r, env.BatchOptions{N: 4, Autoreset: env.Disabled})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	b.Reset(5)
	envs := make([]*env.Env, b.N())
	for i := range envs {
		envs[i] = env.New(r)
		envs[i].Reset(env.EpisodeSeed(5, i, 0))
	}
	actions := make([]env.Action, b.N())
	nonzero := 0
	for range 60 {
		b.SampleLegal(actions)
		if err := b.Step(actions); err != nil {
			t.Fatal(err)
		}
		for i, e := range envs {
			_, want, _, _, _, err := e.Step(actions[i])
			if err != nil {
				t.Fatal(err)
			}
			if float64(b.Rewards[i]) != float64(float32(want)) {
				t.Fatalf("game %d: batch reward %v, env %v", i, b.Rewards[i], want)
			}
			if want != math.Trunc(want) {
				nonzero++
			}
		}
	}
	if nonzero == 0 {
		t.Fatal("no reward was shaped (every one was a whole score change)")
	}
	b.Reset(6)
	if allocs := testing.AllocsPerRun(20, func() {
		b.SampleLegal(actions)
		b.Step(actions)
	}); allocs != 0 {
		t.Fatalf("a shaped batch step allocates %v times", allocs)
	}
}

// An illegal action under NoopIllegal is a step from s to s and is shaped
// (gamma-1)*Phi(s); under LoseIllegal it ends the game, shaped -Phi(s).
func TestShapingOfIllegalActions(t *testing.T) {
	const gamma = 0.8
	r := env.MustRules(env.Options{Suits: 1, Shaping: env.Progress, ShapingGamma: gamma})
	for _, tc := range []struct {
		policy env.IllegalPolicy
		want   func(phi float64) float64
	}{
		{env.NoopIllegal, func(phi float64) float64 { return -2 + (gamma-1)*phi }},
		{env.LoseIllegal, func(phi float64) float64 { return -2 - phi }},
	} {
		b, err := env.NewBatch(r, env.BatchOptions{N: 1, Illegal: tc.policy, IllegalPenalty: 2})
		if err != nil {
			t.Fatal(err)
		}
		b.Reset(3)
		actions := make([]env.Action, 1)
		for range 5 { // a few legal moves first, so Phi is not the deal's
			b.SampleLegal(actions)
			b.Step(actions)
		}
		phi := progress(b.State(0))
		if phi == 0 {
			t.Fatal("Phi is 0 here: the test could not tell shaped from unshaped")
		}
		for a := range env.Action(env.NumActions) {
			if b.Masks[a] == 0 {
				actions[0] = a
				break
			}
		}
		if err := b.Step(actions); err != nil {
			t.Fatal(err)
		}
		if want := tc.want(phi); !b.Illegal[0] || math.Abs(float64(b.Rewards[0])-want) > 1e-4 {
			t.Errorf("%v: illegal %v, reward %v, want %v (Phi %v)", tc.policy, b.Illegal[0], b.Rewards[0], want, phi)
		}
		b.Close()
	}
}

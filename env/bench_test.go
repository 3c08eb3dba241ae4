package env_test

import (
	"testing"

	"github.com/spiderenv/spider/env"
	"github.com/spiderenv/spider/internal/rng"
)

// playout is a game recorded once so that benchmarks time the environment
// and not a policy: the seed and the random legal actions taken.
type playout struct {
	seed    uint64
	actions []env.Action
}

// recordPlayouts plays n random games under r and records them.
func recordPlayouts(r env.Rules, n int) []playout {
	g := rng.New(99)
	mask := make([]uint8, env.NumActions)
	var legal []env.Action
	out := make([]playout, n)
	for i := range out {
		out[i].seed = uint64(i)
		s := env.NewGame(r, uint64(i))
		for !s.Over() {
			s.Mask(mask)
			legal = legal[:0]
			for a, ok := range mask {
				if ok == 1 {
					legal = append(legal, env.Action(a))
				}
			}
			a := legal[g.IntN(len(legal))]
			if _, err := s.Step(a); err != nil {
				panic(err)
			}
			out[i].actions = append(out[i].actions, a)
		}
	}
	return out
}

func benchRules(enc env.Encoding) env.Rules {
	return env.MustRules(env.Options{RuleSet: env.Classic, Suits: 4, Encoding: enc})
}

// benchEnvStep times Env.Step, which checks the action, applies it, writes
// the mask and updates the observation: the whole per-step cost.
func benchEnvStep(b *testing.B, enc env.Encoding) {
	r := benchRules(enc)
	games := recordPlayouts(r, 8)
	e := env.New(r)
	gi, ai := 0, 0
	e.Reset(games[0].seed)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if ai == len(games[gi].actions) {
			gi = (gi + 1) % len(games)
			ai = 0
			e.Reset(games[gi].seed)
		}
		if _, _, _, _, _, err := e.Step(games[gi].actions[ai]); err != nil {
			b.Fatal(err)
		}
		ai++
	}
}

func BenchmarkEnvStepCompact(b *testing.B) { benchEnvStep(b, env.Compact) }
func BenchmarkEnvStepFloat32(b *testing.B) { benchEnvStep(b, env.Float32) }

// states collects positions along recorded games for the pieces' benchmarks.
func states(r env.Rules) []env.State {
	var out []env.State
	for _, p := range recordPlayouts(r, 4) {
		s := env.NewGame(r, p.seed)
		for i, a := range p.actions {
			if i%10 == 0 {
				out = append(out, s)
			}
			s.Step(a)
		}
	}
	return out
}

func BenchmarkStateStep(b *testing.B) {
	r := benchRules(env.Compact)
	games := recordPlayouts(r, 8)
	gi, ai := 0, 0
	s := env.NewGame(r, games[0].seed)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if ai == len(games[gi].actions) {
			gi = (gi + 1) % len(games)
			ai = 0
			s = env.NewGame(r, games[gi].seed)
		}
		if _, err := s.Step(games[gi].actions[ai]); err != nil {
			b.Fatal(err)
		}
		ai++
	}
}

func BenchmarkMask(b *testing.B) {
	ss := states(benchRules(env.Compact))
	mask := make([]uint8, env.NumActions)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		ss[i%len(ss)].Mask(mask)
	}
}

func BenchmarkObserveCompact(b *testing.B) {
	r := benchRules(env.Compact)
	ss := states(r)
	dst := make([]uint8, r.CompactLen())
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		ss[i%len(ss)].ObserveCompact(dst)
	}
}

func BenchmarkObserveFloat32(b *testing.B) {
	r := benchRules(env.Float32)
	ss := states(r)
	dst := make([]float32, r.Float32Len())
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		ss[i%len(ss)].ObserveFloat32(dst)
	}
}

// cloneSink keeps the compiler from eliding the copy.
var cloneSink env.State

func BenchmarkClone(b *testing.B) {
	ss := states(benchRules(env.Compact))
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		cloneSink = ss[i%len(ss)]
	}
}

func BenchmarkNewGame(b *testing.B) {
	r := benchRules(env.Compact)
	b.ReportAllocs()
	for i := range b.N {
		s := env.NewGame(r, uint64(i))
		_ = s
	}
}

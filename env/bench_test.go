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
			legal = env.AppendMasked(legal[:0], mask)
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

// replay walks recorded games action by action; at the end of a game it
// moves to the next and calls reset with that game's seed.
type replay struct {
	games  []playout
	gi, ai int
	reset  func(seed uint64)
}

func newReplay(games []playout, reset func(seed uint64)) *replay {
	reset(games[0].seed)
	return &replay{games: games, reset: reset}
}

func (p *replay) next() env.Action {
	if p.ai == len(p.games[p.gi].actions) {
		p.gi, p.ai = (p.gi+1)%len(p.games), 0
		p.reset(p.games[p.gi].seed)
	}
	p.ai++
	return p.games[p.gi].actions[p.ai-1]
}

// benchEnvStep times Env.Step, which checks the action, applies it, writes
// the mask and updates the observation: the whole per-step cost.
func benchEnvStep(b *testing.B, enc env.Encoding) {
	r := benchRules(enc)
	e := env.New(r)
	p := newReplay(recordPlayouts(r, 8), func(seed uint64) { e.Reset(seed) })
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, _, _, _, _, err := e.Step(p.next()); err != nil {
			b.Fatal(err)
		}
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
	var s env.State
	p := newReplay(recordPlayouts(r, 8), func(seed uint64) { s = env.NewGame(r, seed) })
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := s.Step(p.next()); err != nil {
			b.Fatal(err)
		}
	}
}

// benchStates times f over positions taken along recorded random games.
func benchStates(b *testing.B, enc env.Encoding, f func(s *env.State)) {
	ss := states(benchRules(enc))
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		f(&ss[i%len(ss)])
	}
}

func BenchmarkMask(b *testing.B) {
	mask := make([]uint8, env.NumActions)
	benchStates(b, env.Compact, func(s *env.State) { s.Mask(mask) })
}

func BenchmarkObserveCompact(b *testing.B) {
	dst := make([]uint8, benchRules(env.Compact).CompactLen())
	benchStates(b, env.Compact, func(s *env.State) { s.ObserveCompact(dst) })
}

func BenchmarkObserveFloat32(b *testing.B) {
	dst := make([]float32, benchRules(env.Float32).Float32Len())
	benchStates(b, env.Float32, func(s *env.State) { s.ObserveFloat32(dst) })
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

package envtest

import (
	"fmt"
	"testing"

	"github.com/spiderenv/spider/env"
)

func configs() []env.Rules { return Configurations(300, true) }

// TestConformanceRandomPolicy is the property test over thousands of
// seeded random playouts: 200 games for each rule set, suit count and
// encoding (2400 in all), every step checked by Check.
func TestConformanceRandomPolicy(t *testing.T) {
	games := 200
	if testing.Short() {
		games = 10
	}
	for _, r := range configs() {
		t.Run(fmt.Sprint(r), func(t *testing.T) {
			t.Parallel()
			st := Check(t, r, RandomPolicy(7), Config{Games: games, Seed: 1000, SweepEvery: 25})
			if st.Games != games || st.Steps == 0 {
				t.Fatalf("played %d games, %d steps", st.Games, st.Steps)
			}
			t.Logf("%+v", st)
		})
	}
}

// TestConformanceBatch runs the checker on the batch stepper in every
// autoreset mode, for every rule set, suit count and encoding, and with
// reward shaping.
func TestConformanceBatch(t *testing.T) {
	steps := 400
	if testing.Short() {
		steps = 60
	}
	for _, r := range append(configs(), shaped()...) {
		for _, mode := range []env.Autoreset{env.NextStep, env.SameStep, env.Disabled} {
			t.Run(fmt.Sprint(r, "/", mode), func(t *testing.T) {
				t.Parallel()
				short := env.MustRules(withMaxSteps(r, 90))
				CheckBatch(t, short, env.BatchOptions{N: 6, Workers: 2, Autoreset: mode}, 11, steps)
			})
		}
	}
}

// TestConformanceShaping runs the single-game checker with reward shaping,
// whose rewards are the score's change plus the shaping term.
func TestConformanceShaping(t *testing.T) {
	for _, r := range shaped() {
		st := Check(t, r, RandomPolicy(3), Config{Games: 5, Seed: 40})
		if st.Games != 5 || st.Steps == 0 {
			t.Fatalf("played %d games, %d steps", st.Games, st.Steps)
		}
	}
}

// shaped returns configurations with progress shaping, discounted and not.
func shaped() []env.Rules {
	var out []env.Rules
	for _, gamma := range []float64{0.5, 0.99, 1} {
		out = append(out, env.MustRules(env.Options{Suits: 1, MaxSteps: 300, Shaping: env.Progress, ShapingGamma: gamma}))
	}
	return out
}

func withMaxSteps(r env.Rules, n int) env.Options {
	o := r.Options()
	o.MaxSteps = n
	return o
}

package env_test

import (
	"testing"

	"github.com/spiderenv/spider/env"
)

// TestBatchOptionNames checks the autoreset and illegal-action names both
// ways: they travel in the server's make request and on the command line.
func TestBatchOptionNames(t *testing.T) {
	for name, want := range map[string]env.Autoreset{"next-step": env.NextStep, "same-step": env.SameStep, "DISABLED": env.Disabled} {
		got, err := env.ParseAutoreset(name)
		if err != nil || got != want {
			t.Errorf("ParseAutoreset(%q) = %v, %v; want %v", name, got, err, want)
		}
	}
	for name, want := range map[string]env.IllegalPolicy{"error": env.RefuseIllegal, "noop": env.NoopIllegal, "Lose": env.LoseIllegal} {
		got, err := env.ParseIllegalPolicy(name)
		if err != nil || got != want {
			t.Errorf("ParseIllegalPolicy(%q) = %v, %v; want %v", name, got, err, want)
		}
	}
	for _, a := range []env.Autoreset{env.NextStep, env.SameStep, env.Disabled} {
		if back, err := env.ParseAutoreset(a.String()); err != nil || back != a {
			t.Errorf("Autoreset %d: %q parses to %v, %v", a, a.String(), back, err)
		}
	}
	for _, p := range []env.IllegalPolicy{env.RefuseIllegal, env.NoopIllegal, env.LoseIllegal} {
		if back, err := env.ParseIllegalPolicy(p.String()); err != nil || back != p {
			t.Errorf("IllegalPolicy %d: %q parses to %v, %v", p, p.String(), back, err)
		}
	}
	if _, err := env.ParseAutoreset("sometimes"); err == nil || err.Error() != `env: unknown autoreset mode "sometimes" (want next-step or same-step or disabled)` {
		t.Errorf("ParseAutoreset(sometimes): %v", err)
	}
	if _, err := env.ParseIllegalPolicy("ignore"); err == nil || err.Error() != `env: unknown illegal-action policy "ignore" (want error or noop or lose)` {
		t.Errorf("ParseIllegalPolicy(ignore): %v", err)
	}
	if got := env.Autoreset(7).String(); got != "Autoreset(7)" {
		t.Errorf("Autoreset(7).String() = %q", got)
	}
	if got := env.IllegalPolicy(7).String(); got != "IllegalPolicy(7)" {
		t.Errorf("IllegalPolicy(7).String() = %q", got)
	}
}

package env_test

import (
	"strings"
	"testing"

	"github.com/spiderenv/spider/env"
)

// TestParseRuleSetAndEncoding reads the names in any case and refuses an
// unknown one in words that list the known names.
func TestParseRuleSetAndEncoding(t *testing.T) {
	for in, want := range map[string]env.RuleSet{"classic": env.Classic, "CARDEMS": env.Cardems, "Classic": env.Classic} {
		if got, err := env.ParseRuleSet(in); err != nil || got != want {
			t.Errorf("ParseRuleSet(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for in, want := range map[string]env.Encoding{"float32": env.Float32, "COMPACT": env.Compact} {
		if got, err := env.ParseEncoding(in); err != nil || got != want {
			t.Errorf("ParseEncoding(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := env.ParseRuleSet("freecell"); err == nil || err.Error() != `env: unknown rule set "freecell" (want classic or cardems)` {
		t.Errorf("ParseRuleSet(freecell): %v", err)
	}
	if _, err := env.ParseEncoding("png"); err == nil || err.Error() != `env: unknown observation encoding "png" (want compact or float32)` {
		t.Errorf("ParseEncoding(png): %v", err)
	}
}

// TestNewRulesChecksEveryBound tries each field just past its limits, where
// NewRules must refuse it and name the field, and just inside them, where
// it must accept it; then Rules must give back the Options they came from.
func TestNewRulesChecksEveryBound(t *testing.T) {
	for _, tc := range []struct {
		o    env.Options
		want string // "" when the options are valid
	}{
		{env.Options{Suits: 3}, "suits must be 1, 2 or 4, not 3"},
		{env.Options{Suits: -1}, "suits must be 1, 2 or 4, not -1"},
		{env.Options{Suits: 4}, ""},
		{env.Options{FaceUpSlots: 105}, "face_up_slots must be 1 to 104 (0: the default), not 105"},
		{env.Options{FaceUpSlots: -1}, "face_up_slots must be 1 to 104 (0: the default), not -1"},
		{env.Options{FaceUpSlots: 104}, ""},
		{env.Options{FaceUpSlots: 1}, ""},
		{env.Options{TimePerActionMs: -1}, "time_per_action_ms -1 is outside 0 to 1000000000"},
		{env.Options{TimePerActionMs: 1_000_000_001}, "time_per_action_ms 1000000001 is outside 0 to 1000000000"},
		{env.Options{TimePerActionMs: 1_000_000_000}, ""},
		{env.Options{RuleSet: env.Cardems, TimePerActionMs: 1}, "time_per_action_ms applies only to classic scoring; cardems has no time penalty"},
		{env.Options{MaxSteps: 1<<30 + 1}, "max_steps 1073741825 is over the limit 1073741824"},
		{env.Options{MaxSteps: 1 << 30}, ""},
		{env.Options{MaxSteps: -5}, ""},
		{env.Options{RuleSet: 9}, "unknown rule set 9"},
		{env.Options{Encoding: 7}, "unknown observation encoding 7"},
	} {
		r, err := env.NewRules(tc.o)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("NewRules(%+v) refused valid options: %v", tc.o, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("NewRules(%+v) = %v; want an error containing %q", tc.o, err, tc.want)
		case tc.want != "" && r != (env.Rules{}):
			t.Errorf("NewRules(%+v) refused the options but returned %v", tc.o, r)
		}
	}
	r := env.MustRules(env.Options{Suits: 2, Encoding: env.Float32, FaceUpSlots: 20})
	if o := r.Options(); o != (env.Options{Suits: 2, FaceUpSlots: 20, MaxSteps: 1000, Encoding: env.Float32, ShapingGamma: 1}) {
		t.Errorf("Options() = %+v", o)
	}
	if again := env.MustRules(r.Options()); again != r {
		t.Error("Rules do not round-trip through Options")
	}
	wantPanic(t, "suits must be 1, 2 or 4", func() { env.MustRules(env.Options{Suits: 3}) })
}

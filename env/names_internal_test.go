package env

import "testing"

// Every enumerated type has one distinct, non-empty name per value, and
// names round-trip through parse, text and setText.
func TestEveryValueHasAName(t *testing.T) {
	check := func(typ string, list []string, count int) {
		if len(list) != count {
			t.Errorf("%s: %d names for %d values", typ, len(list), count)
		}
		seen := map[string]bool{}
		for _, n := range list {
			if n == "" || seen[n] {
				t.Errorf("%s: name %q empty or repeated", typ, n)
			}
			seen[n] = true
		}
	}
	check("RuleSet", ruleSetNames.list, int(numRuleSets))
	check("Encoding", encodingNames.list, int(numEncodings))
	check("Shaping", shapingNames.list, int(numShapings))
	check("Autoreset", autoresetNames.list, int(numAutoresets))
	check("IllegalPolicy", illegalNames.list, int(numIllegalPolicies))
	for v := range numShapings {
		b, err := shapingNames.text(v)
		var back Shaping
		if err != nil || shapingNames.setText(&back, b) != nil || back != v || v.String() != string(b) {
			t.Errorf("Shaping %d: %q, %v, back %v", v, b, err, back)
		}
	}
	if _, err := shapingNames.text(numShapings); err == nil || err.Error() != "env: unknown reward shaping 2" {
		t.Errorf("text of a value without a name: %v", err)
	}
	if s := Shaping(9).String(); s != "Shaping(9)" {
		t.Errorf("String of a value without a name: %q", s)
	}
	var h Shaping = Progress
	if err := shapingNames.setText(&h, []byte("gentle")); err == nil || err.Error() != `env: unknown reward shaping "gentle" (want none or progress)` || h != Progress {
		t.Errorf("setText of an unknown name: %v, left %v", err, h)
	}
}

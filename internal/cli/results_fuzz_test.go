package cli

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/spiderenv/spider/internal/alloccount"
	"github.com/spiderenv/spider/internal/printable"
)

// FuzzParseEvalReport feeds arbitrary bytes to the eval report reader of
// spider results, with and without its per-game rows: it must never
// panic, never allocate much more than the bytes are, and what it accepts
// must be what the tables can print: printable names, each game's policy
// among the policies, at most maxReportPolicies of them.
func FuzzParseEvalReport(f *testing.F) {
	code, out, errs := runMain("eval", "--json", "--per-game", "--seeds", "1-2", "--policies", "random,first")
	if code != 0 {
		f.Fatalf("eval: exit %d: %s", code, errs)
	}
	f.Add([]byte(out))
	f.Add([]byte(`{"schema":"spider-eval/1","policies":[{"policy":"a","spec":"a"}],"games":[{"policy":"a","actions_sha256":"0123456789abcdef"}]}`))
	f.Add([]byte(`{"schema":"spider-eval/1","policies":[{}],"policies":[{}],"games":null,"comparisons":[1,2],"failures":{}}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, games := range []bool{false, true} {
			var rep evalReport
			var err error
			got := alloccount.BytesFast(func() { rep, err = parseEvalReport("fuzz.json", b, games) })
			if limit := 32*uint64(len(b)) + 1<<20; got > limit {
				t.Fatalf("parsing %d bytes (games %v) allocated %d", len(b), games, got)
			}
			if err != nil {
				if !strings.HasPrefix(err.Error(), "fuzz.json: ") {
					t.Fatalf("an error that does not name the file: %v", err)
				}
				continue
			}
			if len(rep.Policies) == 0 || len(rep.Policies) > maxReportPolicies || !printable.Is(rep.Program) {
				t.Fatalf("accepted %d policies, program %q", len(rep.Policies), rep.Program)
			}
			listed := map[string]bool{}
			for _, p := range rep.Policies {
				if p.Policy == "" || !printable.Is(p.Policy) || !printable.Is(p.Spec) {
					t.Fatalf("accepted the policy %q (%q)", p.Policy, p.Spec)
				}
				listed[p.Policy] = true
			}
			if !games && rep.Games != nil {
				t.Fatalf("read %d games it was told to skip", len(rep.Games))
			}
			for _, g := range rep.Games {
				if !listed[g.Policy] || len(g.ActionsHash) != 16 {
					t.Fatalf("accepted the game %+v", g)
				}
			}
		}
	})
}

// FuzzEachKey checks eachKey, which walks a report's keys before it is
// decoded, against encoding/json's own reading: on any JSON object it
// must give the same keys, unquoted, with the same value bytes.
func FuzzEachKey(f *testing.F) {
	f.Add([]byte(`{"a":1,"b\u0041":[1,{"c":"}"}],"d":"x\"y","e":null,"f":{"g":true} , "h" : -1.5e3 }`))
	f.Add([]byte(`{}`))
	f.Add([]byte(` {"a":{"b":[[]]},"a":"\\"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var want []string
		d := json.NewDecoder(bytes.NewReader(b))
		if tok, err := d.Token(); !json.Valid(b) || err != nil || tok != json.Delim('{') {
			return
		}
		for d.More() {
			k, err := d.Token()
			var v json.RawMessage
			if err != nil || d.Decode(&v) != nil {
				t.Fatalf("the decoder fails on valid JSON: %v", err)
			}
			want = append(want, k.(string)+"="+string(v))
		}
		var got []string
		if err := eachKey(b, func(k, v []byte) error {
			got = append(got, string(k)+"="+string(v))
			return nil
		}); err != nil || !slices.Equal(got, want) {
			t.Fatalf("eachKey gave %q (%v), want %q", got, err, want)
		}
	})
}

package suites

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"github.com/spiderenv/spider/env"
)

// golden pins every suite: a suite's deals, rules, suits, step limit and
// version must never change silently. The hash covers the full seed list
// (one decimal seed a line: the same as `seq 100001 101000 | sha256sum`),
// so it also guards Seeds itself. Changing a
// row here means publishing a new version of that suite.
var golden = []struct {
	name, version, purpose string
	rules                  string
	suits, maxSteps        int
	first, last            uint64
	sha256                 string
}{
	{"classic-1suit-test", "1", "test", "classic", 1, 1000, 100001, 101000, "886bf88fece3c7562403111f5b9b90589a6d7becc4244596169b915acfc9a4fa"},
	{"classic-2suit-test", "1", "test", "classic", 2, 1000, 100001, 100200, "324d20593cab178b4d9cf27f4987381fd94634f952207d4733a2265124311cb3"},
	{"classic-4suit-test", "1", "test", "classic", 4, 1000, 100001, 100200, "324d20593cab178b4d9cf27f4987381fd94634f952207d4733a2265124311cb3"},
	{"cardems-1suit-test", "1", "test", "cardems", 1, 1000, 100001, 100200, "324d20593cab178b4d9cf27f4987381fd94634f952207d4733a2265124311cb3"},
	{"classic-1suit-dev", "1", "dev", "classic", 1, 1000, 1, 200, "b7703f7bd998bf1bd1b143ad055c4bbc828d0855b5be7d662747a48ef14c437a"},
	{"classic-2suit-dev", "1", "dev", "classic", 2, 1000, 1, 200, "b7703f7bd998bf1bd1b143ad055c4bbc828d0855b5be7d662747a48ef14c437a"},
	{"classic-4suit-dev", "1", "dev", "classic", 4, 1000, 1, 200, "b7703f7bd998bf1bd1b143ad055c4bbc828d0855b5be7d662747a48ef14c437a"},
	{"cardems-1suit-dev", "1", "dev", "cardems", 1, 1000, 1, 200, "b7703f7bd998bf1bd1b143ad055c4bbc828d0855b5be7d662747a48ef14c437a"},
}

func seedHash(seeds []uint64) string {
	var b strings.Builder
	for _, s := range seeds {
		fmt.Fprintf(&b, "%d\n", s)
	}
	h := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(h[:])
}

func TestSuitesMatchGolden(t *testing.T) {
	got := All()
	if len(got) != len(golden) {
		t.Fatalf("%d suites, golden has %d: a new suite needs a golden row", len(got), len(golden))
	}
	for i, g := range golden {
		s := got[i]
		seeds := s.Seeds()
		if s.Name != g.name || s.Version != g.version || s.Purpose != g.purpose || s.RuleSet.String() != g.rules ||
			s.Suits != g.suits || s.MaxSteps != g.maxSteps || len(seeds) == 0 || seeds[0] != g.first || seeds[len(seeds)-1] != g.last {
			t.Errorf("suite %d is %+v (seeds %d-%d), golden %+v", i, s, seeds[0], seeds[len(seeds)-1], g)
		}
		if h := seedHash(seeds); h != g.sha256 {
			t.Errorf("%s: seed list hash %s, golden %s", s.Name, h, g.sha256)
		}
	}
}

// TestTestSuitesAvoidTuningSeeds keeps the rule the results rest on: test
// suites lie past 100000, dev suites inside the tuning range 1-50000.
func TestTestSuitesAvoidTuningSeeds(t *testing.T) {
	for _, s := range All() {
		seeds := s.Seeds()
		lo, hi := seeds[0], seeds[len(seeds)-1]
		switch s.Purpose {
		case "test":
			if lo <= 100000 {
				t.Errorf("%s: test seeds from %d, want > 100000", s.Name, lo)
			}
		case "dev":
			if lo < 1 || hi > 50000 {
				t.Errorf("%s: dev seeds %d-%d, want within 1-50000", s.Name, lo, hi)
			}
		default:
			t.Errorf("%s: purpose %q", s.Name, s.Purpose)
		}
		if !strings.HasSuffix(s.Name, "-"+s.Purpose) {
			t.Errorf("%s: name does not end in -%s", s.Name, s.Purpose)
		}
	}
}

func TestOptionsAreValidAndFixed(t *testing.T) {
	for _, s := range All() {
		r, err := env.NewRules(s.Options())
		if err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
		o := r.Options()
		if o.RuleSet != s.RuleSet || o.Suits != s.Suits || o.MaxSteps != s.MaxSteps || o.TimePerActionMs != 0 {
			t.Errorf("%s: options %+v", s.Name, o)
		}
	}
}

func TestLookup(t *testing.T) {
	s, err := Lookup("Classic-4suit-TEST")
	if err != nil || s.Suits != 4 || s.Purpose != "test" {
		t.Errorf("Lookup: %+v, %v", s, err)
	}
	if _, err := Lookup("classic-3suit-test"); err == nil || !strings.Contains(err.Error(), "classic-1suit-test") {
		t.Errorf("unknown suite: %v, want an error listing the known ones", err)
	}
}

// TestLookupTrimsTheName: a name as typed on a command line or read from
// a file, with spaces or a newline around it, still finds its suite.
func TestLookupTrimsTheName(t *testing.T) {
	for _, name := range []string{" classic-2suit-dev", "classic-2suit-dev\n", "\tCLASSIC-2SUIT-DEV  "} {
		s, err := Lookup(name)
		if err != nil || s.Name != "classic-2suit-dev" {
			t.Errorf("Lookup(%q) = %q, %v; want classic-2suit-dev", name, s.Name, err)
		}
	}
}

// TestAllReturnsACopy: a caller that edits the slice All returns (sorts
// it, overwrites a seed range) must not change the published suites.
func TestAllReturnsACopy(t *testing.T) {
	got := All()
	got[0].First, got[0].Name = 7, "edited"
	if again := All(); again[0].First == 7 || again[0].Name == "edited" {
		t.Fatalf("editing All's result changed the suites: %+v", again[0])
	}
	if s, err := Lookup(golden[0].name); err != nil || s.First != golden[0].first {
		t.Fatalf("editing All's result changed Lookup: %+v, %v", s, err)
	}
}

// TestOptionsUseTheSuitesStepLimit: Options carries the suite's own step
// limit, not env's default. Every published suite uses 1000, the
// default, so only a suite with another limit can tell the two apart.
func TestOptionsUseTheSuitesStepLimit(t *testing.T) {
	s := Suite{Name: "cardems-2suit-x", RuleSet: env.Cardems, Suits: 2, MaxSteps: 300, First: 1, Count: 3}
	o := s.Options()
	if o.MaxSteps != 300 || o.RuleSet != env.Cardems || o.Suits != 2 {
		t.Fatalf("Options = %+v, want cardems, 2 suits, max_steps 300", o)
	}
	if def := env.DefaultOptions(); o.FaceUpSlots != def.FaceUpSlots || o.TimePerActionMs != 0 || o.Encoding != def.Encoding {
		t.Fatalf("Options = %+v: every other option should be the default %+v", o, def)
	}
}

// TestNamesAreSortedAndComplete: Names lists every suite once, sorted
// (the order --list-suites and Lookup's error show), whatever the order
// of the table.
func TestNamesAreSortedAndComplete(t *testing.T) {
	names := Names()
	if len(names) != len(golden) {
		t.Fatalf("Names has %d names, %d suites", len(names), len(golden))
	}
	for i, n := range names {
		if i > 0 && names[i-1] >= n {
			t.Fatalf("Names is not sorted: %q before %q", names[i-1], n)
		}
		if _, err := Lookup(n); err != nil {
			t.Fatalf("Names lists %q, which Lookup does not find: %v", n, err)
		}
	}
}

package env_test

import (
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spiderenv/spider/env"
	"github.com/spiderenv/spider/internal/rng"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// golden compares got with testdata/name, or rewrites the file with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
		for i := range min(len(gl), len(wl)) {
			if gl[i] != wl[i] {
				t.Fatalf("%s differs at line %d:\n got: %s\nwant: %s", path, i+1, gl[i], wl[i])
			}
		}
		t.Fatalf("%s differs in length: %d lines, want %d", path, len(gl), len(wl))
	}
}

// TestGoldenDeals pins the deal of several seeds for every suit count: a
// public contract, since published results quote seeds.
func TestGoldenDeals(t *testing.T) {
	var b strings.Builder
	for _, suits := range []int{1, 2, 4} {
		r := env.MustRules(env.Options{Suits: suits})
		for _, seed := range []uint64{0, 1, 2, 42, 20261129, 1<<64 - 1} {
			s := env.NewGame(r, seed)
			if err := s.Validate(); err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			text, _ := s.MarshalText()
			fmt.Fprintf(&b, "# %d suits, seed %d\n%s\n", suits, seed, text)
		}
	}
	golden(t, "deals.golden", b.String())
}

// TestGoldenPlaythrough records short games move by move, as OpenSpiel's
// playthrough files do: the header gives the number of actions and the
// observation length, and every position, the first included, is followed
// by its compact observation in hex and its legal action ids. The compact
// code and the action ids are public contracts (trainers and the Python
// client read them), so any change to either shows here line by line.
func TestGoldenPlaythrough(t *testing.T) {
	for _, tc := range []struct {
		rs    env.RuleSet
		suits int
		seed  uint64
	}{{env.Classic, 2, 7}, {env.Cardems, 1, 8}, {env.Classic, 4, 9}} {
		r := env.MustRules(env.Options{RuleSet: tc.rs, Suits: tc.suits})
		e := env.New(r)
		obs, _ := e.Reset(tc.seed)
		g := rng.New(tc.seed)
		var b strings.Builder
		fmt.Fprintf(&b, "%v, seed %d\n", r, tc.seed)
		fmt.Fprintf(&b, "actions %d  observation %d (%v, two hex digits per value)\n", r.NumActions(), r.ObsLen(), r.Encoding())
		b.WriteString(e.Render())
		writeObsAndLegal(&b, obs, e.Mask())
		for range 60 {
			s := e.State()
			legal := s.AppendLegal(nil)
			if masked := env.AppendMasked(nil, e.Mask()); !slices.Equal(legal, masked) {
				t.Fatalf("the Env's mask allows %v, the state %v", masked, legal)
			}
			if len(legal) == 0 {
				break
			}
			a := legal[g.IntN(len(legal))]
			obs, reward, term, trunc, info, err := e.Step(a)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "\n> %v  reward %v  legal %d  facedown %d  terminated %v  truncated %v\n%s",
				a, reward, info.Legal, info.FaceDown, term, trunc, e.Render())
			writeObsAndLegal(&b, obs, e.Mask())
		}
		golden(t, fmt.Sprintf("playthrough-%v-%d.txt", tc.rs, tc.suits), b.String())
	}
}

// writeObsAndLegal writes a playthrough's two lines after a position: its
// compact observation in hex ("obs ...") and its legal action ids in id
// order ("legal ids ...", "none" when the game is over).
func writeObsAndLegal(b *strings.Builder, obs env.Obs, mask []uint8) {
	fmt.Fprintf(b, "obs %s\nlegal ids", hex.EncodeToString(obs.Compact))
	legal := env.AppendMasked(nil, mask)
	for _, a := range legal {
		fmt.Fprintf(b, " %d", a)
	}
	if len(legal) == 0 {
		b.WriteString(" none")
	}
	b.WriteByte('\n')
}

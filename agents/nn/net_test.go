package nn

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/spiderenv/spider/env"
	"github.com/spiderenv/spider/internal/atomicfile"
	"github.com/spiderenv/spider/internal/msgpackcheck"
)

// TestForwardMatchesNaive compares the BLAS forward pass with a plain
// triple loop, for several rows at once.
func TestForwardMatchesNaive(t *testing.T) {
	spec := Spec{ObsLen: 5, NumActions: 4, Hidden: []int{3, 2}}
	n, err := New(spec, 9)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n.B {
		for j := range n.B[i] {
			n.B[i][j] = 0.1 * float32(j+i)
		}
	}
	const rows = 3
	x := []float32{1, 0, -1, 0.5, 2, 0, 0, 0, 0, 0, -3, 1, 1, 1, 0.25}
	logits, values := make([]float32, rows*4), make([]float32, rows)
	n.Forward(logits, values, x, rows, n.NewScratch(rows))
	dims := spec.Dims()
	for r := range rows {
		in := make([]float64, spec.ObsLen)
		for i := range in {
			in[i] = float64(x[r*spec.ObsLen+i])
		}
		apply := func(l int, in []float64, act bool) []float64 {
			out := make([]float64, dims[l][1])
			for o := range out {
				s := float64(n.B[l][o])
				for i := range in {
					s += in[i] * float64(n.W[l][i*dims[l][1]+o])
				}
				if act {
					s = math.Tanh(s)
				}
				out[o] = s
			}
			return out
		}
		h := apply(1, apply(0, in, true), true)
		pol, val := apply(2, h, false), apply(3, h, false)
		for a := range pol {
			if math.Abs(pol[a]-float64(logits[r*4+a])) > 1e-5 {
				t.Fatalf("row %d logit %d: %v, naive %v", r, a, logits[r*4+a], pol[a])
			}
		}
		if math.Abs(val[0]-float64(values[r])) > 1e-5 {
			t.Fatalf("row %d value: %v, naive %v", r, values[r], val[0])
		}
	}
	if a, ok := Best([]float32{5, 1, 9, 2}, []uint8{1, 1, 0, 1}); !ok || a != 0 {
		t.Fatalf("Best chose %v, %v; want 0 (2 is illegal)", a, ok)
	}
	if _, ok := Best([]float32{1}, []uint8{0}); ok {
		t.Fatal("Best found an action with none legal")
	}
}

// TestLoadRefusesInconsistentWeights writes checkpoints whose weights do
// not fit their specification.
func TestLoadRefusesInconsistentWeights(t *testing.T) {
	dir := t.TempDir()
	spec := SpecFor(env.MustRules(env.Options{FaceUpSlots: 2, MaxSteps: 100}), []int{4})
	n, err := New(spec, 1)
	if err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(dir, "good")
	if err := Save(good, n, nil); err != nil {
		t.Fatal(err)
	}
	back, _, err := Load(good)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, n) {
		t.Fatalf("loaded %+v, saved %+v", back.Spec, n.Spec)
	}
	bad := refuser(t, dir, n)
	bad("short-layer", func(c *checkpoint) { c.W[0] = c.W[0][:3] }, "layer 0 has 3 weights")
	bad("format", func(c *checkpoint) { c.Format = 99 }, fmt.Sprintf("checkpoint format 99, this program reads format %d", Format))
	bad("kind", func(c *checkpoint) { c.Kind = "other" }, "not a spider checkpoint")
	bad("obs", func(c *checkpoint) { c.Spec.ObsLen = 7 }, "observation of 286 values, the network's 7")
	bad("nan", func(c *checkpoint) { c.W[1] = append(Floats(nil), c.W[1]...); c.W[1][0] = float32(math.NaN()) }, "not finite")
	bad("inf-bias", func(c *checkpoint) { c.B[0] = append(Floats(nil), c.B[0]...); c.B[0][1] = float32(math.Inf(1)) }, "not finite")
	bad("zero-width", func(c *checkpoint) { c.Spec.Hidden = []int{0} }, "hidden width 0")
	bad("compact", func(c *checkpoint) { c.Spec.Game.Encoding = env.Compact }, "observation encoding compact, a network reads float32")
	bad("suits", func(c *checkpoint) { c.Spec.Game.Suits = 3 }, "suits must be 1, 2 or 4, not 3")
	bad("layers", func(c *checkpoint) { c.W, c.B = c.W[:2], c.B[:2] }, "2 weight layers, the specification has 3")
}

// TestLoadRefusesFormat1 writes a checkpoint in format 1's layout, whose
// specification had its own rule_set, suits, slots, max_steps and
// encoding keys: Load must refuse it by its version number.
func TestLoadRefusesFormat1(t *testing.T) {
	type specV1 struct {
		RuleSet    string `msgpack:"rule_set"`
		Suits      int    `msgpack:"suits"`
		Slots      int    `msgpack:"slots"`
		MaxSteps   int    `msgpack:"max_steps"`
		Encoding   string `msgpack:"encoding"`
		ObsLen     int    `msgpack:"obs_len"`
		NumActions int    `msgpack:"num_actions"`
		Hidden     []int  `msgpack:"hidden"`
	}
	type checkpointV1 struct {
		Kind   string   `msgpack:"kind"`
		Format int      `msgpack:"format"`
		Spec   specV1   `msgpack:"spec"`
		W      []Floats `msgpack:"w"`
		B      []Floats `msgpack:"b"`
	}
	n, err := New(SpecFor(env.MustRules(env.Options{FaceUpSlots: 2}), []int{4}), 1)
	if err != nil {
		t.Fatal(err)
	}
	old := checkpointV1{Kind: "spider-policy", Format: 1, Spec: specV1{RuleSet: "classic", Suits: 1, Slots: 2, MaxSteps: 1000,
		Encoding: "float32", ObsLen: n.Spec.ObsLen, NumActions: n.Spec.NumActions, Hidden: []int{4}}}
	for i := range n.W {
		old.W = append(old.W, n.W[i])
		old.B = append(old.B, n.B[i])
	}
	b, err := msgpack.Marshal(&old)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "v1.spider")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("%s: checkpoint format 1, this program reads format %d", p, Format)
	if _, _, err := Load(p); err == nil || err.Error() != want {
		t.Fatalf("a format-1 checkpoint: %v; want %q", err, want)
	}
}

// TestLoadRefusesHugeDeclaredLengths writes files of a few bytes whose
// msgpack headers claim billions of items or bytes: Load must refuse them
// before msgpack allocates what they claim.
func TestLoadRefusesHugeDeclaredLengths(t *testing.T) {
	dir := t.TempDir()
	prefix, _ := msgpack.Marshal(map[string]any{"kind": kind, "format": Format})
	prefix[0]++ // one more key than the two encoded
	for name, tail := range map[string][]byte{
		"array32": append([]byte{0xa1, 'w', 0xdd}, 0xff, 0xff, 0xff, 0xff, 0x90),
		"bin32":   append([]byte{0xa1, 'w', 0x91, 0xc6}, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0),
		"map32":   append([]byte{0xa4, 's', 'p', 'e', 'c', 0xdf}, 0x7f, 0xff, 0xff, 0xff, 0xa0),
	} {
		p := filepath.Join(dir, name)
		os.WriteFile(p, append(prefix[:len(prefix):len(prefix)], tail...), 0o644)
		_, _, err := Load(p)
		if err == nil || !strings.Contains(err.Error(), p+": not a spider checkpoint: the value at byte") || !strings.Contains(err.Error(), "declares more than") {
			t.Errorf("%s: %v; want a refusal of the declared length", name, err)
		}
	}
}

func TestSpecFollowsTheGame(t *testing.T) {
	r := env.MustRules(env.Options{RuleSet: env.Cardems, Suits: 2, FaceUpSlots: 5, MaxSteps: 300})
	spec := SpecFor(r, []int{3})
	want := env.MustRules(env.Options{RuleSet: env.Cardems, Suits: 2, FaceUpSlots: 5, MaxSteps: 300, Encoding: env.Float32}).Options()
	if spec.Game != want || spec.ObsLen != env.MustRules(want).Float32Len() || spec.NumActions != env.NumActions {
		t.Fatalf("SpecFor gave %+v; want the game %+v (float32, whatever r's encoding)", spec, want)
	}
	if err := spec.Check(env.MustRules(env.Options{RuleSet: env.Cardems, Suits: 2, MaxSteps: -1})); err != nil {
		t.Fatalf("a game with other slots and step limit: %v", err)
	}
	err := spec.Check(env.MustRules(env.Options{Suits: 4}))
	if want := "the game does not match the network: rule set classic, the network's is cardems; 4 suits, the network's 2"; err == nil || err.Error() != want {
		t.Fatalf("a classic 4-suit game: %v; want %q", err, want)
	}
	spec.Game.Encoding = env.Compact
	if _, err := spec.Rules(); err == nil || err.Error() != "nn: observation encoding compact, a network reads float32" {
		t.Fatalf("a compact specification: %v", err)
	}
}

// refuser returns a check that n's checkpoint, changed by mod, is refused
// by Load with an error naming the file and saying want.
func refuser(t *testing.T, dir string, n *Net) func(name string, mod func(c *checkpoint), want string) {
	return func(name string, mod func(c *checkpoint), want string) {
		t.Helper()
		c := checkpoint{Kind: kind, Format: Format, Spec: n.Spec}
		for i := range n.W {
			c.W = append(c.W, n.W[i])
			c.B = append(c.B, n.B[i])
		}
		mod(&c)
		b, _ := msgpack.Marshal(&c)
		p := filepath.Join(dir, name)
		atomicfile.Write(p, msgpackcheck.Seal(b))
		if _, _, err := Load(p); err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want an error naming the file and saying %q", name, err, want)
		}
	}
}

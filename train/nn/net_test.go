package nn

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/spiderenv/spider/internal/atomicfile"
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
	spec := Spec{RuleSet: "classic", Suits: 1, Slots: 2, MaxSteps: 100, Encoding: "float32", ObsLen: 26 + 10*2*13, NumActions: 1081, Hidden: []int{4}}
	n, err := New(spec, 1)
	if err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(dir, "good")
	if err := Save(good, n, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Load(good); err != nil {
		t.Fatal(err)
	}
	bad := func(name string, mod func(c *checkpoint), want string) {
		c := checkpoint{Kind: kind, Format: Format, Spec: spec}
		for i := range n.W {
			c.W = append(c.W, n.W[i])
			c.B = append(c.B, n.B[i])
		}
		mod(&c)
		b, _ := msgpack.Marshal(&c)
		p := filepath.Join(dir, name)
		atomicfile.Write(p, b)
		if _, _, err := Load(p); err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want an error naming the file and saying %q", name, err, want)
		}
	}
	bad("short-layer", func(c *checkpoint) { c.W[0] = c.W[0][:3] }, "layer 0 has 3 weights")
	bad("format", func(c *checkpoint) { c.Format = 99 }, "format 99")
	bad("kind", func(c *checkpoint) { c.Kind = "other" }, "not a spider checkpoint")
	bad("obs", func(c *checkpoint) { c.Spec.ObsLen = 7 }, "observation of 286 values, the network's 7")
	bad("nan", func(c *checkpoint) { c.W[1] = append(Floats(nil), c.W[1]...); c.W[1][0] = float32(math.NaN()) }, "not finite")
	bad("inf-bias", func(c *checkpoint) { c.B[0] = append(Floats(nil), c.B[0]...); c.B[0][1] = float32(math.Inf(1)) }, "not finite")
	bad("zero-width", func(c *checkpoint) { c.Spec.Hidden = []int{0} }, "hidden width 0")
}

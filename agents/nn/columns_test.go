package nn

import (
	"fmt"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/spiderenv/spider/env"
	"github.com/spiderenv/spider/internal/alloccount"
)

// TestColumnsNetworkRoundTrip saves and loads a columns network: the
// architecture and its widths travel with the weights, and a loaded copy
// computes the same logits; the forward pass allocates nothing.
func TestColumnsNetworkRoundTrip(t *testing.T) {
	r := env.MustRules(env.Options{FaceUpSlots: 3, Suits: 2, MaxSteps: 100})
	spec := ColumnSpecFor(r, 5, 6, 3)
	n, err := New(spec, 7)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(n.W); got != 8 {
		t.Fatalf("%d layers, want 8", got)
	}
	p := filepath.Join(t.TempDir(), "c.spider")
	if err := Save(p, n, nil); err != nil {
		t.Fatal(err)
	}
	back, _, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, n) {
		t.Fatalf("loaded %+v, saved %+v", back.Spec, n.Spec)
	}
	s := env.NewGame(r, 3)
	obs := s.ObserveFloat32(make([]float32, r.Float32Len()))
	la, lb := make([]float32, env.NumActions), make([]float32, env.NumActions)
	var va, vb [1]float32
	n.Forward(la, va[:], obs, 1, n.NewScratch(1))
	back.Forward(lb, vb[:], obs, 1, back.NewScratch(2))
	if !reflect.DeepEqual(la, lb) || va != vb {
		t.Fatal("the loaded network computes other logits")
	}
	sc := n.NewScratch(1)
	if allocs := testing.AllocsPerRun(20, func() { n.Forward(la, va[:], obs, 1, sc) }); allocs != 0 {
		t.Fatalf("Forward allocates %v times a call", allocs)
	}
	distinct := map[float32]bool{}
	for _, v := range la {
		distinct[v] = true
	}
	if len(distinct) < env.NumActions/2 {
		t.Fatalf("only %d distinct logits of %d", len(distinct), env.NumActions)
	}
}

// TestLoadRefusesInconsistentColumns loads checkpoints whose architecture
// fields do not fit the weights or each other.
func TestLoadRefusesInconsistentColumns(t *testing.T) {
	dir := t.TempDir()
	spec := ColumnSpecFor(env.MustRules(env.Options{FaceUpSlots: 2, MaxSteps: 100}), 4, 5, 2)
	n, err := New(spec, 1)
	if err != nil {
		t.Fatal(err)
	}
	bad := refuser(t, dir, n)
	bad("arch", func(c *checkpoint) { c.Spec.Arch = "transformer" }, `unknown architecture "transformer"`)
	bad("mlp", func(c *checkpoint) { c.Spec.Arch = MLP }, "column and pair widths belong to a columns network")
	bad("two-hidden", func(c *checkpoint) { c.Spec.Hidden = []int{5, 5} }, "one mixing layer")
	bad("column", func(c *checkpoint) { c.Spec.Column = 0 }, "column width 0")
	// A mixing layer of width 0 with weights sized to match: every size
	// agrees, and only the width's own bound stops it.
	bad("mixing", func(c *checkpoint) {
		c.Spec.Hidden = []int{0}
		for i, d := range c.Spec.Dims() {
			c.W[i], c.B[i] = make(Floats, d[0]*d[1]), make(Floats, d[1])
		}
	}, "mixing width 0")
	bad("pair", func(c *checkpoint) { c.Spec.Pair = 1 << 20 }, fmt.Sprintf("pair width %d", 1<<20))
	bad("pair-layer", func(c *checkpoint) { c.Spec.Pair = 3 }, "layer 4 has")
	bad("layers", func(c *checkpoint) { c.W, c.B = c.W[:7], c.B[:7] }, "7 weight and 7 bias layers, the specification has 8")
}

// TestScratchBytes: ScratchBytes is what NewScratch allocates, for a
// columns network (whose forward pass can be several times its weights:
// one with a column of 1 and pairs of 1024 is a 111 KB file and a 637 KB
// forward pass) and a multilayer one, so that eval can count it per
// worker.
func TestScratchBytes(t *testing.T) {
	r := env.MustRules(env.Options{Suits: 2, FaceUpSlots: 4})
	for _, spec := range []Spec{ColumnSpecFor(r, 1, 1, 1024), ColumnSpecFor(r, 64, 32, 16), SpecFor(r, []int{64, 32})} {
		n, err := New(spec, 1)
		if err != nil {
			t.Fatal(err)
		}
		for _, rows := range []int{1, 64} {
			want := spec.ScratchBytes(rows)
			got := int64(alloccount.Bytes(func() { n.NewScratch(rows) }))
			if got < want || got > want+want/8+1024 {
				t.Errorf("%v, %d rows: NewScratch allocated %d bytes, ScratchBytes says %d", spec.Arch, rows, got, want)
			}
		}
	}
}

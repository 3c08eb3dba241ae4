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
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"

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

// TestForwardAllocatesNothingForAGame runs the shipped networks' shapes,
// an MLP [256 256] and a columns network (column 128, mixing 256, pair
// 32), whose policy heads
// are wide enough for gonum's parallel multiply (which allocates), at the
// row counts agents use, and compares every layer's sliced multiply with
// one call over the whole product.
func TestForwardAllocatesNothingForAGame(t *testing.T) {
	r := env.MustRules(env.Options{Suits: 1})
	mlp, err := New(SpecFor(r, []int{256, 256}), 1)
	if err != nil {
		t.Fatal(err)
	}
	cols, err := New(ColumnSpecFor(r, 128, 256, 32), 1)
	if err != nil {
		t.Fatal(err)
	}
	s := env.NewGame(r, 5)
	obs := s.ObserveFloat32(make([]float32, r.Float32Len()))
	for _, tc := range []struct {
		name string
		net  *Net
		rows int
	}{{"mlp", mlp, 1}, {"mlp", mlp, 64}, {"columns", cols, 1}, {"columns", cols, 6}} {
		x := make([]float32, 0, tc.rows*len(obs))
		for range tc.rows {
			x = append(x, obs...)
		}
		logits, values := make([]float32, tc.rows*env.NumActions), make([]float32, tc.rows)
		sc := tc.net.NewScratch(tc.rows)
		if allocs := testing.AllocsPerRun(10, func() { tc.net.Forward(logits, values, x, tc.rows, sc) }); allocs != 0 {
			t.Errorf("%s, %d rows: Forward allocates %v times a call", tc.name, tc.rows, allocs)
		}
	}

	for _, rows := range []int{1, 7, 64, 65} {
		d := [2]int{256, env.NumActions}
		in, w, b := make([]float32, rows*d[0]), make([]float32, d[0]*d[1]), make([]float32, d[1])
		for i := range in {
			in[i] = float32(i%13) / 7
		}
		for i := range w {
			w[i] = float32(i%29-14) / 31
		}
		for i := range b {
			b[i] = float32(i % 5)
		}
		got, want := make([]float32, rows*d[1]), make([]float32, rows*d[1])
		layer(got, in, w, b, rows, d)
		for r := range rows {
			copy(want[r*d[1]:], b)
		}
		blas32.Gemm(blas.NoTrans, blas.NoTrans, 1, blas32.General{Rows: rows, Cols: d[0], Stride: d[0], Data: in},
			blas32.General{Rows: d[0], Cols: d[1], Stride: d[1], Data: w}, 1, blas32.General{Rows: rows, Cols: d[1], Stride: d[1], Data: want})
		for i := range got {
			// gonum sums in the same order either way; OpenBLAS may block
			// a slice otherwise.
			if got[i] != want[i] && (BLAS() == "gonum" || math.Abs(float64(got[i]-want[i])) > 1e-3) {
				t.Fatalf("%d rows, element %d: %v sliced, %v whole (%s)", rows, i, got[i], want[i], BLAS())
			}
		}
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
	bad("layers", func(c *checkpoint) { c.W, c.B = c.W[:2], c.B[:2] }, "2 weight and 2 bias layers, the specification has 3")

	// Save refuses, writing nothing, what Load would refuse.
	for name, spoil := range map[string]func(m *Net){
		"not finite":              func(m *Net) { m.W[1] = append([]float32(nil), m.W[1]...); m.W[1][2] = float32(math.Inf(-1)) },
		"a network reads float32": func(m *Net) { m.Spec.Game.Encoding = env.Compact },
		"layer 0 has 3 weights":   func(m *Net) { m.W = append([][]float32{m.W[0][:3]}, m.W[1:]...) },
		"3 weight and 1 bias layers, the specification has 3": func(m *Net) { m.B = m.B[:1] },
	} {
		m := *n
		spoil(&m)
		p := filepath.Join(dir, "saved-"+strings.ReplaceAll(name, " ", "-"))
		if err := Save(p, &m, nil); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("Save of a network whose %s: %v", name, err)
		}
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("Save of a network whose %s wrote the file: %v", name, err)
		}
	}
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
		if err == nil || !strings.Contains(err.Error(), p+": damaged checkpoint (cut short?): the value at byte") || !strings.Contains(err.Error(), "declares more than") {
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
	if want := "the game does not match the network: rule set classic, the network's is cardems; a 4-suit game, the network's 2-suit"; err == nil || err.Error() != want {
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

// TestBestBreaksTiesToTheLowestID: of legal actions with equal logits,
// Best takes the lowest id, as its documentation says, so that a greedy
// network's play (validation, eval) does not depend on how ties are
// scanned.
func TestBestBreaksTiesToTheLowestID(t *testing.T) {
	logits := []float32{9, 3, 7, 3, 7, 1}
	for _, c := range []struct {
		mask []uint8
		want env.Action
	}{
		{[]uint8{0, 1, 1, 1, 1, 1}, 2},
		{[]uint8{0, 1, 0, 1, 0, 1}, 1},
		{[]uint8{1, 1, 1, 1, 1, 1}, 0},
	} {
		if a, ok := Best(logits, c.mask); !ok || a != c.want {
			t.Fatalf("Best(%v, mask %v) = %v, %v; want %v, the lowest id of the highest logit", logits, c.mask, a, ok, c.want)
		}
	}
	// Any byte but 0 is legal; a legal id past the logits panics, as
	// documented, even when it is the only one (before, it was returned).
	if a, ok := Best(logits, []uint8{0, 2, 0, 0, 0, 0}); !ok || a != 1 {
		t.Errorf("mask byte 2: %v, %v; want 1", a, ok)
	}
	for _, mask := range [][]uint8{{0, 0, 0, 0, 0, 0, 0, 1}, {1, 0, 0, 0, 0, 0, 0, 1}} {
		func() {
			defer func() {
				if p := recover(); p == nil || !strings.Contains(fmt.Sprint(p), "legal action 7 outside 6 logits") {
					t.Errorf("mask %v: panic %v", mask, p)
				}
			}()
			Best(logits, mask)
		}()
	}
}

// TestNewStartsNearUniform: New draws the policy head's weights small, so
// that a fresh network's policy is close to uniform over the legal
// actions (PPO's first rollouts explore, and the entropy bonus does not
// start from a skewed policy). Its logits over a real observation must
// all be near 0, for an MLP and a columns network alike.
func TestNewStartsNearUniform(t *testing.T) {
	r := env.MustRules(env.Options{Suits: 2})
	s := env.NewGame(r, 7)
	for i, spec := range []Spec{SpecFor(r, []int{64}), ColumnSpecFor(r, 16, 32, 8)} {
		arch := []string{MLP, Columns}[i]
		n, err := New(spec, 3)
		if err != nil {
			t.Fatal(err)
		}
		rr, _ := spec.Rules()
		g, _ := s.Reframe(rr)
		x := make([]float32, spec.ObsLen)
		g.ObserveFloat32(x)
		logits, values := make([]float32, spec.NumActions), make([]float32, 1)
		n.Forward(logits, values, x, 1, n.NewScratch(1))
		for a, z := range logits {
			if math.Abs(float64(z)) > 0.02 {
				t.Fatalf("%s network: a fresh logit %d is %v; want all within 0.02 of 0 (a near-uniform policy)", arch, a, z)
			}
		}
	}
}

// TestForwardRefusesAnotherNetworksScratch: a Scratch made for a network
// of other layers (or none) panics with a message; before, its buffers
// were read with this network's shapes, and every logit came out wrong
// without a word. A scratch of another network of the same layers fits.
func TestForwardRefusesAnotherNetworksScratch(t *testing.T) {
	r := env.MustRules(env.Options{Suits: 1})
	a, err := New(SpecFor(r, []int{32}), 1)
	if err != nil {
		t.Fatal(err)
	}
	x := make([]float32, a.Spec.ObsLen)
	logits, values := make([]float32, env.NumActions), make([]float32, 1)
	forward := func(sc *Scratch) (msg string) {
		defer func() {
			if v := recover(); v != nil {
				msg = fmt.Sprint(v)
			}
		}()
		a.Forward(logits, values, x, 1, sc)
		return ""
	}
	for _, spec := range []Spec{SpecFor(r, []int{8}), SpecFor(r, []int{32, 8}), ColumnSpecFor(r, 8, 32, 4)} {
		b, err := New(spec, 2)
		if err != nil {
			t.Fatal(err)
		}
		if got := forward(b.NewScratch(1)); got != "nn: Forward with the Scratch of a network of other layers; make it with this network's NewScratch" {
			t.Errorf("%v %v: %q", spec.Arch, spec.Hidden, got)
		}
	}
	if got := forward(nil); got != "nn: Forward with a nil Scratch" {
		t.Errorf("nil: %q", got)
	}
	// A negative row count panics with its own message (before, a slice
	// bound's; and NewScratch(-1) of a network without hidden layers made
	// a scratch of -1 rows).
	for _, net := range []*Net{a, {Spec: SpecFor(r, nil)}} {
		func() {
			defer func() {
				if v := recover(); fmt.Sprint(v) != "nn: NewScratch of -1 rows" {
					t.Errorf("NewScratch(-1) of %v: %v", net.Spec.Hidden, v)
				}
			}()
			net.NewScratch(-1)
		}()
	}
	func() {
		defer func() {
			if v := recover(); fmt.Sprint(v) != "nn: Forward of -1 rows" {
				t.Errorf("Forward of -1 rows: %v", v)
			}
		}()
		a.Forward(logits, values, x, -1, a.NewScratch(1))
	}()
	// The same layers under another game, and with the architecture named
	// (files from before it was recorded leave it empty, as SpecFor does).
	spec := SpecFor(env.MustRules(env.Options{Suits: 1, MaxSteps: 50}), []int{32})
	named := spec
	named.Arch = MLP
	for _, spec := range []Spec{spec, named} {
		same, err := New(spec, 3)
		if err != nil {
			t.Fatal(err)
		}
		if got := forward(same.NewScratch(1)); got != "" {
			t.Errorf("a scratch of the same layers (arch %q): %q", spec.Arch, got)
		}
	}
}

package train

import (
	"math"
	"slices"
	"testing"

	"gorgonia.org/tensor"

	"github.com/spiderenv/spider/agents"
	"github.com/spiderenv/spider/agents/nn"
	"github.com/spiderenv/spider/env"
	"github.com/spiderenv/spider/internal/rng"
)

// newColumnGradCase is newGradCase for a small columns network over a
// two-suit game seen through three face-up slots a column, in positions
// greedy reached.
func newColumnGradCase(t *testing.T, kind Loss) *gradCase {
	t.Helper()
	const rows = 4
	o := env.DefaultOptions()
	o.Suits, o.FaceUpSlots, o.Encoding = 2, 3, env.Float32
	rules := env.MustRules(o)
	spec := nn.ColumnSpecFor(rules, 3, 4, 2)
	D, A := spec.ObsLen, spec.NumActions
	g := rng.New(12)
	u := func() float64 { return float64(g.Uint64()>>11)/(1<<53)*2 - 1 }
	c := newWeights(t, spec, u, rows, kind)
	gr := c.gr
	// Positions after 10 to 70 of greedy's moves, where sequences have
	// formed, with some columns' counts zeroed so that the flags take both
	// values.
	x := make([]float32, rows*D)
	mk, err := agents.New("greedy")
	if err != nil {
		t.Fatal(err)
	}
	greedy := mk()
	for r := range rows {
		st := env.NewGame(rules, uint64(r+5))
		greedy.Begin(uint64(r + 5))
		for range 10 + 20*r {
			legal := st.AppendLegal(nil)
			if len(legal) == 0 {
				break
			}
			if _, err := st.Step(greedy.Act(agents.NewView(&st, legal, 0, false)).Action); err != nil {
				t.Fatal(err)
			}
		}
		st.ObserveFloat32(x[r*D : (r+1)*D])
		x[r*D+env.ObsFaceDown+r], x[r*D+env.ObsFaceUp+r] = 0, 0
		x[r*D+env.ObsFaceDown+r+3] = 0
	}
	long := 0
	for r := range rows {
		cols, glob := make([]float32, env.NumColumns*spec.ColumnIn()), make([]float32, nn.Globals)
		spec.Layout().Split(cols, glob, x[r*D:(r+1)*D], 1)
		for col := range env.NumColumns {
			if cols[col*spec.ColumnIn()+5] > 1.5/13 {
				long++
			}
		}
	}
	if long < 3 {
		t.Fatalf("only %d columns show a sequence of two cards or more: the case tests little", long)
	}
	c.x = make([]float64, len(x))
	for i, v := range x {
		c.x[i] = float64(v)
	}
	// Masks: a few legal actions per row, the deal in two rows, the chosen
	// action among them.
	c.mask, c.onehot = make([]float64, rows*A), make([]float64, rows*A)
	for r := range rows {
		for a := range A {
			c.mask[r*A+a] = -1e9
		}
		legal := []env.Action{env.MoveAction(r, 9-r, 1), env.MoveAction(9-r, r, 3), env.MoveAction(2, 5, 12)}
		if r%2 == 0 {
			legal = append(legal, env.Deal)
		}
		for _, a := range legal {
			c.mask[r*A+int(a)] = 0
		}
		c.onehot[r*A+int(legal[r%len(legal)])] = 1
	}
	c.adv = []float64{1, -0.5, 2, -1.5}
	c.old = []float64{0, -2, -1.1, -0.2}
	c.ret = []float64{0.5, -1, 0.2, 1.5}
	c.lo, c.hi = []float64{0.8, 0.8, 0.8, 0.8}, []float64{1.2, 1.2, 1.2, 1.2}
	cols, glob := make([]float32, rows*env.NumColumns*spec.ColumnIn()), make([]float32, rows*nn.Globals)
	spec.Layout().Split(cols, glob, x, rows)
	f64 := func(v []float32) []float64 {
		out := make([]float64, len(v))
		for i, x := range v {
			out[i] = float64(x)
		}
		return out
	}
	m := func(r, c int, v []float64) tensor.Tensor {
		return tensor.New(tensor.WithShape(r, c), tensor.WithBacking(v))
	}
	for _, err := range []error{
		gr.set(gr.xc, m(rows*env.NumColumns, spec.ColumnIn(), f64(cols))), gr.set(gr.xg, m(rows, nn.Globals, f64(glob))),
		gr.set(gr.mask, m(rows, A, c.mask)), gr.set(gr.onehot, m(rows, A, c.onehot)),
		gr.set(gr.adv, m(rows, 1, c.adv)), gr.set(gr.oldLP, m(rows, 1, c.old)), gr.set(gr.ret, m(rows, 1, c.ret)),
		gr.set(gr.lo, m(rows, 1, c.lo)), gr.set(gr.hi, m(rows, 1, c.hi)),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	c.forward = c.columnsForward
	return c
}

// columnsForward is the columns network's forward pass for row r, written
// from its description in nn (one column, one move at a time) rather than
// from its code.
func (c *gradCase) columnsForward(r int) ([]float64, float64) {
	const N = env.NumColumns
	s := c.spec
	D, P := s.ObsLen, s.Pair
	obs := c.x[r*D : (r+1)*D]
	per := (D - env.ObsSlots) / N
	F := c.spec.Game.Suits + env.NumRanks
	var e [N][]float64
	var mix []float64
	for col := range N {
		down, up := obs[env.ObsFaceDown+col], obs[env.ObsFaceUp+col]
		slots := obs[env.ObsSlots+col*per : env.ObsSlots+(col+1)*per]
		// The cards shown, top first, until the first empty slot.
		type card struct{ rank, suit int }
		var shown []card
		for i := 0; i+F <= len(slots); i += F {
			k := card{-1, -1}
			for j, v := range slots[i : i+F] {
				switch {
				case v == 1 && j < env.NumRanks:
					k.rank = j
				case v == 1:
					k.suit = j
				}
			}
			if k.rank < 0 {
				break
			}
			shown = append(shown, k)
		}
		suited, anySuit := min(len(shown), 1), min(len(shown), 1)
		for i := 1; i < len(shown) && shown[i].rank == shown[i-1].rank+1; i++ {
			anySuit++
			if suited == i && shown[i].suit == shown[i-1].suit {
				suited++
			}
		}
		in := []float64{down, up, b2f(down == 0 && up == 0), b2f(down == 0), float64(suited) / 13, float64(anySuit) / 13}
		in = append(in, slots...)
		e[col] = tanhAll(c.dense(in, 0))
		mix = append(mix, e[col]...)
	}
	mix = append(mix, obs[env.ObsStock], obs[env.ObsRuns])
	mix = append(mix, obs[env.ObsSuitRuns:env.ObsSlots]...)
	m := tanhAll(c.dense(mix, 1))
	game := c.dense(m, 3)
	var uv [N][2][]float64
	for col := range N {
		z := c.dense(e[col], 2)
		for i := range z {
			z[i] = math.Tanh(z[i] + game[i])
		}
		uv[col] = [2][]float64{c.dense(z, 4), c.dense(z, 5)}
	}
	logits := make([]float64, env.NumActions)
	for a := range env.Deal {
		src, dst, n := a.Move()
		us, v := uv[src][0][(n-1)*(P+1):n*(P+1)], uv[dst][1]
		sum := us[P] + v[P]
		for i := range P {
			sum += us[i] * v[i]
		}
		logits[a] = sum
	}
	logits[env.Deal] = c.dense(m, 6)[0]
	return logits, c.dense(m, 7)[0]
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// TestColumnsLossGradientsMatchFiniteDifferences checks the columns
// network's gradients, through the repeat and pair operations, against
// finite differences (every other weight, for time).
func TestColumnsLossGradientsMatchFiniteDifferences(t *testing.T) {
	for _, kind := range []Loss{PPOLoss, CloneLoss} {
		checkFiniteDifferences(t, newColumnGradCase(t, kind), kind, 2)
	}
}

// TestColumnsLossMatchesItsDefinition checks the graph's loss against the
// loss of the columns network written out move by move.
func TestColumnsLossMatchesItsDefinition(t *testing.T) {
	co := coefs{Value: 0.7, Entropy: 0.05}
	for _, kind := range []Loss{PPOLoss, CloneLoss} {
		c := newColumnGradCase(t, kind)
		got := c.loss(t)
		p, v, e := c.reference(kind, co)
		want := p + co.Value*v - co.Entropy*e
		if math.Abs(got-want) > 1e-9*(1+math.Abs(want)) || p == 0 || e <= 0 {
			t.Fatalf("loss %d: graph %v, by definition %v (policy %v, entropy %v)", kind, got, want, p, e)
		}
	}
}

// TestColumnsForwardMatchesItsDefinition checks nn's float32 forward pass
// of a columns network, which agents play with, against the same
// definition.
func TestColumnsForwardMatchesItsDefinition(t *testing.T) {
	c := newColumnGradCase(t, CloneLoss)
	net := &nn.Net{Spec: c.spec}
	for i := range c.spec.Dims() {
		net.W = append(net.W, f32(c.wData[2*i]))
		net.B = append(net.B, f32(c.wData[2*i+1]))
	}
	rows := len(c.adv)
	logits, values := make([]float32, rows*env.NumActions), make([]float32, rows)
	net.Forward(logits, values, f32(c.x), rows, net.NewScratch(rows))
	for r := range rows {
		want, wv := c.columnsForward(r)
		if math.Abs(float64(values[r])-wv) > 1e-4*(1+math.Abs(wv)) {
			t.Fatalf("row %d: value %v, by definition %v", r, values[r], wv)
		}
		for a, w := range want {
			if got := float64(logits[r*env.NumActions+a]); math.Abs(got-w) > 1e-4*(1+math.Abs(w)) {
				t.Fatalf("row %d, action %v: logit %v, by definition %v", r, env.Action(a), got, w)
			}
		}
	}
}

func f32(v []float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}

// TestEquivalentMoves checks equivalents in positions greedy reaches: each
// set holds the move itself and only legal moves of the same cards from
// the same column onto the same top card or another empty column, none
// missing; and some positions do offer such sets.
func TestEquivalentMoves(t *testing.T) {
	mk, err := agents.New("greedy")
	if err != nil {
		t.Fatal(err)
	}
	greedy := mk()
	sets := 0
	for seed := range uint64(20) {
		s := env.NewGame(env.MustRules(env.DefaultOptions()), seed)
		greedy.Begin(seed)
		for step := 0; step < 200 && !s.Over(); step++ {
			legal := s.AppendLegal(nil)
			for _, a := range legal {
				eq := equivalents(nil, &s, a)
				if eq[0] != a {
					t.Fatalf("the set of %v starts with %v", a, eq[0])
				}
				if len(eq) > 1 {
					sets++
				}
				for _, b := range legal {
					if b == a || a.IsDeal() || b.IsDeal() {
						continue
					}
					as, ad, an := a.Move()
					bs, bd, bn := b.Move()
					same := as == bs && an == bn &&
						((s.Height(ad) == 0 && s.Height(bd) == 0) || (s.Height(ad) > 0 && s.Top(ad) == s.Top(bd)))
					if same != slices.Contains(eq, b) {
						t.Fatalf("seed %d step %d: %v in the set of %v is %v, want %v\n%s", seed, step, b, a, !same, same, s.Render())
					}
				}
			}
			if len(legal) == 0 {
				break
			}
			if _, err := s.Step(greedy.Act(agents.NewView(&s, legal, 0, false)).Action); err != nil {
				t.Fatal(err)
			}
		}
	}
	if sets < 50 {
		t.Fatalf("only %d moves had an equivalent: the test proves little", sets)
	}
	t.Logf("%d moves had an equivalent", sets)
}

// TestColumnOpsRefuseWrongSizes gives the columns network's operations
// inputs one value too short or too long: each must be refused, not read
// short or past its shape.
func TestColumnOpsRefuseWrongSizes(t *testing.T) {
	m := func(n int) tensor.Tensor {
		return tensor.New(tensor.WithShape(1, n), tensor.WithBacking(make([]float32, n)))
	}
	rep := &repeatOp{rows: 2, n: 3, cols: 4}
	pair := &pairOp{rows: 1, pair: 2}
	s := pair.sizes()
	for _, tc := range []struct {
		name string
		do   func(d int) error
	}{
		{"repeat", func(d int) error { _, err := rep.Do(m(2*4 + d)); return err }},
		{"group sum", func(d int) error { _, err := (&groupSumOp{rep}).Do(m(2*3*4 + d)); return err }},
		{"pairs", func(d int) error { _, err := pair.Do(m(s[0]+d), m(s[1]), m(s[2])); return err }},
		{"pair gradient", func(d int) error {
			_, err := (&pairGradOp{pair, 1}).Do(m(s[0]), m(s[1]+d), m(s[2]), m(env.NumActions))
			return err
		}},
	} {
		if err := tc.do(0); err != nil {
			t.Fatalf("%s of the right sizes: %v", tc.name, err)
		}
		for _, d := range []int{-1, 1} {
			if err := tc.do(d); err == nil {
				t.Errorf("%s with an input %+d value off its size: no error", tc.name, d)
			}
		}
	}
}

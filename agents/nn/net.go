package nn

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"

	"github.com/spiderenv/spider/env"
	"github.com/spiderenv/spider/internal/rng"
)

// Spec is what a network was trained for. A network is used only with
// games whose configuration gives the same observation and action shapes.
type Spec struct {
	// Game is the game the network was trained on, defaults filled in.
	// The network reads the float32 observation, so Game.Encoding is
	// always env.Float32: SpecFor sets it and Rules refuses another.
	Game       env.Options `msgpack:"game"`
	ObsLen     int         `msgpack:"obs_len"`     // the input: Game's float32 observation length
	NumActions int         `msgpack:"num_actions"` // the policy head's width, env.NumActions
	Hidden     []int       `msgpack:"hidden"`      // widths of the hidden layers
	// Arch is the network's architecture: MLP (or empty, as in files
	// written before it was recorded) or Columns. A columns network has
	// one hidden (mixing) layer, a column encoder Column wide and source
	// and destination vectors Pair wide.
	Arch   string `msgpack:"arch,omitempty"`
	Column int    `msgpack:"column,omitempty"`
	Pair   int    `msgpack:"pair,omitempty"`
}

// SpecFor returns the specification of a network over the float32
// observation of r with the given hidden layers.
func SpecFor(r env.Rules, hidden []int) Spec {
	o := r.Options()
	o.Encoding = env.Float32
	r = env.MustRules(o)
	return Spec{Game: o, ObsLen: r.Float32Len(), NumActions: env.NumActions, Hidden: slices.Clone(hidden)}
}

// Rules returns the game configuration the network observes. It refuses
// a game whose observation encoding is not float32.
func (s Spec) Rules() (env.Rules, error) {
	if s.Game.Encoding != env.Float32 {
		return env.Rules{}, fmt.Errorf("nn: observation encoding %s, a network reads %s", s.Game.Encoding, env.Float32)
	}
	return env.NewRules(s.Game)
}

// Check reports whether a game under r can be played by this network, and
// if not, says what differs. The game must be one the network's rules can
// watch (env.Rules.Reframes): the rule set, the suits and any other option
// of the game's moves must match; the network observes the game through
// its own face-up slots and ignores the game's step limit and clock,
// which its observation does not show.
func (s Spec) Check(r env.Rules) error {
	var diffs []string
	mine, err := s.Rules()
	if err != nil {
		diffs = append(diffs, err.Error())
	} else {
		if r.RuleSet() != mine.RuleSet() {
			diffs = append(diffs, fmt.Sprintf("rule set %s, the network's is %s", r.RuleSet(), mine.RuleSet()))
		}
		if r.Suits() != mine.Suits() {
			diffs = append(diffs, fmt.Sprintf("a %d-suit game, the network's %d-suit", r.Suits(), mine.Suits()))
		}
		if err := r.Reframes(mine); err != nil && len(diffs) == 0 {
			diffs = append(diffs, err.Error()) // an option named above in no other way
		}
		if mine.Float32Len() != s.ObsLen {
			diffs = append(diffs, fmt.Sprintf("observation of %d values, the network's %d", mine.Float32Len(), s.ObsLen))
		}
	}
	if env.NumActions != s.NumActions {
		diffs = append(diffs, fmt.Sprintf("%d actions, the network's %d", env.NumActions, s.NumActions))
	}
	if len(diffs) > 0 {
		return fmt.Errorf("the game does not match the network: %s", strings.Join(diffs, "; "))
	}
	return nil
}

// Net is a network with tanh hidden layers and two heads: policy logits
// over every action id and a value. It is a multilayer perceptron over the
// observation (Spec.Arch MLP) or reads the game column by column (Columns;
// see ColumnSpecFor). Weights are row-major (in x out) float32 slices,
// which a trainer updates in place. Forward only reads a Net, so
// goroutines may share one while nothing writes its weights (a trainer's
// Net is written while its Run runs), each with a Scratch of its own.
type Net struct {
	Spec Spec // what the network was trained for, and its shape
	// W[i] and B[i] are layer i's weights and biases, sized by
	// Spec.Dims; in an MLP the last two layers are the policy head and the
	// value head.
	W, B [][]float32
}

// Validate reports why a network cannot be built with s, or nil.
func (s Spec) Validate() error { return s.validate() }

// validate checks the sizes a network can be built with.
func (s Spec) validate() error {
	if s.ObsLen < 1 || s.NumActions < 1 {
		return fmt.Errorf("nn: empty specification")
	}
	switch s.Arch {
	case "", MLP:
		if s.Column != 0 || s.Pair != 0 {
			return fmt.Errorf("nn: column and pair widths belong to a columns network, not an MLP")
		}
	case Columns:
		return s.validateColumns()
	default:
		return fmt.Errorf("nn: unknown architecture %q (want %s or %s)", s.Arch, MLP, Columns)
	}
	if len(s.Hidden) > 16 {
		return fmt.Errorf("nn: %d hidden layers, at most 16", len(s.Hidden))
	}
	for _, h := range s.Hidden {
		if h < 1 || h > 1<<14 {
			return fmt.Errorf("nn: hidden width %d outside 1 to 16384", h)
		}
	}
	return nil
}

// Dims returns each layer's (in, out) sizes. It may panic for a spec
// Validate refuses (a columns network without its hidden layer).
func (s Spec) Dims() [][2]int {
	if s.columns() {
		return s.columnDims()
	}
	var d [][2]int
	in := s.ObsLen
	for _, h := range s.Hidden {
		d = append(d, [2]int{in, h})
		in = h
	}
	return append(d, [2]int{in, s.NumActions}, [2]int{in, 1})
}

// New returns a network with Glorot-uniform weights drawn from seed and a
// near-uniform initial policy (a small policy head).
func New(spec Spec, seed uint64) (*Net, error) {
	if err := spec.validate(); err != nil {
		return nil, err
	}
	g := rng.New(seed)
	n := &Net{Spec: spec}
	dims, heads := spec.Dims(), spec.headLayers()
	for i, d := range dims {
		w := make([]float32, d[0]*d[1])
		lim := math.Sqrt(6 / float64(d[0]+d[1]))
		if slices.Contains(heads, i) {
			lim *= 0.01 // the policy starts close to uniform over legal actions
		}
		for j := range w {
			w[j] = float32((g.Float64()*2 - 1) * lim)
		}
		n.W = append(n.W, w)
		n.B = append(n.B, make([]float32, d[1]))
	}
	return n, nil
}

// Scratch holds the forward pass's activations for up to Rows rows, so that
// Forward allocates nothing. A Scratch serves one goroutine at a time.
type Scratch struct {
	Rows int // the most rows one Forward may take
	h    [][]float32
	dims [][2]int
	cols *columnScratch
	spec Spec // the network's it was made for: its buffers have that shape
}

// fits reports whether the scratch's buffers have the shapes a network of
// s needs (the game it was trained on does not matter to them).
func (sc *Scratch) fits(s Spec) bool {
	t := sc.spec
	arch := func(a string) string { // files from before Arch was recorded leave it empty
		if a == "" {
			return MLP
		}
		return a
	}
	return t.ObsLen == s.ObsLen && t.NumActions == s.NumActions && arch(t.Arch) == arch(s.Arch) &&
		t.Column == s.Column && t.Pair == s.Pair && slices.Equal(t.Hidden, s.Hidden)
}

// ScratchBytes returns the memory NewScratch(rows) allocates for a
// network of s: for a columns network, whose layers see a row per column
// and a row per move a column can make, it can be several times the
// weights. It may panic for a spec Validate refuses.
func (s Spec) ScratchBytes(rows int) int64 {
	r := int64(rows)
	if s.columns() {
		const N, K = int64(env.NumColumns), int64(env.MaxMove)
		C, H, P := int64(s.Column), int64(s.Hidden[0]), int64(s.Pair)
		floats := N*int64(s.ColumnIn()) + Globals + N*C + (N*C + Globals) + H + C + N*C + N*K*(P+1) + N*(P+1)
		return 4 * r * floats
	}
	floats := int64(0)
	for _, h := range s.Hidden {
		floats += int64(h)
	}
	return 4 * r * floats
}

// NewScratch returns buffers for rows rows of n. It panics if rows is
// negative, or may for a Spec Validate refuses.
func (n *Net) NewScratch(rows int) *Scratch {
	if rows < 0 {
		panic(fmt.Sprintf("nn: NewScratch of %d rows", rows))
	}
	spec := n.Spec
	spec.Hidden = slices.Clone(spec.Hidden)
	s := &Scratch{Rows: rows, dims: n.Spec.Dims(), spec: spec}
	if n.Spec.columns() {
		s.cols = newColumnScratch(n.Spec, rows)
		return s
	}
	for _, h := range n.Spec.Hidden {
		s.h = append(s.h, make([]float32, rows*h))
	}
	return s
}

// Forward computes the policy logits (rows x NumActions) and values (rows)
// of rows observations x (rows x ObsLen) into logits and values. For up
// to 64 rows (64 / 10 on a columns network, whose layers see a row per
// column) it allocates nothing; larger batches run the parallel BLAS
// multiply (gonum's, or OpenBLAS's: see BLAS), which may allocate a few
// small objects a layer. It panics if a
// buffer is too short, rows is negative, or sc is nil or was made for a network of other
// layers (its buffers would be read with n's shapes, silently wrong),
// which are programming errors.
func (n *Net) Forward(logits, values []float32, x []float32, rows int, sc *Scratch) {
	switch {
	case sc == nil:
		panic("nn: Forward with a nil Scratch")
	case !sc.fits(n.Spec):
		panic("nn: Forward with the Scratch of a network of other layers; make it with this network's NewScratch")
	case rows < 0:
		panic(fmt.Sprintf("nn: Forward of %d rows", rows))
	case rows > sc.Rows || len(x) < rows*n.Spec.ObsLen || len(logits) < rows*n.Spec.NumActions || len(values) < rows:
		panic("nn: Forward buffers too short")
	}
	if n.Spec.columns() {
		n.forwardColumns(logits, values, x, rows, sc.cols)
		return
	}
	dims := sc.dims
	in := x[:rows*n.Spec.ObsLen]
	for i := range n.Spec.Hidden {
		out := sc.h[i][:rows*dims[i][1]]
		layer(out, in, n.W[i], n.B[i], rows, dims[i])
		for j, v := range out {
			out[j] = float32(math.Tanh(float64(v)))
		}
		in = out
	}
	L := len(n.Spec.Hidden)
	layer(logits[:rows*n.Spec.NumActions], in, n.W[L], n.B[L], rows, dims[L])
	layer(values[:rows], in, n.W[L+1], n.B[L+1], rows, dims[L+1])
}

// gonum's float32 GEMM multiplies in blocks of gemmBlock x gemmBlock, and
// from 4 blocks of the product on it starts goroutines, which allocates.
// A product of at most gemmBlock rows (a game at a time, as agents play)
// is therefore multiplied in slices of serialCols columns, each under 4
// blocks, on the calling goroutine: the same sums in the same order,
// nothing allocated. Larger batches (the trainer's) keep gonum's
// parallel multiply.
const (
	gemmBlock  = 64
	serialCols = 3 * gemmBlock
)

// layer computes out = in·w + b for rows rows.
func layer(out, in, w, b []float32, rows int, d [2]int) {
	for r := range rows {
		copy(out[r*d[1]:(r+1)*d[1]], b)
	}
	a := blas32.General{Rows: rows, Cols: d[0], Stride: d[0], Data: in}
	if rows > gemmBlock {
		blas32.Gemm(blas.NoTrans, blas.NoTrans, 1, a,
			blas32.General{Rows: d[0], Cols: d[1], Stride: d[1], Data: w},
			1, blas32.General{Rows: rows, Cols: d[1], Stride: d[1], Data: out})
		return
	}
	for j := 0; j < d[1]; j += serialCols {
		cols := min(serialCols, d[1]-j)
		blas32.Gemm(blas.NoTrans, blas.NoTrans, 1, a,
			blas32.General{Rows: d[0], Cols: cols, Stride: d[1], Data: w[j:]},
			1, blas32.General{Rows: rows, Cols: cols, Stride: d[1], Data: out[j:]})
	}
}

// Best returns the legal action (mask byte not 0) with the highest logit;
// ties go to the lowest id. It returns false if no action is legal. It
// panics if a legal action's id is outside logits.
func Best(logits []float32, mask []uint8) (env.Action, bool) {
	best, found := 0, false
	for i, m := range mask {
		if m == 0 {
			continue
		}
		if i >= len(logits) { // checked even when it could not win
			panic(fmt.Sprintf("nn: Best: legal action %d outside %d logits", i, len(logits)))
		}
		if !found || logits[i] > logits[best] {
			best, found = i, true
		}
	}
	return env.Action(best), found
}

// Params returns the weight and bias slices in order (W0, B0, W1, B1, ...):
// the network's own arrays, which an optimiser updates in place.
func (n *Net) Params() [][]float32 {
	var p [][]float32
	for i := range n.W {
		p = append(p, n.W[i], n.B[i])
	}
	return p
}

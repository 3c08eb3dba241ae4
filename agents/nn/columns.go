package nn

import (
	"fmt"
	"math"

	"github.com/spiderenv/spider/env"
)

// Architectures a Spec can name.
const (
	// MLP is a multilayer perceptron over the whole observation (the
	// default, and the only kind before format 3's arch field).
	MLP = "mlp"
	// Columns reads each column with one shared encoder, mixes the ten
	// encodings into a view of the whole game, and scores a move (source,
	// destination, count) from its two columns' encodings in that view.
	Columns = "columns"
)

// The columns network, layer by layer (row-major weights, in x out):
//
//	layer  input                         output       what it computes
//	0      ColumnIn                      Column       E = tanh(column features · W0 + b0), one row per column
//	1      10*Column + Globals           Hidden[0]    M = tanh([E of the ten columns, globals] · W1 + b1)
//	2      Column                        Column       Z = tanh(E · W2 + b2 + M · W3 + b3), per column
//	3      Hidden[0]                     Column       (the game's part of Z)
//	4      Column                        12*(Pair+1)  U = Z · W4 + b4: per source column, a vector per count
//	5      Column                        Pair+1       V = Z · W5 + b5: per destination column
//	6      Hidden[0]                     1            the deal's logit
//	7      Hidden[0]                     1            the value
//
// A move's logit is U[src][count]·V[dst] over the first Pair values, plus
// the last value of U[src][count] and of V[dst]: the same weights score
// every pair of columns, so what is learnt about one move carries over to
// its mirror images.
//
// A column's features are its face-down and face-up counts, whether it is
// empty, whether it has no face-down card, the length of the sequence at
// its top (each card one rank below the one under it) in one suit and in
// any suits, over 13, and its S face-up slots of F values (see env's
// observation); the game's features (Globals) are the stock, the
// completed runs and the runs per suit. All of them are the float32
// observation's values or functions of them, so the network sees nothing
// the observation does not show. The sequences are given because one
// layer over one-hot slots can hardly count them, and they decide which
// moves free a card.
const (
	columnCounts = 6
	// Globals is the number of whole-game features the columns network
	// reads: the stock and the completed runs in total and per suit.
	Globals = env.ObsSlots - env.ObsStock
)

// ColumnSpecFor returns the specification of a columns network over the
// float32 observation of r: a column encoder of width column, a mixing
// layer of width hidden, and source and destination vectors of width pair.
func ColumnSpecFor(r env.Rules, column, hidden, pair int) Spec {
	s := SpecFor(r, []int{hidden})
	s.Arch, s.Column, s.Pair = Columns, column, pair
	return s
}

// columns reports whether s is a columns network.
func (s Spec) columns() bool { return s.Arch == Columns }

// slotValues returns S*F, the float32 values of one column's face-up slots,
// or 0 if the observation length does not fit the game.
func (s Spec) slotValues() int {
	r, err := s.Rules()
	if err != nil {
		return 0
	}
	return r.Float32Len() - env.ObsSlots
}

// ColumnIn returns the number of features the column encoder reads per
// column (0 if the specification has no valid game).
func (s Spec) ColumnIn() int {
	v := s.slotValues()
	if v <= 0 || v%env.NumColumns != 0 {
		return 0
	}
	return columnCounts + v/env.NumColumns
}

// validateColumns checks a columns network's own sizes.
func (s Spec) validateColumns() error {
	switch {
	case len(s.Hidden) != 1:
		return fmt.Errorf("nn: a columns network has one mixing layer, got hidden %v", s.Hidden)
	case s.Hidden[0] < 1 || s.Hidden[0] > 1<<14:
		return fmt.Errorf("nn: mixing width %d outside 1 to 16384", s.Hidden[0])
	case s.Column < 1 || s.Column > 1<<12:
		return fmt.Errorf("nn: column width %d outside 1 to 4096", s.Column)
	case s.Pair < 1 || s.Pair > 1<<10:
		return fmt.Errorf("nn: pair width %d outside 1 to 1024", s.Pair)
	case s.ColumnIn() == 0 || s.ObsLen != env.ObsSlots+(s.ColumnIn()-columnCounts)*env.NumColumns:
		return fmt.Errorf("nn: a columns network needs the game's float32 observation, got %d values", s.ObsLen)
	case s.NumActions != env.NumActions:
		return fmt.Errorf("nn: a columns network scores the %d actions of the game, got %d", env.NumActions, s.NumActions)
	}
	return nil
}

// columnDims returns the layers' (in, out) sizes of a columns network.
func (s Spec) columnDims() [][2]int {
	C, H, P := s.Column, s.Hidden[0], s.Pair
	return [][2]int{
		{s.ColumnIn(), C},
		{env.NumColumns*C + Globals, H},
		{C, C},
		{H, C},
		{C, env.MaxMove * (P + 1)},
		{C, P + 1},
		{H, 1},
		{H, 1},
	}
}

// headLayers reports which layers compute the policy's logits, which New
// draws small so that the first policy is close to uniform.
func (s Spec) headLayers() []int {
	if s.columns() {
		return []int{4, 5, 6}
	}
	return []int{len(s.Hidden)}
}

// ColumnLayout is where a columns network finds its inputs in the float32
// observation; Spec.Layout computes it once, so that splitting an
// observation does no more than copy.
type ColumnLayout struct {
	ObsLen   int // the observation's length
	In       int // features per column: the counts, flags and sequences, then the slots
	Slots, F int // face-up slots per column, and values per slot
}

// Layout returns the columns network's input layout (zero if s has no
// valid game).
func (s Spec) Layout() ColumnLayout {
	r, err := s.Rules()
	if err != nil {
		return ColumnLayout{}
	}
	return ColumnLayout{ObsLen: s.ObsLen, In: s.ColumnIn(), Slots: r.FaceUpSlots(), F: r.CardFeatures()}
}

// Split rearranges rows float32 observations x (rows x ObsLen) into the
// columns network's inputs: per column (rows*10 x In, game by game) and per
// game (rows x Globals). It panics if a buffer is too short, which is a
// programming error.
func (l ColumnLayout) Split(cols, glob, x []float32, rows int) {
	in, D, per := l.In, l.ObsLen, l.Slots*l.F
	if in == 0 || len(cols) < rows*env.NumColumns*in || len(glob) < rows*Globals || len(x) < rows*D {
		panic("nn: ColumnLayout.Split buffers too short")
	}
	for r := range rows {
		o := x[r*D : (r+1)*D]
		for c := range env.NumColumns {
			dst := cols[(r*env.NumColumns+c)*in : (r*env.NumColumns+c+1)*in]
			down, up := o[env.ObsFaceDown+c], o[env.ObsFaceUp+c]
			dst[0], dst[1] = down, up
			dst[2], dst[3] = flag(down == 0 && up == 0), flag(down == 0)
			slots := o[env.ObsSlots+c*per : env.ObsSlots+(c+1)*per]
			suited, any := topSequences(slots, l.F)
			dst[4], dst[5] = float32(suited)/env.NumRanks, float32(any)/env.NumRanks
			copy(dst[columnCounts:], slots)
		}
		copy(glob[r*Globals:(r+1)*Globals], o[env.ObsStock:env.ObsSlots])
	}
}

// topSequences returns how many cards at the top of a column's slots (f
// values each, top card first) form a sequence, each card one rank below
// the one under it: in one suit, and in any suits. An empty column has 0.
func topSequences(slots []float32, f int) (suited, any int) {
	card := func(i int) (rank, suit int) {
		cell := slots[i*f : (i+1)*f]
		rank, suit = -1, 0
		for r := range env.NumRanks {
			if cell[r] > 0.5 {
				rank = r
			}
		}
		for k, v := range cell[env.NumRanks:] {
			if v > 0.5 {
				suit = k
			}
		}
		return rank, suit
	}
	n := len(slots) / f
	r0, s0 := card(0)
	if r0 < 0 {
		return 0, 0
	}
	suited, any = 1, 1
	inSuit := true
	for i := 1; i < n; i++ {
		r, s := card(i)
		if r != r0+1 {
			break
		}
		inSuit = inSuit && s == s0
		if inSuit {
			suited++
		}
		any++
		r0, s0 = r, s
	}
	return suited, any
}

func flag(b bool) float32 {
	if b {
		return 1
	}
	return 0
}

// PairLogits writes the logits of rows games (rows x NumActions) from the
// source vectors u (rows*10 x 12*(pair+1)), the destination vectors v
// (rows*10 x pair+1) and the deal's logits (rows), as the columns network
// scores moves. It is generic so that the trainer's float64 gradient check
// runs the same code. It panics if a buffer is too short.
func PairLogits[T float32 | float64](logits, u, v, deal []T, rows, pair int) {
	const N, K = env.NumColumns, env.MaxMove
	us, vs := K*(pair+1), pair+1
	if len(logits) < rows*env.NumActions || len(u) < rows*N*us || len(v) < rows*N*vs || len(deal) < rows {
		panic("nn: PairLogits buffers too short")
	}
	for r := range rows {
		out := logits[r*env.NumActions : (r+1)*env.NumActions]
		a := 0
		for src := range N {
			ur := u[(r*N+src)*us : (r*N+src+1)*us]
			for dst := range N {
				if dst == src {
					continue
				}
				vr := v[(r*N+dst)*vs : (r*N+dst+1)*vs]
				for k := range K {
					uk := ur[k*(pair+1) : (k+1)*(pair+1)]
					sum := uk[pair] + vr[pair]
					for i, x := range uk[:pair] {
						sum += x * vr[i]
					}
					out[a] = sum
					a++
				}
			}
		}
		out[env.Deal] = deal[r]
	}
}

// columnScratch holds a columns network's activations.
type columnScratch struct {
	layout                               ColumnLayout
	dims                                 [][2]int
	cols, glob, e, mix, m, game, z, u, v []float32
}

func newColumnScratch(s Spec, rows int) *columnScratch {
	const N = env.NumColumns
	C, H, P := s.Column, s.Hidden[0], s.Pair
	return &columnScratch{
		layout: s.Layout(), dims: s.columnDims(),
		cols: make([]float32, rows*N*s.ColumnIn()), glob: make([]float32, rows*Globals),
		e: make([]float32, rows*N*C), mix: make([]float32, rows*(N*C+Globals)), m: make([]float32, rows*H),
		game: make([]float32, rows*C), z: make([]float32, rows*N*C),
		u: make([]float32, rows*N*env.MaxMove*(P+1)), v: make([]float32, rows*N*(P+1)),
	}
}

// forwardColumns is Forward for a columns network.
func (n *Net) forwardColumns(logits, values, x []float32, rows int, sc *columnScratch) {
	const N = env.NumColumns
	s := n.Spec
	d := sc.dims
	C, H := s.Column, s.Hidden[0]
	sc.layout.Split(sc.cols, sc.glob, x, rows)
	e := sc.e[:rows*N*C]
	layer(e, sc.cols[:rows*N*d[0][0]], n.W[0], n.B[0], rows*N, d[0])
	tanh(e)
	mix := sc.mix[:rows*d[1][0]]
	for r := range rows {
		row := mix[r*d[1][0] : (r+1)*d[1][0]]
		copy(row, e[r*N*C:(r+1)*N*C])
		copy(row[N*C:], sc.glob[r*Globals:(r+1)*Globals])
	}
	m := sc.m[:rows*H]
	layer(m, mix, n.W[1], n.B[1], rows, d[1])
	tanh(m)
	game := sc.game[:rows*C]
	layer(game, m, n.W[3], n.B[3], rows, d[3])
	z := sc.z[:rows*N*C]
	layer(z, e, n.W[2], n.B[2], rows*N, d[2])
	for r := range rows {
		g := game[r*C : (r+1)*C]
		for c := range N {
			zr := z[(r*N+c)*C : (r*N+c+1)*C]
			for i := range zr {
				zr[i] += g[i]
			}
		}
	}
	tanh(z)
	u, v := sc.u[:rows*N*d[4][1]], sc.v[:rows*N*d[5][1]]
	layer(u, z, n.W[4], n.B[4], rows*N, d[4])
	layer(v, z, n.W[5], n.B[5], rows*N, d[5])
	// The deal's logits go to values for a moment: PairLogits reads them
	// before the value layer overwrites them.
	layer(values[:rows], m, n.W[6], n.B[6], rows, d[6])
	PairLogits(logits, u, v, values[:rows], rows, s.Pair)
	layer(values[:rows], m, n.W[7], n.B[7], rows, d[7])
}

func tanh(x []float32) {
	for i, v := range x {
		x[i] = float32(math.Tanh(float64(v)))
	}
}

package agents

import (
	"fmt"
	"math"

	"github.com/spiderenv/spider/env"
)

// value.go holds the learned part of search's evaluation on one and two
// suits: a logistic model of the chance that search wins
// from a position, fitted on search's own games (agents/internal/fitvalue,
// docs/results.md "A learned value for one suit" and "A learned value for
// two suits").

// NumValueFeatures is the number of visible facts the learned value weighs.
const NumValueFeatures = 18

// ValueFeatureNames names the facts ValueFeatures writes, in its order.
var ValueFeatureNames = [NumValueFeatures]string{
	"bias", "deals_left", "face_down_10", "hidden_columns", "empty_columns",
	"runs", "breaks", "ways_on", "reveals_now", "min_face_down",
	"sqrt_face_down", "kings_on_face_down", "hope", "deals_x_face_down",
	"face_up_10", "top_runs_sq", "equal_tops", "ace_tops",
}

// valueWeights are the learned value's coefficients, in ValueFeatures'
// order: the log-odds of winning is their dot product with the features.
// Printed by `go run ./agents/internal/fitvalue` (its defaults: every
// second position of search's classic one-suit games on tuning seeds
// 2001-2398 and 3001-3405, played with the value search had before it,
// HandOnly; L2 penalty 1.0).
var valueWeights = [NumValueFeatures]float64{
	5.44455,  // bias
	3.45142,  // deals_left
	-2.11546, // face_down_10
	-0.26654, // hidden_columns
	0.67789,  // empty_columns
	-0.66632, // runs
	-0.02617, // breaks
	0.41443,  // ways_on
	0.24247,  // reveals_now
	-0.26069, // min_face_down
	0.33713,  // sqrt_face_down
	-0.06008, // kings_on_face_down
	-0.47843, // hope
	-0.59348, // deals_x_face_down
	-0.46974, // face_up_10
	0.27388,  // top_runs_sq
	-0.12793, // equal_tops
	-0.26953, // ace_tops
}

// valueWeights2 are the learned value's coefficients on two suits, as
// valueWeights are on one suit, fitted on classic games and used under
// cardems too. Printed by `go run
// ./agents/internal/fitvalue -suits 2 -seeds 2001-2400` (every second
// position of search-hand's games on those tuning deals, 218 of the 400
// won; L2 penalty 1.0). Four suits have none: the same fit there won fewer
// held-out deals (docs/results.md, Tried).
var valueWeights2 = [NumValueFeatures]float64{
	7.20869,  // bias
	1.95727,  // deals_left
	-0.43179, // face_down_10
	0.40535,  // hidden_columns
	0.33441,  // empty_columns
	-0.78519, // runs
	-0.12394, // breaks
	0.45562,  // ways_on
	0.12947,  // reveals_now
	-0.08435, // min_face_down
	-0.36351, // sqrt_face_down
	-0.07456, // kings_on_face_down
	-0.45272, // hope
	-0.42188, // deals_x_face_down
	-0.50474, // face_up_10
	-0.10937, // top_runs_sq
	-0.15159, // equal_tops
	-0.25866, // ace_tops
}

// valueMix is what one unit of the learned log-odds is worth in Evaluate's
// points (a face-down card costs 100). On tuning deals 1001-1100 it won 95
// at 100 and 94 at 300, against 87 for the hand-set value alone; the
// hand-set part stays, since the learned one alone leaves completing a
// run about even and wandered (docs/results.md).
const valueMix = 100

// rankCopies is how many cards of each rank the two decks hold, suits
// together.
const rankCopies = env.NumCards / env.NumRanks

// ValueFeatures writes into f the visible facts of s that the learned
// value weighs. When col >= 0, column col's top card is taken to be a
// lone face-up card of rank r: a card just turned, whose rank is not
// known yet. buf is scratch space of env.NumCards cards. It reads no
// hidden card: what lies face down and the stock's order change nothing.
// It panics if col >= 0 and col or r is out of range (col past the last
// column, r not 1 to 13): a programming error, as indexing a slice is.
func ValueFeatures(f *[NumValueFeatures]float64, s *env.State, col int, r env.Rank, buf []env.Card) {
	if col >= 0 && (col >= env.NumColumns || r < env.Ace || r > env.King) {
		// Checked here, not where r is read: an empty column never reads it.
		panic(fmt.Sprintf("agents: ValueFeatures: column %d, rank %d: want a column 0 to %d and a rank 1 to 13", col, r, env.NumColumns-1))
	}
	var v valueCounts
	v.count(s, col, buf)
	v.features(f, s, col, r)
}

// valueCounts holds what ValueFeatures counts column by column, with
// column col's cards (when col >= 0) left out, so that one count serves
// every rank a turned card can have (revealValue): counting reads every
// face-up card, and is most of what the learned value costs.
type valueCounts struct {
	seen                                                [env.NumRanks + 1]int    // visible cards of each rank
	top, base                                           [env.NumColumns]env.Rank // each column's top card, and the deepest of its movable run
	runLen                                              [env.NumColumns]int
	breaks, kings, empty, hidden, down, faceUp, minDown int
	sqrtDown                                            float64
}

// count fills v from s, leaving out column col's face-up cards when col
// >= 0. buf is scratch space of env.NumCards cards.
func (v *valueCounts) count(s *env.State, col int, buf []env.Card) {
	*v = valueCounts{}
	for c := range env.NumColumns {
		d := s.FaceDown(c)
		v.down += d
		if d > 0 {
			v.hidden++
			if v.minDown == 0 || d < v.minDown {
				v.minDown = d
			}
			v.sqrtDown += math.Sqrt(float64(d))
		}
		if s.Height(c) == 0 {
			v.empty++
			continue
		}
		if c == col {
			continue // features puts in its one card
		}
		up := s.AppendFaceUp(buf[:0], c)
		v.runLen[c] = s.RunLength(c)
		v.faceUp += len(up)
		for i, x := range up {
			v.seen[x.Rank()]++
			if i > 0 && !(x+1 == up[i-1] && x.Rank() != env.King) {
				v.breaks++
			}
		}
		if d > 0 && up[0].Rank() == env.King {
			v.kings++
		}
		v.top[c] = up[len(up)-1].Rank()
		v.base[c] = v.top[c] + env.Rank(v.runLen[c]-1)
	}
	for k := env.Ace; k <= env.King; k++ {
		v.seen[k] += s.Runs()
	}
}

// features writes the facts of v's position into f, column col's top card
// (when col >= 0, as count left it out) a lone face-up card of rank r.
// Every fact but the square roots is a sum of small integers, so it is
// the same whatever order it is summed in.
func (v *valueCounts) features(f *[NumValueFeatures]float64, s *env.State, col int, r env.Rank) {
	seen, top, base, runLen := v.seen, v.top, v.base, v.runLen
	faceUp, kings := v.faceUp, v.kings
	if col >= 0 && s.Height(col) > 0 {
		seen[r]++
		top[col], base[col], runLen[col] = r, r, 1
		faceUp++
		if s.FaceDown(col) > 0 && r == env.King {
			kings++
		}
	}
	var tops [env.NumRanks + 2]int // non-empty columns with each top rank
	for c := range env.NumColumns {
		if s.Height(c) > 0 {
			tops[top[c]]++
		}
	}
	var ways, reveals, equalTops, aces, hope, runSq int
	for c := range env.NumColumns {
		h := s.Height(c)
		if h == 0 {
			continue
		}
		runSq += runLen[c] * runLen[c]
		// Can its movable run go somewhere: onto a card one rank above, or
		// into an empty column (when that leaves something behind)? Its
		// own top is below its base, so tops counts only other columns.
		on := v.empty > 0 && runLen[c] < h || base[c] != env.King && tops[base[c]+1] > 0
		if on {
			ways++
			if s.FaceDown(c) > 0 && s.FaceUpCount(c) == runLen[c] {
				reveals++
			}
		}
		if top[c] == env.Ace {
			aces++
		} else {
			hope += rankCopies - seen[top[c]-1] // unseen cards that could go on it
		}
	}
	for _, n := range tops {
		equalTops += n * (n - 1) / 2
	}
	deals := float64(s.StockLeft()) / env.DealSize
	f[0] = 1
	f[1] = deals
	f[2] = float64(v.down) / 10
	f[3] = float64(v.hidden)
	f[4] = float64(v.empty)
	f[5] = float64(s.Runs())
	f[6] = float64(v.breaks)
	f[7] = float64(ways)
	f[8] = float64(reveals)
	f[9] = float64(v.minDown)
	f[10] = v.sqrtDown
	f[11] = float64(kings)
	f[12] = float64(hope) / rankCopies
	f[13] = deals * float64(v.down) / 10
	f[14] = float64(faceUp) / 10
	f[15] = float64(runSq) / 100
	f[16] = float64(equalTops)
	f[17] = float64(aces)
}

// weights returns the learned value's coefficients for positions of s's
// game, or nil where Evaluate adds no learned value: one and two suits
// under either rule set (fitted on classic games, each won cardems deals
// too), for search (not the oracle) and not HandOnly. Four suits have
// none.
func (a *Search) weights(s *env.State) *[NumValueFeatures]float64 {
	if a.Peek || a.HandOnly {
		return nil
	}
	switch r := s.Rules(); {
	case r.Suits() == 1:
		return &valueWeights
	case r.Suits() == 2:
		return &valueWeights2
	}
	return nil
}

// learned is the learned log-odds that search wins from s (with column
// col's top card of rank r when col >= 0; ValueFeatures), in Evaluate's
// points, or 0 where Evaluate adds no learned value (weights).
func (a *Search) learned(s *env.State, col int, r env.Rank) int {
	w := a.weights(s)
	if w == nil {
		return 0
	}
	var v valueCounts
	v.count(s, col, a.buf[:])
	return logOdds(w, &v, s, col, r)
}

// logOdds is the learned log-odds that search wins from the position v
// counts, with column col's top card of rank r when col >= 0
// (valueCounts.features), in Evaluate's points.
func logOdds(w *[NumValueFeatures]float64, v *valueCounts, s *env.State, col int, r env.Rank) int {
	var f [NumValueFeatures]float64
	v.features(&f, s, col, r)
	z := 0.0
	for i, x := range f {
		z += w[i] * x
	}
	return int(math.Round(valueMix * z))
}

// revealValue values next, reached from prev by a move that turned a
// card. Evaluate does not look at a lone turned card, but the learned
// value does (it counts where cards can go), so with it the turned card's
// rank is not taken from the sampled game search plans on: the learned
// part is averaged over every rank the card can have, each weighted by
// how many cards of that rank are not yet seen. The position is counted
// once for all the ranks.
func (a *Search) revealValue(prev, next *env.State) int {
	w := a.weights(next)
	if w == nil {
		return a.Evaluate(next)
	}
	hand, over := a.handValue(next)
	if over {
		return hand
	}
	col := -1
	for c := range env.NumColumns {
		if next.FaceDown(c) < prev.FaceDown(c) && next.FaceUpCount(c) == 1 {
			col = c
			break
		}
	}
	var v valueCounts
	v.count(next, col, a.buf[:])
	if col < 0 {
		return hand + logOdds(w, &v, next, -1, 0)
	}
	// Evaluate's value of next, the turned card as the sampled game has it.
	e := hand + logOdds(w, &v, next, col, next.Top(col).Rank())
	if e == valueWon || e == -valueWon {
		return e
	}
	total, sum := 0, 0
	for k := env.Ace; k <= env.King; k++ {
		// v.seen leaves the turned card out: it is not seen yet.
		if n := rankCopies - v.seen[k]; n > 0 {
			total += n
			sum += n * logOdds(w, &v, next, col, k)
		}
	}
	if total == 0 {
		return e
	}
	return hand + sum/total
}

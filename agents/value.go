package agents

import (
	"math"

	"github.com/spiderenv/spider/env"
)

// value.go holds the learned part of search's evaluation on one suit and
// on classic two suits: a logistic model of the chance that search wins
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

// valueWeights2 are the learned value's coefficients on classic two
// suits, as valueWeights are on one suit. Printed by `go run
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
func ValueFeatures(f *[NumValueFeatures]float64, s *env.State, col int, r env.Rank, buf []env.Card) {
	var seen [env.NumRanks + 1]int         // visible cards of each rank
	var top, base [env.NumColumns]env.Rank // each column's top card, and the deepest of its movable run
	var runLen [env.NumColumns]int
	var breaks, kings, empty, hidden, down, faceUp int
	minDown := 0
	sqrtDown := 0.0
	for c := range env.NumColumns {
		d := s.FaceDown(c)
		down += d
		if d > 0 {
			hidden++
			if minDown == 0 || d < minDown {
				minDown = d
			}
			sqrtDown += math.Sqrt(float64(d))
		}
		if s.Height(c) == 0 {
			empty++
			continue
		}
		up := s.AppendFaceUp(buf[:0], c)
		runLen[c] = s.RunLength(c)
		if c == col {
			up = up[len(up)-1:]
			up[0] = env.MakeCard(r, up[0].Suit())
			runLen[c] = 1
		}
		faceUp += len(up)
		for i, x := range up {
			seen[x.Rank()]++
			if i > 0 && !(x+1 == up[i-1] && x.Rank() != env.King) {
				breaks++
			}
		}
		if d > 0 && up[0].Rank() == env.King {
			kings++
		}
		top[c] = up[len(up)-1].Rank()
		base[c] = top[c] + env.Rank(runLen[c]-1)
	}
	for k := env.Ace; k <= env.King; k++ {
		seen[k] += s.Runs()
	}
	var ways, reveals, equalTops, aces int
	var hope, runSq float64
	for c := range env.NumColumns {
		h := s.Height(c)
		if h == 0 {
			continue
		}
		runSq += float64(runLen[c] * runLen[c])
		// Can its movable run go somewhere: onto a card one rank above, or
		// into an empty column (when that leaves something behind)?
		on := empty > 0 && runLen[c] < h
		for e := range env.NumColumns {
			if on || base[c] == env.King {
				break
			}
			on = e != c && s.Height(e) > 0 && top[e] == base[c]+1
		}
		if on {
			ways++
			if s.FaceDown(c) > 0 && s.FaceUpCount(c) == runLen[c] {
				reveals++
			}
		}
		if top[c] == env.Ace {
			aces++
		} else {
			hope += float64(rankCopies - seen[top[c]-1]) // unseen cards that could go on it
		}
		for e := c + 1; e < env.NumColumns; e++ {
			if s.Height(e) > 0 && top[e] == top[c] {
				equalTops++
			}
		}
	}
	deals := float64(s.StockLeft()) / env.DealSize
	f[0] = 1
	f[1] = deals
	f[2] = float64(down) / 10
	f[3] = float64(hidden)
	f[4] = float64(empty)
	f[5] = float64(s.Runs())
	f[6] = float64(breaks)
	f[7] = float64(ways)
	f[8] = float64(reveals)
	f[9] = float64(minDown)
	f[10] = sqrtDown
	f[11] = float64(kings)
	f[12] = hope / rankCopies
	f[13] = deals * float64(down) / 10
	f[14] = float64(faceUp) / 10
	f[15] = runSq / 100
	f[16] = float64(equalTops)
	f[17] = float64(aces)
}

// learned is the learned log-odds that search wins from s (with column
// col's top card of rank r when col >= 0; ValueFeatures), in Evaluate's
// points.
func (a *Search) learned(s *env.State, col int, r env.Rank) int {
	var f [NumValueFeatures]float64
	ValueFeatures(&f, s, col, r, a.buf[:])
	w := &valueWeights
	if s.Rules().Suits() == 2 {
		w = &valueWeights2
	}
	z := 0.0
	for i, x := range f {
		z += w[i] * x
	}
	return int(math.Round(valueMix * z))
}

// usesLearned reports whether Evaluate adds the learned value to positions
// of s's game: one suit, under either rule set (fitted on classic games,
// it won cardems tuning deals too), or classic two suits (not played on
// cardems two suits yet), for search (not the oracle) and not HandOnly.
func (a *Search) usesLearned(s *env.State) bool {
	r := s.Rules()
	suited := r.Suits() == 1 || r.Suits() == 2 && r.RuleSet() == env.Classic
	return suited && !a.Peek && !a.HandOnly
}

// revealValue values next, reached from prev by a move that turned a
// card. Evaluate does not look at a lone turned card, but the learned
// value does (it counts where cards can go), so with it the turned card's
// rank is not taken from the sampled game search plans on: the learned
// part is averaged over every rank the card can have, each weighted by
// how many cards of that rank are not yet seen.
func (a *Search) revealValue(prev, next *env.State) int {
	v := a.Evaluate(next)
	if !a.usesLearned(next) || v == valueWon || v == -valueWon {
		return v
	}
	col := -1
	for c := range env.NumColumns {
		if next.FaceDown(c) < prev.FaceDown(c) && next.FaceUpCount(c) == 1 {
			col = c
			break
		}
	}
	if col < 0 {
		return v
	}
	var unseen [env.NumRanks + 1]int
	for k := env.Ace; k <= env.King; k++ {
		unseen[k] = rankCopies - next.Runs()
	}
	for c := range env.NumColumns {
		for _, x := range next.AppendFaceUp(a.buf[:0], c) {
			unseen[x.Rank()]--
		}
	}
	unseen[next.Top(col).Rank()]++ // the turned card is not seen yet
	total, sum := 0, 0
	for k := env.Ace; k <= env.King; k++ {
		if n := unseen[k]; n > 0 {
			total += n
			sum += n * a.learned(next, col, k)
		}
	}
	if total == 0 {
		return v
	}
	return v - a.learned(next, -1, 0) + sum/total
}

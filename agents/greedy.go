package agents

import (
	"github.com/spiderenv/spider/env"
	"github.com/spiderenv/spider/internal/rng"
)

// Random picks uniformly among the legal actions.
type Random struct{ g rng.Rand }

// Name returns "random".
func (*Random) Name() string { return "random" }

// Begin reseeds the agent for a new game. The stream is mixed away from
// the deal's, which the same seed drives.
func (r *Random) Begin(seed uint64) { r.g = rng.New(rng.Mix(seed, 0x72616e646f6d)) }

// Act picks a legal action at random.
func (r *Random) Act(v View) Decision {
	l := v.Legal()
	return Decision{Action: l[r.g.IntN(len(l))], Reason: "chosen at random"}
}

// First plays the legal action with the lowest id. It is a reference, not
// a player: the tests of remote agents compare an agent outside the
// process that does the same with it, deal for deal.
type First struct{}

// Name returns "first".
func (First) Name() string { return "first" }

// Begin does nothing: First needs no seed.
func (First) Begin(uint64) {}

// Act plays the first legal action.
func (First) Act(v View) Decision {
	return Decision{Action: v.Legal()[0], Reason: "the first legal action"}
}

// Greedy scores every legal move by what a player can see it does and plays
// the best, dealing only when no move does anything useful. In order of
// weight: a move that completes a King-to-Ace run; one that turns a
// face-down card; one that empties a column (without filling another); one
// that joins a card to the same suit; one that fills an empty column only
// to turn a card or free a longer run. It penalises moves that split a
// same-suit pair, that take back the previous move, and that only shuffle
// cards between equal places, and above all moves back into a position it
// has already seen this game (it remembers what it saw, as a player would),
// which is what keeps it from looping until the step limit. Ties go to the
// lowest action id, so Greedy is deterministic without a seed.
type Greedy struct {
	seen seenPositions
}

// Name returns "greedy".
func (*Greedy) Name() string { return "greedy" }

// Begin forgets the positions of the last game.
func (g *Greedy) Begin(uint64) { clear(g.seen) }

// Scores of the features, and the reasons they give.
const (
	scoreRun      = 1000
	scoreTurn     = 100
	scoreEmpty    = 60
	scoreSuit     = 30
	scoreRank     = 5
	penaltySplit  = 40
	penaltyEmpty  = 30
	penaltyUndo   = 200
	penaltySeen   = 150
	dealThreshold = 0 // deal once no move scores above this
)

// Act plays the best-scoring move, or deals.
func (g *Greedy) Act(v View) Decision {
	if g.seen == nil {
		g.seen = seenPositions{}
	}
	// Moves change only visible cards (a card turned up is new anyway), so
	// a sampled game shows where each move leads as well as the real one.
	sample := v.Sample(uint64(v.Steps()))
	g.seen.mark(&sample)
	best, bestScore, bestWhy := env.Action(0), -1<<30, ""
	canDeal := false
	for _, a := range v.Legal() {
		if a == env.Deal {
			canDeal = true
			continue
		}
		s, why := score(v, a)
		if g.seen.leadsBack(&sample, a) {
			s -= penaltySeen
		}
		if s > bestScore {
			best, bestScore, bestWhy = a, s, why
		}
	}
	if canDeal && (bestScore <= dealThreshold) {
		return Decision{Action: env.Deal, Reason: "no move does anything useful: deal"}
	}
	if bestWhy == "" {
		bestWhy = "nothing better to do"
	}
	return Decision{Action: best, Reason: bestWhy}
}

// score rates move a from visible facts only.
func score(v View, a env.Action) (int, string) {
	src, dst, k := a.Move()
	up := v.FaceUpCount(src)
	var cards [2]env.Card // the moved group's bottom card and the card under it
	var buf [104]env.Card
	col := v.AppendFaceUp(buf[:0], src)
	cards[0] = col[len(col)-k]
	under := env.NoCard
	if len(col) > k {
		under = col[len(col)-k-1]
	}
	cards[1] = under
	s, why := 0, ""
	add := func(n int, reason string) {
		s += n
		if why == "" && n > 0 {
			why = reason
		}
	}
	dstTop := v.Top(dst)
	// A completed run: the destination's same-suit run plus the group.
	if dstTop != env.NoCard && dstTop.Suit() == cards[0].Suit() && v.RunLength(dst)+k >= env.NumRanks {
		add(scoreRun, "completes a King-to-Ace run")
	}
	turns := k == up && v.FaceDown(src) > 0
	if turns {
		add(scoreTurn, "turns a face-down card")
	}
	empties := k == up && v.FaceDown(src) == 0
	if dstTop == env.NoCard {
		// Into an empty column: worth it only to turn a card.
		if !turns {
			s -= penaltyEmpty
		}
		if empties {
			s -= penaltyEmpty // a whole column into an empty one changes nothing
		}
	} else {
		if empties {
			add(scoreEmpty, "empties a column")
		}
		if dstTop.Suit() == cards[0].Suit() {
			add(scoreSuit, "builds a same-suit run")
		} else {
			add(scoreRank, "builds down in rank")
		}
	}
	// Splitting a natural same-suit pair loses order, unless it turns a card.
	if under != env.NoCard && under.Suit() == cards[0].Suit() && under.Rank() == cards[0].Rank()+1 && !turns {
		s -= penaltySplit
	} else if under != env.NoCard && under.Rank() == cards[0].Rank()+1 && !turns && dstTop != env.NoCard && dstTop.Suit() != cards[0].Suit() {
		// Moving between two places of the same rank and no better suit.
		s -= penaltySplit / 2
	}
	if last, ok := v.Last(); ok && last != env.Deal {
		ls, ld, lk := last.Move()
		if ls == dst && ld == src && lk == k {
			s -= penaltyUndo
		}
	}
	return s, why
}

// seenPositions remembers the positions of one game by State.Key, which
// covers only what a player sees, so that an agent can avoid going back.
type seenPositions map[uint64]bool

// mark records s as seen.
func (m seenPositions) mark(s *env.State) { m[s.Key()] = true }

// leadsBack reports whether playing a from s returns to a position already
// seen. A deal or a move that turns a card never does: what it shows is
// new. Since only such moves reveal anything, s may be a sampled game.
func (m seenPositions) leadsBack(s *env.State, a env.Action) bool {
	if a == env.Deal {
		return false
	}
	next := *s
	if _, err := next.Step(a); err != nil {
		return false
	}
	return next.TotalFaceDown() == s.TotalFaceDown() && m[next.Key()]
}

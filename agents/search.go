package agents

import (
	"slices"
	"time"
	"unsafe"

	"github.com/spiderenv/spider/env"
	"github.com/spiderenv/spider/internal/rng"
)

// Search plays without peeking by searching everything a player can foresee
// exactly: the positions reachable from the current one by moves that turn
// no card and deal nothing, since those moves show nothing new and their
// outcome is certain. It explores them breadth first (so each is reached by
// its shortest line) up to Nodes positions, counting positions that differ
// only by column order once, and values each by Evaluate. A run of several
// same-suit segments that empty columns let move (a segment at a time,
// parking the others) is one step of the search, not several (macros): with
// an empty column, a breadth-first plan fills its budget before it reaches
// these lines, which lifted two and four suits (docs/results.md). The moves
// that would show something new are chance nodes: a turned card lies alone
// on its column, where Evaluate's hand-set weights do not look at what it
// is, so such a move is valued by Evaluate after it in any game (on one
// and two suits, where Evaluate adds a learned value that
// counts where cards can go, by its mean over the ranks the card can
// have); a deal is valued by
// the mean of Evaluate over Samples games dealt anew from what is visible
// (View.Sample). The real hidden cards are never read. Search then plays the
// line to the best position or chance move found, and plans again only once
// the line is played or something new has been seen. Each plan strictly
// improves the value or turns a card or deals, so it cannot loop while it
// sees a way forward; when it sees none (no card to turn, no deal, nothing
// better within the budget) the game is as good as lost and it plays the
// first legal move.
//
// Search is deterministic given its seed (unless MoveTime is set) and keeps
// its buffers between moves, so use one per goroutine.
type Search struct {
	// Nodes is the positions explored per plan, 0 or less meaning
	// DefaultNodes. Its buffers grow with it: a budget past MaxNodes,
	// which NewWith refuses, can panic for want of memory.
	Nodes   int
	Samples int // games sampled per chance move; 0 means 4

	// MoveTime, when positive, bounds the time one move may spend
	// planning: a plan that has run this long stops exploring and plays
	// the best line it found, as if its node budget were full. Nodes still
	// applies, whichever comes first. Moves then depend on the machine's
	// speed and load, so results are no longer reproducible; 0 (the
	// default) plans by nodes alone. A limit too short to find any better
	// position, card to turn or deal plays the first legal move.
	MoveTime time.Duration

	// HandOnly values positions by the hand-set weights of Evaluate alone,
	// as search did before the learned value (value.go; one and two
	// suits): the player whose games that value was fitted
	// on, kept to refit it and to compare with.
	HandOnly bool

	// Draw picks the draw of the hidden cards search samples: its
	// generator is seeded by the deal's seed, mixed with Draw unless Draw
	// is 0. Search's wins on a deal can depend on that draw (on one suit,
	// one deal in ten is won by one draw and lost by another;
	// docs/results.md), so comparing a change of search with its mean over
	// a few draws, rather than with one, keeps the draw's luck apart from
	// the change. The oracle samples nothing and ignores it.
	Draw uint64

	// Peek makes it an oracle: it searches the real game, hidden cards
	// included, and turning a card or dealing is no longer a chance node.
	// An upper bound for comparisons, never a fair player.
	Peek bool

	g     rng.Rand
	stop  <-chan struct{}  // closed when the game's context ends (stopOn)
	clock func() time.Time // time.Now; tests replace it
	plan  []env.Action     // the rest of the current line
	why   string           // the reason search gave for the line
	want  uint64           // the key the next position must have to follow it
	nodes []node
	index map[uint64]int32
	legal []env.Action
	buf   [env.NumCards]env.Card
	mbuf  []env.Action // the moves of every macro of a plan's tree
	found []macro
}

// macro is a line of moves search takes as one step: a mixed run moved
// through empty columns (macros).
type macro struct {
	s        env.State // the position after it
	start, n int32     // its moves, a.mbuf[start:start+n]
}

// node is one position of a plan's search tree.
type node struct {
	s      env.State
	parent int32
	action env.Action // the move from parent
	mstart int32      // when mlen > 0, a macro: the moves a.mbuf[mstart:mstart+mlen]
	mlen   int32
}

// Name returns "search", "oracle" when it peeks, or "search-hand" when it
// is HandOnly.
func (a *Search) Name() string {
	switch {
	case a.Peek:
		return "oracle"
	case a.HandOnly:
		return "search-hand"
	}
	return "search"
}

// Begin reseeds the agent (from seed and Draw) and drops any plan.
func (a *Search) Begin(seed uint64) {
	s := rng.Mix(seed, 0x736561726368)
	if a.Draw != 0 {
		s = rng.Mix(s, a.Draw) // 0 keeps the draw every earlier result was played with
	}
	a.g = rng.New(s)
	a.plan = a.plan[:0]
}

// Weights of Evaluate.
const (
	valueRun    = 5000 // a completed run
	valueDown   = 100  // per face-down card (a cost)
	valueHidden = 20   // per column with face-down cards (a cost)
	valueEmpty  = 150  // an empty column
	valueBreak  = 40   // a face-up card on one it does not follow (a cost)
	// A card on the next rank of another suit costs as much as a break:
	// only a same-suit sequence moves as one, so such a link is as stuck.
	// Charging a quarter of a break (10) built mixed sequences that later
	// could not move: 40 won 116 two-suit tuning deals (seeds 1-240) to
	// 83 (docs/results.md). On one suit it never applies.
	valueSuit = 40
	// valueShort is the cost of each empty column the stock still needs at
	// a deal. A cardems deal skips empty columns, and the stock deals only
	// while it holds ten cards, so it ends empty only if the empty columns
	// at its deals add up to a multiple of ten: one deal past an empty
	// column leaves nine more to find, or cards stuck in the stock for
	// good. Search that valued such a deal like any other won 3 of cardems
	// seeds 1-10, 6 of the 7 lost with 2-8 cards stuck (docs/results.md).
	valueShort = valueRun
	valueWon   = 1 << 30
)

// Evaluate rates a position from visible facts only: completed runs, then
// face-down cards, empty columns, and order in the face-up cards, by
// hand-set weights; on one and two suits (unless HandOnly,
// and not for the oracle) it adds the learned value of value.go, which
// won more tuning deals (docs/results.md). A
// position whose stock can never be dealt to its end (too few cards left
// to fill the columns a deal needs, or a cardems stock of fewer than ten
// cards) counts as lost, and a cardems stock that only deals past empty
// columns can end costs a completed run's worth (5000) for each such
// column.
func (a *Search) Evaluate(s *env.State) int {
	v, over := a.handValue(s)
	if over {
		return v
	}
	return v + a.learned(s, -1, 0)
}

// handValue is Evaluate without the learned value, and whether the game
// is over (won, lost, or a stock that can never be dealt): then it is
// Evaluate's value.
func (a *Search) handValue(s *env.State) (v int, over bool) {
	switch s.Status() {
	case env.Won:
		return valueWon, true
	case env.Lost:
		return -valueWon, true
	}
	cards := 0
	for c := range env.NumColumns {
		cards += s.Height(c)
	}
	st := s.StockLeft()
	short := 0 // empty columns the deals left must pass for the stock to end (cardems)
	if r := st % env.DealSize; r != 0 {
		short = env.DealSize - r
	}
	if st > 0 && (st < env.DealSize || cards == 0 || short == 0 && cards < env.NumColumns) {
		// The stock can never be dealt to its end, so cards stay there.
		return -valueWon, true
	}
	v = valueRun*s.Runs() - valueShort*short
	for c := range env.NumColumns {
		d := s.FaceDown(c)
		v -= valueDown * d
		if d > 0 {
			v -= valueHidden
		}
		if s.Height(c) == 0 {
			v += valueEmpty
			continue
		}
		up := s.AppendFaceUp(a.buf[:0], c)
		for i := 1; i < len(up); i++ {
			lo, hi := up[i], up[i-1]
			switch {
			case lo+1 == hi && lo.Rank() != env.King:
			case lo.Rank()+1 == hi.Rank():
				v -= valueSuit
			default:
				v -= valueBreak
			}
		}
	}
	return v, false
}

// Act follows the current line, or plans a new one.
func (a *Search) Act(v View) Decision {
	if a.index == nil {
		a.index = make(map[uint64]int32)
	}
	world := *v.s
	if !a.Peek {
		world = v.Sample(a.g.Uint64())
	}
	if len(a.plan) > 0 && world.Key() == a.want && world.Legal(a.plan[0]) {
		return a.follow(&world, planReasons[a.why][1])
	}
	a.plan = a.plan[:0]
	why := a.search(&world)
	if len(a.plan) == 0 {
		// Nothing to search (cannot happen while an action is legal).
		return Decision{Action: v.Legal()[0], Reason: "nothing better to do"}
	}
	a.why = why
	if len(a.plan) > 1 {
		// The reason is where the line ends, not what its first move does.
		why = planReasons[why][0]
	}
	return a.follow(&world, why)
}

// The reasons search gives for a line, by where it ends.
const (
	whyWins        = "wins the game"
	whyTurns       = "turns a face-down card"
	whyDeals       = "deals once nothing better can be foreseen"
	whyFill        = "fills the empty columns to deal"
	whyBetter      = "leads to a better position"
	whyOracleDeals = "deals: nothing better is in reach"
	whyStuck       = "sees no way forward"
	whyOutOfTime   = "found no way forward before its time ran out"
)

// planReasons are a plan's reasons as its first move (index 0) and its
// later moves (1) say them: a hint's reader takes "wins the game" to be
// the move's. Kept as strings, so that saying them allocates nothing.
var planReasons = func() map[string][2]string {
	m := map[string][2]string{}
	for _, why := range []string{whyWins, whyTurns, whyDeals, whyFill, whyBetter, whyOracleDeals, whyStuck, whyOutOfTime} {
		m[why] = [2]string{"starts a plan that " + why, "continues a plan that " + why}
	}
	return m
}()

// follow plays the first action of the plan, remembering where it leads.
func (a *Search) follow(world *env.State, why string) Decision {
	act := a.plan[0]
	a.plan = a.plan[1:]
	before := world.TotalFaceDown()
	world.Step(act)
	if act == env.Deal || world.TotalFaceDown() != before {
		a.plan = a.plan[:0] // something new is seen: plan again
	}
	a.want = world.Key()
	return Decision{Action: act, Reason: why}
}

// DefaultNodes is the positions a plan of search and the oracle may
// explore when Nodes is 0.
const DefaultNodes = 20000

// budget returns the positions one plan may explore.
func (a *Search) budget() int {
	if a.Nodes <= 0 {
		return DefaultNodes
	}
	return a.Nodes
}

// Traits says that search plays by its node budget and time limit, and
// that the oracle (Peek) sees the hidden cards and samples nothing.
func (a *Search) Traits() Traits { return Traits{Peeks: a.Peek, Budget: true, Draws: !a.Peek} }

// Bytes returns the memory a holds once it has planned: its whole node
// budget, which it reserves at its first plan and keeps, at
// SearchNodeBytes a position. A caller that runs many searches at once
// (an eval's workers) checks their sum against the memory there is, since
// at MaxNodes each takes over a gigabyte.
func (a *Search) Bytes() int64 { return int64(a.budget()) * SearchNodeBytes }

// SearchNodeBytes is what search holds for each position of its budget:
// the node (a State and its move) and its entry in the index of positions.
const SearchNodeBytes = int64(unsafe.Sizeof(node{})) + 48

// search explores the foreseeable positions from root and leaves the best
// line in a.plan, returning why it was chosen.
func (a *Search) search(root *env.State) string {
	budget := a.budget()
	samples := a.Samples
	if samples <= 0 {
		samples = 4
	}
	clear(a.index)
	a.mbuf = a.mbuf[:0]
	bestLeafMacro, bestLeafMacroLen := int32(0), int32(0) // a macro's moves in a.mbuf, when the best leaf is one
	if cap(a.nodes) < budget {
		// The whole budget at once: growing by append would copy up to
		// gigabytes at a time (1.1 KB a position), a copy the runtime
		// cannot interrupt, which holds up even the Ctrl-C handler.
		a.nodes = make([]node, 0, budget)
	}
	a.nodes = append(a.nodes[:0], node{s: *root, parent: -1})
	a.index[a.key(root)] = 0
	rootValue := a.Evaluate(root)
	bestStatic, bestStaticValue := -1, -valueWon-1 // best position other than the root
	bestLeaf, bestLeafAction, bestLeafValue := -1, env.Action(0), -valueWon-1
	leafWhy, dealSeen := "", false
	var start time.Time
	outOfTime := false
	if a.MoveTime > 0 {
		start = a.now()
	}
	for i := 0; i < len(a.nodes); i++ {
		if i&(clockEvery-1) == clockEvery-1 && (a.MoveTime > 0 && a.now().Sub(start) >= a.MoveTime || a.stopped()) {
			// Out of time, or the game is being stopped: what is found
			// so far decides, as when the budget is full and the tree is
			// spent.
			outOfTime = true
			break
		}
		s := a.nodes[i].s
		a.legal = s.AppendLegal(a.legal[:0])
		down := s.TotalFaceDown()
		firstEmpty := emptyColumn(&s)
		for _, act := range a.legal {
			if act != env.Deal {
				if _, dst, _ := act.Move(); s.Height(dst) == 0 && dst != firstEmpty {
					continue // empty columns are alike: try only the first
				}
			}
			next := s
			next.Step(act)
			if next.Status() == env.Won || !a.Peek && (act == env.Deal || next.TotalFaceDown() != down) {
				// A turned card lies alone on its column, so what it
				// is changes little Evaluate sees (revealValue): only
				// deals need samples.
				var val int
				if act == env.Deal {
					// Only a deal onto every column counts: a cardems deal
					// past an empty column is valued, but the fill below
					// is still wanted when none other is seen.
					dealSeen = dealSeen || firstEmpty < 0
					val = a.chance(&s, act, samples)
				} else {
					val = a.revealValue(&s, &next)
				}
				if val > bestLeafValue {
					bestLeaf, bestLeafAction, bestLeafValue = i, act, val
					bestLeafMacroLen = 0
					switch {
					case act == env.Deal:
						leafWhy = whyDeals
					case next.Status() == env.Won:
						leafWhy = whyWins
					default:
						leafWhy = whyTurns
					}
				}
				continue
			}
			if !a.push(&next, node{parent: int32(i), action: act}, budget) {
				continue
			}
			if val := a.Evaluate(&next); val > bestStaticValue {
				bestStatic, bestStaticValue = len(a.nodes)-1, val
			}
		}
		if firstEmpty >= 0 {
			a.macros(&s, firstEmpty)
			for f := range a.found {
				m := &a.found[f]
				next := &m.s
				if next.Status() == env.Won || !a.Peek && next.TotalFaceDown() != down {
					if val := a.revealValue(&s, next); val > bestLeafValue {
						bestLeaf, bestLeafValue = i, val
						bestLeafMacro = m.start
						bestLeafMacroLen = m.n
						leafWhy = whyTurns
						if next.Status() == env.Won {
							leafWhy = whyWins
						}
					}
					continue
				}
				if !a.push(next, node{parent: int32(i), mstart: m.start, mlen: m.n}, budget) {
					continue
				}
				if val := a.Evaluate(next); val > bestStaticValue {
					bestStatic, bestStaticValue = len(a.nodes)-1, val
				}
			}
		}
	}
	if !dealSeen && !a.Peek && root.StockLeft() > 0 {
		// The deal lies beyond the horizon, behind empty columns that must
		// be filled first: fill them at the least cost, then deal.
		if w, ok := a.fill(root); ok {
			val := a.chance(&w, env.Deal, samples)
			if val > bestLeafValue {
				a.plan = append(a.plan, env.Deal)
				return whyFill
			}
		}
		a.plan = a.plan[:0]
	}
	switch {
	case bestLeaf >= 0 && (bestLeafValue >= bestStaticValue || bestStaticValue <= rootValue):
		a.line(bestLeaf)
		if bestLeafMacroLen > 0 {
			a.plan = append(a.plan, a.mbuf[bestLeafMacro:bestLeafMacro+bestLeafMacroLen]...)
		} else {
			a.plan = append(a.plan, bestLeafAction)
		}
		return leafWhy
	case bestStatic >= 0 && bestStaticValue > rootValue:
		a.line(bestStatic)
		return whyBetter
	}
	if a.Peek && root.StockLeft() > 0 {
		// The oracle's tree holds the deal as a known move; when nothing
		// better is in reach it deals, filling empty columns first.
		if _, ok := a.fill(root); ok {
			a.plan = append(a.plan, env.Deal)
			return whyOracleDeals
		}
	}
	// No card can be turned, no deal is possible and no position is better
	// within the budget: the game is as good as lost. Any move will do, and
	// the cheapest to find is the first.
	a.plan = append(a.plan[:0], root.AppendLegal(a.legal[:0])[0])
	if outOfTime {
		return whyOutOfTime
	}
	return whyStuck
}

// clockEvery is how many positions search expands between looks at the
// clock under MoveTime and at the stop channel (a power of two): a
// position takes microseconds, so either is seen well within a
// millisecond.
const clockEvery = 64

// stopOn makes plans stop early once done is closed: PlayFrom hands search
// its context's Done channel, so that a Ctrl-C stops a plan of millions of
// positions at once rather than when its budget is spent.
func (a *Search) stopOn(done <-chan struct{}) { a.stop = done }

// stopped reports whether the stop channel is closed.
func (a *Search) stopped() bool {
	select {
	case <-a.stop:
		return true
	default:
		return false
	}
}

// now reads the clock MoveTime is measured on.
func (a *Search) now() time.Time {
	if a.clock != nil {
		return a.clock()
	}
	return time.Now()
}

// push adds next to the tree as node n (n.s is set here), unless the
// budget is full or a position with its key is already there, and reports
// whether it did. Once the budget is full the key is not computed: only
// moves that show something new are still valued.
func (a *Search) push(next *env.State, n node, budget int) bool {
	if len(a.nodes) >= budget {
		return false
	}
	k := a.key(next)
	if _, ok := a.index[k]; ok {
		return false
	}
	a.index[k] = int32(len(a.nodes))
	a.nodes = append(a.nodes, n)
	a.nodes[len(a.nodes)-1].s = *next
	return true
}

// line sets a.plan to the moves from the root to node i.
func (a *Search) line(i int) {
	a.plan = a.plan[:0]
	for ; a.nodes[i].parent >= 0; i = int(a.nodes[i].parent) {
		n := &a.nodes[i]
		if n.mlen > 0 {
			for j := n.mstart + n.mlen - 1; j >= n.mstart; j-- {
				a.plan = append(a.plan, a.mbuf[j])
			}
			continue
		}
		a.plan = append(a.plan, n.action)
	}
	for l, r := 0, len(a.plan)-1; l < r; l, r = l+1, r-1 {
		a.plan[l], a.plan[r] = a.plan[r], a.plan[l]
	}
}

// chance is the mean value of playing act from s over games sampled from
// what s shows, for an action that shows something new.
func (a *Search) chance(s *env.State, act env.Action, samples int) int {
	if a.Peek {
		w := *s
		w.Step(act)
		return a.Evaluate(&w)
	}
	// In 64 bits on every platform: three lost samples (-valueWon each)
	// overflow a 32-bit int, and a 386 build played other moves.
	var total int64
	for range samples {
		w := s.Resample(a.g.Uint64())
		w.Step(act)
		total += int64(a.Evaluate(&w))
	}
	return int(total / int64(samples))
}

// fill plays into a.plan, from root, the moves that fill every empty column
// at the least loss of value, never emptying another, and reports whether
// a deal onto every column is then legal.
func (a *Search) fill(root *env.State) (env.State, bool) {
	a.plan = a.plan[:0]
	w := *root
	for range env.NumColumns {
		if emptyColumn(&w) < 0 {
			return w, w.Legal(env.Deal)
		}
		a.legal = w.AppendLegal(a.legal[:0])
		best, bestValue := env.Action(0), -valueWon-1
		for _, act := range a.legal {
			if act == env.Deal {
				continue
			}
			src, dst, k := act.Move()
			if w.Height(dst) != 0 || k == w.Height(src) {
				continue
			}
			next := w
			next.Step(act)
			if val := a.Evaluate(&next); val > bestValue {
				best, bestValue = act, val
			}
		}
		if bestValue == -valueWon-1 {
			return w, false
		}
		w.Step(best)
		a.plan = append(a.plan, best)
	}
	return w, emptyColumn(&w) < 0 && w.Legal(env.Deal)
}

// emptyColumn returns the first empty column of s, or -1 if none is.
func emptyColumn(s *env.State) int {
	for c := range env.NumColumns {
		if s.Height(c) == 0 {
			return c
		}
	}
	return -1
}

// key hashes what a player sees of s regardless of the order of the
// columns, since columns are interchangeable for what can follow: two
// positions that differ only by which column holds what share a key.
func (a *Search) key(s *env.State) uint64 {
	var cols [env.NumColumns]uint64
	for c := range env.NumColumns {
		h := uint64(s.FaceDown(c)) + 0x9e3779b97f4a7c15
		cards := s.AppendFaceUp(a.buf[:0], c)
		if a.Peek {
			cards = s.AppendFaceDown(cards, c)
		}
		for _, card := range cards {
			h = (h ^ uint64(card)) * 0xbf58476d1ce4e5b9
			h ^= h >> 31
		}
		cols[c] = h
	}
	slices.Sort(cols[:])
	h := uint64(s.StockLeft())<<8 | uint64(s.Runs())
	for _, c := range cols {
		h = (h ^ c) * 0x94d049bb133111eb
		h ^= h >> 29
	}
	return h
}

// macros finds, at s, every move of a descending run of two or more
// same-suit segments onto a card one rank above its head (or into the
// first empty column) that the other empty columns make possible, and
// leaves each in a.found, its moves in a.mbuf. Only a same-suit segment
// moves as one, so such a run moves a segment at a time: with e free
// columns, up to 2^e segments (park the top half, move the rest, bring the
// half back). A player sees each of these lines whole, so search takes it
// as one step rather than spend its budget finding it move by move.
func (a *Search) macros(s *env.State, firstEmpty int) {
	a.found = a.found[:0]
	var empties [env.NumColumns]int
	ne := 0
	for c := range env.NumColumns {
		if s.Height(c) == 0 {
			empties[ne] = c
			ne++
		}
	}
	for src := range env.NumColumns {
		up := s.AppendFaceUp(a.buf[:0], src)
		// ends[j] is the index in up of the lowest card of segment j+1,
		// counting segments from the top.
		var ends [env.NumCards]int
		nseg := 0
		for pos := len(up) - 1; pos >= 0; {
			b := pos
			for b > 0 && up[b-1] == up[b]+1 && up[b].Rank() != env.King {
				b--
			}
			ends[nseg] = b
			nseg++
			if b == 0 || up[b-1].Rank() != up[b].Rank()+1 {
				break
			}
			pos = b - 1
		}
		for j := 2; j <= nseg; j++ {
			head := up[ends[j-1]]
			whole := ends[j-1] == 0 && s.FaceDown(src) == 0
			for dst := range env.NumColumns {
				free := ne
				switch {
				case dst == src:
					continue
				case s.Height(dst) == 0:
					if dst != firstEmpty || whole {
						continue // empty columns are alike; a whole column gains nothing
					}
					free--
				case s.Top(dst).Rank() != head.Rank()+1:
					continue
				}
				if free < 1 || j > 1<<free {
					continue
				}
				var fr [env.NumColumns]int
				nf := 0
				for _, c := range empties[:ne] {
					if c != dst {
						fr[nf] = c
						nf++
					}
				}
				m := macro{s: *s, start: int32(len(a.mbuf))}
				if !a.moveSegments(&m.s, src, dst, j, fr[:nf]) {
					a.mbuf = a.mbuf[:m.start]
					continue
				}
				m.n = int32(len(a.mbuf)) - m.start
				a.found = append(a.found, m)
			}
		}
	}
}

// moveSegments moves the top j segments of src onto dst through the free
// columns, playing them on w and appending the moves to a.mbuf; it reports
// false if a move was illegal (it cannot be while j <= 2^len(free)).
func (a *Search) moveSegments(w *env.State, src, dst, j int, free []int) bool {
	if j == 1 {
		act := env.MoveAction(src, dst, w.RunLength(src))
		if !w.Legal(act) {
			return false
		}
		w.Step(act)
		a.mbuf = append(a.mbuf, act)
		return true
	}
	if len(free) == 0 {
		return false
	}
	t := j / 2
	return a.moveSegments(w, src, free[0], t, free[1:]) &&
		a.moveSegments(w, src, dst, j-t, free[1:]) &&
		a.moveSegments(w, free[0], dst, t, free[1:])
}

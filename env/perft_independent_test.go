package env_test

import (
	"strings"
	"testing"

	"github.com/spiderenv/spider/env"
)

// This file counts perft a second way, from RULES.md alone: its own
// position (read from MarshalText's text) and its own moves, sharing no
// code with the engine's move generator, so that a rule the mask and Step
// both get wrong still shows.

// ipCard is a card as the independent count holds it.
type ipCard struct{ rank, suit byte } // rank 1 (Ace) to 13 (King)

// ipPos is a position: each column's cards bottom first with how many are
// face down, and the stock in deal order.
type ipPos struct {
	cols    [10][]ipCard
	down    [10]int
	stock   []ipCard
	runs    int
	cardems bool
}

func ipParse(t *testing.T, s env.State, cardems bool) ipPos {
	t.Helper()
	text, err := s.MarshalText()
	if err != nil {
		t.Fatal(err)
	}
	card := func(w string) ipCard {
		return ipCard{rank: byte(strings.IndexByte("?A23456789TJQK", w[0])), suit: w[1]}
	}
	p := ipPos{cardems: cardems}
	for _, line := range strings.Split(string(text), "\n") {
		key, val, _ := strings.Cut(line, ":")
		words := strings.Fields(val)
		switch {
		case key == "stock":
			for _, w := range words {
				p.stock = append(p.stock, card(w))
			}
		case key == "runs":
			p.runs = len(words)
		case len(key) <= 2 && key != "" && key[0] >= '1' && key[0] <= '9':
			c := int(key[0] - '1')
			if key == "10" {
				c = 9
			}
			for _, w := range words {
				if w == "|" {
					p.down[c] = len(p.cols[c])
					continue
				}
				p.cols[c] = append(p.cols[c], card(w))
			}
		}
	}
	return p
}

// clone copies p deeply.
func (p ipPos) clone() ipPos {
	q := p
	for c := range q.cols {
		q.cols[c] = append([]ipCard(nil), p.cols[c]...)
	}
	q.stock = append([]ipCard(nil), p.stock...)
	return q
}

// movable is how many cards on top of column c may move together: face
// up, each one rank below the one under it, of one suit.
func (p ipPos) movable(c int) int {
	col := p.cols[c]
	if len(col) == p.down[c] {
		return 0
	}
	n := 1
	for i := len(col) - 1; i > p.down[c]; i-- {
		lo, hi := col[i], col[i-1]
		if lo.suit != hi.suit || lo.rank+1 != hi.rank {
			break
		}
		n++
	}
	return n
}

// settle removes completed runs from column c and turns a face-down top
// card up.
func (p *ipPos) settle(c int) {
	col := p.cols[c]
	if n := len(col); n-p.down[c] >= 13 {
		run := true
		for i := range 13 {
			if col[n-1-i].rank != byte(i+1) || col[n-1-i].suit != col[n-1].suit {
				run = false
			}
		}
		if run {
			p.cols[c] = col[:n-13]
			p.runs++
		}
	}
	if len(p.cols[c]) == p.down[c] && p.down[c] > 0 {
		p.down[c]--
	}
}

// next lists the positions after every legal action: each move (source,
// destination, number of cards) and the deal.
func (p ipPos) next() []ipPos {
	if p.runs == 8 {
		return nil // won
	}
	var out []ipPos
	for from := range 10 {
		m := p.movable(from)
		for k := 1; k <= m; k++ {
			bottom := p.cols[from][len(p.cols[from])-k]
			for to := range 10 {
				if to == from {
					continue
				}
				dst := p.cols[to]
				if len(dst) > 0 && dst[len(dst)-1].rank != bottom.rank+1 {
					continue
				}
				q := p.clone()
				n := len(q.cols[from])
				q.cols[to] = append(q.cols[to], q.cols[from][n-k:]...)
				q.cols[from] = q.cols[from][:n-k]
				q.settle(from)
				q.settle(to)
				out = append(out, q)
			}
		}
	}
	empty, filled := false, false
	for c := range 10 {
		empty = empty || len(p.cols[c]) == 0
		filled = filled || len(p.cols[c]) > 0
	}
	// Classic deals onto ten filled columns; cardems whenever ten cards
	// are left, but not onto ten empty ones (RULES.md, decision 4).
	if len(p.stock) >= 10 && (!empty || p.cardems && filled) {
		q := p.clone()
		for c := range 10 {
			if len(q.cols[c]) == 0 && q.cardems {
				continue // cardems: an empty column stays empty
			}
			q.cols[c] = append(q.cols[c], q.stock[0])
			q.stock = q.stock[1:]
		}
		for c := range 10 {
			q.settle(c)
		}
		out = append(out, q)
	}
	// The game is lost when nothing is legal; a position with actions
	// that all lead nowhere still counts them.
	return out
}

func ipPerft(p ipPos, depth int) int {
	if depth == 0 {
		return 1
	}
	n := 0
	for _, q := range p.next() {
		n += ipPerft(q, depth-1)
	}
	return n
}

// TestPerftIndependent compares the engine's perft with the independent
// count on positions of seeded playouts, under both rule sets and every
// suit count, 60 moves in and at the first position with an empty column
// while ten stock cards remain (where the rule sets differ), and on the
// hand-counted position.
func TestPerftIndependent(t *testing.T) {
	depth := 4
	if testing.Short() {
		depth = 3
	}
	for _, rs := range []env.RuleSet{env.Classic, env.Cardems} {
		for _, suits := range []int{1, 2, 4} {
			r := env.MustRules(env.Options{RuleSet: rs, Suits: suits})
			for seed := uint64(1); seed <= 4; seed++ {
				var positions []env.State
				found := false
				randomPlayout(r, seed, 400, func(s *env.State, _ []env.Action) {
					if s.Steps() == 60 {
						positions = append(positions, *s)
					}
					empty := false
					for c := range env.NumColumns {
						empty = empty || s.Height(c) == 0
					}
					if !found && s.StockLeft() >= 10 && empty {
						found = true
						positions = append(positions, *s)
					}
				})
				for _, s := range positions {
					want := perft(s, depth)
					if got := ipPerft(ipParse(t, s, rs == env.Cardems), depth); got != want {
						text, _ := s.MarshalText()
						t.Errorf("%v seed %d, step %d: perft(%d) %d by the engine, %d counted independently\n%s", r, seed, s.Steps(), depth, want, got, text)
					}
				}
			}
		}
		r := env.MustRules(env.Options{RuleSet: rs, Suits: 2})
		s, err := env.ParseState(r, perftPosition)
		if err != nil {
			t.Fatal(err)
		}
		p := ipParse(t, s, rs == env.Cardems)
		for d, want := range map[env.RuleSet][3]int{env.Classic: {3, 14, 114}, env.Cardems: {3, 15, 133}}[rs] {
			if got := ipPerft(p, d+1); got != want {
				t.Errorf("%v: the hand position's perft(%d) counted independently %d, by hand %d", rs, d+1, got, want)
			}
		}
	}
}

package env_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spiderenv/spider/env"
	"github.com/spiderenv/spider/internal/rng"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// golden compares got with testdata/name, or rewrites the file with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
		for i := range min(len(gl), len(wl)) {
			if gl[i] != wl[i] {
				t.Fatalf("%s differs at line %d:\n got: %s\nwant: %s", path, i+1, gl[i], wl[i])
			}
		}
		t.Fatalf("%s differs in length: %d lines, want %d", path, len(gl), len(wl))
	}
}

// TestGoldenDeals pins the deal of several seeds for every suit count: a
// public contract, since published results quote seeds.
func TestGoldenDeals(t *testing.T) {
	var b strings.Builder
	for _, suits := range []int{1, 2, 4} {
		r := env.MustRules(env.Options{Suits: suits})
		for _, seed := range []uint64{0, 1, 2, 42, 20261129, 1<<64 - 1} {
			s := env.NewGame(r, seed)
			if err := s.Validate(); err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			text, _ := s.MarshalText()
			fmt.Fprintf(&b, "# %d suits, seed %d\n%s\n", suits, seed, text)
		}
	}
	golden(t, "deals.golden", b.String())
}

func TestDealShape(t *testing.T) {
	for _, suits := range []int{1, 2, 4} {
		s := env.NewGame(env.MustRules(env.Options{Suits: suits}), 11)
		for c := range env.NumColumns {
			want := 5
			if c < 4 {
				want = 6
			}
			if s.Height(c) != want || s.FaceDown(c) != want-1 || s.FaceUpCount(c) != 1 {
				t.Errorf("%d suits, column %d: %d cards, %d face down; want %d and %d", suits, c+1, s.Height(c), s.FaceDown(c), want, want-1)
			}
		}
		if s.StockLeft() != 50 || s.Score() != 500 || s.Steps() != 0 || s.Runs() != 0 {
			t.Errorf("%d suits: stock %d, score %d, steps %d, runs %d", suits, s.StockLeft(), s.Score(), s.Steps(), s.Runs())
		}
		if err := s.Validate(); err != nil { // all 104 cards, eight of each rank per suit share
			t.Error(err)
		}
		var deck [env.NumCards]env.Card
		env.Shuffle(&deck, suits, 11)
		seen := map[env.Suit]int{}
		for _, c := range deck {
			seen[c.Suit()]++
		}
		if len(seen) != suits {
			t.Errorf("%d suits: deck has suits %v", suits, seen)
		}
		for su, n := range seen {
			if n != env.NumCards/suits {
				t.Errorf("%d suits: %d cards of %v", suits, n, su)
			}
		}
	}
	a := env.NewGame(env.MustRules(env.Options{Suits: 4}), 12)
	b := env.NewGame(env.MustRules(env.Options{Suits: 4}), 12)
	c := env.NewGame(env.MustRules(env.Options{Suits: 4}), 13)
	if a != b || a == c {
		t.Error("the same seed must give the same deal and another seed another")
	}
}

// randomPlayout plays up to steps random legal actions from the deal of
// seed, choosing with its own generator seeded by seed, and calls visit
// before each action. It picks uniformly among the moves and deals only one
// time in forty or when nothing else is legal, so that the stock lasts
// into positions with empty columns, where the rule sets differ.
func randomPlayout(r env.Rules, seed uint64, steps int, visit func(s *env.State, legal []env.Action)) env.State {
	g := rng.New(seed ^ 0x5eed)
	s := env.NewGame(r, seed)
	var legal []env.Action
	for range steps {
		legal = s.AppendLegal(legal[:0])
		if visit != nil {
			visit(&s, legal)
		}
		if len(legal) == 0 {
			break
		}
		a := legal[g.IntN(len(legal))]
		if n := len(legal); legal[n-1] == env.Deal && n > 1 {
			a = legal[g.IntN(n-1)]
			if g.IntN(40) == 0 {
				a = env.Deal
			}
		}
		if _, err := s.Step(a); err != nil {
			panic(err)
		}
	}
	return s
}

// TestPerft sums the number of legal actions along fixed seeded playouts,
// like chess's perft: any change to the rules or the action space moves
// these numbers.
func TestPerft(t *testing.T) {
	var b strings.Builder
	b.WriteString("# rules suits seed: sum of legal actions over the first 1000 positions, final steps, score, runs, status\n")
	for _, rs := range []env.RuleSet{env.Classic, env.Cardems} {
		for _, suits := range []int{1, 2, 4} {
			r := env.MustRules(env.Options{RuleSet: rs, Suits: suits})
			for seed := uint64(1); seed <= 8; seed++ {
				sum, deals := 0, 0
				s := randomPlayout(r, seed, 1000, func(s *env.State, legal []env.Action) {
					sum += len(legal)
					if len(legal) > 0 && legal[len(legal)-1] == env.Deal {
						deals++
					}
				})
				fmt.Fprintf(&b, "%v %d %d: %d legal (%d with a deal), %d steps, score %d, runs %d, %v\n",
					rs, suits, seed, sum, deals, s.Steps(), s.Score(), s.Runs(), s.Status())
			}
		}
	}
	golden(t, "perft.golden", b.String())
}

// TestGoldenPlaythrough records short games move by move, board included.
func TestGoldenPlaythrough(t *testing.T) {
	for _, tc := range []struct {
		rs    env.RuleSet
		suits int
		seed  uint64
	}{{env.Classic, 2, 7}, {env.Cardems, 1, 8}, {env.Classic, 4, 9}} {
		r := env.MustRules(env.Options{RuleSet: tc.rs, Suits: tc.suits})
		e := env.New(r)
		e.Reset(tc.seed)
		g := rng.New(tc.seed)
		var b strings.Builder
		fmt.Fprintf(&b, "%v, seed %d\n%s", r, tc.seed, e.Render())
		for range 60 {
			s := e.State()
			legal := s.AppendLegal(nil)
			if len(legal) == 0 {
				break
			}
			a := legal[g.IntN(len(legal))]
			_, reward, term, trunc, info, err := e.Step(a)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "\n> %v  reward %v  legal %d  facedown %d  terminated %v  truncated %v\n%s",
				a, reward, info.Legal, info.FaceDown, term, trunc, e.Render())
		}
		golden(t, fmt.Sprintf("playthrough-%v-%d.txt", tc.rs, tc.suits), b.String())
	}
}

package env_test

import (
	"flag"
	"runtime"
	"sync"
	"testing"

	"github.com/spiderenv/spider/env"
	"github.com/spiderenv/spider/internal/rng"
)

var (
	boundGames = flag.Int("faceup.games", 300, "random games per configuration for TestFaceUpBound (RULES.md's figure uses 1000000)")
	boundRules = flag.String("faceup.rules", "", "only this rule set in TestFaceUpBound (default both)")
)

// TestFaceUpBound plays random games (uniform over legal actions in even
// games; moves first and a deal one time in forty in odd ones, which keeps
// the stock for positions with empty columns) to the default step limit
// and checks that no column ever holds more face-up cards than the
// observation's default slots. For classic the bound is a theorem
// (RULES.md); for cardems, whose deals can be more than five, it is this
// measurement. Run with -faceup.games=1000000 -v for RULES.md's figure.
func TestFaceUpBound(t *testing.T) {
	for _, rs := range []env.RuleSet{env.Classic, env.Cardems} {
		if *boundRules != "" && *boundRules != rs.String() {
			continue
		}
		for _, suits := range []int{1, 2, 4} {
			r := env.MustRules(env.Options{RuleSet: rs, Suits: suits})
			workers := runtime.GOMAXPROCS(0)
			var mu sync.Mutex
			most, deals := 0, 0
			var wg sync.WaitGroup
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					m, d := faceUpRun(r, w, workers, *boundGames)
					mu.Lock()
					most, deals = max(most, m), max(deals, d)
					mu.Unlock()
				}()
			}
			wg.Wait()
			t.Logf("%v %d suits: %d games, most face-up cards in a column %d, most deals in a game %d", rs, suits, *boundGames, most, deals)
			if most > env.DefaultFaceUpSlots {
				t.Errorf("%v %d suits: a column reached %d face-up cards, over the %d slots", rs, suits, most, env.DefaultFaceUpSlots)
			}
			if rs == env.Classic && deals > 5 {
				t.Errorf("classic dealt %d times in one game", deals)
			}
		}
	}
}

// faceUpRun plays games w, w+stride, ... below n and returns the most
// face-up cards seen in one column and the most deals seen in one game.
func faceUpRun(r env.Rules, w, stride, n int) (most, mostDeals int) {
	mask := make([]uint8, env.NumActions)
	var legal []env.Action
	for game := w; game < n; game += stride {
		g := rng.New(uint64(game) ^ 0xb0b)
		s := env.NewGame(r, uint64(game))
		deals := 0
		for !s.Over() {
			s.Mask(mask)
			legal = env.AppendMasked(legal[:0], mask)
			a := legal[g.IntN(len(legal))]
			if k := len(legal); game%2 == 1 && legal[k-1] == env.Deal && k > 1 {
				a = legal[g.IntN(k-1)]
				if g.IntN(40) == 0 {
					a = env.Deal
				}
			}
			u, _ := s.Step(a)
			if a == env.Deal {
				deals++
			}
			for c := range env.NumColumns {
				if u.Columns()&(1<<c) != 0 {
					most = max(most, s.FaceUpCount(c))
				}
			}
		}
		mostDeals = max(mostDeals, deals)
	}
	return most, mostDeals
}

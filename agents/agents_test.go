package agents

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spiderenv/spider/agents/nn"
	"github.com/spiderenv/spider/env"
	"github.com/spiderenv/spider/env/envtest"
)

// configs are the conformance checker's configurations, and one that
// shows fewer face-up cards in float32, so that an agent that assumed the
// default observation would fail.
func configs() []env.Rules {
	return append(envtest.Configurations(250, false), env.MustRules(env.Options{Suits: 2, MaxSteps: 250, FaceUpSlots: 6, Encoding: env.Float32}))
}

// asPolicy runs agent a under the conformance checker, which checks every
// invariant after each of its moves (and that each move is legal).
func asPolicy(a Agent) envtest.Policy {
	var last env.Action
	has, games := false, uint64(0)
	return func(s *env.State, mask []uint8) env.Action {
		if s.Steps() == 0 {
			games++
			a.Begin(games)
			has = false
		}
		d := a.Act(NewView(s, env.AppendMasked(nil, mask), last, has))
		last, has = d.Action, true
		return d.Action
	}
}

// testBudget keeps the searching agents quick in tests.
var testBudget = Options{Nodes: 400}

func TestAgentsConformance(t *testing.T) {
	for _, name := range Names() {
		m, _ := NewWith(name, testBudget)
		for _, r := range configs() {
			t.Run(fmt.Sprint(name, "/", r), func(t *testing.T) {
				t.Parallel()
				st := envtest.Check(t, r, asPolicy(m()), envtest.Config{Games: 3, Seed: 40})
				if st.Steps == 0 {
					t.Fatal("no step played")
				}
			})
		}
	}
}

// TestAgentsNeverReadHiddenCards plays each agent on a game and, in
// lockstep, a second instance on the same game with its unseen cards dealt
// anew before every decision: the choices must be the same. It runs on
// every configuration the conformance test does, and shows each agent the
// last move as real play does (a View with the move, from the second
// decision on), so a look at the cards taken only on one path is seen.
func TestAgentsNeverReadHiddenCards(t *testing.T) {
	for _, name := range Names() {
		if TraitsOf(name).Peeks {
			continue // it sees them, labelled: TestPeekingAgentsReadHiddenCards
		}
		m, _ := NewWith(name, testBudget)
		for _, r := range configs() {
			t.Run(fmt.Sprint(name, "/", r), func(t *testing.T) {
				t.Parallel()
				for seed := uint64(0); seed < 3; seed++ {
					lockstep(t, r, seed, m(), m())
				}
			})
		}
	}
}

// TestViewKeyIsWhatAPlayerSees: along a game, the View's key is the same
// for the game and for one with its unseen cards dealt anew, and it
// changes when what a player sees changes.
func TestViewKeyIsWhatAPlayerSees(t *testing.T) {
	s := env.NewGame(env.MustRules(env.Options{Suits: 2}), 11)
	keys := map[uint64]int{}
	for step := 0; step < 60 && !s.Over(); step++ {
		legal := s.AppendLegal(nil)
		other := s.Resample(uint64(step))
		k := NewView(&s, legal, 0, false).Key()
		if k != NewView(&other, legal, 0, false).Key() || k != s.Key() {
			t.Fatalf("step %d: the key depends on the hidden cards", step)
		}
		keys[k]++
		if _, err := s.Step(legal[step%len(legal)]); err != nil {
			t.Fatal(err)
		}
	}
	if len(keys) < 20 {
		t.Fatalf("60 steps gave %d keys", len(keys))
	}
}

// lockstep plays real on the game of seed and twin, in step, on the same
// game with its unseen cards dealt anew before every decision, and fails
// at the first choice of theirs that differs.
func lockstep(t *testing.T, r env.Rules, seed uint64, real, twin Agent) {
	t.Helper()
	real.Begin(seed)
	twin.Begin(seed)
	s := env.NewGame(r, seed)
	var legal []env.Action
	var last env.Action
	for step := 0; !s.Over(); step++ {
		legal = s.AppendLegal(legal[:0])
		other := s.Resample(uint64(step) + 1000*seed)
		if other == s && s.TotalFaceDown()+s.StockLeft() > 10 {
			t.Fatal("the twin should differ in its hidden cards")
		}
		d1 := real.Act(NewView(&s, legal, last, step > 0))
		d2 := twin.Act(NewView(&other, legal, last, step > 0))
		if d1 != d2 {
			t.Fatalf("%s, %v, seed %d, step %d: %v with the real cards, %v with others", real.Name(), r, seed, step, d1, d2)
		}
		if _, err := s.Step(d1.Action); err != nil {
			t.Fatal(err)
		}
		last = d1.Action
	}
}

// TestSearchSamplesAreBlind checks that the games search plans on, though
// its generator is seeded from the deal's seed (Begin), hold the real
// hidden cards no more often than chance: the seed only makes its luck
// repeat. A sampler that dealt the game again from the seed would match
// every card.
func TestSearchSamplesAreBlind(t *testing.T) {
	r := env.MustRules(env.Options{Suits: 1})
	const deals = 400
	match, hidden := 0, 0
	for seed := uint64(100); seed < 100+deals; seed++ {
		s := env.NewGame(r, seed)
		a := &Search{}
		a.Begin(seed)
		world := NewView(&s, s.AppendLegal(nil), 0, false).Sample(a.g.Uint64())
		truth, sample := hiddenCards(t, &s), hiddenCards(t, &world)
		if len(truth) != 94 || len(sample) != 94 {
			t.Fatalf("%d and %d hidden cards; a deal hides 94", len(truth), len(sample))
		}
		for i := range truth {
			hidden++
			if truth[i] == sample[i] {
				match++
			}
		}
	}
	// One suit: 8 cards of each rank among the 94 hidden, so a blind
	// sample puts the right rank at a place about 1 time in 13 (7.3 of 94).
	got := float64(match) / float64(hidden) * 94
	if got < 6.3 || got > 8.3 {
		t.Fatalf("search's samples match %.2f of the 94 hidden cards a deal; chance is about 7.3", got)
	}
}

// hiddenCards lists s's face-down cards, column by column, then its stock
// in deal order, as text.
func hiddenCards(t *testing.T, s *env.State) []string {
	var out []string
	for c := range env.NumColumns {
		for _, card := range s.AppendFaceDown(nil, c) {
			out = append(out, card.String())
		}
	}
	text, err := s.MarshalText()
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(text)) {
		if rest, ok := strings.CutPrefix(line, "stock:"); ok {
			out = append(out, strings.Fields(rest)...)
		}
	}
	return out
}

func TestAgentsAreDeterministic(t *testing.T) {
	r := env.MustRules(env.Options{Suits: 2, MaxSteps: 300})
	for _, name := range Names() {
		m, _ := NewWith(name, testBudget)
		a := Play(r, 9, m())
		b := Play(r, 9, m())
		if !slices.Equal(a.Actions, b.Actions) || a.Score != b.Score {
			t.Errorf("%s played seed 9 two different ways", name)
		}
		ag := m()
		c := Play(r, 9, ag)
		d := Play(r, 9, ag) // reused after Begin: the same game again
		if !slices.Equal(c.Actions, d.Actions) {
			t.Errorf("%s does not start afresh on Begin", name)
		}
	}
}

func TestGreedyBeatsRandom(t *testing.T) {
	r := env.MustRules(env.Options{Suits: 1})
	seeds := make([]uint64, 30)
	for i := range seeds {
		seeds[i] = uint64(i)
	}
	ev, err := Evaluate(context.Background(), r, []string{"random", "greedy"}, seeds, 2, Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rw, gw, gr, rr := 0, 0, 0, 0
	for i := range seeds {
		if ev.Results[0][i].Won {
			rw++
		}
		if ev.Results[1][i].Won {
			gw++
		}
		rr += ev.Results[0][i].Runs
		gr += ev.Results[1][i].Runs
		if ev.Results[0][i].Seed != seeds[i] || ev.Results[1][i].Seed != seeds[i] {
			t.Fatal("results are not paired by seed")
		}
	}
	if gw <= rw || gr <= 2*rr || gw < 3 {
		t.Fatalf("greedy won %d and completed %d runs; random %d and %d", gw, gr, rw, rr)
	}
}

func TestEvaluateStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := env.MustRules(env.Options{Suits: 1})
	if _, err := Evaluate(ctx, r, []string{"random"}, []uint64{1, 2, 3}, 1, Options{}, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled evaluation returned %v, want context.Canceled", err)
	}
	if _, err := Evaluate(context.Background(), r, []string{"chess"}, []uint64{1}, 1, Options{}, nil); err == nil || !strings.Contains(err.Error(), `unknown agent "chess"`) {
		t.Fatalf("an unknown policy: %v", err)
	}
	if _, err := New("nn:"); err == nil || !strings.Contains(err.Error(), "nn: needs a checkpoint's path") {
		t.Fatalf("nn: without a path: %v", err)
	}
}

// TestEvaluateCountsDeals: progress counts deals every policy finished,
// once each, not games, whatever order the workers finish them in.
func TestEvaluateCountsDeals(t *testing.T) {
	r := env.MustRules(env.Options{Suits: 1, MaxSteps: 200})
	var calls []int
	_, err := Evaluate(context.Background(), r, []string{"random", "greedy", "first"}, []uint64{1, 2, 3, 4, 5, 6, 7}, 2, Options{}, func(done, total int) {
		if total != 7 {
			t.Errorf("total %d; want the 7 deals", total)
		}
		calls = append(calls, done)
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{1, 2, 3, 4, 5, 6, 7}; !slices.Equal(calls, want) {
		t.Fatalf("progress %v; want %v", calls, want)
	}
}

// TestEvaluateStopsMidGame cancels an evaluation while search is in the
// middle of a two-suit game (a minute of play at 20,000 nodes): it must
// stop within seconds, not when the game ends.
func TestEvaluateStopsMidGame(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	r := env.MustRules(env.Options{Suits: 2})
	start := time.Now()
	calls := 0
	ev, err := Evaluate(ctx, r, []string{"search"}, []uint64{3, 4}, 1, Options{Nodes: 20000}, func(int, int) { calls++ })
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("an evaluation stopped mid-game returned %v", err)
	}
	if calls != 0 {
		t.Fatalf("the game cut short was counted as progress (%d calls)", calls)
	}
	// The game cut short is not a result: no deal was finished.
	if ev == nil || len(ev.Seeds) != 0 || len(ev.Results) != 1 || len(ev.Results[0]) != 0 {
		t.Fatalf("a stopped evaluation kept %+v; want no deal", ev)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("it stopped %v after it began, 300ms after the stop", d)
	}
}

func TestGreedyReasons(t *testing.T) {
	r := env.MustRules(env.Options{Suits: 2})
	s, err := env.ParseState(r, "1: | 9s\n2: 3h | 8s\n3: | Kh\n4: | Kh\n5: | Kh\n6: | Kh\n7: | Kh\n8: | Kh\n9: | Kh\n10: | Kh\nstock: 2h 2h 2h 2h 2h 2h 2h 2h 2h 2h")
	if err != nil {
		t.Fatal(err)
	}
	d := (&Greedy{}).Act(NewView(&s, s.AppendLegal(nil), 0, false))
	if d.Action != env.MoveAction(1, 0, 1) || d.Reason != "turns a face-down card" {
		t.Fatalf("greedy chose %v because %q; want 2>1x1 to turn the 3h", d.Action, d.Reason)
	}
}

// TestPeekingAgentsReadHiddenCards is the other side of the lockstep test:
// the agents that declare they peek (Traits.Peeks: the oracle) are
// labelled, and their choices do change with the hidden cards.
func TestPeekingAgentsReadHiddenCards(t *testing.T) {
	r := env.MustRules(env.Options{Suits: 1})
	if Label("search") != "search" || !TraitsOf("oracle").Peeks || TraitsOf("search").Peeks {
		t.Fatalf("traits: oracle %+v, search %+v", TraitsOf("oracle"), TraitsOf("search"))
	}
	peekers := NamesWith(func(t Traits) bool { return t.Peeks })
	if !slices.Contains(peekers, "oracle") {
		t.Fatalf("the agents that peek are %v, without the oracle", peekers)
	}
	for _, name := range peekers {
		if Label(name) != name+" (sees hidden cards)" {
			t.Errorf("%s is labelled %q", name, Label(name))
		}
		// What it declares is true: its first move changes with the
		// hidden cards.
		m, err := NewWith(name, Options{Nodes: 2000})
		if err != nil {
			t.Fatal(err)
		}
		differ := 0
		for seed := uint64(0); seed < 6; seed++ {
			s := env.NewGame(r, seed)
			legal := s.AppendLegal(nil)
			for k := uint64(0); k < 4; k++ {
				other := s.Resample(k + 1)
				a, b := m(), m()
				a.Begin(seed)
				b.Begin(seed)
				if a.Act(NewView(&s, legal, 0, false)) != b.Act(NewView(&other, legal, 0, false)) {
					differ++
				}
			}
		}
		if differ == 0 {
			t.Errorf("%s chose the same first move whatever the hidden cards: it does not see them", name)
		}
	}
}

// TestDocsListEveryAgent: docs/results.md's list of the names eval takes
// names each built-in agent, and nothing else but nn:PATH.
func TestDocsListEveryAgent(t *testing.T) {
	b, err := os.ReadFile("../docs/results.md")
	if err != nil {
		t.Skipf("docs/results.md: %v", err)
	}
	doc := string(b)
	i := strings.Index(doc, "## The agents")
	if i < 0 {
		t.Fatal("docs/results.md has no section The agents")
	}
	section := doc[i+1:]
	if j := strings.Index(section, "\n## "); j >= 0 {
		section = section[:j]
	}
	var listed []string
	for _, m := range regexp.MustCompile("(?m)^- `([^`]+)`:").FindAllStringSubmatch(section, -1) {
		listed = append(listed, m[1])
	}
	if want := append(Names(), "nn:PATH"); !slices.Equal(slices.Sorted(slices.Values(listed)), slices.Sorted(slices.Values(want))) {
		t.Fatalf("docs/results.md lists %v; the agents are %v", listed, want)
	}
}

// TestSearchBeatsGreedy plays the same one-suit deals with both: search
// must win clearly more, even on a small budget.
func TestSearchBeatsGreedy(t *testing.T) {
	if testing.Short() {
		t.Skip("plays 16 full games")
	}
	r := env.MustRules(env.Options{Suits: 1})
	seeds := []uint64{1, 2, 3, 4, 5, 6, 7, 8}
	ev, err := Evaluate(context.Background(), r, []string{"greedy", "search"}, seeds, 2, Options{Nodes: 3000}, nil)
	if err != nil {
		t.Fatal(err)
	}
	gw, sw := 0, 0
	for i := range seeds {
		if ev.Results[0][i].Won {
			gw++
		}
		if ev.Results[1][i].Won {
			sw++
		}
	}
	if sw < 6 || sw <= gw {
		t.Fatalf("search won %d of %d one-suit deals, greedy %d", sw, len(seeds), gw)
	}
}

// TestSearchRules checks Search's decisions in positions built by hand.
func TestSearchRules(t *testing.T) {
	kings := "3: | Kh\n4: | Kh\n5: | Kh\n6: | Kh\n7: | Kh\n8: | Kh\n9: | Kh\n10: | Kh\n"
	tests := []struct {
		name, pos string
		suits     int
		want      env.Action
		why       string
	}{
		{"completes a run that turns a card", "1: | Ks Qs Js Ts 9s 8s 7s 6s 5s 4s 3s 2s\n2: 5h | As\n" + kings + "stock:", 2, env.MoveAction(1, 0, 1), "turns a face-down card"},
		{"turns a card before dealing", "1: | 9s\n2: 3h | 8s\n" + kings + "stock: 2h 2h 2h 2h 2h 2h 2h 2h 2h 2h", 2, env.MoveAction(1, 0, 1), "turns a face-down card"},
		// Both moves turn a card; only the spade builds in suit, while the
		// heart would bury the 8s under a card of another suit.
		{"builds in suit rather than bury a suit", "1: | 8s\n2: 3h | 7h\n3: 3h | 7s\n" + kings[len("3: | Kh\n"):] + "stock: 2h 2h 2h 2h 2h 2h 2h 2h 2h 2h", 2, env.MoveAction(2, 0, 1), "turns a face-down card"},
		{"fills an empty column, then deals", "1: | 9s 4h\n2: |\n" + kings + "stock: 2h 2h 2h 2h 2h 2h 2h 2h 2h 2h", 2, env.MoveAction(0, 1, 1), "starts a plan that deals once nothing better can be foreseen"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := env.ParseState(env.MustRules(env.Options{Suits: tc.suits}), tc.pos)
			if err != nil {
				t.Fatal(err)
			}
			a := &Search{Nodes: 1000}
			a.Begin(1)
			d := a.Act(NewView(&s, s.AppendLegal(nil), 0, false))
			if d.Action != tc.want || d.Reason != tc.why {
				t.Fatalf("search chose %v because %q; want %v because %q", d.Action, d.Reason, tc.want, tc.why)
			}
		})
	}
}

// TestSearchSeesDeadStock checks that a classic position with stock left
// but too few cards to fill the ten columns counts as lost.
func TestSearchSeesDeadStock(t *testing.T) {
	r := env.MustRules(env.Options{Suits: 1})
	s, err := env.ParseState(r, "1: | 9s\n2: | 8s\nstock: 2s 2s 2s 2s 2s 2s 2s 2s 2s 2s\nruns: s s s s s s s")
	if err != nil {
		t.Fatal(err)
	}
	if v := (&Search{}).Evaluate(&s); v != -valueWon {
		t.Fatalf("value %d; want %d (lost)", v, -valueWon)
	}
}

// TestSearchKeepsCardemsStockDealable checks that search fills an empty
// column before a cardems deal rather than deal past it: that deal would
// leave one card in the stock, which needs ten to deal, for good. Evaluate
// counts such a stock as lost, and charges one that only more deals past
// empty columns can end.
func TestSearchKeepsCardemsStockDealable(t *testing.T) {
	r := env.MustRules(env.Options{RuleSet: env.Cardems, Suits: 1})
	kings := "3: | Ks\n4: | Ks\n5: | Ks\n6: | Ks\n7: | Ks\n8: | Ks\n9: | Ks\n10: | Ks\n"
	at := func(pos string) env.State {
		t.Helper()
		s, err := env.ParseState(r, pos)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	// Dealt onto every column, the stock lets 4s 3s go onto the 5s.
	s := at("1: | 9s 4s\n2: |\n" + kings + "stock: 5s 3s" + strings.Repeat(" Qs", 8))
	a := &Search{Nodes: 1000}
	a.Begin(1)
	for i, want := range []env.Action{env.MoveAction(0, 1, 1), env.Deal} {
		d := a.Act(NewView(&s, s.AppendLegal(nil), 0, false))
		if d.Action != want {
			t.Fatalf("move %d: search chose %v because %q; want %v", i+1, d.Action, d.Reason, want)
		}
		s.Step(d.Action)
	}
	if s.StockLeft() != 0 || s.Status() != env.Playing {
		t.Fatalf("%d cards left in the stock, game %v; want 0, playing", s.StockLeft(), s.Status())
	}

	// The hand-set value's charge (the learned one-suit part, which also
	// counts the deals left, is pinned in value_test.go).
	hand := &Search{HandOnly: true}
	value := func(stock int) int {
		t.Helper()
		w := at("1: | 9s 4s\n2: | 5s\n" + kings + "stock:" + strings.Repeat(" As 2s 6s 7s 8s", 4)[:3*stock])
		return hand.Evaluate(&w)
	}
	if v := value(9); v != -valueWon {
		t.Fatalf("a stock of 9 cards valued %d; want %d (lost)", v, -valueWon)
	}
	if v20, v11 := value(20), value(11); v20-v11 != valueShort*9 {
		t.Fatalf("a stock of 20 cards valued %d, of 11 %d: want 9 empty columns short charged, %d", v20, v11, valueShort*9)
	}
}

// handValue is the hand-set part of search's value of the position pos
// (env.ParseState's text) under r.
func handValue(t *testing.T, r env.Rules, pos string) int {
	t.Helper()
	s, err := env.ParseState(r, pos)
	if err != nil {
		t.Fatal(err)
	}
	return (&Search{HandOnly: true}).Evaluate(&s)
}

// TestSearchChargesMixedSuits checks that Evaluate charges a card on the
// next rank of another suit as much as a break: only a same-suit sequence
// moves as one, and a cheaper charge built mixed sequences that later
// could not move (two-suit tuning deals, docs/results.md).
func TestSearchChargesMixedSuits(t *testing.T) {
	r := env.MustRules(env.Options{Suits: 2})
	// The hand-set value's charge: the learned part of classic two suits
	// (value.go) counts breaks and runs too.
	value := func(col string) int {
		return handValue(t, r, "1: | "+col+"\n2: | Kh\n3: | Kh\n4: | Kh\n5: | Kh\n6: | Kh\n7: | Kh\n8: | Kh\n9: | Kh\n10: | Kh\nstock: 2h 2h 2h 2h 2h 2h 2h 2h 2h 2h")
	}
	suited, mixed, broken := value("8h 7h"), value("8s 7h"), value("9s 7h")
	if mixed != broken || suited-mixed != valueBreak {
		t.Fatalf("8h 7h worth %d, 8s 7h %d, 9s 7h %d: a mixed link should cost what a break does, %d", suited, mixed, broken, valueBreak)
	}
	// A King on an Ace is a break, whichever suits: a King's card id is
	// one below the next suit's Ace's, which must not read as a link.
	for _, col := range []string{"Ah Ks", "As Kh"} {
		if v := value(col); v != broken {
			t.Errorf("%s worth %d; a King on an Ace is a break, %d", col, v, broken)
		}
	}
}

// TestSearchValuesFaceDownCards: each face-down card costs valueDown, and
// a column that holds any valueHidden once, the first card included.
func TestSearchValuesFaceDownCards(t *testing.T) {
	r := env.MustRules(env.Options{Suits: 1})
	value := func(down string) int {
		return handValue(t, r, "1: "+down+"| 8s 7s\n2: | Ks\n3: | Ks\n4: | Ks\n5: | Ks\n6: | Ks\n7: | Ks\n8: | Ks\n9: | Ks\n10: | Ks\nstock: 2s 2s 2s 2s 2s 2s 2s 2s 2s 2s")
	}
	none, one, two := value(""), value("5s "), value("5s 5s ")
	if none-one != valueDown+valueHidden || one-two != valueDown {
		t.Fatalf("0, 1 and 2 face-down cards worth %d, %d and %d; want steps of %d and %d", none, one, two, valueDown+valueHidden, valueDown)
	}
}

// TestSearchKnowsACardemsStockCanStillEnd: under cardems a stock of 15
// cards with five columns filled deals five cards, and then ten: it can
// end, so the position is not lost (only a stock whose size is a multiple
// of ten needs every column filled to be dealt to its end).
func TestSearchKnowsACardemsStockCanStillEnd(t *testing.T) {
	r := env.MustRules(env.Options{RuleSet: env.Cardems, Suits: 1})
	v := handValue(t, r, "1: | Ks\n2: | Ks\n3: | Ks\n4: | Ks\n5: | Ks\n6: |\n7: |\n8: |\n9: |\n10: |\nstock: 2s 2s 2s 2s 2s 2s 2s 2s 2s 2s 2s 2s 2s 2s 2s")
	// Five empty columns, each worth valueEmpty, and the five the stock
	// still needs, each charged valueShort.
	if want := 5*valueEmpty - 5*valueShort; v != want {
		t.Fatalf("a cardems stock of 15 with five columns filled: worth %d, want %d (-valueWon is %d)", v, want, -valueWon)
	}
}

// searchAt parses a position of a classic game with suits suits and
// returns it with a Search of one node, begun with seed 1.
func searchAt(t *testing.T, suits int, pos string) (env.State, *Search) {
	t.Helper()
	s, err := env.ParseState(env.MustRules(env.Options{Suits: suits}), pos)
	if err != nil {
		t.Fatal(err)
	}
	a := &Search{Nodes: 1}
	a.Begin(1)
	return s, a
}

// TestSearchMovesMixedRuns gives Search one node: the 9s 8h cannot move as
// one, but through the empty column it can, three moves that turn the 5h.
// Search must see that line as one step. The card turns at the second
// move, so it plans again there (with room now) and puts the 8h back.
func TestSearchMovesMixedRuns(t *testing.T) {
	s, a := searchAt(t, 4, "1: 5h | 9s 8h\n2: | Th\n3: |\n4: | Kh\n5: | Kh\n6: | Kh\n7: | Kh\n8: | Kh\n9: | Kh\n10: | Kh\nstock: 2h 2h 2h 2h 2h 2h 2h 2h 2h 2h")
	want := []env.Action{env.MoveAction(0, 2, 1), env.MoveAction(0, 1, 1), env.MoveAction(2, 1, 1)}
	prev, has := env.Action(0), false
	for i, w := range want {
		if i == 2 {
			a.Nodes = 1000
		}
		d := a.Act(NewView(&s, s.AppendLegal(nil), prev, has))
		// The first move starts the line that turns the 5h; the second
		// turns it, ending the line.
		if why := []string{"starts a plan that turns a face-down card", "continues a plan that turns a face-down card"}; d.Action != w || i < 2 && d.Reason != why[i] {
			t.Fatalf("move %d: search chose %v because %q; want %v", i+1, d.Action, d.Reason, w)
		}
		s.Step(d.Action)
		prev, has = d.Action, true
	}
	if s.FaceDown(0) != 0 || s.Height(1) != 3 || s.Height(2) != 0 {
		t.Fatalf("after the line:\n%s", s.Render())
	}
}

// TestSearchFillsBeyondItsHorizon gives Search a budget too small to see a
// deal behind an empty column: it must still fill the column and deal
// rather than give up.
func TestSearchFillsBeyondItsHorizon(t *testing.T) {
	s, a := searchAt(t, 2, "1: | 9s 4h\n2: |\n3: | Kh\n4: | Kh\n5: | Kh\n6: | Kh\n7: | Kh\n8: | Kh\n9: | Kh\n10: | Kh\nstock: 2h 2h 2h 2h 2h 2h 2h 2h 2h 2h")
	d := a.Act(NewView(&s, s.AppendLegal(nil), 0, false))
	if d.Action != env.MoveAction(0, 1, 1) || d.Reason != "starts a plan that fills the empty columns to deal" {
		t.Fatalf("search chose %v because %q", d.Action, d.Reason)
	}
	s.Step(d.Action)
	if d = a.Act(NewView(&s, s.AppendLegal(nil), d.Action, true)); d.Action != env.Deal || d.Reason != "continues a plan that fills the empty columns to deal" {
		t.Fatalf("after filling, search chose %v because %q, not the deal", d.Action, d.Reason)
	}
}

// tinyNet is an untrained network small enough for tests: its choices are
// arbitrary but deterministic, which is all the fairness tests need.
func tinyNet(t *testing.T, suits int) *nn.Net {
	t.Helper()
	r := env.MustRules(env.Options{Suits: suits, FaceUpSlots: 4})
	net, err := nn.New(nn.SpecFor(r, []int{8}), uint64(suits))
	if err != nil {
		t.Fatal(err)
	}
	return net
}

func TestNeuralAgentIsFairAndLegal(t *testing.T) {
	for _, suits := range []int{1, 2, 4} {
		net := tinyNet(t, suits)
		r := env.MustRules(env.Options{Suits: suits, MaxSteps: 150})
		a, err := NewNeural(net)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.CheckRules(r); err != nil {
			t.Fatal(err)
		}
		envtest.Check(t, r, asPolicy(a), envtest.Config{Games: 2, Seed: 3})
		// Lockstep against a twin whose hidden cards are dealt anew.
		real, _ := NewNeural(net)
		twin, _ := NewNeural(net)
		lockstep(t, r, 4, real, twin)
	}
	other := env.MustRules(env.Options{Suits: 2})
	if _, err := Evaluate(context.Background(), other, []string{"nn:missing.ckpt"}, []uint64{1}, 1, Options{}, nil); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a missing checkpoint: %v, want a not-exist error", err)
	}
}

func TestNeuralCheckpointAsPolicy(t *testing.T) {
	net := tinyNet(t, 1)
	path := filepath.Join(t.TempDir(), "p.spider")
	if err := nn.Save(path, net, nil); err != nil {
		t.Fatal(err)
	}
	ev, err := Evaluate(context.Background(), env.MustRules(env.Options{Suits: 1, MaxSteps: 100}), []string{"nn:" + path}, []uint64{1, 2}, 2, Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ev.Results[0][0].Moves == 0 {
		t.Fatal("the network played no move")
	}
	_, err = Evaluate(context.Background(), env.MustRules(env.Options{Suits: 2}), []string{"nn:" + path}, []uint64{1}, 1, Options{}, nil)
	if err == nil || !strings.Contains(err.Error(), "a 2-suit game, the network's 1-suit") {
		t.Fatalf("a 2-suit evaluation of a 1-suit network gave %v", err)
	}
}

// slowFirst is a batch agent that plays each game's first legal action,
// one game at a time, a millisecond a move.
type slowFirst struct{}

func (slowFirst) Name() string { return "slow first" }
func (slowFirst) Width() int   { return 1 }
func (slowFirst) ActBatch(ctx context.Context, games []BatchGame, actions []env.Action) error {
	time.Sleep(time.Millisecond)
	for i, g := range games {
		actions[i] = g.View.Legal()[0]
	}
	return nil
}

// TestEvaluateStoppedKeepsFinishedDeals stops an evaluation of a batch
// agent and a pooled one in the middle: it returns the stop and the deals
// both policies finished, each game whole, whichever policy is listed
// first (the fast one finishes deals the slow one has not).
func TestEvaluateStoppedKeepsFinishedDeals(t *testing.T) {
	first, err := New("first")
	if err != nil {
		t.Fatal(err)
	}
	fast, slow := Policy{Name: "first", Maker: first}, Policy{Name: "slow", Batch: slowFirst{}}
	for _, ps := range [][]Policy{{fast, slow}, {slow, fast}} {
		t.Run(ps[0].Name+","+ps[1].Name, func(t *testing.T) { stopAndCheckDeals(t, ps) })
	}
}

func stopAndCheckDeals(t *testing.T, ps []Policy) {
	r := env.MustRules(env.Options{Suits: 1, MaxSteps: 200})
	seeds := []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20}
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	ev, err := EvaluatePolicies(ctx, r, ps, seeds, 2, nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("stopped: %v", err)
	}
	// A game of at most 200 moves at a millisecond or more each: 1.5 s
	// holds at least one and far fewer than 20.
	if len(ev.Seeds) == 0 || len(ev.Seeds) >= len(seeds) || len(ev.Results[0]) != len(ev.Seeds) || len(ev.Results[1]) != len(ev.Seeds) {
		t.Fatalf("kept %d deals, results %d and %d", len(ev.Seeds), len(ev.Results[0]), len(ev.Results[1]))
	}
	first, err := New("first")
	if err != nil {
		t.Fatal(err)
	}
	whole, err := EvaluatePolicies(context.Background(), r, []Policy{{Name: "first", Maker: first}}, ev.Seeds, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	for g, seed := range ev.Seeds {
		for p := range ev.Results {
			x := ev.Results[p][g]
			// Both policies play the first legal action, so their whole
			// games are the same.
			if x.Seed != seed || !slices.Equal(x.Actions, whole.Results[0][g].Actions) {
				t.Fatalf("%s on deal %d: %d moves kept, %d in the whole game", ev.Policies[p], seed, len(x.Actions), len(whole.Results[0][g].Actions))
			}
		}
	}
}

// TestEvaluateProgressCountsDealsEveryPolicyFinished: progress counts a
// deal done when every policy has finished it, the slow batch agent's too,
// not when the fast pooled one has.
func TestEvaluateProgressCountsDealsEveryPolicyFinished(t *testing.T) {
	first, err := New("first")
	if err != nil {
		t.Fatal(err)
	}
	r := env.MustRules(env.Options{Suits: 1, MaxSteps: 50})
	seeds := []uint64{1, 2, 3, 4, 5, 6}
	var mu sync.Mutex
	finished := map[[2]int]bool{}
	calls := 0
	progress := func(done, total int) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		both := 0
		for g := range seeds {
			if finished[[2]int{0, g}] && finished[[2]int{1, g}] {
				both++
			}
		}
		if done > both || total != len(seeds) {
			t.Errorf("progress %d/%d with %d deals finished by both policies", done, total, both)
		}
	}
	each := func(p, g int, _ *Result) {
		mu.Lock()
		finished[[2]int{p, g}] = true
		mu.Unlock()
	}
	ps := []Policy{{Name: "first", Maker: first}, {Name: "slow", Batch: slowFirst{}}}
	if _, err := EvaluateEach(context.Background(), r, ps, seeds, 2, progress, each); err != nil {
		t.Fatal(err)
	}
	if calls != len(seeds) {
		t.Fatalf("progress called %d times for %d deals", calls, len(seeds))
	}
}

// BenchmarkSearchPlan times one plan of Search at its default budget, from
// positions 60 moves into its own games (at the deal every move turns a
// card, so there is nothing to search), and with MoveTime 5 ms, which
// should bound the time of a plan near 5 ms.
func BenchmarkSearchPlan(b *testing.B) {
	for _, c := range []struct {
		suits int
		limit time.Duration
	}{{1, 0}, {2, 0}, {2, 5 * time.Millisecond}} {
		name := fmt.Sprintf("suits=%d", c.suits)
		if c.limit > 0 {
			name += fmt.Sprintf("/move-ms=%d", c.limit.Milliseconds())
		}
		suits := c.suits
		b.Run(name, func(b *testing.B) {
			r := env.MustRules(env.Options{Suits: suits})
			games := make([]env.State, 8)
			a := &Search{}
			var legal []env.Action
			for i := range games {
				s := env.NewGame(r, uint64(i+1))
				a.Begin(uint64(i + 1))
				for range 60 {
					legal = s.AppendLegal(legal[:0])
					s.Step(a.Act(NewView(&s, legal, 0, false)).Action)
				}
				games[i] = s
			}
			a.MoveTime = c.limit
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				s := &games[i%len(games)]
				a.Begin(uint64(i))
				legal = s.AppendLegal(legal[:0])
				a.Act(NewView(s, legal, 0, false))
			}
		})
	}
}

// fullPlanPosition returns a two-suit position 60 moves into search's game
// of seed 1, where a plan fills its 20,000 positions, and its legal moves.
func fullPlanPosition() (env.State, []env.Action) {
	s := env.NewGame(env.MustRules(env.Options{Suits: 2}), 1)
	var legal []env.Action
	warm := &Search{}
	warm.Begin(1)
	for range 60 {
		legal = s.AppendLegal(legal[:0])
		s.Step(warm.Act(NewView(&s, legal, 0, false)).Action)
	}
	return s, s.AppendLegal(legal[:0])
}

// TestSearchMoveTime checks the time control on a clock that advances a
// millisecond at each look: the plan stops after the look that finds the
// time spent, plays a legal move from what it found, and a plan without
// MoveTime never reads the clock.
func TestSearchMoveTime(t *testing.T) {
	s, legal := fullPlanPosition()

	free := &Search{clock: func() time.Time { t.Fatal("a plan without MoveTime read the clock"); return time.Time{} }}
	free.Begin(7)
	free.Act(NewView(&s, legal, 0, false))
	if len(free.nodes) < 4*clockEvery {
		t.Fatalf("the plan without a time limit explored only %d positions; the test needs a larger one", len(free.nodes))
	}

	looks := 0
	var t0 time.Time
	timed := &Search{MoveTime: 2 * time.Millisecond, clock: func() time.Time {
		looks++
		return t0.Add(time.Duration(looks-1) * time.Millisecond)
	}}
	timed.Begin(7)
	d := timed.Act(NewView(&s, legal, 0, false))
	if !slices.Contains(legal, d.Action) {
		t.Fatalf("the timed plan chose %v, not a legal action", d.Action)
	}
	// The start, then a look every clockEvery positions: at 1 ms and at
	// 2 ms, which ends the plan with 2*clockEvery-1 positions expanded.
	if looks != 3 {
		t.Fatalf("the timed plan looked at the clock %d times, want 3", looks)
	}
	if len(timed.nodes) >= len(free.nodes) {
		t.Fatalf("the timed plan held %d positions, as many as the untimed one's %d", len(timed.nodes), len(free.nodes))
	}

	if _, err := NewWith("search", Options{MoveTime: -time.Millisecond}); err == nil {
		t.Fatal("a negative MoveTime was accepted")
	}
}

// TestSearchStopsWithItsGame: a plan stops within clockEvery positions once
// the game's context ends, still choosing a legal move, and PlayFrom hands
// its context to search, so a stopped game ends at once even with a budget
// that would plan for minutes; budgets past MaxNodes are refused.
func TestSearchStopsWithItsGame(t *testing.T) {
	s, legal := fullPlanPosition()
	done := make(chan struct{})
	close(done)
	stopped := &Search{}
	stopped.stopOn(done)
	stopped.Begin(7)
	d := stopped.Act(NewView(&s, legal, 0, false))
	if !slices.Contains(legal, d.Action) {
		t.Fatalf("the stopped plan chose %v, not a legal action", d.Action)
	}
	if n := len(stopped.nodes); n > clockEvery*env.NumActions/8 {
		t.Fatalf("the stopped plan held %d positions; it should stop after %d", n, clockEvery)
	}

	ctx, cancel := context.WithCancel(context.Background())
	big := &Search{Nodes: MaxNodes}
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	res := PlayFrom(ctx, s, 7, big)
	if !strings.HasPrefix(res.Failure, "stopped") {
		t.Fatalf("the game was not stopped: %+v", res.Failure)
	}
	if big.stop != nil {
		t.Fatal("search kept the finished game's stop channel")
	}
	if _, err := NewWith("search", Options{Nodes: MaxNodes + 1}); err == nil {
		t.Fatal("a budget past MaxNodes was accepted")
	}
}

// TestSearchDraw plays another draw of search's samples when Draw is set:
// the same deal otherwise, each draw repeating itself, the oracle (which
// samples nothing) unchanged, and Options carrying it through NewWith.
func TestSearchDraw(t *testing.T) {
	r := env.MustRules(env.Options{Suits: 1, MaxSteps: 200})
	play := func(name string, draw uint64) []env.Action {
		m, err := NewWith(name, Options{Nodes: testBudget.Nodes, Draw: draw})
		if err != nil {
			t.Fatal(err)
		}
		return Play(r, 5, m()).Actions
	}
	d0, d1 := play("search", 0), play("search", 1)
	if slices.Equal(d0, d1) {
		t.Error("search played seed 5 move for move the same in draws 0 and 1")
	}
	if !slices.Equal(d1, play("search", 1)) {
		t.Error("search played draw 1 of seed 5 two different ways")
	}
	if !slices.Equal(d0, Play(r, 5, &Search{Nodes: testBudget.Nodes}).Actions) {
		t.Error("draw 0 is not search's default draw")
	}
	if !slices.Equal(play("oracle", 0), play("oracle", 7)) {
		t.Error("the oracle samples nothing, but Draw changed its game")
	}
}

// TestSearchBytes checks Search.Bytes, the memory an eval counts for each
// searching agent before it plays, against the heap an agent holds after
// planning from a deal: its reserved budget, and the index of the
// positions it reached.
func TestSearchBytes(t *testing.T) {
	for _, suits := range []int{1, 4} {
		r := env.MustRules(env.Options{Suits: suits, MaxSteps: 1000})
		a := &Search{Nodes: 40000}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		a.Begin(3)
		s := env.NewGame(r, 3)
		for range 30 { // past the first plans, through reveals and a deal or two
			if s.Over() {
				break
			}
			d := a.Act(NewView(&s, s.AppendLegal(nil), 0, false))
			if _, err := s.Step(d.Action); err != nil {
				t.Fatal(err)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(a)
		held := int64(after.HeapAlloc) - int64(before.HeapAlloc)
		if want := a.Bytes(); held < want*9/10 || held > want*11/10 {
			t.Errorf("%d suits: search of %d nodes holds %d bytes after 30 moves; Bytes says %d", suits, a.Nodes, held, want)
		} else {
			t.Logf("%d suits: holds %.1f MB, Bytes %.1f MB", suits, float64(held)/1e6, float64(want)/1e6)
		}
	}
}

// faulty plays the first legal action until its game's move number fault,
// where it answers an illegal action, a nil-pointer panic or a panic of
// its own, as a third party's agent with a bug might.
type faulty struct {
	kind  string
	fault int
	moves int
}

func (f *faulty) Name() string { return "faulty" }
func (f *faulty) Begin(uint64) { f.moves = 0 }
func (f *faulty) Act(v View) Decision {
	f.moves++
	if f.moves == f.fault {
		switch f.kind {
		case "illegal":
			return Decision{Action: env.NumActions} // not an id
		case "nil":
			var m map[string]*int
			return Decision{Action: env.Action(*m["x"])}
		default:
			panic("faulty: a bug")
		}
	}
	return Decision{Action: v.Legal()[0]}
}

// TestEvaluateFailsTheGamesOfAFaultyAgent: an agent in the process that
// answers an illegal action or panics fails that game, saying what and
// where, instead of ending the process from a worker goroutine where the
// caller cannot recover the panic; the other policies' games and the
// agent's later games are played. A panicking agent is made anew.
func TestEvaluateFailsTheGamesOfAFaultyAgent(t *testing.T) {
	r := env.MustRules(env.Options{Suits: 1, MaxSteps: 50})
	seeds := []uint64{1, 2, 3, 4}
	for kind, want := range map[string]string{
		"illegal": "illegal action 1081 at move 3: ",
		"nil":     "panic: runtime error: invalid memory address or nil pointer dereference (github.com/spiderenv/spider/agents.(*faulty).Act at agents_test.go:",
		"panic":   "panic: faulty: a bug (github.com/spiderenv/spider/agents.(*faulty).Act at agents_test.go:",
	} {
		t.Run(kind, func(t *testing.T) {
			var made atomic.Int32
			maker := func() Agent {
				made.Add(1)
				return &faulty{kind: kind, fault: 3}
			}
			first, _ := New("first")
			ev, err := EvaluateWith(context.Background(), r, []string{"first", "faulty"}, []Maker{first, maker}, seeds, 1, nil)
			if err != nil {
				t.Fatal(err)
			}
			for i, res := range ev.Results[1] {
				if !strings.HasPrefix(res.Failure, want) || res.Won || res.Moves != 2 || len(res.Actions) != 2 {
					t.Errorf("seed %d: %+v; want a failed game of 2 moves, failure starting %q", seeds[i], res, want)
				}
				// At the lowest score it could have ended with, 48 moves
				// left at a point each, not the 498 it froze by failing.
				if res.Score != env.StartScore-50 {
					t.Errorf("seed %d failed at score %d; want %d", seeds[i], res.Score, env.StartScore-50)
				}
				if ev.Results[0][i].Failure != "" || ev.Results[0][i].Moves == 0 {
					t.Errorf("seed %d: first's game %+v", seeds[i], ev.Results[0][i])
				}
			}
			// Two for the checks of its rules and that it makes a new
			// agent each call, and one for the worker; a panicking agent
			// is replaced after each of its 4 games.
			if wantMade := map[string]int32{"illegal": 3, "nil": 6, "panic": 6}[kind]; made.Load() != wantMade {
				t.Errorf("%d agents made; want %d", made.Load(), wantMade)
			}
		})
	}
}

// TestEvaluateRefusesOrFailsBadMakers: zero Rules and a Maker that makes
// nil are errors before any game; a Maker that panics on a worker fails
// the games it could not make an agent for.
func TestEvaluateRefusesOrFailsBadMakers(t *testing.T) {
	first, _ := New("first")
	if _, err := EvaluateWith(context.Background(), env.Rules{}, []string{"first"}, []Maker{first}, []uint64{1}, 1, nil); err == nil || !strings.Contains(err.Error(), "zero Rules") {
		t.Errorf("zero Rules: %v", err)
	}
	r := env.MustRules(env.Options{Suits: 1, MaxSteps: 20})
	if _, err := EvaluateWith(context.Background(), r, []string{"none"}, []Maker{func() Agent { return nil }}, []uint64{1}, 1, nil); err == nil || !strings.Contains(err.Error(), "policy none: its Maker made no agent") {
		t.Errorf("nil Maker: %v", err)
	}
	for _, names := range [][]string{{"first", "first"}, {"first", ""}} {
		_, err := EvaluateWith(context.Background(), r, names, []Maker{first, first}, []uint64{1}, 1, nil)
		if want := map[bool]string{true: "policy first is listed twice", false: "policy 2 has no name"}[names[1] != ""]; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("policies %q: %v, want an error saying %q", names, err, want)
		}
	}
	made := 0
	counted := func() Agent { made++; return first() }
	if _, err := EvaluateWith(context.Background(), r, []string{"first"}, []Maker{counted}, []uint64{1, 2, 3}, 1, nil); err != nil || made != 3 {
		t.Errorf("one worker, three deals: the Maker ran %d times (%v), want 3: twice to check the rules and that each call makes a new agent, once for the worker", made, err)
	}
	calls := 0
	flaky := func() Agent {
		calls++
		if calls == 3 { // the first worker's: the checks made the first two
			panic("flaky maker")
		}
		return First{}
	}
	ev, err := EvaluateWith(context.Background(), r, []string{"flaky"}, []Maker{flaky}, []uint64{1, 2}, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Failed at the deal, counted at the lowest score the game could have
	// ended with: 20 moves at a point each.
	if got := ev.Results[0][0]; !strings.HasPrefix(got.Failure, "the policy's Maker panicked: flaky maker (") || got.Score != env.StartScore-20 || got.Moves != 0 {
		t.Errorf("game 1: %+v; want it failed at the deal, at score %d", got, env.StartScore-20)
	}
	if res := ev.Results[0][1]; res.Failure != "" || res.Moves == 0 {
		t.Errorf("game 2, with an agent made again: %+v", res)
	}
}

// TestNewWithSaysHowANetworkIsNamed: built-in names are read in any case,
// the nn: prefix only in lower case, and its error says so.
func TestNewWithSaysHowANetworkIsNamed(t *testing.T) {
	if _, err := New("GREEDY"); err != nil {
		t.Errorf("GREEDY: %v", err)
	}
	if _, err := New("NN:run/model.spider"); err == nil || err.Error() != `agents: unknown agent "NN:run/model.spider": a network is named nn:PATH, in lower case` {
		t.Errorf("NN:: %v", err)
	}
	if _, err := New("chess"); err == nil || !strings.HasSuffix(err.Error(), ", and nn:PATH)") {
		t.Errorf("chess: %v", err)
	}
}

// TestEvaluateStoppedAfterTheLastGameIsWhole: a stop that comes after
// every game ended cuts nothing short: the evaluation is returned whole,
// without the stop (eval reported such a run as stopped, exit 1).
func TestEvaluateStoppedAfterTheLastGameIsWhole(t *testing.T) {
	first, err := New("first")
	if err != nil {
		t.Fatal(err)
	}
	r := env.MustRules(env.Options{Suits: 1, MaxSteps: 20})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	seeds := []uint64{1, 2, 3}
	ended := 0
	ev, err := EvaluateEach(ctx, r, []Policy{{Name: "first", Maker: first}}, seeds, 1, nil, func(_, _ int, _ *Result) {
		if ended++; ended == len(seeds) {
			cancel() // the stop, once the last game has ended
		}
	})
	if err != nil || len(ev.Seeds) != len(seeds) {
		t.Fatalf("%v and %d deals, want no error and %d", err, len(ev.Seeds), len(seeds))
	}
}

// TestPlayFromTheZeroStatePanics: the zero State is no game, and PlayFrom
// says so rather than return a game over at once, a loss scored 0, that
// an evaluation would count.
func TestPlayFromTheZeroStatePanics(t *testing.T) {
	defer func() {
		if v := recover(); v == nil || !strings.Contains(fmt.Sprint(v), "zero State") {
			t.Errorf("PlayFrom of the zero State: %v", v)
		}
	}()
	first, err := New("first")
	if err != nil {
		t.Fatal(err)
	}
	PlayFrom(context.Background(), env.State{}, 7, first())
}

// countingFirst is a batch agent with state: it counts its calls, so one
// value called from two goroutines would race.
type countingFirst struct{ calls int }

func (*countingFirst) Name() string { return "counting first" }
func (*countingFirst) Width() int   { return 4 }
func (c *countingFirst) ActBatch(ctx context.Context, games []BatchGame, actions []env.Action) error {
	c.calls++
	for i, g := range games {
		actions[i] = g.View.Legal()[0]
	}
	return nil
}

// TestEvaluateRefusesSharedAgents: evaluations play a Maker's agents on
// several workers at once and each batch agent in a goroutine of its own,
// so a Maker that returns one agent every call, or one batch agent listed
// twice, would mix games' state silently (the games differ from fresh
// agents', with no error): both are refused before any game. Stateless
// values of zero size, which Go may give one address, and a batch agent
// listed once with a Maker beside it, are not.
func TestEvaluateRefusesSharedAgents(t *testing.T) {
	r := env.MustRules(env.Options{Suits: 1, MaxSteps: 20})
	ctx := context.Background()
	shared := &Greedy{}
	_, err := EvaluateWith(ctx, r, []string{"greedy"}, []Maker{func() Agent { return shared }}, []uint64{1}, 2, nil)
	if err == nil || !strings.Contains(err.Error(), "policy greedy: its Maker returns the same agent every call") {
		t.Errorf("a Maker returning one *Greedy: %v", err)
	}
	b := &countingFirst{}
	_, err = EvaluatePolicies(ctx, r, []Policy{{Name: "a", Batch: b}, {Name: "b", Batch: b}}, []uint64{1, 2}, 1, nil)
	if err == nil || !strings.Contains(err.Error(), "policies a and b are one batch agent") {
		t.Errorf("one batch agent listed twice: %v", err)
	}
	if b.calls != 0 {
		t.Errorf("the refused evaluation called the batch agent %d times", b.calls)
	}
	first, _ := New("first")
	zero := &struct{ First }{}
	ev, err := EvaluatePolicies(ctx, r, []Policy{{Name: "a", Batch: b}, {Name: "b", Batch: &countingFirst{}}, {Name: "first", Maker: first}, {Name: "zero", Maker: func() Agent { return zero }}}, []uint64{1, 2}, 2, nil)
	if err != nil {
		t.Fatalf("two batch agents, a fresh Maker and a zero-size shared one: %v", err)
	}
	for p, rs := range ev.Results {
		for _, res := range rs {
			if res.Failure != "" || res.Moves == 0 {
				t.Errorf("%s seed %d: %d moves, failure %q", ev.Policies[p], res.Seed, res.Moves, res.Failure)
			}
		}
	}
	// The second call of the check panics: no panic reaches the caller,
	// and the workers' agents play.
	calls := 0
	second := func() Agent {
		if calls++; calls == 2 {
			panic("the second call")
		}
		return &Greedy{}
	}
	ev, err = EvaluateWith(ctx, r, []string{"second"}, []Maker{second}, []uint64{1, 2}, 1, nil)
	if err != nil || ev.Results[0][0].Failure != "" || ev.Results[0][1].Failure != "" {
		t.Errorf("a Maker that panics on its second call: %v, %+v", err, ev)
	}
}

package env_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/spiderenv/spider/env"
)

// pos parses a position under the given rule set and suit count or fails.
func pos(t *testing.T, rs env.RuleSet, suits int, text string) env.State {
	t.Helper()
	return posWith(t, env.Options{RuleSet: rs, Suits: suits}, text)
}

func posWith(t *testing.T, o env.Options, text string) env.State {
	t.Helper()
	s, err := env.ParseState(env.MustRules(o), text)
	if err != nil {
		t.Fatalf("ParseState: %v\n%s", err, text)
	}
	return s
}

func act(t *testing.T, s string) env.Action {
	t.Helper()
	a, err := env.ParseAction(s)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// faceUp is column c's face-up cards, deepest first.
func faceUp(s *env.State, c int) string {
	var out []string
	for _, card := range s.AppendFaceUp(nil, c) {
		out = append(out, card.String())
	}
	return strings.Join(out, " ")
}

// step plays a move that must be legal.
func step(t *testing.T, s *env.State, move string) {
	t.Helper()
	if _, err := s.Step(act(t, move)); err != nil {
		t.Fatalf("%s: %v\n%s", move, err, s.Render())
	}
}

// The reasons Check gives, in the words a player reads.
const (
	notOneBelow = "the group's bottom card is not one rank below the destination's top card"
	notARun     = "that many cards are not one same-suit descending run"
	emptySource = "the source column is empty"
	emptyColumn = "a column is empty (classic deals only onto ten filled columns)"
	shortStock  = "the stock has fewer than ten cards"
	gameWon     = "the game is won"
	gameLost    = "the game is lost"
	stepLimit   = "the step limit is reached"
)

// refused checks that s refuses the action written move, saying why: an
// *IllegalActionError naming the action, with exactly that reason.
func refused(t *testing.T, s *env.State, move, why string) {
	t.Helper()
	a := act(t, move)
	var ill *env.IllegalActionError
	if err := s.Check(a); !errors.As(err, &ill) || ill.Action != a || ill.Reason != why {
		t.Fatalf("Check(%v) = %v; want an IllegalActionError saying %q\n%s", a, err, why, s.Render())
	}
	if s.Legal(a) {
		t.Fatalf("Legal(%v) is true but Check refuses it", a)
	}
}

// TestRuleMoves pins every rule of both sheets about which moves are legal.
// Each case is a small position (unlisted columns are empty), a move, and
// whether the rules allow it.
func TestRuleMoves(t *testing.T) {
	tests := []struct {
		name  string
		suits int
		pos   string
		move  string
		legal bool
		why   string // the reason an illegal move is refused
	}{
		{"SingleCardOntoOneRankHigher", 2, "1: | 9s\n2: | 8h", "2>1x1", true, ""},
		{"SingleCardNotOntoSameRank", 2, "1: | 9s\n2: | 9h", "2>1x1", false, notOneBelow},
		{"SingleCardNotOntoLowerRank", 2, "1: | 7s\n2: | 8h", "2>1x1", false, notOneBelow},
		{"SingleCardNotOntoTwoRanksHigher", 2, "1: | Ts\n2: | 8h", "2>1x1", false, notOneBelow},
		{"AceOntoTwo", 2, "1: | 2h\n2: | As", "2>1x1", true, ""},
		{"NothingOntoAnAce", 2, "1: | As\n2: | 2s", "2>1x1", false, notOneBelow},
		{"KingOntoNothingButEmpty", 2, "1: | Qs\n2: | Ks\n3: | 4s", "2>1x1", false, notOneBelow},
		{"SameSuitRunMovesAsGroup", 2, "1: | 6h\n2: | 5s 4s 3s", "2>1x3", true, ""},
		{"MixedSuitGroupCannotMove", 2, "1: | 8h\n2: | 7s 6h 5h", "2>1x3", false, notARun},
		{"TopOfMixedStackMovesAlone", 2, "1: | 7h\n2: | 7s 6h 5h", "2>1x2", true, ""},
		{"GroupMustLandOnItsBottomCard", 2, "1: | 7h\n2: | 7s 6h 5h", "2>1x1", false, notOneBelow},
		{"OneSuitAnyDescendingRunMoves", 1, "1: | 8s\n2: | 7s 6s 5s", "2>1x3", true, ""},
		{"FourSuitMixedRunCannotMove", 4, "1: | 8d\n2: | 7c 6d", "2>1x2", false, notARun},
		{"PartOfRunMoves", 2, "1: | 5h\n2: | 6s 5s 4s", "2>1x1", true, ""},
		{"PartOfRunCountMustFitLanding", 2, "1: | 6h\n2: | 6s 5s 4s", "2>1x1", false, notOneBelow},
		{"PartOfRunOtherCountFits", 2, "1: | 6h\n2: | 6s 5s 4s", "2>1x2", true, ""},
		{"CountLongerThanRunRefused", 2, "2: | Kh Qh\n3: | 4s", "2>1x3", false, notARun},
		{"AnyCardIntoEmptyColumn", 2, "2: | 3s\n3: | 4s", "2>1x1", true, ""},
		{"PartOfRunIntoEmptyColumn", 2, "2: 4h | 6s 5s 4s", "2>1x2", true, ""},
		{"WholeRunIntoEmptyColumn", 2, "2: 4h | 6s 5s 4s", "2>1x3", true, ""},
		{"MoreThanRunIntoEmptyColumnRefused", 2, "2: 4h | 9h 6s 5s 4s", "2>1x4", false, notARun},
		{"MixedGroupIntoEmptyColumnRefused", 2, "2: | 7s 6h\n3: | 4s", "2>1x2", false, notARun},
		{"LoneCardIntoEmptyColumnIsLegal", 2, "2: | 7s\n3: | 4s", "2>1x1", true, ""},
		{"EmptySourceRefused", 2, "2: | 7s", "1>2x1", false, emptySource},
		{"FaceDownCardsNeverMove", 2, "1: | 7h\n2: 6s | 9h", "2>1x2", false, notARun},
		{"CardemsSameLandingRule", 1, "1: | 9s\n2: | 8s", "2>1x1", true, ""},
	}
	for _, tc := range tests {
		for _, rs := range []env.RuleSet{env.Classic, env.Cardems} {
			t.Run(tc.name+"/"+rs.String(), func(t *testing.T) {
				s := pos(t, rs, tc.suits, tc.pos)
				a := act(t, tc.move)
				before := s
				_, err := s.Step(a)
				if got := err == nil; got != tc.legal {
					t.Fatalf("Step(%v) error %v, want legal=%v\n%s", a, err, tc.legal, before.Render())
				}
				if !tc.legal {
					var ill *env.IllegalActionError
					if !errors.As(err, &ill) || ill.Action != a || ill.Reason != tc.why {
						t.Fatalf("error %v; want an IllegalActionError for %v saying %q", err, a, tc.why)
					}
					if s != before {
						t.Fatal("an illegal move changed the game")
					}
				}
			})
		}
	}
}

func TestRuleMoveCarriesCardsInOrder(t *testing.T) {
	s := pos(t, env.Classic, 2, "1: | 6h\n2: 9s | 5s 4s 3s\n3: | Kh")
	step(t, &s, "2>1x3")
	if got := faceUp(&s, 0); got != "6h 5s 4s 3s" {
		t.Errorf("column 1 = %q", got)
	}
	if got := faceUp(&s, 1); got != "9s" || s.FaceDown(1) != 0 {
		t.Errorf("column 2 = %q with %d face down, want the 9s turned up", got, s.FaceDown(1))
	}
}

func TestRuleFaceDownCardTurnsUpAutomatically(t *testing.T) {
	for _, rs := range []env.RuleSet{env.Classic, env.Cardems} {
		s := pos(t, rs, 2, "1: | 9s\n2: 3h 4h | 8s")
		step(t, &s, "2>1x1")
		if s.FaceDown(1) != 1 || faceUp(&s, 1) != "4h" {
			t.Errorf("%v: column 2 has %d face down and %q face up, want 1 and 4h", rs, s.FaceDown(1), faceUp(&s, 1))
		}
	}
}

const fullRunSpades = "Ks Qs Js Ts 9s 8s 7s 6s 5s 4s 3s 2s"

func TestRuleCompletedRunRemovedAtOnce(t *testing.T) {
	for _, rs := range []env.RuleSet{env.Classic, env.Cardems} {
		s := pos(t, rs, 2, "1: 9h 5h | "+fullRunSpades+"\n2: | As\n3: | 4h")
		step(t, &s, "2>1x1")
		if s.Runs() != 1 || s.SuitRuns(env.Spades) != 1 || s.SuitRuns(env.Hearts) != 0 {
			t.Fatalf("%v: runs %d (spades %d), want one spade run", rs, s.Runs(), s.SuitRuns(env.Spades))
		}
		if s.Height(0) != 2 || s.FaceDown(0) != 1 || faceUp(&s, 0) != "5h" {
			t.Errorf("%v: column 1 is %d cards, face up %q: want 9h down, 5h turned up", rs, s.Height(0), faceUp(&s, 0))
		}
		if got := s.Score(); got != 599 {
			t.Errorf("%v: score %d, want 500 - 1 + 100 = 599", rs, got)
		}
	}
}

func TestRuleRunRemovalCanEmptyColumn(t *testing.T) {
	s := pos(t, env.Classic, 1, "1: | "+fullRunSpades+"\n2: | As\n3: | 4s")
	step(t, &s, "2>1x1")
	if s.Height(0) != 0 || s.Height(1) != 0 || s.Runs() != 1 {
		t.Fatalf("heights %d %d, runs %d", s.Height(0), s.Height(1), s.Runs())
	}
}

// TestRuleFaceDownKingIsNotPartOfARun: a run is 13 face-up cards under
// both rule sets (decision 13). Only a position built by hand holds a
// face-down King under a face-up Queen to Ace; it is not removed.
func TestRuleFaceDownKingIsNotPartOfARun(t *testing.T) {
	for _, rs := range []env.RuleSet{env.Classic, env.Cardems} {
		s := pos(t, rs, 1, "1: Ks | Qs Js Ts 9s 8s 7s 6s 5s 4s 3s 2s\n2: | As\n3: | 4s")
		step(t, &s, "2>1x1")
		if s.Runs() != 0 || s.FaceDown(0) != 1 || s.FaceUpCount(0) != 12 {
			t.Errorf("%v: runs %d, column 1 %d down and %d up; want no run, the King still face down under 12", rs, s.Runs(), s.FaceDown(0), s.FaceUpCount(0))
		}
	}
}

func TestRuleMixedSuitKingToAceIsNotARun(t *testing.T) {
	s := pos(t, env.Classic, 2, "1: | Ks Qs Js Ts 9s 8s 7s 6s 5s 4s 3s 2h\n2: | Ah\n3: | 4h")
	step(t, &s, "2>1x1")
	if s.Runs() != 0 || s.FaceUpCount(0) != 13 {
		t.Fatalf("a mixed King-to-Ace was removed: runs %d, column of %d", s.Runs(), s.FaceUpCount(0))
	}
	if s.RunLength(0) != 2 {
		t.Errorf("movable run %d, want 2 (2h Ah)", s.RunLength(0))
	}
}

// tenColumns returns a position with every column filled: column 1 holds
// col1, the others a lone card that makes no run with it, and stock holds
// the given cards.
func tenColumns(col1, stock string) string {
	var b strings.Builder
	b.WriteString("1: " + col1 + "\n")
	for c, card := range []string{"9h", "9h", "9h", "9h", "9h", "9h", "9h", "9h", "9h"} {
		b.WriteString(string(rune('2'+c)) + ": | " + card + "\n")
	}
	b.WriteString("stock: " + stock + "\n")
	return strings.Replace(b.String(), ":: ", "10: ", 1)
}

func TestRuleDealCompletingRunRemovesIt(t *testing.T) {
	for _, rs := range []env.RuleSet{env.Classic, env.Cardems} {
		s := pos(t, rs, 2, tenColumns("5h | "+fullRunSpades, "As 2h 2h 2h 2h 2h 2h 2h 2h 2h"))
		step(t, &s, "deal")
		if s.Runs() != 1 || faceUp(&s, 0) != "5h" {
			t.Fatalf("%v: runs %d, column 1 %q: the dealt ace should complete and remove the run", rs, s.Runs(), faceUp(&s, 0))
		}
		if s.Score() != 599 {
			t.Errorf("%v: score %d, want 599", rs, s.Score())
		}
	}
}

func TestRuleClassicDealNeedsEveryColumnFilled(t *testing.T) {
	text := "1: | 5s\n2: | 5s\n3: | 5s\n4: | 5s\n5: | 5s\n6: | 5s\n7: | 5s\n8: | 5s\n9: | 5s\nstock: 2s 2s 2s 2s 2s 2s 2s 2s 2s 2s\n"
	s := pos(t, env.Classic, 1, text)
	refused(t, &s, "deal", emptyColumn)
	c := pos(t, env.Cardems, 1, text)
	step(t, &c, "deal")
	if c.Height(9) != 0 || c.StockLeft() != 1 {
		t.Fatalf("cardems deal: column 10 has %d cards, stock %d; want 0 and 1", c.Height(9), c.StockLeft())
	}
	for col := range 9 {
		if faceUp(&c, col) != "5s 2s" {
			t.Fatalf("column %d = %q", col+1, faceUp(&c, col))
		}
	}
}

func TestRuleDealPutsOneFaceUpCardOnEachColumn(t *testing.T) {
	stock := "Ah 2h 3h 4h 5h 6h 7h 8h 9h Th Js Js"
	for _, rs := range []env.RuleSet{env.Classic, env.Cardems} {
		s := pos(t, rs, 2, tenColumns("4s | Ks", stock))
		step(t, &s, "deal")
		want := []string{"Ks Ah", "9h 2h", "9h 3h", "9h 4h", "9h 5h", "9h 6h", "9h 7h", "9h 8h", "9h 9h", "9h Th"}
		for c, w := range want {
			if got := faceUp(&s, c); got != w {
				t.Errorf("%v: column %d = %q, want %q", rs, c+1, got, w)
			}
		}
		if s.StockLeft() != 2 || s.Score() != 499 {
			t.Errorf("%v: stock %d, score %d; want 2 and 499 (a deal costs a point)", rs, s.StockLeft(), s.Score())
		}
		refused(t, &s, "deal", shortStock)
	}
}

func TestRuleFiveDealsFromANewGame(t *testing.T) {
	for _, rs := range []env.RuleSet{env.Classic, env.Cardems} {
		for _, suits := range []int{1, 2, 4} {
			s := env.NewGame(env.MustRules(env.Options{RuleSet: rs, Suits: suits}), 3)
			deals := 0
			for s.Legal(env.Deal) {
				step(t, &s, "deal")
				deals++
			}
			if deals != 5 || s.StockLeft() != 0 {
				t.Errorf("%v %d suits: %d deals, %d left in stock; want 5 and 0", rs, suits, deals, s.StockLeft())
			}
		}
	}
}

func TestRuleCardemsDealNeedsTenStockCards(t *testing.T) {
	// Nine cards in the stock and no move: cardems cannot deal them, so the
	// game is lost with cards still in the stock.
	s := pos(t, env.Cardems, 1, "1: | 5s\n2: | 5s\nstock: 2s 2s 2s 2s 2s 2s 2s 2s 2s")
	refused(t, &s, "deal", shortStock)
	if !s.Legal(act(t, "1>3x1")) {
		t.Fatal("a card should move into the empty column")
	}
	stuck := pos(t, env.Cardems, 1, "1: | 5s\n2: | 5s\n3: | 5s\n4: | 5s\n5: | 5s\n6: | 5s\n7: | 5s\n8: | 5s\n9: | 5s\n10: | 5s\nstock: 2s 2s 2s 2s 2s 2s 2s 2s 2s")
	if stuck.Status() != env.Lost || stuck.NumLegal() != 0 {
		t.Fatalf("status %v with %d legal actions, want lost with none", stuck.Status(), stuck.NumLegal())
	}
	refused(t, &stuck, "deal", gameLost)
}

// TestRuleClassicHandBuiltStockDealsTens: a classic stock built by hand
// with a size no game has (RULES.md, The stock) deals while ten cards or
// more are left: 12 give one deal and leave 2, which cannot be dealt.
func TestRuleClassicHandBuiltStockDealsTens(t *testing.T) {
	cols := "1: | 5s\n2: | 5s\n3: | 5s\n4: | 5s\n5: | 5s\n6: | 5s\n7: | 5s\n8: | 5s\n9: | 5s\n10: | 5s\n"
	s := pos(t, env.Classic, 1, cols+"stock: 2s 2s 2s 2s 2s 2s 2s 2s 2s 2s 2s 2s")
	if _, err := s.Step(env.Deal); err != nil {
		t.Fatalf("a classic stock of 12 should deal once: %v", err)
	}
	// Two cards left and no move: lost with cards in the stock.
	if s.StockLeft() != 2 || s.Status() != env.Lost {
		t.Fatalf("%d cards left in the stock, status %v; want 2, lost", s.StockLeft(), s.Status())
	}
	refused(t, &s, "deal", gameLost)
	nine := pos(t, env.Classic, 1, cols+"stock: 2s 2s 2s 2s 2s 2s 2s 2s 2s")
	if nine.Status() != env.Lost {
		t.Fatalf("a classic stock of 9 with no move: status %v, want lost", nine.Status())
	}
}

func TestRuleCardemsDealOntoNoColumnIsNotADeal(t *testing.T) {
	s := pos(t, env.Cardems, 1, "stock: 2s 2s 2s 2s 2s 2s 2s 2s 2s 2s\nruns: s s s s s")
	if s.Legal(env.Deal) {
		t.Fatal("cardems offered a deal that places no card")
	}
	if s.Status() != env.Lost {
		t.Fatalf("status %v, want lost: nothing can be moved or dealt", s.Status())
	}
	refused(t, &s, "deal", gameLost)
}

func TestRuleClassicLostWhenStockEmptyAndNoMove(t *testing.T) {
	text := "1: | 5s\n2: | 5s\n3: | 5s\n4: | 5s\n5: | 5s\n6: | 5s\n7: | 5s\n8: | 5s\n9: | 5s\n10: | 5s\n"
	s := pos(t, env.Classic, 1, text)
	if s.Status() != env.Lost || !s.Terminated() {
		t.Fatalf("status %v, want lost", s.Status())
	}
	refused(t, &s, "deal", gameLost)
	withStock := pos(t, env.Classic, 1, text+"stock: 2s 2s 2s 2s 2s 2s 2s 2s 2s 2s")
	if withStock.Status() != env.Playing || !withStock.Legal(env.Deal) {
		t.Fatalf("with a stock to deal the game must go on, status %v", withStock.Status())
	}
}

func TestRuleLostAfterAMoveLeavesNothing(t *testing.T) {
	s := pos(t, env.Classic, 1, "1: | 9s\n2: 3s | 8s\n3: | Ks\n4: | Ks\n5: | Ks\n6: | Ks\n7: | Ks\n8: | Ks\n9: | Ks\n10: | Ks\n")
	if s.Status() != env.Playing {
		t.Fatalf("status %v before the move", s.Status())
	}
	step(t, &s, "2>1x1")
	if s.Status() != env.Lost {
		t.Fatalf("status %v after the last possible move, want lost", s.Status())
	}
	refused(t, &s, "1>2x1", gameLost)
}

func TestRuleWinAfterEightRuns(t *testing.T) {
	for _, tc := range []struct {
		rs    env.RuleSet
		score int
	}{{env.Classic, 500 - 1 + 100 + 50}, {env.Cardems, 500 - 1 + 100}} {
		s := pos(t, tc.rs, 1, "1: | "+fullRunSpades+"\n2: | As\nruns: s s s s s s s")
		step(t, &s, "2>1x1")
		if s.Status() != env.Won || s.Runs() != 8 || !s.Terminated() {
			t.Fatalf("%v: status %v, runs %d", tc.rs, s.Status(), s.Runs())
		}
		if s.Score() != tc.score {
			t.Errorf("%v: score %d, want %d (classic adds the win bonus, cardems does not)", tc.rs, s.Score(), tc.score)
		}
		if s.NumLegal() != 0 {
			t.Errorf("%v: %d actions legal after the win", tc.rs, s.NumLegal())
		}
		refused(t, &s, "1>2x1", gameWon)
	}
}

func TestRuleScoreStartsAt500AndMovesCostOne(t *testing.T) {
	for _, rs := range []env.RuleSet{env.Classic, env.Cardems} {
		s := env.NewGame(env.MustRules(env.Options{RuleSet: rs, Suits: 4}), 1)
		if s.Score() != 500 {
			t.Fatalf("%v starts at %d", rs, s.Score())
		}
		step(t, &s, "deal")
		if s.Score() != 499 {
			t.Fatalf("%v: a deal left the score at %d, want 499", rs, s.Score())
		}
		m := pos(t, rs, 2, "1: | 9s\n2: | 8h\n3: | 4s")
		step(t, &m, "2>1x1")
		if m.Score() != 499 {
			t.Fatalf("%v: a move left the score at %d, want 499", rs, m.Score())
		}
	}
}

func TestRuleClassicTimePenalty(t *testing.T) {
	for _, tc := range []struct {
		tick  time.Duration
		after []int // score after each of four moves
	}{
		{0, []int{499, 498, 497, 496}},
		{time.Second, []int{499, 497, 496, 494}},
		{2 * time.Second, []int{498, 496, 494, 492}},
		{1500 * time.Millisecond, []int{499, 497, 495, 493}}, // 1.5s, 3s, 4.5s, 6s: 0, 1, 2, 3 time points
		{5 * time.Second, []int{497, 493, 490, 486}},         // 5s, 10s, 15s, 20s: 2, 5, 7, 10 time points
	} {
		o := env.Options{RuleSet: env.Classic, Suits: 1, TimePerActionMs: int(tc.tick / time.Millisecond)}
		s := posWith(t, o, "1: | 9s\n2: | 8s\n3: | 4s")
		for i, want := range tc.after {
			move := "2>1x1"
			if i%2 == 1 {
				move = "1>2x1"
			}
			step(t, &s, move)
			if s.Score() != want {
				t.Fatalf("tick %v, move %d: score %d, want %d", tc.tick, i+1, s.Score(), want)
			}
			if s.Elapsed() != time.Duration(i+1)*tc.tick {
				t.Fatalf("elapsed %v after %d actions of %v", s.Elapsed(), i+1, tc.tick)
			}
		}
	}
}

func TestRuleCardemsHasNoTimePenalty(t *testing.T) {
	_, err := env.NewRules(env.Options{RuleSet: env.Cardems, Suits: 1, TimePerActionMs: 1000})
	if err == nil || err.Error() != "env: time_per_action_ms applies only to classic scoring; cardems has no time penalty" {
		t.Fatalf("cardems accepted a time penalty, or refused it for another reason: %v", err)
	}
}

func TestRuleScoreNeverBelowZero(t *testing.T) {
	for _, rs := range []env.RuleSet{env.Classic, env.Cardems} {
		e := env.New(env.MustRules(env.Options{RuleSet: rs, Suits: 1}))
		e.Reset(1)
		s := pos(t, rs, 1, "1: | 9s\n2: | 8s\n3: | 4s\nscore: 1")
		step(t, &s, "2>1x1")
		step(t, &s, "1>2x1")
		if s.Score() != 0 {
			t.Fatalf("%v: score %d, want 0", rs, s.Score())
		}
	}
}

func TestRuleCostsClampBeforeBonuses(t *testing.T) {
	// From 0, a move that completes a run costs nothing (the score cannot go
	// below 0) and earns 100; classic's win bonus comes on top the same way.
	for _, rs := range []env.RuleSet{env.Classic, env.Cardems} {
		s := pos(t, rs, 1, "1: | "+fullRunSpades+"\n2: | As\n3: | 4s\nscore: 0")
		step(t, &s, "2>1x1")
		if s.Score() != 100 {
			t.Fatalf("%v: score %d, want 100", rs, s.Score())
		}
	}
	o := env.Options{RuleSet: env.Classic, Suits: 1, TimePerActionMs: 4000}
	w := posWith(t, o, "1: | "+fullRunSpades+"\n2: | As\nruns: s s s s s s s\nscore: 1")
	step(t, &w, "2>1x1") // costs 1 + 2 from a score of 1: 0, then +100 +50
	if w.Score() != 150 {
		t.Fatalf("the winning move from 1 with a time penalty of 2: score %d, want 150", w.Score())
	}
}

func TestRuleTruncatedAtStepLimit(t *testing.T) {
	o := env.Options{RuleSet: env.Classic, Suits: 1, MaxSteps: 2}
	s := posWith(t, o, "1: | 9s\n2: | 8s\n3: | 4s")
	var u env.Undo
	for _, m := range []string{"2>1x1", "1>2x1"} {
		var err error
		if u, err = s.Step(act(t, m)); err != nil {
			t.Fatal(err)
		}
	}
	if !s.Truncated() || s.Terminated() || s.Status() != env.Playing {
		t.Fatalf("truncated %v, terminated %v", s.Truncated(), s.Terminated())
	}
	if s.NumLegal() != 0 {
		t.Fatalf("a truncated game has %d legal actions", s.NumLegal())
	}
	refused(t, &s, "2>1x1", stepLimit)
	s.Undo(u)
	if s.Truncated() || !s.Legal(act(t, "1>2x1")) {
		t.Fatal("undo did not reopen the truncated game")
	}
	unlimited := env.MustRules(env.Options{RuleSet: env.Classic, Suits: 1, MaxSteps: -1})
	if unlimited.MaxSteps() != -1 {
		t.Fatalf("negative MaxSteps gave %d, want -1 (no limit)", unlimited.MaxSteps())
	}
	if env.MustRules(env.Options{Suits: 1}).MaxSteps() != env.DefaultMaxSteps {
		t.Fatal("zero MaxSteps does not select the default")
	}
}

// TestRuleLostAtTheStepLimit: an action that reaches the step limit and
// also leaves nothing legal ends the game lost, not truncated: the rules'
// outcome comes before the environment's limit (RULES.md, decision 9).
func TestRuleLostAtTheStepLimit(t *testing.T) {
	o := env.Options{RuleSet: env.Classic, Suits: 1, MaxSteps: 1}
	s := posWith(t, o, "1: | 9s\n2: 3s | 8s\n3: | Ks\n4: | Ks\n5: | Ks\n6: | Ks\n7: | Ks\n8: | Ks\n9: | Ks\n10: | Ks\n")
	if _, err := s.Step(act(t, "2>1x1")); err != nil {
		t.Fatal(err)
	}
	if s.Status() != env.Lost || s.Truncated() || !s.Terminated() {
		t.Fatalf("status %v, truncated %v, terminated %v; want lost", s.Status(), s.Truncated(), s.Terminated())
	}
}

// TestRuleLostAtTheStepLimitInABatch: the rule above holds on the path
// Env and Batch step by (which updates the mask as it goes), not only on
// State.Step's: a game whose last step leaves no legal move is lost,
// not truncated.
func TestRuleLostAtTheStepLimitInABatch(t *testing.T) {
	r := env.MustRules(env.Options{RuleSet: env.Classic, Suits: 1, MaxSteps: 1})
	b, err := env.NewBatch(r, env.BatchOptions{N: 1, Workers: 1, Autoreset: env.Disabled})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	b.Reset(1)
	snap, err := b.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	snap.States[0] = "1: | 9s\n2: 3s | 8s\n3: | Ks\n4: | Ks\n5: | Ks\n6: | Ks\n7: | Ks\n8: | Ks\n9: | Ks\n10: | Ks\n"
	if err := b.Restore(snap); err != nil {
		t.Fatal(err)
	}
	if err := b.Step([]env.Action{act(t, "2>1x1")}); err != nil {
		t.Fatal(err)
	}
	if st := b.State(0); !b.Terminated[0] || b.Truncated[0] || st.Status() != env.Lost {
		t.Fatalf("terminated %v, truncated %v, status %v; want a loss", b.Terminated[0], b.Truncated[0], st.Status())
	}
}

// TestRuleKingEndsARun: card codes are adjacent across suits (a King of
// one suit is one below the Ace of the next), so a run must stop at a
// King: a King on an Ace of another suit neither moves with it nor,
// dealt onto Q..A of that suit, completes a run.
func TestRuleKingEndsARun(t *testing.T) {
	for _, suits := range []int{2, 4} {
		for _, rs := range []env.RuleSet{env.Classic, env.Cardems} {
			s := pos(t, rs, suits, "1: | 3h 2h Ah Ks\n2: | 9s\n")
			if n := s.RunLength(0); n != 1 {
				t.Errorf("%v, %d suits: the run under Ks on Ah is %d long, want 1", rs, suits, n)
			}
			if s.Legal(act(t, "1>3x2")) {
				t.Errorf("%v, %d suits: Ah Ks moves as a run", rs, suits)
			}
		}
	}
	s := pos(t, env.Classic, 2, tenColumns("| Qh Jh Th 9h 8h 7h 6h 5h 4h 3h 2h Ah", "Ks 2s 2s 2s 2s 2s 2s 2s 2s 2s"))
	step(t, &s, "deal")
	if s.Runs() != 0 || s.Height(0) != 13 {
		t.Errorf("a deal of Ks onto Qh..Ah: %d runs, column 1 %d cards high; want 0 and 13", s.Runs(), s.Height(0))
	}
}

func TestRuleUndoRestoresExactly(t *testing.T) {
	cases := []struct {
		rs   env.RuleSet
		pos  string
		move string
	}{
		{env.Classic, "1: 9h 5h | " + fullRunSpades + "\n2: 3s | As\n3: | 4h", "2>1x1"}, // removal, two turns
		{env.Classic, tenColumns("5h | "+fullRunSpades, "As 2h 2h 2h 2h 2h 2h 2h 2h 2h"), "deal"},
		{env.Cardems, "1: | 5s\n2: 4s | 5s\nstock: 2s 2s 3s 2s 2s 2s 2s 2s 2s 2s 2s", "deal"},
		{env.Cardems, "1: | 9s\n2: 3s | 8s\nscore: 0", "2>1x1"},
	}
	for _, tc := range cases {
		s := pos(t, tc.rs, 2, tc.pos)
		before := s
		u, err := s.Step(act(t, tc.move))
		if err != nil {
			t.Fatal(err)
		}
		if s == before {
			t.Fatal("the step changed nothing")
		}
		s.Undo(u)
		if s != before {
			t.Fatalf("%v %s: undo did not restore the game\nbefore:\n%s\nafter undo:\n%s", tc.rs, tc.move, before.Render(), s.Render())
		}
	}
}

// TestUndoRefusesAnotherStepsRecord: a record undone twice (a deal's
// twice took the stock to -205 cards), the zero record, an earlier step's,
// or a copy's stepped further each panic before Undo changes the game.
func TestUndoRefusesAnotherStepsRecord(t *testing.T) {
	s := env.NewGame(env.MustRules(env.Options{Suits: 1}), 7)
	first, err := s.Step(env.Deal)
	if err != nil {
		t.Fatal(err)
	}
	clone := s
	var last env.Undo
	for _, a := range clone.AppendLegal(nil) {
		if a != env.Deal {
			if last, err = clone.Step(a); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	dealt := s
	dealt.Undo(first) // the record of s's last step: accepted
	undone := dealt
	for name, tc := range map[string]struct {
		s *env.State
		u env.Undo
	}{
		"undone twice":       {&undone, first},
		"the zero record":    {&dealt, env.Undo{}},
		"a copy's next step": {&s, last},
		"an earlier step":    {&clone, first},
	} {
		before := *tc.s
		func() {
			defer func() {
				if v := recover(); v == nil || !strings.Contains(fmt.Sprint(v), "env: Undo of a record made at another step") {
					t.Errorf("%s: recovered %v, want Undo's panic", name, v)
				}
			}()
			tc.s.Undo(tc.u)
		}()
		if *tc.s != before {
			t.Errorf("%s: the refused Undo changed the game", name)
		}
	}
	// The check fits the record's padding: Env keeps one a step.
	if size := unsafe.Sizeof(env.Undo{}); size != 32 {
		t.Errorf("an Undo takes %d bytes, not 32", size)
	}
}

func TestRuleCloneIsIndependent(t *testing.T) {
	s := env.NewGame(env.MustRules(env.Options{Suits: 4}), 5)
	orig := s
	clone := s
	step(t, &clone, "deal")
	if s != orig || clone == s {
		t.Fatal("stepping a clone changed the original")
	}
}

// A game without a step limit can run classic's clock to the end of
// time.Duration: it stops there instead of wrapping round (which would hand
// back hundreds of millions of points), and actions then cost one point.
func TestRuleClockStopsAtItsEnd(t *testing.T) {
	o := env.Options{MaxSteps: -1, TimePerActionMs: env.MaxTimePerActionMs}
	s := posWith(t, o, "1: | 9s\n2: | 8s\n3: | 4s\nscore: 100000\nelapsed: 2562047h40m")
	for i := range 4 {
		before := s.Score()
		move := "2>1x1"
		if i%2 == 1 {
			move = "1>2x1"
		}
		step(t, &s, move)
		if s.Elapsed() <= 0 || s.Score() >= before {
			t.Fatalf("move %d: elapsed %v, score %d after %d", i+1, s.Elapsed(), s.Score(), before)
		}
		if i >= 1 && s.Score() != before-1 {
			t.Fatalf("move %d at the clock's end: score %d after %d, want one point less", i+1, s.Score(), before)
		}
	}
}

// TestParseStateRefusesALineTwice: a column named twice, in any spelling
// of its number, is refused rather than read as a second column's cards
// or left to overwrite the first.
func TestParseStateRefusesALineTwice(t *testing.T) {
	r := env.MustRules(env.Options{Suits: 1})
	for _, text := range []string{
		"1: 5s | 4s\n1: 3s",
		"1: 5s | 4s\n01: 3s",
		"01: 5s | 4s\n+1: 3s",
		"stock: 2s\nstock: 3s",
	} {
		if _, err := env.ParseState(r, text); err == nil || !strings.Contains(err.Error(), "given twice") {
			t.Errorf("%q: %v, want it refused as given twice", text, err)
		}
	}
	if _, err := env.ParseState(r, "01: 5s | 4s\n2: 3s"); err != nil {
		t.Errorf("a column numbered 01: %v", err)
	}
}

// TestLowestScore: LowestScore is the score of a game whose every action
// left costs its point and the clock's charge, and no way of playing on
// ends lower.
func TestLowestScore(t *testing.T) {
	for _, o := range []env.Options{
		{Suits: 1, MaxSteps: 12},
		{Suits: 2, MaxSteps: 12, TimePerActionMs: 1500},
		{RuleSet: env.Cardems, Suits: 1, MaxSteps: 12},
	} {
		r := env.MustRules(o)
		full := 0
		for seed := range uint64(20) {
			s := env.NewGame(r, seed)
			lowest := []int{s.LowestScore()}
			var legal []env.Action
			for i := 0; !s.Over(); i++ {
				legal = s.AppendLegal(legal[:0])
				if _, err := s.Step(legal[(int(seed)+i*7)%len(legal)]); err != nil {
					t.Fatal(err)
				}
				lowest = append(lowest, s.LowestScore())
			}
			for i, l := range lowest {
				if s.Score() < l {
					t.Fatalf("%v seed %d: ended at %d, below LowestScore %d after %d moves", r, seed, s.Score(), l, i)
				}
			}
			// Twelve actions from the deal complete no run: the game ends
			// at the lowest score, 500 less 12 points, and under the
			// clock 12 x 1.5 s = 18 s, 9 more.
			want := env.StartScore - 12
			if o.TimePerActionMs > 0 {
				want -= 9
			}
			if s.Steps() == 12 {
				full++
				if lowest[0] != want || s.Score() != want || s.LowestScore() != want {
					t.Errorf("%v seed %d: LowestScore %d at the deal, ended at %d (LowestScore %d there); want %d", r, seed, lowest[0], s.Score(), s.LowestScore(), want)
				}
				// With no run completed the bound is reached, so it is the
				// final score at every step, not only at the deal: the
				// clock's points already paid are not charged again.
				for i, l := range lowest {
					if s.Runs() == 0 && l != s.Score() {
						t.Errorf("%v seed %d: LowestScore %d after %d moves; the game ended at %d with no run", r, seed, l, i, s.Score())
					}
				}
			}
		}
		if full < 10 {
			t.Errorf("%v: %d of 20 games played their 12 actions", r, full)
		}
	}
	// A game over before its step limit ends with its score: no action is
	// left to charge.
	r := env.MustRules(env.Options{Suits: 1, MaxSteps: 1000, TimePerActionMs: 1500})
	for text, move := range map[string]string{oneMoveToWin: "2>1x1", oneMoveToLose: "1>2x1"} {
		s, err := env.ParseState(r, text)
		if err != nil {
			t.Fatal(err)
		}
		a, _ := env.ParseAction(move)
		if _, err := s.Step(a); err != nil || !s.Terminated() {
			t.Fatalf("%s: %v, terminated %v", move, err, s.Terminated())
		}
		if s.LowestScore() != s.Score() {
			t.Errorf("%s ended the game at %d; LowestScore %d", move, s.Score(), s.LowestScore())
		}
	}
	if s := env.NewGame(env.MustRules(env.Options{Suits: 1, MaxSteps: -1}), 1); s.LowestScore() != 0 {
		t.Errorf("no step limit: LowestScore %d, want 0", s.LowestScore())
	}
	if s := env.NewGame(env.MustRules(env.Options{Suits: 1, MaxSteps: 1 << 30, TimePerActionMs: 1_000_000_000}), 1); s.LowestScore() != 0 {
		t.Errorf("a clock past any score: LowestScore %d, want 0", s.LowestScore())
	}
}

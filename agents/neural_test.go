package agents

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/spiderenv/spider/agents/nn"
	"github.com/spiderenv/spider/env"
)

// TestNeuralPlaysItsBestLogitButDoesNotGoBack gives Neural a network whose
// logits are its policy head's biases alone, and two positions one move
// apart (P1 is P0 with the 5s moved from column 1 to column 2). It must
// play the highest logit; at P1 its highest logit takes the 5s back to
// P0, which it saw this game, so it must play its next one instead; after
// Begin the game is new and the way back is open again. The network was
// trained with a step limit of 5 and the game is past it: Neural must
// still look ahead as in any game, since its limit is not the game's.
func TestNeuralPlaysItsBestLogitButDoesNotGoBack(t *testing.T) {
	game := env.MustRules(env.Options{Suits: 2, MaxSteps: -1})
	trained := env.MustRules(env.Options{Suits: 2, MaxSteps: 5})
	net, err := nn.New(nn.SpecFor(trained, []int{4}), 1)
	if err != nil {
		t.Fatal(err)
	}
	L := len(net.Spec.Hidden)
	clear(net.W[L])
	clear(net.B[L])
	there, back, aside := env.MoveAction(0, 1, 1), env.MoveAction(1, 0, 1), env.MoveAction(1, 2, 1)
	net.B[L][back], net.B[L][there], net.B[L][aside] = 3, 2, 1
	net.B[L][env.MoveAction(0, 2, 1)] = -1
	a, err := NewNeural(net)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.CheckRules(game); err != nil {
		t.Fatal(err)
	}
	const rest = "4: | Kh\n5: | Kh\n6: | Kh\n7: | Kh\n8: | Kh\n9: | Kh\n10: | Kh\nsteps: 20\n"
	p0, err := env.ParseState(game, "1: | 6h 5s\n2: | 6s\n3: | 6h\n"+rest)
	if err != nil {
		t.Fatal(err)
	}
	p1, err := env.ParseState(game, "1: | 6h\n2: | 6s 5s\n3: | 6h\n"+rest)
	if err != nil {
		t.Fatal(err)
	}
	act := func(s *env.State, last env.Action, has bool) env.Action {
		return a.Act(NewView(s, s.AppendLegal(nil), last, has)).Action
	}
	a.Begin(1)
	if got := act(&p0, 0, false); got != there {
		t.Fatalf("at P0: %v, want %v, the legal action of the highest logit", got, there)
	}
	if got := act(&p1, there, true); got != aside {
		t.Fatalf("at P1: %v, want %v (%v goes back to P0, seen this game)", got, aside, back)
	}
	a.Begin(2)
	if got := act(&p1, 0, false); got != back {
		t.Fatalf("at P1 in a new game: %v, want %v (P0 is not seen in this game)", got, back)
	}
}

// TestNewNeuralRefusesWeightsThatDoNotFit: a Net made by hand whose
// weights do not fit its specification is refused with a reason; before,
// NewNeural took it and Act panicked with an index out of range.
func TestNewNeuralRefusesWeightsThatDoNotFit(t *testing.T) {
	r := env.MustRules(env.Options{Suits: 1, Encoding: env.Float32})
	good, err := nn.New(nn.SpecFor(r, []int{4}), 1)
	if err != nil {
		t.Fatal(err)
	}
	short := *good
	short.W = slices.Clone(good.W)
	short.W[1] = short.W[1][:len(short.W[1])-1]
	columns := nn.ColumnSpecFor(r, 8, 16, 4)
	columns.Hidden = nil
	for name, tc := range map[string]struct {
		net  *nn.Net
		want string
	}{
		"no weights":        {&nn.Net{Spec: good.Spec}, "agents: 0 weight and 0 bias layers, the specification has 3"},
		"a layer one short": {&short, "agents: layer 1 has 4323 weights and 1081 biases, want 4324 and 1081"},
		"a columns spec without its hidden layer": {&nn.Net{Spec: columns}, "nn: "},
	} {
		if _, err := NewNeural(tc.net); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want an error containing %q", name, err, tc.want)
		}
	}
	if _, err := NewNeural(good); err != nil {
		t.Errorf("nn.New's network: %v", err)
	}
}

// TestNeuralLiteralCannotPlay: a Neural not made by NewNeural (a literal
// with its exported Net, or a Net swapped in after) says so at CheckRules
// and panics with that at Act; it said its rules were fine and panicked
// on a reframe to a game of 0 suits.
func TestNeuralLiteralCannotPlay(t *testing.T) {
	r := env.MustRules(env.Options{Suits: 1, Encoding: env.Float32})
	net, err := nn.New(nn.SpecFor(r, []int{4}), 1)
	if err != nil {
		t.Fatal(err)
	}
	other, err := nn.New(nn.SpecFor(r, []int{4}), 2)
	if err != nil {
		t.Fatal(err)
	}
	made, err := NewNeural(net)
	if err != nil {
		t.Fatal(err)
	}
	swapped, _ := NewNeural(net)
	swapped.Net = other
	for name, a := range map[string]*Neural{"a literal": {Net: net}, "a swapped Net": swapped} {
		if err := a.CheckRules(r); err == nil || !strings.Contains(err.Error(), "not made by NewNeural") {
			t.Errorf("%s: CheckRules %v", name, err)
		}
		func() {
			defer func() {
				if v := recover(); v == nil || !strings.Contains(fmt.Sprint(v), "not made by NewNeural") {
					t.Errorf("%s: Act panicked with %v", name, v)
				}
			}()
			s := env.NewGame(r, 1)
			a.Act(NewView(&s, s.AppendLegal(nil), 0, false))
		}()
	}
	if err := made.CheckRules(r); err != nil {
		t.Errorf("made by NewNeural: %v", err)
	}
}

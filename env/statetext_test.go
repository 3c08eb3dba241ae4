package env_test

import (
	"strings"
	"testing"
	"time"

	"github.com/spiderenv/spider/env"
)

// TestParseStateRefusesImpossiblePositions: ParseState checks the text
// (its doc lists what it refuses), so a snapshot, a puzzle or a bug
// report can never smuggle in a position no game reaches: each text here
// breaks one rule and must be refused with a message naming it, while the
// texts beside it, just inside the same bound, are accepted.
func TestParseStateRefusesImpossiblePositions(t *testing.T) {
	stock51 := "stock:" + strings.Repeat(" 5s", 51)
	for _, tc := range []struct {
		suits int
		text  string
		want  string // "" when the text is a position
	}{
		{1, "1: | Ks Qs Js Ts 9s 8s 7s 6s 5s 4s 3s 2s As", "holds a completed run"},
		{1, "1: | Qs Js Ts 9s 8s 7s 6s 5s 4s 3s 2s As", ""},
		// Under other cards too: a run is removed as it forms on top.
		{1, "1: | Ks Qs Js Ts 9s 8s 7s 6s 5s 4s 3s 2s As 9s", "holds a completed run"},
		{2, "1: 3h | Ks Qs Js Ts 9s 8s 7s 6s 5s 4s 3s 2s As Qh Jh", "holds a completed run"},
		{1, "1: Ks | Qs Js Ts 9s 8s 7s 6s 5s 4s 3s 2s As 9s", ""}, // its king face down
		{2, "1: | Ks Qs Js Ts 9s 8s 7s 6h 5s 4s 3s 2s As 9s", ""}, // a heart in it
		{1, "runs: h", "not a suit letter of a 1-suit deck"},
		{2, "runs: h", ""},
		{2, "runs: d", "not a suit letter of a 2-suit deck"},
		{1, "runs: ss", "not a suit letter"},
		{1, "runs: s s s s s s s s s", "runs: 9, at most 8"},
		{1, "score: -1", "not a number from 0"},
		{1, "score: 0", ""},
		{1, "steps: -3", "not a number from 0"},
		{1, "score: 4 5", "want one number"},
		{1, "elapsed: -2s", "not a duration"},
		{1, "elapsed: 0s", ""},
		{1, "1: 2s 3s 4s 5s 6s 7s | 8s", "6 face-down cards, at most 5"},
		{1, "1: 2s 3s 4s 5s 6s | 8s", ""},
		{1, "1: 5s 4s |", "top card must be face up"},
		{1, "1: 5s 4s", ""}, // no bar: every card face up
		{1, "1: Ks | | Qs", "two bars"},
		{1, "1: | Kh", "not in a 1-suit deck"},
		{1, "stock: Kh", "not in a 1-suit deck"},
		{1, stock51, "stock: 51 cards, at most 50"},
		{1, "stock:" + strings.Repeat(" 5s", 50), ""},
		{1, "runs: s s s s s s s s\n1: | Ks", "105 cards, more than the deck's 104"},
		{1, "runs: s s s s s s s\n1: | Ks Qs Js Ts 9s 8s 7s 6s 5s 4s 3s 2s", ""},
		{1, "11: | Ks", "unknown line"},
		{1, "0: | Ks", "unknown line"},
		{1, "tableau: | Ks", "unknown line"},
		{1, "1 | Ks", "has no \"name:\""},
	} {
		_, err := env.ParseState(env.MustRules(env.Options{Suits: tc.suits}), tc.text)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%d suits, %q refused: %v", tc.suits, tc.text, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%d suits, %q: %v; want an error containing %q", tc.suits, tc.text, err, tc.want)
		}
	}
}

// TestParseStateSetsTheStatus: a parsed position with eight runs is won,
// one with no legal action is lost, and MarshalText keeps sub-second game
// time (the simulated clock ticks in milliseconds), so a text round trip
// loses nothing the score depends on.
func TestParseStateSetsTheStatus(t *testing.T) {
	r := env.MustRules(env.Options{Suits: 1, TimePerActionMs: 1500})
	for _, tc := range []struct {
		text string
		want env.Status
	}{
		{"runs: s s s s s s s s", env.Won},
		{"1: | Ks\n2: | Ks\n3: | Ks\n4: | Ks\n5: | Ks\n6: | Ks\n7: | Ks\n8: | Ks\n9: | 2s\n10: | 4s", env.Lost},
		{"1: | Ks\n2: | Ks\n3: | Ks\n4: | Ks\n5: | Ks\n6: | Ks\n7: | Ks\n8: | Ks\n9: | 2s\n10: | 3s", env.Playing},
	} {
		s, err := env.ParseState(r, tc.text)
		if err != nil {
			t.Fatal(err)
		}
		if s.Status() != tc.want {
			t.Errorf("%q: status %v, want %v", tc.text, s.Status(), tc.want)
		}
	}
	s, err := env.ParseState(r, "1: 4s | Ks\n2: | Qs\nscore: 321\nsteps: 7\nelapsed: 10.5s")
	if err != nil {
		t.Fatal(err)
	}
	text, _ := s.MarshalText()
	again, err := env.ParseState(r, string(text))
	if err != nil || again != s || again.Elapsed() != 10500*time.Millisecond {
		t.Fatalf("round trip of\n%s: elapsed %v, equal %v, %v; want 10.5s and the same position", text, again.Elapsed(), again == s, err)
	}
}

// TestUnlimitedGameStopsAtTheLargestLimit: a game without a step limit is
// still truncated at 2^30 actions, the largest limit, so its count never
// overflows and its text reads back. Before, it played on past 2^30
// (whose text ParseState refused) and wrapped negative at 2^31.
func TestUnlimitedGameStopsAtTheLargestLimit(t *testing.T) {
	r := env.MustRules(env.Options{Suits: 1, MaxSteps: -1})
	s, err := env.ParseState(r, "1: | Ks\n2: | 6s 5s\n3: |\nsteps: 1073741823")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Step(env.MoveAction(1, 2, 1)); err != nil || !s.Truncated() || s.Steps() != 1<<30 {
		t.Fatalf("step 2^30: %v, truncated %v at %d", err, s.Truncated(), s.Steps())
	}
	if _, err := s.Step(env.MoveAction(2, 1, 1)); err == nil {
		t.Fatal("a step past 2^30 was taken")
	}
	text, err := s.MarshalText()
	if err != nil {
		t.Fatal(err)
	}
	back, err := env.ParseState(r, string(text))
	if err != nil || back != s {
		t.Fatalf("its text read back: %v", err)
	}
}

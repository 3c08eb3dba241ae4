package env_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spiderenv/spider/env"
)

// tokenEnds returns where each space-separated word of line ends.
func tokenEnds(line string) []int {
	var ends []int
	for i := range len(line) {
		if line[i] != ' ' && (i+1 == len(line) || line[i+1] == ' ') {
			ends = append(ends, i+1)
		}
	}
	return ends
}

// TestRenderLabelsSitOverTheirColumns requires each column number to end
// where its column's cards end, in a deal where every column shows a card
// on its first row.
func TestRenderLabelsSitOverTheirColumns(t *testing.T) {
	s := env.NewGame(env.MustRules(env.Options{Suits: 4}), 42)
	lines := strings.Split(s.Render(), "\n")
	labels, cards := tokenEnds(lines[1]), tokenEnds(lines[2])
	if len(labels) != env.NumColumns || len(cards) != env.NumColumns {
		t.Fatalf("%d numbers and %d cards on the first row:\n%s\n%s", len(labels), len(cards), lines[1], lines[2])
	}
	for c := range env.NumColumns {
		if got := lines[1][strings.LastIndex(lines[1][:labels[c]], " ")+1 : labels[c]]; got != strconv.Itoa(c+1) {
			t.Fatalf("word %d of the numbers' line is %q", c+1, got)
		}
		if labels[c] != cards[c] {
			t.Errorf("column %d's number ends at character %d, its card at %d:\n%s\n%s", c+1, labels[c], cards[c], lines[1], lines[2])
		}
	}
}

// TestRenderDealsLeft checks DealsLeft and the status line's "(N deals)"
// under both rule sets: classic deals ten cards whatever the columns,
// cardems one to each non-empty column while ten or more are left.
func TestRenderDealsLeft(t *testing.T) {
	const (
		stock14 = "\nstock: 2s 3s 4s 5s 6s 7s 8s 9s Ts Js Qs Ks 3s 4s"
		stock9  = "\nstock: 2s 3s 4s 5s 6s 7s 8s 9s Ts"
		four    = "1: | Ks\n2: | Kh\n3: | Qs\n4: | Qh"
		ten     = four + "\n5: | Js\n6: | Jh\n7: | Ts\n8: | Th\n9: | 9s\n10: | 9h"
	)
	for _, tc := range []struct {
		rs          env.RuleSet
		pos         string // "" for the deal of seed 1
		stock, want int
	}{
		{env.Classic, "", 50, 5},
		{env.Cardems, "", 50, 5},
		{env.Classic, four + "\nstock:" + strings.Repeat(" 5s", 20), 20, 2}, // empty columns block classic's deal, not its count
		{env.Cardems, four + stock14, 14, 2},                                // 14, then 10: four cards a deal
		{env.Cardems, ten + stock14, 14, 1},                                 // then four cards stay in the stock for ever
		{env.Cardems, "1: | Ks" + stock14, 14, 5},                           // 14, 13, 12, 11, 10
		{env.Cardems, four + stock9, 9, 0},                                  // fewer than ten cards never deal
	} {
		r := env.MustRules(env.Options{RuleSet: tc.rs, Suits: 2})
		s := env.NewGame(r, 1)
		if tc.pos != "" {
			var err error
			if s, err = env.ParseState(r, tc.pos); err != nil {
				t.Fatal(err)
			}
		}
		if s.StockLeft() != tc.stock || s.DealsLeft() != tc.want {
			t.Errorf("%v %q: stock %d, DealsLeft %d; want %d and %d", tc.rs, tc.pos, s.StockLeft(), s.DealsLeft(), tc.stock, tc.want)
		}
		want := "(" + strconv.Itoa(tc.want) + " deals)"
		if tc.want == 1 {
			want = "(1 deal)"
		}
		if line, _, _ := strings.Cut(s.Render(), "\n"); !strings.Contains(line, want) {
			t.Errorf("%v %q: the status line %q lacks %q", tc.rs, tc.pos, line, want)
		}
		if tc.rs != env.Cardems {
			continue
		}
		// Under cardems the count is what the player can deal now, one
		// deal after another with no move between.
		deals := 0
		for s.Legal(env.Deal) {
			if _, err := s.Step(env.Deal); err != nil {
				t.Fatal(err)
			}
			deals++
		}
		if deals != tc.want {
			t.Errorf("%v %q: %d deals were possible, DealsLeft said %d", tc.rs, tc.pos, deals, tc.want)
		}
	}
}

// TestRenderShowsTheGamesEnd: the status line ends with the game's end,
// truncation included (a game cut off by its step limit is still
// "playing" by its status), and a board with no card on it still shows
// each empty column's "." on a first row.
func TestRenderShowsTheGamesEnd(t *testing.T) {
	for _, tc := range []struct {
		o    env.Options
		text string
		end  string   // the status line's last word
		rows []string // the board's rows under the numbers; nil: not checked
	}{
		{env.Options{Suits: 1, MaxSteps: 7}, "1: | Ks\n2: | Qs\nsteps: 7", "truncated", []string{"  Ks  Qs   .   .   .   .   .   .   .   ."}},
		{env.Options{Suits: 1, MaxSteps: 8}, "1: | Ks\n2: | Qs\nsteps: 7", "0/8", nil}, // in play: nothing after the runs
		{env.Options{Suits: 1}, "runs: s s s s s s s s", "won", []string{"   .   .   .   .   .   .   .   .   .   ."}},
		{env.Options{Suits: 1}, "1: | Ks\n2: | Ks\n3: | Ks\n4: | Ks\n5: | Ks\n6: | Ks\n7: | Ks\n8: | Ks\n9: | 2s\n10: | 4s", "lost", nil},
	} {
		s, err := env.ParseState(env.MustRules(tc.o), tc.text)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(s.Render(), "\n"), "\n")
		words := strings.Fields(lines[0])
		if last := words[len(words)-1]; last != tc.end {
			t.Errorf("%q under %+v: the status line %q ends in %q, want %q", tc.text, tc.o, lines[0], last, tc.end)
		}
		if tc.rows != nil && !slices.Equal(lines[2:], tc.rows) {
			t.Errorf("%q: the board's rows are %q, want %q", tc.text, lines[2:], tc.rows)
		}
	}
}

package agents

import (
	"testing"

	"github.com/spiderenv/spider/env"
)

// TestGreedyWeighsItsFeatures plays Greedy on positions where two of its
// features compete, each decided by the weights its documentation orders:
// completing a run beats turning a card, turning a card beats emptying a
// column, a same-suit build beats one down in rank, and a move that takes
// back the previous one loses to any other. TestGreedyReasons checks one
// feature alone; a feature read off the wrong column, a length that counts
// the face-up cards instead of the run, or an undo looked for in the wrong
// direction changes a choice here.
func TestGreedyWeighsItsFeatures(t *testing.T) {
	r := env.MustRules(env.Options{Suits: 2})
	kings := "5: | Kh\n6: | Kh\n7: | Kh\n8: | Kh\n9: | Kh\n10: | Kh\n"
	for _, c := range []struct {
		name, pos  string
		last       env.Action
		hasLast    bool
		want       env.Action
		wantReason string
	}{
		{
			name:       "completing a run beats turning a card",
			pos:        "1: | Ks Qs Js Ts 9s 8s 7s 6s 5s 4s 3s 2s\n2: | As\n3: Kh | 8h\n4: | 9s\n" + kings,
			want:       env.MoveAction(1, 0, 1),
			wantReason: "completes a King-to-Ace run",
		},
		{
			// Thirteen face-up cards, but the movable run is the 2s alone.
			name:       "a long face-up column is not a long run",
			pos:        "1: | Ks Qs Js Ts 9s 8s 7s 6s 5s 4s 3s 3h 2s\n2: | As\n3: Kh | 8h\n4: | 9s\n" + kings,
			want:       env.MoveAction(2, 3, 1),
			wantReason: "turns a face-down card",
		},
		{
			name:       "a same-suit build beats one down in rank",
			pos:        "1: | 9h 5s\n2: | 6h\n3: | 6s\n4: | Kh\n" + kings,
			want:       env.MoveAction(0, 2, 1),
			wantReason: "builds a same-suit run",
		},
		{
			// The 5s just came from column 1; column 3 offers the same.
			name:    "taking back the last move loses",
			pos:     "1: | 6h\n2: | 6s 5s\n3: | 6h\n4: | Kh\n" + kings,
			last:    env.MoveAction(0, 1, 1),
			hasLast: true,
			want:    env.MoveAction(1, 2, 1),
		},
	} {
		s, err := env.ParseState(r, c.pos)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		d := (&Greedy{}).Act(NewView(&s, s.AppendLegal(nil), c.last, c.hasLast))
		if d.Action != c.want || c.wantReason != "" && d.Reason != c.wantReason {
			t.Fatalf("%s: greedy chose %v because %q; want %v (%q)", c.name, d.Action, d.Reason, c.want, c.wantReason)
		}
	}
}

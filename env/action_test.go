package env_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/spiderenv/spider/env"
)

// TestActionSpaceIsOneToOne derives the size of the action space from its
// definition, not from the constants under test: a move for every ordered
// pair of distinct columns and every count a group can have, then the
// deal. It then checks that each move has exactly one id.
func TestActionSpaceIsOneToOne(t *testing.T) {
	// A group is at most 12 cards: 13 same-suit cards are King to Ace, a
	// completed run, removed the moment it forms (RULES.md, decision 10).
	const columns, counts = 10, 13 - 1
	const want = columns*(columns-1)*counts + 1 // 1081
	if env.NumActions != want || env.Deal != want-1 || env.NumColumns != columns || env.MaxMove != counts {
		t.Fatalf("NumActions %d, Deal %d, NumColumns %d, MaxMove %d; want %d, %d, %d, %d",
			env.NumActions, env.Deal, env.NumColumns, env.MaxMove, want, want-1, columns, counts)
	}
	seen := map[env.Action]bool{}
	for src := range env.NumColumns {
		for dst := range env.NumColumns {
			if src == dst {
				continue
			}
			for n := 1; n <= env.MaxMove; n++ {
				a := env.MoveAction(src, dst, n)
				if !a.Valid() || a.IsDeal() || seen[a] {
					t.Fatalf("MoveAction(%d, %d, %d) = %d: invalid, deal or repeated", src, dst, n, a)
				}
				seen[a] = true
				if s, d, k := a.Move(); s != src || d != dst || k != n {
					t.Fatalf("Action %d decodes to %d %d %d, want %d %d %d", a, s, d, k, src, dst, n)
				}
			}
		}
	}
	if len(seen) != env.NumActions-1 {
		t.Fatalf("%d move ids, want %d", len(seen), env.NumActions-1)
	}
	if env.Action(env.NumActions).Valid() || !env.Deal.Valid() {
		t.Fatal("Valid is wrong at the edge of the space")
	}
}

func TestActionNotationRoundTrip(t *testing.T) {
	for a := env.Action(0); a < env.NumActions; a++ {
		s := a.String()
		b, err := env.ParseAction(s)
		if err != nil || b != a {
			t.Fatalf("ParseAction(%q) = %v, %v; want %v", s, b, err, a)
		}
	}
	for in, want := range map[string]env.Action{
		"3>7x4":        env.MoveAction(2, 6, 4),
		" 10 > 1 x 12": env.MoveAction(9, 0, 12),
		"DEAL":         env.Deal,
		"d":            env.Deal,
		"1>2X1":        env.MoveAction(0, 1, 1),
		// Spaces around the whole are ignored for the deal too, as a
		// line read from a terminal or a file carries them.
		" deal\n": env.Deal,
		"\tD ":    env.Deal,
	} {
		if got, err := env.ParseAction(in); err != nil || got != want {
			t.Errorf("ParseAction(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if got := env.MoveAction(2, 6, 4).String(); got != "3>7x4" {
		t.Errorf("String = %q, want 3>7x4", got)
	}
}

func TestParseActionErrors(t *testing.T) {
	for in, msg := range map[string]string{
		"":        "want \"deal\"",
		"3>7":     "missing the card count",
		"0>7x1":   "source column",
		"11>7x1":  "source column",
		"3>3x1":   "same column",
		"3>7x0":   "card count 0: a move takes at least one card",
		"3>7x-2":  "card count -2: a move takes at least one card",
		"3>7x13":  "card count 13: at most 12 cards move at once",
		"3>7x":    `the card count after "x" is missing`,
		"3>7x  ":  `the card count after "x" is missing`,
		"3>7xz":   `card count "z" is not a number from 1 to 12`,
		"a>bxc":   "source column",
		"3>7x4x5": "card count",
	} {
		_, err := env.ParseAction(in)
		if err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("ParseAction(%q) error %v, want one containing %q", in, err, msg)
		}
	}
}

func TestMoveActionPanicsOnMisuse(t *testing.T) {
	for _, args := range [][3]int{{0, 0, 1}, {-1, 2, 1}, {0, 10, 1}, {0, 1, 0}, {0, 1, 13}} {
		want := fmt.Sprintf("env: MoveAction(%d, %d, %d) out of range", args[0], args[1], args[2])
		wantPanic(t, want, func() { env.MoveAction(args[0], args[1], args[2]) })
	}
}

// TestShortBuffersPanic: the writers into a caller's buffer panic when
// its length is short, as documented, even when its capacity would do
// (buf[:0] passed by mistake), rather than writing past the length.
func TestShortBuffersPanic(t *testing.T) {
	r := env.MustRules(env.Options{Suits: 2})
	s := env.NewGame(r, 3)
	wantPanic(t, "shorter than NumActions", func() { s.Mask(make([]uint8, 0, env.NumActions)) })
	wantPanic(t, "shorter than CompactLen", func() { s.ObserveCompact(make([]uint8, 0, r.CompactLen())) })
	wantPanic(t, "shorter than CompactLen", func() { s.UpdateCompact(make([]uint8, 1, r.CompactLen()), env.AllColumns) })
	wantPanic(t, "shorter than CompactLen", func() { r.CompactHigh(make([]uint8, r.CompactLen()-1, r.CompactLen())) })
	wantPanic(t, "shorter than Float32Len", func() { s.ObserveFloat32(make([]float32, 0, r.Float32Len())) })
	wantPanic(t, "shorter than Float32Len", func() { s.UpdateFloat32(make([]float32, 1, r.Float32Len()), env.AllColumns) })
	// The full length still works, and longer buffers are cut to it.
	if n := len(s.ObserveCompact(make([]uint8, r.CompactLen()+5))); n != r.CompactLen() {
		t.Errorf("ObserveCompact returned %d bytes, want %d", n, r.CompactLen())
	}
}

// wantPanic calls f and fails the test unless f panics with a value whose
// text contains want: a panic for the wrong reason is a failure too.
func wantPanic(t *testing.T, want string, f func()) {
	t.Helper()
	got := func() (v any) {
		defer func() { v = recover() }()
		f()
		return nil
	}()
	if got == nil {
		t.Errorf("no panic; want one saying %q", want)
	} else if !strings.Contains(fmt.Sprint(got), want) {
		t.Errorf("panic %q; want one saying %q", got, want)
	}
}

// TestActionStringPastTheLastID: an id past Deal (a buggy policy's, or a
// corrupt record's) prints as its number, never as a move it is not or a
// panic, so error messages can name it.
func TestActionStringPastTheLastID(t *testing.T) {
	for _, a := range []env.Action{env.Deal + 1, env.Deal + 2, 65535} {
		if got, want := a.String(), fmt.Sprintf("Action(%d)", uint16(a)); got != want {
			t.Errorf("Action %d prints as %q, want %q", uint16(a), got, want)
		}
	}
}

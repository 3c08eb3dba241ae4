package env_test

import (
	"strings"
	"testing"

	"github.com/spiderenv/spider/env"
	"github.com/spiderenv/spider/internal/rng"
)

func TestActionSpaceIsOneToOne(t *testing.T) {
	if env.NumActions != 1081 || env.Deal != 1080 {
		t.Fatalf("NumActions %d, Deal %d", env.NumActions, env.Deal)
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
		"3>7x0":   "card count",
		"3>7x13":  "card count",
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
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("MoveAction%v did not panic", args)
				}
			}()
			env.MoveAction(args[0], args[1], args[2])
		}()
	}
}

func TestCardCodes(t *testing.T) {
	n := 0
	for su := env.Suit(0); su < env.NumSuits; su++ {
		for r := env.Ace; r <= env.King; r++ {
			c := env.MakeCard(r, su)
			n++
			if int(c) != n || c.Rank() != r || c.Suit() != su || !c.Valid() {
				t.Fatalf("MakeCard(%v, %v) = %d (rank %v suit %v)", r, su, c, c.Rank(), c.Suit())
			}
			p, err := env.ParseCard(c.String())
			if err != nil || p != c {
				t.Fatalf("ParseCard(%q) = %v, %v", c.String(), p, err)
			}
		}
	}
	if env.MakeCard(env.King, env.Spades).String() != "Ks" || env.MakeCard(10, env.Hearts).String() != "Th" {
		t.Error("card notation changed")
	}
	for _, bad := range []string{"", "K", "Kx", "1s", "Kss"} {
		if _, err := env.ParseCard(bad); err == nil {
			t.Errorf("ParseCard(%q) accepted", bad)
		}
	}
	if env.NoCard.Valid() || env.Card(53).Valid() || env.NoCard.String() != "--" {
		t.Error("NoCard or 53 treated as a card")
	}
}

func TestRulesParseAndValidate(t *testing.T) {
	for _, name := range []string{"classic", "CARDEMS"} {
		if _, err := env.ParseRuleSet(name); err != nil {
			t.Error(err)
		}
	}
	if _, err := env.ParseRuleSet("freecell"); err == nil {
		t.Error("unknown rule set accepted")
	}
	if e, err := env.ParseEncoding("float32"); err != nil || e != env.Float32 {
		t.Error("float32 encoding not parsed")
	}
	bad := []env.Options{
		{Suits: 3}, {Suits: -1}, {Suits: 1, FaceUpSlots: 105}, {Suits: 1, FaceUpSlots: -1},
		{Suits: 1, TimePerActionMs: -1}, {TimePerActionMs: env.MaxTimePerActionMs + 1}, {RuleSet: env.Cardems, TimePerActionMs: 1}, {Suits: 1, RuleSet: 9}, {Suits: 1, Encoding: 7}, {Suits: 1, MaxSteps: 1 << 31},
	}
	for _, o := range bad {
		if _, err := env.NewRules(o); err == nil {
			t.Errorf("NewRules(%+v) accepted", o)
		}
	}
	r := env.MustRules(env.Options{Suits: 2, Encoding: env.Float32, FaceUpSlots: 20})
	if o := r.Options(); o.Suits != 2 || o.FaceUpSlots != 20 || o.MaxSteps != env.DefaultMaxSteps || o.Encoding != env.Float32 {
		t.Errorf("Options() = %+v", o)
	}
	if again := env.MustRules(r.Options()); again != r {
		t.Error("Rules do not round-trip through Options")
	}
}

func TestNthMaskedFindsEachSetByte(t *testing.T) {
	g := rng.New(8)
	for trial := range 200 {
		n := 1 + g.IntN(env.NumActions)
		if trial%3 == 0 {
			n = env.NumActions
		}
		mask := make([]uint8, n)
		var set []env.Action
		for i := range mask {
			if g.IntN(5) == 0 || i == n-1 {
				mask[i] = 1
				set = append(set, env.Action(i))
			}
		}
		for k, want := range set {
			if got := env.NthMasked(mask, k); got != want {
				t.Fatalf("mask of %d: NthMasked(%d) = %d, want %d", n, k, got, want)
			}
		}
		func() {
			defer func() {
				if recover() == nil {
					t.Fatal("asking past the set bytes did not panic")
				}
			}()
			env.NthMasked(mask, len(set))
		}()
	}
}

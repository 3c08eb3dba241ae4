package env_test

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/spiderenv/spider/env"
	"github.com/spiderenv/spider/env/envtest"
	"github.com/spiderenv/spider/internal/rng"
)

// Two positions that differ only in where their unseen cards lie: the same
// cards, dealt differently among the face-down places and the stock.
const (
	hiddenA = "1: 3h 5s Kh | 9s 8s\n2: Ah | Qh\n3: | 4h\nstock: 2s 3s 4s 5s 6s 7s 8s 9s Ts Js Qs Ks"
	hiddenB = "1: Ks 7s 2s | 9s 8s\n2: 9s | Qh\n3: | 4h\nstock: Kh 5s 4s 3h Ah 3s 8s 5s Ts 6s Js Qs"
)

func TestObservationHidesFaceDownCardsAndStockOrder(t *testing.T) {
	for _, suits := range []int{2, 4} {
		for _, rs := range []env.RuleSet{env.Classic, env.Cardems} {
			r := env.MustRules(env.Options{RuleSet: rs, Suits: suits})
			a, err := env.ParseState(r, hiddenA)
			if err != nil {
				t.Fatal(err)
			}
			b, err := env.ParseState(r, hiddenB)
			if err != nil {
				t.Fatal(err)
			}
			if a == b {
				t.Fatal("the two positions should differ in their hidden cards")
			}
			if !bytes.Equal(a.ObserveCompact(make([]uint8, r.CompactLen())), b.ObserveCompact(make([]uint8, r.CompactLen()))) {
				t.Error("compact observations differ: a hidden card leaks")
			}
			fa := a.ObserveFloat32(make([]float32, r.Float32Len()))
			fb := b.ObserveFloat32(make([]float32, r.Float32Len()))
			if !slices.Equal(fa, fb) {
				t.Error("float32 observations differ: a hidden card leaks")
			}
			if a.Render() != b.Render() {
				t.Errorf("renderings differ:\n%s\n%s", a.Render(), b.Render())
			}
			if a.Resample(5) != b.Resample(5) {
				t.Error("Resample depends on where the hidden cards really are")
			}
		}
	}
}

func TestObservationOfTheVisibleBoard(t *testing.T) {
	r := env.MustRules(env.Options{Suits: 2, FaceUpSlots: 4})
	s, err := env.ParseState(r, "1: 3h 5s | 9s 8h 7h 6h 5h\n2: | Qh\nstock: 2s 3s 4s 5s 6s 7s 8s 9s Ts Js\nruns: s h h")
	if err != nil {
		t.Fatal(err)
	}
	u8 := s.ObserveCompact(make([]uint8, r.CompactLen()))
	if len(u8) != 26+10*4 {
		t.Fatalf("compact length %d", len(u8))
	}
	want := map[int]uint8{
		env.ObsFaceDown: 2, env.ObsFaceUp: 5, env.ObsFaceUp + 1: 1, env.ObsStock: 10, env.ObsRuns: 3,
		env.ObsSuitRuns: 1, env.ObsSuitRuns + 1: 2,
		// Column 1 shows its top four cards, top first; the 9s is past the slots.
		env.ObsSlots + 0: uint8(env.MakeCard(5, env.Hearts)),
		env.ObsSlots + 1: uint8(env.MakeCard(6, env.Hearts)),
		env.ObsSlots + 2: uint8(env.MakeCard(7, env.Hearts)),
		env.ObsSlots + 3: uint8(env.MakeCard(8, env.Hearts)),
		env.ObsSlots + 4: uint8(env.MakeCard(env.Queen, env.Hearts)),
	}
	for i, v := range u8 {
		if v != want[i] {
			t.Errorf("compact[%d] = %d, want %d", i, v, want[i])
		}
	}
	f32 := s.ObserveFloat32(make([]float32, r.Float32Len()))
	if err := envtest.CheckObservation(&s, u8, f32); err != nil {
		t.Fatal(err)
	}
	// Slot 0 of column 1 is the 5h: rank one-hot at 4, suit one-hot at 13+1.
	cell := f32[env.ObsSlots : env.ObsSlots+r.CardFeatures()]
	for k, v := range cell {
		if on := k == 4 || k == 14; (v == 1) != on {
			t.Errorf("5h feature %d = %v", k, v)
		}
	}
}

// TestObservationSizeKnownFromRules derives the lengths from the layout:
// a header of 10 + 10 + 1 + 1 + 4 = 26 counters, then 10 columns of S
// slots (78 by default), each one value compact or F floats (13 rank
// features, plus 2 or 4 suit features with 2 or 4 suits).
func TestObservationSizeKnownFromRules(t *testing.T) {
	for _, tc := range []struct {
		suits, slots, compact, float int
	}{
		{1, 0, 26 + 780, 26 + 780*13},
		{2, 0, 26 + 780, 26 + 780*15},
		{4, 0, 26 + 780, 26 + 780*17},
		{4, 10, 26 + 100, 26 + 100*17},
	} {
		r := env.MustRules(env.Options{Suits: tc.suits, FaceUpSlots: tc.slots})
		if r.CompactLen() != tc.compact || r.Float32Len() != tc.float || r.NumActions() != env.NumActions {
			t.Errorf("%d suits, %d slots: lengths %d, %d, %d actions", tc.suits, tc.slots, r.CompactLen(), r.Float32Len(), r.NumActions())
		}
	}
	r := env.MustRules(env.Options{Suits: 2})
	high := make([]uint8, r.CompactLen())
	r.CompactHigh(high)
	if high[env.ObsFaceDown] != 5 || high[env.ObsStock] != 50 || high[env.ObsSuitRuns] != 8 || high[env.ObsSuitRuns+2] != 8 || high[env.ObsSlots] != 26 {
		t.Errorf("compact bounds %v", high[:env.ObsSlots+1])
	}
}

// TestUpdateMatchesFullObservation steps random games and checks that the
// in-place update of both encodings, after a step and after an undo,
// equals a fresh full observation (before, a column set with a bit past
// the last column made UpdateCompact panic). Few slots make overflowing columns common.
func TestUpdateMatchesFullObservation(t *testing.T) {
	for _, slots := range []int{3, 78} {
		r := env.MustRules(env.Options{Suits: 4, FaceUpSlots: slots})
		g := rng.New(5)
		for seed := uint64(0); seed < 30; seed++ {
			s := env.NewGame(r, seed)
			u8 := s.ObserveCompact(make([]uint8, r.CompactLen()))
			f32 := s.ObserveFloat32(make([]float32, r.Float32Len()))
			check := func(what string) {
				if !bytes.Equal(u8, s.ObserveCompact(make([]uint8, r.CompactLen()))) {
					t.Fatalf("slots %d seed %d step %d: compact update after %s differs", slots, seed, s.Steps(), what)
				}
				if !slices.Equal(f32, s.ObserveFloat32(make([]float32, r.Float32Len()))) {
					t.Fatalf("slots %d seed %d step %d: float32 update after %s differs", slots, seed, s.Steps(), what)
				}
			}
			for !s.Over() {
				legal := s.AppendLegal(nil)
				u, err := s.Step(legal[g.IntN(len(legal))])
				if err != nil {
					t.Fatal(err)
				}
				s.UpdateCompact(u8, u.Columns())
				s.UpdateFloat32(f32, u.Columns())
				check("a step")
				if g.IntN(4) == 0 {
					s.Undo(u)
					// Bits past the last column are no columns: ignored.
					s.UpdateCompact(u8, u.Columns()|^env.AllColumns)
					s.UpdateFloat32(f32, u.Columns()|^env.AllColumns)
					check("an undo")
				}
			}
		}
	}
}

func TestKeyIsWhatAPlayerSees(t *testing.T) {
	r := env.MustRules(env.Options{Suits: 2})
	a, _ := env.ParseState(r, hiddenA)
	b, _ := env.ParseState(r, hiddenB)
	if a.Key() != b.Key() {
		t.Fatal("positions a player cannot tell apart have different keys")
	}
	seen := map[uint64]string{}
	s := env.NewGame(r, 4)
	for _, a := range s.AppendLegal(nil) {
		n := s
		n.Step(a)
		if prev, ok := seen[n.Key()]; ok {
			t.Fatalf("%v and %s lead to positions with the same key", a, prev)
		}
		seen[n.Key()] = a.String()
	}
	c := s
	c.Step(s.AppendLegal(nil)[0])
	if c.Key() == s.Key() {
		t.Fatal("a move did not change the key")
	}
}

// TestUpdateClearsTheSlotsALongColumnLeaves: the float32 update reads a
// column's old face-up count back from its scaled header (count/104) to
// know how many slots to clear. For 53 and 61 cards, float32(n)/104*104
// falls just under n, so without rounding the deepest old slot stays set
// when such a column gives up its top card. Random games never grow a
// column that long; these positions do.
func TestUpdateClearsTheSlotsALongColumnLeaves(t *testing.T) {
	r := env.MustRules(env.Options{Suits: 1})
	for _, n := range []int{53, 61, 78} {
		// n face-up cards in column 1, no two in sequence, the top a 5
		// that moves onto column 2's 6.
		col := strings.Repeat("9s Js ", n)[:3*(n-1)] + "5s"
		s, err := env.ParseState(r, "1: "+col+"\n2: | 6s")
		if err != nil {
			t.Fatal(err)
		}
		if s.FaceUpCount(0) != n {
			t.Fatalf("column 1 has %d face-up cards, want %d", s.FaceUpCount(0), n)
		}
		u8 := s.ObserveCompact(make([]uint8, r.CompactLen()))
		f32 := s.ObserveFloat32(make([]float32, r.Float32Len()))
		u, err := s.Step(act(t, "1>2x1"))
		if err != nil {
			t.Fatal(err)
		}
		s.UpdateCompact(u8, u.Columns())
		s.UpdateFloat32(f32, u.Columns())
		if !bytes.Equal(u8, s.ObserveCompact(make([]uint8, r.CompactLen()))) {
			t.Errorf("%d face-up cards, one moved: the compact update differs from the full observation", n)
		}
		if full := s.ObserveFloat32(make([]float32, r.Float32Len())); !slices.Equal(f32, full) {
			for i := range f32 {
				if f32[i] != full[i] {
					t.Errorf("%d face-up cards, one moved: float32 update [%d] = %v, the full observation %v", n, i, f32[i], full[i])
					break
				}
			}
		}
	}
}

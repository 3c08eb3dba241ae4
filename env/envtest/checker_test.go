package envtest

import (
	"testing"

	"github.com/spiderenv/spider/env"
	"github.com/spiderenv/spider/internal/rng"
)

// The conformance tests only ever show the checker a correct environment,
// so they cannot tell a checker that checks from one that accepts
// anything. These tests hand its checks broken input, each broken in one
// way, and want each refused.

// midgame plays a few random legal moves from a deal under r, so the
// position has face-up runs and more than one face-up card per column.
func midgame(t *testing.T, r env.Rules, seed uint64) env.State {
	t.Helper()
	s := env.NewGame(r, seed)
	g := rng.New(seed)
	for range 12 {
		legal := s.AppendLegal(nil)
		if len(legal) == 0 {
			break
		}
		if _, err := s.Step(legal[g.IntN(len(legal))]); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// TestCheckObservationRefusesBrokenObservations: CheckObservation accepts
// the state's own observation and refuses it with any one field wrong,
// in the compact header, the card slots or the float32 one-hot features.
func TestCheckObservationRefusesBrokenObservations(t *testing.T) {
	r := env.MustRules(env.Options{Suits: 2, FaceUpSlots: 6})
	s := midgame(t, r, 5)
	u8 := s.ObserveCompact(make([]uint8, r.CompactLen()))
	f32 := s.ObserveFloat32(make([]float32, r.Float32Len()))
	if err := CheckObservation(&s, u8, f32); err != nil {
		t.Fatalf("the state's own observation refused: %v", err)
	}
	slots, f := r.FaceUpSlots(), r.CardFeatures()
	top := env.Card(u8[env.ObsSlots]) // column 1's top card
	if top == env.NoCard {
		t.Fatal("column 1 is empty: the test needs a card there")
	}
	for _, tc := range []struct {
		name   string
		tamper func(u8 []uint8, f32 []float32)
	}{
		{"a compact card slot", func(u8 []uint8, _ []float32) { u8[env.ObsSlots] = uint8(top%26 + 1) }},
		// Both encodings agree on the wrong count, so only the board can
		// tell.
		{"a face-up count, in both encodings", func(u8 []uint8, f32 []float32) {
			u8[env.ObsFaceUp]++
			f32[env.ObsFaceUp] = float32(u8[env.ObsFaceUp]) / env.HeaderBound(env.ObsFaceUp)
		}},
		{"a float32 counter", func(_ []uint8, f32 []float32) { f32[env.ObsStock] -= 1 / env.HeaderBound(env.ObsStock) }},
		{"a float32 rank feature missing", func(_ []uint8, f32 []float32) { f32[env.ObsSlots+int(top.Rank())-1] = 0 }},
		{"a float32 suit feature missing", func(_ []uint8, f32 []float32) { f32[env.ObsSlots+env.NumRanks+int(top.Suit())] = 0 }},
		{"a float32 feature too many", func(_ []uint8, f32 []float32) { f32[env.ObsSlots+int(top.Rank())%env.NumRanks] = 1 }},
		{"an empty slot's features", func(_ []uint8, f32 []float32) { f32[env.ObsSlots+(9*slots+slots-1)*f] = 1 }},
	} {
		bu8, bf32 := append([]uint8(nil), u8...), append([]float32(nil), f32...)
		tc.tamper(bu8, bf32)
		if err := CheckObservation(&s, bu8, bf32); err == nil {
			t.Errorf("%s wrong: CheckObservation accepted it", tc.name)
		}
	}
}

// TestCheckPositionRefusesAWrongObservationOrMask: checkPosition compares
// the observation and mask it is given with the state's, in the
// configured encoding.
func TestCheckPositionRefusesAWrongObservationOrMask(t *testing.T) {
	for _, enc := range []env.Encoding{env.Compact, env.Float32} {
		r := env.MustRules(env.Options{Suits: 4, Encoding: enc})
		s := midgame(t, r, 9)
		mask := make([]uint8, env.NumActions)
		s.Mask(mask)
		var u8 []uint8
		var f32 []float32
		if enc == env.Compact {
			u8 = s.ObserveCompact(make([]uint8, r.CompactLen()))
		} else {
			f32 = s.ObserveFloat32(make([]float32, r.Float32Len()))
		}
		if err := checkPosition(&s, u8, f32, mask, 1, true); err != nil {
			t.Fatalf("%v: the state's own observation and mask refused: %v", enc, err)
		}
		for _, tc := range []struct {
			name   string
			tamper func(u8 []uint8, f32 []float32, mask []uint8)
		}{
			{"the observation", func(u8 []uint8, f32 []float32, _ []uint8) {
				if u8 != nil {
					u8[env.ObsSlots]++
				} else {
					f32[env.ObsStock] = 0
				}
			}},
			{"a legal action's mask byte", func(_ []uint8, _ []float32, mask []uint8) { mask[env.NthMasked(mask, 0)] = 0 }},
			{"an illegal action's mask byte", func(_ []uint8, _ []float32, mask []uint8) {
				for a, ok := range mask {
					if ok == 0 {
						mask[a] = 1
						return
					}
				}
			}},
		} {
			bu8, bf32, bmask := append([]uint8(nil), u8...), append([]float32(nil), f32...), append([]uint8(nil), mask...)
			if u8 == nil {
				bu8 = nil
			}
			if f32 == nil {
				bf32 = nil
			}
			tc.tamper(bu8, bf32, bmask)
			if err := checkPosition(&s, bu8, bf32, bmask, 1, true); err == nil {
				t.Errorf("%v: %s wrong, checkPosition accepted it", enc, tc.name)
			}
		}
	}
}

// TestCheckRewardRefusesAWrongReward: a reward other than the score's
// change is refused even when the score itself moved by the rules.
func TestCheckRewardRefusesAWrongReward(t *testing.T) {
	r := env.MustRules(env.Options{Suits: 1, TimePerActionMs: 1500})
	before := midgame(t, r, 3)
	after := before
	a := before.AppendLegal(nil)[0]
	if _, err := after.Step(a); err != nil {
		t.Fatal(err)
	}
	change := float64(after.Score() - before.Score())
	if err := checkReward(&before, &after, a, change); err != nil {
		t.Fatalf("the true reward %v refused: %v", change, err)
	}
	for _, wrong := range []float64{change + 1, change - 0.5, 0} {
		if err := checkReward(&before, &after, a, wrong); err == nil {
			t.Errorf("reward %v for a score change of %v accepted", wrong, change)
		}
	}
}

// TestCheckUndoRefusesAWrongPosition: checkUndo compares the undone game
// with the position before the step, and the replayed one with the
// position after it; given either wrong, it refuses.
func TestCheckUndoRefusesAWrongPosition(t *testing.T) {
	r := env.MustRules(env.Options{Suits: 2})
	other := env.NewGame(r, 5)
	// stepped returns a game one step after its deal, the action, and
	// the positions before and after that step.
	stepped := func() (*env.Env, env.Action, env.State, env.State) {
		e := env.New(r)
		e.Reset(4)
		before := e.State()
		a := env.NthMasked(e.Mask(), 0)
		if _, _, _, _, _, err := e.Step(a); err != nil {
			t.Fatal(err)
		}
		return e, a, before, e.State()
	}
	e, a, before, after := stepped()
	if err := checkUndo(e, a, &before, &after); err != nil {
		t.Fatalf("a true undo refused: %v", err)
	}
	e, a, _, after = stepped()
	if err := checkUndo(e, a, &other, &after); err == nil {
		t.Error("an undo to a position other than the one before the step accepted")
	}
	e, a, before, _ = stepped()
	if err := checkUndo(e, a, &before, &other); err == nil {
		t.Error("a replay to a position other than the one after the step accepted")
	}
}

// TestCheckGameBlamesAPolicyThatBreaksItsContract: an action outside the
// action space fails the check with a message, not an index panic, and a
// policy that writes 1 into its mask for an illegal action is caught as
// the policy's fault: it is given a copy, so the environment is never
// blamed for refusing a move the policy forged.
func TestCheckGameBlamesAPolicyThatBreaksItsContract(t *testing.T) {
	r := env.MustRules(env.Options{Suits: 1, MaxSteps: 30})
	var st Stats
	outside := func(*env.State, []uint8) env.Action { return env.NumActions + 3000 }
	if err := checkGame(r, outside, 1, false, &st); err == nil || err.Error() != "step 0: the policy chose 4081, outside the action space (0 to 1080)" {
		t.Errorf("an action outside the space: %v", err)
	}
	forged := env.MoveAction(0, 1, 12) // 12 cards: never legal at a deal
	forger := func(_ *env.State, mask []uint8) env.Action {
		mask[forged] = 1
		return forged
	}
	if err := checkGame(r, forger, 1, false, &st); err == nil || err.Error() != "step 0: the policy chose 1>2x12, which the mask says is illegal" {
		t.Errorf("a forged mask: %v", err)
	}
}

// TestCheckGameEndsWithoutAStepLimit: under rules without a step limit a
// random policy may never end a game; the checker stops it at
// NoLimitSteps and counts it, rather than run for ever.
func TestCheckGameEndsWithoutAStepLimit(t *testing.T) {
	r := env.MustRules(env.Options{Suits: 4, MaxSteps: -1})
	var st Stats
	if err := checkGame(r, RandomPolicy(5), 2, false, &st); err != nil {
		t.Fatal(err)
	}
	if st.Steps > NoLimitSteps || st.Steps < 1 || st.Unfinished+st.Won+st.Lost != 1 || st.Truncated != 0 {
		t.Fatalf("%+v: want one game, ended or stopped at %d steps", st, NoLimitSteps)
	}
}

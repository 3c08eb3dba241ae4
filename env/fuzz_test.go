package env_test

import (
	"testing"

	"github.com/spiderenv/spider/env"
)

// FuzzActions plays arbitrary action sequences: each pair of bytes is an
// action id, taken modulo a little more than the action space so that
// out-of-range ids occur, or, when the first byte is odd, the n-th legal
// action, so that games get deep. After every call the invariants must
// hold, an illegal action must change nothing, and undo must be exact.
func FuzzActions(f *testing.F) {
	f.Add(uint64(1), uint8(0), []byte{1, 0, 0, 5, 3, 9, 1, 1})
	f.Add(uint64(7), uint8(5), []byte{0xff, 0xff, 4, 0x38, 1, 2, 3, 4, 5, 6})
	f.Add(uint64(42), uint8(3), []byte("deal deal deal deal deal deal"))
	f.Fuzz(func(t *testing.T, seed uint64, cfg uint8, data []byte) {
		rs := env.RuleSet(cfg & 1)
		suits := []int{1, 2, 4, 1}[cfg>>1&3]
		r := env.MustRules(env.Options{RuleSet: rs, Suits: suits, MaxSteps: 200})
		s := env.NewGame(r, seed)
		var undo []env.Undo
		var states []env.State
		for i := 0; i+1 < len(data); i += 2 {
			var a env.Action
			if data[i]&1 == 1 {
				legal := s.AppendLegal(nil)
				if len(legal) == 0 {
					a = env.Deal
				} else {
					a = legal[int(data[i+1])%len(legal)]
				}
			} else {
				a = env.Action((int(data[i])<<8 | int(data[i+1])) % (env.NumActions + 20))
			}
			before := s
			u, err := s.Step(a)
			if err != nil {
				if s != before {
					t.Fatalf("illegal %v changed the game", a)
				}
				if s.Legal(a) {
					t.Fatalf("Step refused %v but Legal accepts it: %v", a, err)
				}
				continue
			}
			undo = append(undo, u)
			states = append(states, before)
			if err := s.Validate(); err != nil {
				t.Fatalf("after %v: %v\n%s", a, err, s.Render())
			}
		}
		for i := len(undo) - 1; i >= 0; i-- {
			s.Undo(undo[i])
			if s != states[i] {
				t.Fatalf("undo %d of %v did not restore the game", i, undo[i].Action())
			}
		}
		if s != env.NewGame(r, seed) {
			t.Fatal("undoing everything did not give back the deal")
		}
	})
}

// FuzzParseState feeds arbitrary text to ParseState: it must either refuse
// it or return a position whose own text parses back to the same position.
func FuzzParseState(f *testing.F) {
	f.Add(hiddenA)
	f.Add(twoSuitFullText)
	f.Add("1: | Ks Qs\nruns: s s\nscore: 3\nsteps: 9\nelapsed: 4s")
	f.Add("1: Ks | | Qs")
	f.Fuzz(func(t *testing.T, text string) {
		r := env.MustRules(env.Options{Suits: 2})
		s, err := env.ParseState(r, text)
		if err != nil {
			return
		}
		out, _ := s.MarshalText()
		again, err := env.ParseState(r, string(out))
		if err != nil {
			t.Fatalf("own text refused: %v\n%s", err, out)
		}
		if again != s {
			t.Fatalf("text round trip changed the position:\n%s", out)
		}
		var m [env.NumActions]uint8
		s.Mask(m[:])
		for a, ok := range m {
			if ok == 1 {
				c := s
				if _, err := c.Step(env.Action(a)); err != nil {
					t.Fatalf("masked %v refused: %v", env.Action(a), err)
				}
			}
		}
	})
}

const twoSuitFullText = "1: 3h | 9s\n2: | 8h\n3: 2h | 7s 6s 5h\n4: | Kh Qh\n5: | 4s\n6: | Ts\n7: | 5s 4s 3s\n8: | Js\n9: | 2s\n10: | As\nstock: 6h 6h 6h 6h 6h 6h 6h 6h 6h 6h"

// FuzzParseAction checks that whatever ParseAction accepts formats back to
// a canonical form that parses to the same action.
func FuzzParseAction(f *testing.F) {
	for _, s := range []string{"3>7x4", "deal", "10>1x12", " 2 > 3 x 1 ", "0>1x1", "x>y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		a, err := env.ParseAction(in)
		if err != nil {
			return
		}
		if !a.Valid() {
			t.Fatalf("ParseAction(%q) gave invalid id %d", in, a)
		}
		b, err := env.ParseAction(a.String())
		if err != nil || b != a {
			t.Fatalf("%q -> %v -> %v, %v", in, a, b, err)
		}
	})
}

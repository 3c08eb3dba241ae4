package env_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/spiderenv/spider/env"
	"github.com/spiderenv/spider/internal/rng"
)

// newBatchIn returns a batch whose buffers live in a block of memory of
// its own, laid out by env.BatchLayout, and the block.
func newBatchIn(t testing.TB, r env.Rules, o env.BatchOptions) (*env.Batch, []byte) {
	t.Helper()
	mem := make([]byte, env.BatchLayout(r, o).Size)
	for i := range mem {
		mem[i] = 0xaa // NewBatchIn must clear it
	}
	b, err := env.NewBatchIn(r, o, mem)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b, mem
}

// TestStepSomeMatchesReference steps random subsets of a batch whose
// buffers live in a block (NewBatchIn) and checks every stepped game
// against single Envs, and that the games left out did not change at all.
func TestStepSomeMatchesReference(t *testing.T) {
	steps := 3000
	if testing.Short() {
		steps = 600
	}
	const n = 13
	r := env.MustRules(env.Options{RuleSet: env.Classic, Suits: 1, MaxSteps: 90})
	for _, mode := range []env.Autoreset{env.NextStep, env.SameStep, env.Disabled} {
		t.Run(mode.String(), func(t *testing.T) {
			b, _ := newBatchIn(t, r, env.BatchOptions{N: n, Workers: 3, Autoreset: mode})
			ref := newReference(r, mode, 5, n)
			b.Reset(5)
			g := rng.New(9)
			actions := make([]env.Action, n)
			ids := make([]int32, 0, n)
			stepped := make([]bool, n)
			ended := make([]bool, n)
			episodes := 0
			for step := range steps {
				pickActions(&g, b, actions)
				ids = ids[:0]
				for i := range n {
					stepped[i] = g.IntN(3) > 0
					if stepped[i] {
						ids = append(ids, int32(i))
					}
				}
				before := deepCopy(b)
				if err := b.StepSome(actions, ids); err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
				clear(ended)
				for i := range n {
					if !stepped[i] {
						if !sameRow(before, b.BatchBuffers, i, n) {
							t.Fatalf("step %d: game %d was not stepped but its row changed", step, i)
						}
						continue
					}
					ref.step(t, b, i, actions[i])
					ended[i] = b.Terminated[i] || b.Truncated[i]
					if ended[i] {
						episodes++
					}
				}
				if mode == env.Disabled && slices.Contains(ended, true) {
					if err := b.ResetGames(ended); err != nil {
						t.Fatal(err)
					}
					for i, e := range ended {
						if e {
							ref.reset(i)
						}
					}
				}
			}
			if episodes < n {
				t.Fatalf("only %d episodes ended in %d steps; the test should cover many resets", episodes, steps)
			}
		})
	}
}

// sameRow reports whether game i's row of every buffer is the same in a and b.
func sameRow(a, b env.BatchBuffers, i, n int) bool {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	for f := range va.NumField() {
		x, y := va.Field(f), vb.Field(f)
		if x.IsNil() {
			continue
		}
		w := x.Len() / n
		if !reflect.DeepEqual(x.Slice(i*w, (i+1)*w).Interface(), y.Slice(i*w, (i+1)*w).Interface()) {
			return false
		}
	}
	return true
}

func TestStepSomeRefusesAndChangesNothing(t *testing.T) {
	r := env.MustRules(env.Options{Suits: 1})
	b := newBatch(t, r, env.BatchOptions{N: 6, Workers: 2})
	b.Reset(3)
	actions := make([]env.Action, 6)
	g := rng.New(1)
	pickActions(&g, b, actions)
	illegal := slices.Clone(actions)
	for a := range env.Action(env.NumActions) {
		if b.Masks[4*env.NumActions+int(a)] == 0 {
			illegal[4] = a
			break
		}
	}
	for _, c := range []struct {
		actions []env.Action
		ids     []int32
		want    string
	}{
		{actions, []int32{1, 1}, "strictly increasing"},
		{actions, []int32{2, 1}, "strictly increasing"},
		{actions, []int32{-1}, "outside 0 to 5"},
		{actions, []int32{0, 6}, "outside 0 to 5"},
		{actions[:5], []int32{0}, "5 actions for 6 games"},
		{illegal, []int32{0, 4}, "game 4"},
	} {
		before := deepCopy(b)
		err := b.StepSome(c.actions, c.ids)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("StepSome(%v): %v; want an error saying %q", c.ids, err, c.want)
		}
		if !reflect.DeepEqual(before, b.BatchBuffers) {
			t.Errorf("StepSome(%v) refused but changed the buffers", c.ids)
		}
	}
	// The illegal action outside the subset is not read.
	if err := b.StepSome(illegal, []int32{0, 5}); err != nil {
		t.Errorf("an illegal action of a game left out refused the step: %v", err)
	}
}

func TestStepSomeDoesNotAllocate(t *testing.T) {
	for _, mode := range []env.Autoreset{env.NextStep, env.SameStep, env.Disabled} {
		r := env.MustRules(env.Options{Suits: 4, MaxSteps: 50})
		b := newBatch(t, r, env.BatchOptions{N: 64, Autoreset: mode, Illegal: env.NoopIllegal, Legal: true})
		b.Reset(1)
		actions := make([]env.Action, 64)
		ids := make([]int32, 32)
		for k := range ids {
			ids[k] = int32(2 * k)
		}
		g := rng.New(3)
		ended := make([]bool, 64)
		allocs := testing.AllocsPerRun(300, func() {
			pickActions(&g, b, actions)
			if err := b.StepSome(actions, ids); err != nil {
				t.Fatal(err)
			}
			if mode == env.Disabled {
				for i := range ended {
					ended[i] = b.NumLegal[i] == 0
				}
				if err := b.ResetGames(ended); err != nil {
					t.Fatal(err)
				}
			}
		})
		if allocs != 0 {
			t.Errorf("%v: %v allocations per StepSome", mode, allocs)
		}
	}
}

// TestBatchLayoutPlacesEveryBuffer checks that NewBatchIn's buffers are the
// block's bytes at the layout's offsets, sized as the layout says, and do
// not overlap.
func TestBatchLayoutPlacesEveryBuffer(t *testing.T) {
	for _, enc := range []env.Encoding{env.Compact, env.Float32} {
		for _, mode := range []env.Autoreset{env.NextStep, env.SameStep} {
			r := env.MustRules(env.Options{Suits: 2, Encoding: enc})
			o := env.BatchOptions{N: 5, Autoreset: mode, Legal: enc == env.Float32}
			b, mem := newBatchIn(t, r, o)
			b.Reset(2)
			l := env.BatchLayout(r, o)
			v := reflect.ValueOf(b.BatchBuffers)
			seen := 0
			end := 0
			for k := range v.NumField() {
				s := v.Field(k)
				if s.IsNil() {
					continue
				}
				f := l.Fields[seen]
				seen++
				addr := int(s.Pointer() - uintptr(unsafe.Pointer(&mem[0])))
				size := s.Len() * int(s.Type().Elem().Size())
				if addr != f.Offset || size != f.Bytes() || addr%env.LayoutAlign != 0 || addr < end {
					t.Errorf("%v %v: %s (%s) at %d, %d bytes; layout says %d, %d bytes", enc, mode, v.Type().Field(k).Name, f.Name, addr, size, f.Offset, f.Bytes())
				}
				end = addr + size
			}
			if seen != len(l.Fields) || end > l.Size || l.Size > end+env.LayoutAlign {
				t.Errorf("%v %v: %d buffers, %d layout fields, end %d, size %d", enc, mode, seen, len(l.Fields), end, l.Size)
			}
			if _, err := env.NewBatchIn(r, o, mem[:l.Size-1]); err == nil {
				t.Errorf("NewBatchIn took a block one byte short")
			}
			// A block at an odd address would misalign the float32 and
			// int32 arrays (under -race, checkptr panics on them).
			big := make([]byte, l.Size+8)
			if _, err := env.NewBatchIn(r, o, big[1:]); err == nil || !strings.Contains(err.Error(), "not a multiple of 8") {
				t.Errorf("NewBatchIn took a block at an odd address: %v", err)
			}
		}
	}
}

// TestOutOfRangeArgumentsPanic checks the panics the package comment
// promises where an argument is out of its range: a batch layout of no
// games (it returned a negative size), and a suit past the four (SuitRuns
// read another suit's count).
func TestOutOfRangeArgumentsPanic(t *testing.T) {
	r := env.MustRules(env.Options{})
	for _, n := range []int{-3, 0, env.MaxBatch + 1} {
		wantPanic(t, "BatchLayout of", func() { env.BatchLayout(r, env.BatchOptions{N: n}) })
	}
	s := env.NewGame(r, 1)
	wantPanic(t, "index out of range", func() { s.SuitRuns(env.Suit(4)) })
	if got := s.SuitRuns(env.Suit(3)); got != 0 {
		t.Fatalf("SuitRuns(3) of a new game: %d", got)
	}
}

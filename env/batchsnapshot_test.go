package env

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// TestBatchSnapshotRestore steps a batch, snapshots it, steps on, then
// restores the snapshot into a fresh batch and steps that the same way:
// both must produce identical buffers, episodes included.
func TestBatchSnapshotRestore(t *testing.T) {
	// sameLists compares the listed part of each game's legal row (the
	// rest is stale, and differs after Restore).
	sameLists := func(a, b *Batch) bool {
		for i, n := range a.NumLegal {
			row := i * NumActions
			if n != b.NumLegal[i] || !slices.Equal(a.Legal[row:row+int(n)], b.Legal[row:row+int(n)]) {
				return false
			}
		}
		return true
	}
	for _, mode := range []Autoreset{NextStep, SameStep, Disabled} {
		r := MustRules(Options{Suits: 2, MaxSteps: 60, Encoding: Float32, FaceUpSlots: 8})
		o := BatchOptions{N: 7, Workers: 2, Autoreset: mode, Presample: true, Legal: true}
		a, err := NewBatch(r, o)
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		a.Reset(5)
		acts := make([]Action, o.N)
		reset := make([]bool, o.N)
		step := func(b *Batch) {
			if mode == Disabled {
				for i := range reset {
					reset[i] = b.Ended(i)
				}
				if err := b.ResetGames(reset); err != nil {
					t.Fatal(err)
				}
			}
			b.SampleLegal(acts)
			if err := b.Step(acts); err != nil {
				t.Fatal(err)
			}
		}
		for range 100 {
			step(a)
		}
		snap, err := a.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := NewBatch(r, o)
		defer b.Close()
		b.Reset(99) // different games, overwritten by Restore
		if err := b.Restore(snap); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(a.ObsFloat32, b.ObsFloat32) || !slices.Equal(a.Masks, b.Masks) || !sameLists(a, b) {
			t.Fatalf("%v: restored observations, masks or legal lists differ", mode)
		}
		for k := range 200 {
			step(a)
			step(b)
			if !slices.Equal(a.ObsFloat32, b.ObsFloat32) || !slices.Equal(a.Rewards, b.Rewards) || !slices.Equal(a.Masks, b.Masks) ||
				!slices.Equal(a.Terminated, b.Terminated) || !slices.Equal(a.Truncated, b.Truncated) || !slices.Equal(a.Score, b.Score) ||
				!sameLists(a, b) {
				t.Fatalf("%v: step %d after restore differs", mode, k)
			}
			for i := range o.N {
				// Episode statistics are read only where a game ended.
				if (a.Terminated[i] || a.Truncated[i]) && a.EpisodeReturn[i] != b.EpisodeReturn[i] {
					t.Fatalf("%v: step %d: game %d's episode return differs", mode, k, i)
				}
			}
		}
		// A snapshot that does not fit is refused whole: nothing changes.
		obs, masks := slices.Clone(b.ObsFloat32), slices.Clone(b.Masks)
		bad := snap
		bad.States = bad.States[:3]
		if err := b.Restore(bad); err == nil || err.Error() != "env: snapshot of 3 games for a batch of 7" {
			t.Fatalf("a snapshot of the wrong size: %v", err)
		}
		bad = snap
		bad.Next = nil
		if err := b.Restore(bad); err == nil || err.Error() != "env: snapshot and batch disagree on Presample" {
			t.Fatalf("a snapshot without presampled actions: %v", err)
		}
		bad = snap
		bad.States = slices.Clone(snap.States)
		bad.States[4] = "1: | Ks Qs Js Ts 9s 8s 7s 6s 5s 4s 3s 2s As"
		if err := b.Restore(bad); err == nil || !strings.HasPrefix(err.Error(), "env: snapshot game 4: position: column 1 holds a completed run") {
			t.Fatalf("a snapshot with a completed run on the tableau: %v", err)
		}
		bad = snap
		three := *snap.Options
		three.Suits = 3
		bad.Options = &three
		if err := b.Restore(bad); err == nil || !strings.HasPrefix(err.Error(), "env: the snapshot's options: ") || strings.Count(err.Error(), "env: ") != 1 {
			t.Fatalf("a snapshot of 3 suits: %v; want its options refused, the package named once", err)
		}
		if !slices.Equal(obs, b.ObsFloat32) || !slices.Equal(masks, b.Masks) {
			t.Fatalf("%v: a refused Restore changed the batch", mode)
		}
	}
}

// TestRestoreRefusesAShortField: a snapshot with any one of its per-game
// fields a game short (a truncated or hand-edited checkpoint) is refused
// with an error, not a panic halfway through, and the batch is unchanged.
func TestRestoreRefusesAShortField(t *testing.T) {
	r := MustRules(Options{Suits: 1, MaxSteps: 50})
	o := BatchOptions{N: 3, Workers: 1}
	b, err := NewBatch(r, o)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	b.Reset(2)
	snap, err := b.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	b.Reset(3) // other games, which a refused Restore must leave
	obs, masks, states := slices.Clone(b.ObsCompact), slices.Clone(b.Masks), slices.Clone(b.states)
	for _, tc := range []struct {
		field string
		cut   func(s *BatchSnapshot)
	}{
		{"states", func(s *BatchSnapshot) { s.States = s.States[:2] }},
		{"base", func(s *BatchSnapshot) { s.Base = s.Base[:2] }},
		{"episode", func(s *BatchSnapshot) { s.Episode = s.Episode[:2] }},
		{"pending", func(s *BatchSnapshot) { s.Pending = s.Pending[:2] }},
		{"ended", func(s *BatchSnapshot) { s.Ended = s.Ended[:2] }},
		{"ep_return", func(s *BatchSnapshot) { s.EpReturn = s.EpReturn[:2] }},
		{"policy", func(s *BatchSnapshot) { s.Policy = s.Policy[:2] }},
	} {
		bad := snap
		tc.cut(&bad)
		err := func() (err error) {
			defer func() {
				if v := recover(); v != nil {
					err = fmt.Errorf("panic: %v", v)
				}
			}()
			return b.Restore(bad)
		}()
		if err == nil || !strings.Contains(err.Error(), "snapshot of") {
			t.Errorf("a snapshot whose %s is a game short: %v, want it refused", tc.field, err)
		}
		if !slices.Equal(obs, b.ObsCompact) || !slices.Equal(masks, b.Masks) || !slices.Equal(states, b.states) {
			t.Fatalf("a refused Restore (%s short) changed the batch", tc.field)
		}
	}
	if err := b.Restore(snap); err != nil {
		t.Fatalf("the whole snapshot: %v", err)
	}
}

// TestRestoreOfEndedGames: under Disabled, a game that had ended when the
// snapshot was taken comes back ended, its mask row all zeros whatever
// the batch restored into held there. (TestBatchSnapshotRestore snapshots
// at a fixed step, where no game may have just ended.)
func TestRestoreOfEndedGames(t *testing.T) {
	r := MustRules(Options{Suits: 1, MaxSteps: 5})
	o := BatchOptions{N: 4, Workers: 1, Autoreset: Disabled}
	a, err := NewBatch(r, o)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	a.Reset(1)
	acts := make([]Action, o.N)
	for range 5 { // every game reaches its step limit
		a.SampleLegal(acts)
		if err := a.Step(acts); err != nil {
			t.Fatal(err)
		}
	}
	// Games 0 and 1 start over; 2 and 3 stay ended.
	if err := a.ResetGames([]bool{true, true, false, false}); err != nil {
		t.Fatal(err)
	}
	snap, err := a.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewBatch(r, o)
	defer b.Close()
	b.Reset(9) // every mask row full of legal moves
	if err := b.Restore(snap); err != nil {
		t.Fatal(err)
	}
	for i := range o.N {
		row := b.Masks[i*NumActions : (i+1)*NumActions]
		if b.Ended(i) != (i >= 2) || !slices.Equal(row, a.Masks[i*NumActions:(i+1)*NumActions]) || b.NumLegal[i] != a.NumLegal[i] {
			t.Errorf("game %d: ended %v, %d legal, mask equal %v; the snapshot's game: ended %v, %d legal",
				i, b.Ended(i), b.NumLegal[i], slices.Equal(row, a.Masks[i*NumActions:(i+1)*NumActions]), a.Ended(i), a.NumLegal[i])
		}
		if i >= 2 && slices.Contains(row, 1) {
			t.Errorf("game %d has ended, but its restored mask allows an action", i)
		}
	}
}

// TestRestoreRefusesASnapshotOfAnotherBatch: a snapshot taken under other
// rules, or one whose games this batch could not go on with (a game over
// that it would step on, refusing every action; flags its autoreset never
// sets; a presampled action that is not legal), is refused with an error
// naming what does not fit, and the batch is unchanged. Before, each was
// taken: a one-suit game in a two-suit batch (eight aces of spades), and
// a game at step 10 in a batch of limit 5, which no action could step.
func TestRestoreRefusesASnapshotOfAnotherBatch(t *testing.T) {
	take := func(o Options, bo BatchOptions, steps int) BatchSnapshot {
		t.Helper()
		b, err := NewBatch(MustRules(o), bo)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		if _, err := b.Snapshot(); err == nil || err.Error() != "env: Snapshot of a batch whose game 0 was never reset" {
			t.Fatalf("a snapshot before any reset: %v", err)
		}
		b.Reset(3)
		acts := make([]Action, bo.N)
		for range steps {
			b.SampleLegal(acts)
			if err := b.Step(acts); err != nil {
				t.Fatal(err)
			}
		}
		b.Close() // a closed batch keeps its games: a trainer saves after Close
		snap, err := b.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		return snap
	}
	two := Options{Suits: 2, MaxSteps: 50}
	bo := BatchOptions{N: 2, Workers: 1, Presample: true}
	b, err := NewBatch(MustRules(two), bo)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	b.Reset(8)
	obs, masks := slices.Clone(b.ObsCompact), slices.Clone(b.Masks)
	legacy := func(s BatchSnapshot) BatchSnapshot { s.Options = nil; return s } // as saved before the options were
	own := take(two, bo, 10)
	illegal := own
	illegal.Next = slices.Clone(own.Next)
	illegal.Next[1] = uint16(MoveAction(0, 1, 12)) // 12 cards: never legal at step 10
	for name, c := range map[string]struct {
		snap BatchSnapshot
		want string
	}{
		"one suit":          {take(Options{Suits: 1, MaxSteps: 50}, bo, 10), "env: a snapshot of classic 1-suit"},
		"one suit, legacy":  {legacy(take(Options{Suits: 1, MaxSteps: 50}, bo, 10)), "env: snapshot game 0: card As appears"},
		"another limit":     {take(Options{Suits: 2, MaxSteps: 60}, bo, 10), "max-steps 60, slots 78, compact games for a batch of"},
		"past the limit":    {legacy(take(Options{Suits: 2, MaxSteps: 60}, bo, 55)), "of a limit of 50) but neither awaits its reset nor is ended"},
		"ended":             {legacy(take(two, BatchOptions{N: 2, Workers: 1, Presample: true, Autoreset: Disabled}, 50)), "it is ended for good, which a batch of autoreset next-step never is"},
		"illegal presample": {illegal, "env: snapshot game 1: presampled action"},
		"no presample":      {take(two, BatchOptions{N: 2, Workers: 1}, 10), "disagree on Presample"},
	} {
		err := b.Restore(c.snap)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want an error containing %q", name, err, c.want)
		}
		if !slices.Equal(obs, b.ObsCompact) || !slices.Equal(masks, b.Masks) {
			t.Fatalf("%s: a refused Restore changed the batch", name)
		}
	}
	// Its own, and one saved before snapshots held their options, fit.
	for _, s := range []BatchSnapshot{own, legacy(own)} {
		if err := b.Restore(s); err != nil {
			t.Errorf("its own snapshot: %v", err)
		}
	}
}

// TestZeroBatchSnapshotRefuses: the zero Batch has no games to snapshot
// and says so; it returned a snapshot of 0 suits and no error.
func TestZeroBatchSnapshotRefuses(t *testing.T) {
	var b Batch
	if _, err := b.Snapshot(); err == nil || !strings.Contains(err.Error(), "not made by NewBatch") {
		t.Errorf("Snapshot of the zero Batch: %v", err)
	}
}

// TestSnapshotReadsFloat32Returns: snapshots (in training checkpoints)
// written before the returns were summed in float64 held them as float32;
// they read the same into today's field.
func TestSnapshotReadsFloat32Returns(t *testing.T) {
	old := struct {
		EpReturn []float32 `msgpack:"ep_return"`
	}{[]float32{-1.5, 2.25}}
	b, err := msgpack.Marshal(old)
	if err != nil {
		t.Fatal(err)
	}
	var s BatchSnapshot
	if err := msgpack.Unmarshal(b, &s); err != nil || !slices.Equal(s.EpReturn, []float64{-1.5, 2.25}) {
		t.Fatalf("%v, %v", s.EpReturn, err)
	}
}

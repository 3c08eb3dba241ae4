package env

import (
	"fmt"
	"slices"
	"strings"
	"testing"
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
		if err := b.Restore(bad); err == nil || !strings.HasPrefix(err.Error(), "env: snapshot game 4: env: position: column 1 holds a completed run") {
			t.Fatalf("a snapshot with a completed run on the tableau: %v", err)
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

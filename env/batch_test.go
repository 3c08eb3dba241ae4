package env_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/spiderenv/spider/env"
	"github.com/spiderenv/spider/internal/rng"
)

func newBatch(t testing.TB, r env.Rules, o env.BatchOptions) *env.Batch {
	t.Helper()
	b, err := env.NewBatch(r, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}

// pickActions draws one legal action per game from the batch's masks.
func pickActions(g *rng.Rand, b *env.Batch, dst []env.Action) {
	for i := range dst {
		m := b.Masks[i*env.NumActions : (i+1)*env.NumActions]
		k := g.IntN(int(b.NumLegal[i]))
		for a, ok := range m {
			if ok == 1 {
				if k == 0 {
					dst[i] = env.Action(a)
					break
				}
				k--
			}
		}
	}
}

// reference is the batch's documented behaviour built from single Envs.
type reference struct {
	r       env.Rules
	mode    env.Autoreset
	seed    uint64
	envs    []*env.Env
	episode []int
	pending []bool
	ended   []bool
	ret     []float64
}

func newReference(r env.Rules, mode env.Autoreset, seed uint64, n int) *reference {
	ref := &reference{r: r, mode: mode, seed: seed, episode: make([]int, n), pending: make([]bool, n), ended: make([]bool, n), ret: make([]float64, n)}
	for i := range n {
		ref.envs = append(ref.envs, env.New(r))
		ref.envs[i].Reset(env.EpisodeSeed(seed, i, 0))
	}
	return ref
}

func (ref *reference) reset(i int) {
	ref.episode[i]++
	ref.envs[i].Reset(env.EpisodeSeed(ref.seed, i, ref.episode[i]))
	ref.pending[i], ref.ended[i], ref.ret[i] = false, false, 0
}

// step plays game i's action and checks the batch's row i against it.
func (ref *reference) step(t *testing.T, b *env.Batch, i int, a env.Action) {
	t.Helper()
	e := ref.envs[i]
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("%v game %d step %d: %s", ref.mode, i, e.Info().Moves, fmt.Sprintf(format, args...))
	}
	reward, term, trunc := 0.0, false, false
	var final []uint8
	var finalF []float32
	switch {
	case ref.pending[i]:
		ref.reset(i)
	default:
		var err error
		var obs env.Obs
		obs, reward, term, trunc, _, err = e.Step(a)
		if err != nil {
			fail("reference refused %v: %v", a, err)
		}
		ref.ret[i] += reward
		final, finalF = slices.Clone(obs.Compact), slices.Clone(obs.Float32)
	}
	if b.Rewards[i] != float32(reward) || b.Terminated[i] != term || b.Truncated[i] != trunc {
		fail("batch reward %v term %v trunc %v; reference %v %v %v", b.Rewards[i], b.Terminated[i], b.Truncated[i], reward, term, trunc)
	}
	if term || trunc {
		s := e.State()
		if b.EpisodeReturn[i] != float32(ref.ret[i]) || int(b.EpisodeLength[i]) != s.Steps() ||
			b.EpisodeWon[i] != (s.Status() == env.Won) || int(b.EpisodeRuns[i]) != s.Runs() {
			fail("episode stats %v %v %v %v; reference %v %v %v %v", b.EpisodeReturn[i], b.EpisodeLength[i], b.EpisodeWon[i], b.EpisodeRuns[i], ref.ret[i], s.Steps(), s.Status(), s.Runs())
		}
		switch ref.mode {
		case env.NextStep:
			ref.pending[i] = true
		case env.Disabled:
			ref.ended[i] = true
		case env.SameStep:
			sameObs := bytes.Equal(b.FinalObsCompact[i*len(final):(i+1)*len(final)], final)
			if b.FinalObsFloat32 != nil {
				sameObs = slices.Equal(b.FinalObsFloat32[i*len(finalF):(i+1)*len(finalF)], finalF)
			}
			if !b.HasFinal[i] || !sameObs || int(b.FinalScore[i]) != s.Score() {
				fail("final observation or score differ")
			}
			ref.reset(i)
		}
	} else if ref.mode == env.SameStep && b.HasFinal[i] {
		fail("HasFinal set for a game that did not end")
	}
	ref.compareRow(t, b, i, fail)
}

func (ref *reference) compareRow(t *testing.T, b *env.Batch, i int, fail func(string, ...any)) {
	t.Helper()
	e := ref.envs[i]
	s := e.State()
	if b.ObsFloat32 != nil {
		n := ref.r.Float32Len()
		if row := b.ObsFloat32[i*n : (i+1)*n]; !slices.Equal(row, s.ObserveFloat32(make([]float32, n))) {
			fail("float32 observation row differs")
		}
	} else {
		n := ref.r.CompactLen()
		if row := b.ObsCompact[i*n : (i+1)*n]; !bytes.Equal(row, s.ObserveCompact(make([]uint8, n))) {
			fail("observation row differs")
		}
	}
	mask := e.Mask()
	legal := e.Info().Legal
	if ref.pending[i] {
		mask, legal = bytes.Repeat([]byte{1}, env.NumActions), env.NumActions
	}
	if !bytes.Equal(b.Masks[i*env.NumActions:(i+1)*env.NumActions], mask) || int(b.NumLegal[i]) != legal {
		fail("mask differs (batch %d legal, reference %d)", b.NumLegal[i], legal)
	}
	if int(b.Score[i]) != s.Score() || int(b.Runs[i]) != s.Runs() || int(b.Moves[i]) != s.Steps() {
		fail("score/runs/moves %d %d %d; reference %d %d %d", b.Score[i], b.Runs[i], b.Moves[i], s.Score(), s.Runs(), s.Steps())
	}
	if b.State(i) != s {
		fail("state differs")
	}
}

// TestBatchEquivalence steps the same games with 1 worker, with every
// worker, and one by one as single Envs, for 10,000 steps in each autoreset
// mode, and requires identical buffers, rewards and statistics.
func TestBatchEquivalence(t *testing.T) {
	steps := 10000
	if testing.Short() {
		steps = 1000
	}
	const n = 12
	for _, r := range []env.Rules{
		env.MustRules(env.Options{RuleSet: env.Cardems, Suits: 2, MaxSteps: 150}),
		// Float32 rows are big: fewer slots (so long columns overflow them)
		// keep this configuration quick.
		env.MustRules(env.Options{RuleSet: env.Classic, Suits: 4, MaxSteps: 120, Encoding: env.Float32, TimePerActionMs: 700, FaceUpSlots: 6}),
	} {
		for _, mode := range []env.Autoreset{env.NextStep, env.SameStep, env.Disabled} {
			t.Run(fmt.Sprint(r, "/", mode), func(t *testing.T) {
				steps := steps
				if r.Encoding() == env.Float32 {
					steps /= 4
				}
				one := newBatch(t, r, env.BatchOptions{N: n, Workers: 1, Autoreset: mode})
				// all also lists the legal actions: the lists change nothing else.
				all := newBatch(t, r, env.BatchOptions{N: n, Workers: 3, Autoreset: mode, Legal: true})
				ref := newReference(r, mode, 77, n)
				one.Reset(77)
				all.Reset(77)
				g := rng.New(1)
				actions := make([]env.Action, n)
				ended := make([]bool, n)
				episodes := 0
				for step := range steps {
					pickActions(&g, one, actions)
					if err := one.Step(actions); err != nil {
						t.Fatalf("step %d: %v", step, err)
					}
					if err := all.Step(actions); err != nil {
						t.Fatalf("step %d: %v", step, err)
					}
					listed := all.BatchBuffers
					listed.Legal = nil
					if !reflect.DeepEqual(one.BatchBuffers, listed) {
						t.Fatalf("step %d: 1 worker and 3 workers disagree", step)
					}
					checkLegalLists(t, all)
					for i := range n {
						ref.step(t, one, i, actions[i])
						ended[i] = one.Terminated[i] || one.Truncated[i]
						if ended[i] {
							episodes++
						}
					}
					if mode == env.Disabled && slices.Contains(ended, true) {
						if err := one.ResetGames(ended); err != nil {
							t.Fatal(err)
						}
						if err := all.ResetGames(ended); err != nil {
							t.Fatal(err)
						}
						checkLegalLists(t, all)
						for i, e := range ended {
							if e {
								ref.reset(i)
								ref.compareRow(t, one, i, func(f string, a ...any) { t.Fatalf("after ResetGames: "+f, a...) })
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
}

// checkLegalLists fails t unless each game's row of b.Legal starts with
// the ids its mask row allows, in increasing order, NumLegal of them.
func checkLegalLists(t *testing.T, b *env.Batch) {
	t.Helper()
	if b.Legal == nil {
		t.Fatal("the batch keeps no legal lists")
	}
	var want []env.Action
	for i := range b.NumLegal {
		want = env.AppendMasked(want[:0], b.Masks[i*env.NumActions:(i+1)*env.NumActions])
		n := int(b.NumLegal[i])
		if n != len(want) {
			t.Fatalf("game %d: NumLegal %d, mask %d", i, n, len(want))
		}
		for k, a := range want {
			if got := b.Legal[i*env.NumActions+k]; int(got) != int(a) {
				t.Fatalf("game %d: legal list entry %d is %d, the mask's %d", i, k, got, a)
			}
		}
	}
}

func TestBatchRefusesIllegalAndChangesNothing(t *testing.T) {
	r := env.MustRules(env.Options{Suits: 4})
	b := newBatch(t, r, env.BatchOptions{N: 8, Workers: 2})
	b.Reset(3)
	before := deepCopy(b)
	actions := make([]env.Action, 8)
	g := rng.New(2)
	pickActions(&g, b, actions)
	bad := 5
	for a := env.Action(0); a < env.NumActions; a++ {
		if b.Masks[bad*env.NumActions+int(a)] == 0 {
			actions[bad] = a
			break
		}
	}
	err := b.Step(actions)
	var ill *env.IllegalActionError
	if err == nil || !strings.HasPrefix(err.Error(), "env: game 5: ") || strings.Count(err.Error(), "env: ") != 1 || !errors.As(err, &ill) || ill.Action != actions[bad] || ill.Reason == "" {
		t.Fatalf("error %v does not name game 5 (and its package once) and wrap its IllegalActionError for %v", err, actions[bad])
	}
	if !reflect.DeepEqual(before, deepCopy(b)) {
		t.Fatal("a refused step changed the buffers")
	}
	for i := range 8 {
		if b.State(i) != env.NewGame(r, env.EpisodeSeed(3, i, 0)) {
			t.Fatalf("a refused step changed game %d", i)
		}
	}
	if err := b.Step(actions[:7]); err == nil || err.Error() != "env: 7 actions for 8 games" {
		t.Fatalf("7 actions for 8 games: %v", err)
	}
}

// TestBatchLegalityIsTheGamesNotTheMasks writes into Masks, which a caller
// must not do, and checks that the games still keep the rules: an illegal
// action whose byte was set is refused (under RefuseIllegal, with the
// games unchanged; flagged under NoopIllegal), and a legal one whose byte
// was cleared is played. Before, legality was read from the mask byte: the
// batch played the illegal move without a word, or panicked halfway
// through a step with two workers, one game already moved.
func TestBatchLegalityIsTheGamesNotTheMasks(t *testing.T) {
	r := env.MustRules(env.Options{})
	for _, policy := range []env.IllegalPolicy{env.RefuseIllegal, env.NoopIllegal} {
		b := newBatch(t, r, env.BatchOptions{N: 2, Workers: 2, Illegal: policy})
		b.Reset(1)
		var bad env.Action
		for a := env.Action(0); a < env.NumActions; a++ {
			if s := b.State(0); !s.Legal(a) && a != env.Deal {
				if src, dst, k := a.Move(); s.Height(src) > 0 && s.Height(dst) > 0 && k > 1 {
					bad = a // more cards than the run holds: the step would have cut a slice short
					break
				}
			}
		}
		if bad == 0 {
			t.Fatal("no illegal move of several cards found")
		}
		b.Masks[int(bad)] = 1
		g0, g1 := b.State(0), b.State(1)
		ok := env.NthMasked(b.Masks[env.NumActions:], 0)
		err := b.Step([]env.Action{bad, ok})
		switch policy {
		case env.RefuseIllegal:
			var ill *env.IllegalActionError
			if !errors.As(err, &ill) || ill.Action != bad {
				t.Fatalf("an illegal action with its mask byte set: %v, want an IllegalActionError", err)
			}
			if b.State(0) != g0 || b.State(1) != g1 {
				t.Fatal("a refused step changed a game")
			}
		case env.NoopIllegal:
			if now := b.State(0); err != nil || !b.Illegal[0] || now.Key() != g0.Key() {
				t.Fatalf("an illegal action with its mask byte set: %v, illegal %v; want a flagged no-op", err, b.Illegal[0])
			}
		}
	}
	b := newBatch(t, r, env.BatchOptions{N: 1})
	b.Reset(1)
	a := env.NthMasked(b.Masks, 0)
	b.Masks[a] = 0
	want := b.State(0)
	if _, err := want.Step(a); err != nil {
		t.Fatal(err)
	}
	if err := b.Step([]env.Action{a}); err != nil || b.State(0) != want {
		t.Fatalf("a legal action whose mask byte was cleared: %v; want it played", err)
	}
}

func deepCopy(b *env.Batch) env.BatchBuffers {
	c := b.BatchBuffers
	v := reflect.ValueOf(&c).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		if f.Kind() == reflect.Slice && !f.IsNil() {
			cp := reflect.MakeSlice(f.Type(), f.Len(), f.Len())
			reflect.Copy(cp, f)
			f.Set(cp)
		}
	}
	return c
}

func TestBatchIllegalPolicies(t *testing.T) {
	r := env.MustRules(env.Options{Suits: 1, MaxSteps: 5})
	illegalFor := func(b *env.Batch, i int) env.Action {
		for a := env.Action(0); ; a++ {
			if b.Masks[i*env.NumActions+int(a)] == 0 {
				return a
			}
		}
	}
	t.Run("noop", func(t *testing.T) {
		b := newBatch(t, r, env.BatchOptions{N: 2, Illegal: env.NoopIllegal, IllegalPenalty: 3})
		b.Reset(1)
		s0 := b.State(0)
		obs := slices.Clone(b.ObsCompact)
		actions := []env.Action{illegalFor(b, 0), illegalFor(b, 1)}
		if err := b.Step(actions); err != nil {
			t.Fatal(err)
		}
		after := b.State(0)
		if !b.Illegal[0] || b.Rewards[0] != -3 || b.Terminated[0] || after.Score() != s0.Score() || !bytes.Equal(obs, b.ObsCompact) {
			t.Fatalf("noop: illegal %v reward %v terminated %v", b.Illegal[0], b.Rewards[0], b.Terminated[0])
		}
		for range 4 { // the illegal tries count towards the step limit of 5
			b.Step([]env.Action{illegalFor(b, 0), illegalFor(b, 1)})
		}
		if !b.Truncated[0] || b.EpisodeReturn[0] != -15 || b.EpisodeLength[0] != 5 {
			t.Fatalf("after 5 illegal tries: truncated %v return %v length %v", b.Truncated[0], b.EpisodeReturn[0], b.EpisodeLength[0])
		}
	})
	t.Run("noop without a penalty", func(t *testing.T) {
		b := newBatch(t, r, env.BatchOptions{N: 1, Illegal: env.NoopIllegal})
		b.Reset(1)
		if err := b.Step([]env.Action{illegalFor(b, 0)}); err != nil {
			t.Fatal(err)
		}
		// +0, not -0, which Python prints as "-0.0".
		if !b.Illegal[0] || b.Rewards[0] != 0 || math.Signbit(float64(b.Rewards[0])) {
			t.Fatalf("illegal %v reward %v", b.Illegal[0], b.Rewards[0])
		}
	})
	t.Run("lose", func(t *testing.T) {
		b := newBatch(t, r, env.BatchOptions{N: 2, Illegal: env.LoseIllegal, IllegalPenalty: 10})
		b.Reset(1)
		actions := []env.Action{illegalFor(b, 0), env.Deal}
		if err := b.Step(actions); err != nil {
			t.Fatal(err)
		}
		if !b.Illegal[0] || !b.Terminated[0] || b.Rewards[0] != -10 || b.EpisodeWon[0] {
			t.Fatalf("lose: illegal %v terminated %v reward %v", b.Illegal[0], b.Terminated[0], b.Rewards[0])
		}
		if b.Illegal[1] || b.Terminated[1] || b.Rewards[1] != -1 {
			t.Fatal("the other game was affected")
		}
	})
	t.Run("lose-same-step", func(t *testing.T) {
		// The game restarts within the step; the step's results are still
		// the ended game's, the illegal action among them.
		b := newBatch(t, r, env.BatchOptions{N: 2, Illegal: env.LoseIllegal, IllegalPenalty: 10, Autoreset: env.SameStep})
		b.Reset(1)
		if err := b.Step([]env.Action{illegalFor(b, 0), env.Deal}); err != nil {
			t.Fatal(err)
		}
		if !b.Illegal[0] || !b.Terminated[0] || !b.HasFinal[0] || b.Rewards[0] != -10 || b.Illegal[1] || b.HasFinal[1] {
			t.Fatalf("lose under same-step: illegal %v terminated %v final %v reward %v; the other game illegal %v final %v",
				b.Illegal[0], b.Terminated[0], b.HasFinal[0], b.Rewards[0], b.Illegal[1], b.HasFinal[1])
		}
	})
	t.Run("lose-disabled", func(t *testing.T) {
		b := newBatch(t, r, env.BatchOptions{N: 2, Illegal: env.LoseIllegal, Autoreset: env.Disabled})
		b.Reset(1)
		if err := b.Step([]env.Action{illegalFor(b, 0), env.Deal}); err != nil {
			t.Fatal(err)
		}
		if !b.Terminated[0] || b.NumLegal[0] != 0 || slices.Contains(b.Masks[:env.NumActions], 1) {
			t.Fatalf("a forfeited game under disabled autoreset must accept nothing: legal %d", b.NumLegal[0])
		}
		if err := b.Step([]env.Action{env.Deal, env.Deal}); err == nil || !strings.Contains(err.Error(), "game 0 has ended") {
			t.Fatalf("stepping the forfeited game: %v", err)
		}
	})
}

// resetAndStep resets b with seed and plays one random legal action in
// every game.
func resetAndStep(t *testing.T, b *env.Batch, seed uint64) {
	t.Helper()
	b.Reset(seed)
	actions := make([]env.Action, b.N())
	g := rng.New(4)
	pickActions(&g, b, actions)
	if err := b.Step(actions); err != nil {
		t.Fatal(err)
	}
}

func TestBatchResetGamesOnlyTouchesChosenGames(t *testing.T) {
	r := env.MustRules(env.Options{Suits: 2})
	b := newBatch(t, r, env.BatchOptions{N: 6, Workers: 2})
	if err := b.ResetGames(make([]bool, 6)); err == nil || err.Error() != "env: ResetGames before Reset" || !errors.Is(err, env.ErrNotReset) {
		t.Fatalf("ResetGames before Reset: %v", err)
	}
	resetAndStep(t, b, 9)
	kept := b.State(1)
	mask := []bool{true, false, false, false, false, true}
	if err := b.ResetGames(mask); err != nil {
		t.Fatal(err)
	}
	if b.State(0) != env.NewGame(r, env.EpisodeSeed(9, 0, 1)) || b.State(5) != env.NewGame(r, env.EpisodeSeed(9, 5, 1)) {
		t.Fatal("reset games are not episode 1 of their streams")
	}
	if b.State(1) != kept {
		t.Fatal("a game outside the mask was reset")
	}
	for i := range 6 {
		if b.Rewards[i] != 0 || b.Terminated[i] || b.Truncated[i] || b.Illegal[i] {
			t.Fatalf("game %d: a reset reports reward %v, ended or illegal; no game stepped", i, b.Rewards[i])
		}
	}
	if err := b.ResetGames(mask[:3]); err == nil || err.Error() != "env: reset mask of 3 entries for 6 games" {
		t.Fatalf("a short reset mask: %v", err)
	}
}

// TestBatchResetGamesSeeded checks Gymnasium's masked seeded reset: the
// chosen games start their own seeds' episodes or go on to their next, and
// the others are left as they were.
func TestBatchResetGamesSeeded(t *testing.T) {
	r := env.MustRules(env.Options{Suits: 2})
	b := newBatch(t, r, env.BatchOptions{N: 4, Workers: 2})
	mask := []bool{true, true, false, false}
	seeds := []uint64{50, 0, 70, 0}
	seeded := []bool{true, false, true, false}
	if err := b.ResetGamesSeeded(mask, seeds, seeded); err == nil || err.Error() != "env: ResetGamesSeeded before Reset" || !errors.Is(err, env.ErrNotReset) {
		t.Fatalf("ResetGamesSeeded before Reset: %v", err)
	}
	resetAndStep(t, b, 9)
	kept := [4]env.State{b.State(0), b.State(1), b.State(2), b.State(3)}
	keptObs := slices.Clone(b.ObsCompact)
	if err := b.ResetGamesSeeded(mask, seeds[:3], seeded); err == nil || err.Error() != "env: reset mask of 4 entries, 3 seeds and 4 seeded flags for 4 games" {
		t.Fatalf("a short seed list: %v", err)
	}
	if b.State(0) != kept[0] || !slices.Equal(b.ObsCompact, keptObs) {
		t.Fatal("a refused reset changed a game")
	}
	if err := b.ResetGamesSeeded(mask, seeds, seeded); err != nil {
		t.Fatal(err)
	}
	if b.State(0) != env.NewGame(r, env.EpisodeSeed(50, 0, 0)) {
		t.Fatal("game 0 is not the first deal of its seed 50")
	}
	if b.State(1) != env.NewGame(r, env.EpisodeSeed(9, 1, 1)) {
		t.Fatal("game 1 (no seed) did not go on to its next episode")
	}
	if b.State(2) != kept[2] || b.State(3) != kept[3] {
		t.Fatal("a game outside the mask was reset (game 2's seed must not be read)")
	}
	o := r.CompactLen()
	if !slices.Equal(b.ObsCompact[2*o:], keptObs[2*o:]) {
		t.Fatal("the rows of games outside the mask changed")
	}
	// Game 0 goes on from seed 50's stream, game 2 from its own of seed 9.
	if err := b.ResetGames([]bool{true, false, true, false}); err != nil {
		t.Fatal(err)
	}
	if b.State(0) != env.NewGame(r, env.EpisodeSeed(50, 0, 1)) {
		t.Fatal("game 0's next episode is not episode 1 of seed 50")
	}
	if b.State(2) != env.NewGame(r, env.EpisodeSeed(9, 2, 1)) {
		t.Fatal("game 2, outside the mask, took the seed it was not to read")
	}
	b.Close()
	if err := b.ResetGamesSeeded(mask, seeds, seeded); err != env.ErrClosed {
		t.Fatalf("a closed batch: %v", err)
	}
}

func TestBatchDisabledRefusesEndedGames(t *testing.T) {
	r := env.MustRules(env.Options{Suits: 1, MaxSteps: 1})
	b := newBatch(t, r, env.BatchOptions{N: 3, Autoreset: env.Disabled, Illegal: env.NoopIllegal})
	b.Reset(2)
	actions := []env.Action{env.Deal, env.Deal, env.Deal}
	if err := b.Step(actions); err != nil || !b.Truncated[0] {
		t.Fatalf("first step: %v, truncated %v", err, b.Truncated[0])
	}
	// The Env's error for the same mistake, under errors.Is.
	if err := b.Step(actions); err == nil || !strings.Contains(err.Error(), "game 0 has ended") || !errors.Is(err, env.ErrEpisodeOver) {
		t.Fatalf("stepping an ended game: %v", err)
	}
}

func TestNewBatchValidates(t *testing.T) {
	r := env.MustRules(env.Options{Suits: 1})
	for _, tc := range []struct {
		o    env.BatchOptions
		want string
	}{
		{env.BatchOptions{N: 0}, "batch size 0 outside 1 to 1048576"},
		{env.BatchOptions{N: 1<<20 + 1}, "batch size 1048577 outside 1 to 1048576"},
		{env.BatchOptions{N: 2, Workers: -1}, "negative worker count -1"},
		{env.BatchOptions{N: 2, Autoreset: 9}, "unknown autoreset mode 9"},
		{env.BatchOptions{N: 2, Illegal: 9}, "unknown illegal-action policy 9"},
		{env.BatchOptions{N: 2, IllegalPenalty: -1}, "illegal-action penalty -1 must be a finite number, not negative"},
		{env.BatchOptions{N: 2, IllegalPenalty: float32(math.NaN())}, "illegal-action penalty NaN must be"},
		{env.BatchOptions{N: 2, IllegalPenalty: float32(math.Inf(1))}, "illegal-action penalty +Inf must be"},
	} {
		b, err := env.NewBatch(r, tc.o)
		if err == nil || !strings.Contains(err.Error(), tc.want) || b != nil {
			t.Errorf("NewBatch(%+v) = %v, %v; want nil and an error containing %q", tc.o, b, err, tc.want)
		}
	}
	if _, err := env.NewBatch(env.Rules{}, env.BatchOptions{N: 1}); err == nil || !strings.Contains(err.Error(), "NewBatch with zero Rules") {
		t.Errorf("zero Rules: %v", err)
	}
	b := newBatch(t, r, env.BatchOptions{N: 3, Workers: 8})
	if b.Options().Workers != 3 {
		t.Errorf("workers %d, want capped at N = 3", b.Options().Workers)
	}
	if err := b.Step(make([]env.Action, 3)); err == nil || err.Error() != "env: Step before Reset" || !errors.Is(err, env.ErrNotReset) {
		t.Errorf("Step before Reset: %v", err)
	}
	// SampleLegal before Reset answers Deal for every game, presampled or
	// not (presampled, it answered action 0, a move).
	for _, pre := range []bool{false, true} {
		b := newBatch(t, r, env.BatchOptions{N: 3, Presample: pre})
		got := make([]env.Action, 3)
		b.SampleLegal(got)
		if want := []env.Action{env.Deal, env.Deal, env.Deal}; !slices.Equal(got, want) {
			t.Errorf("Presample %v: SampleLegal before Reset: %v, want %v", pre, got, want)
		}
	}
}

func TestBatchStepDoesNotAllocate(t *testing.T) {
	for _, enc := range []env.Encoding{env.Compact, env.Float32} {
		for _, mode := range []env.Autoreset{env.NextStep, env.SameStep} {
			r := env.MustRules(env.Options{Suits: 4, Encoding: enc, MaxSteps: 50})
			b := newBatch(t, r, env.BatchOptions{N: 64, Autoreset: mode, Legal: enc == env.Compact})
			b.Reset(1)
			actions := make([]env.Action, 64)
			g := rng.New(3)
			allocs := testing.AllocsPerRun(300, func() {
				pickActions(&g, b, actions)
				if err := b.Step(actions); err != nil {
					t.Fatal(err)
				}
			})
			if allocs != 0 {
				t.Errorf("%v %v: %v allocations per batch step", enc, mode, allocs)
			}
		}
	}
}

// TestBatchResetsDoNotAllocate: every kind of reset after the first (a
// server serves them as often as a client asks) allocates nothing.
func TestBatchResetsDoNotAllocate(t *testing.T) {
	const n = 64
	r := env.MustRules(env.Options{Suits: 2, MaxSteps: 50})
	b := newBatch(t, r, env.BatchOptions{N: n})
	b.Reset(1)
	mask, seeded, seeds := make([]bool, n), make([]bool, n), make([]uint64, n)
	for i := range n {
		mask[i], seeded[i], seeds[i] = i%2 == 0, i%3 != 0, uint64(i)
	}
	for name, reset := range map[string]func() error{
		"Reset":            func() error { b.Reset(2); return nil },
		"ResetGames":       func() error { return b.ResetGames(mask) },
		"ResetSeeds":       func() error { return b.ResetSeeds(seeds, seeded) },
		"ResetGamesSeeded": func() error { return b.ResetGamesSeeded(mask, seeds, seeded) },
	} {
		allocs := testing.AllocsPerRun(100, func() {
			if err := reset(); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations a reset", name, allocs)
		}
	}
}

func TestSampleLegalIsLegalAndWorkerIndependent(t *testing.T) {
	r := env.MustRules(env.Options{Suits: 2, MaxSteps: 60})
	one := newBatch(t, r, env.BatchOptions{N: 10, Workers: 1, Autoreset: env.SameStep})
	two := newBatch(t, r, env.BatchOptions{N: 10, Workers: 2, Autoreset: env.SameStep, Presample: true})
	one.Reset(5)
	two.Reset(5)
	a1, a2 := make([]env.Action, 10), make([]env.Action, 10)
	seen := map[env.Action]bool{}
	for step := range 300 {
		one.SampleLegal(a1)
		two.SampleLegal(a2)
		if !slices.Equal(a1, a2) {
			t.Fatalf("step %d: sampled actions depend on the worker count or on Presample", step)
		}
		for i, a := range a1 {
			if one.Masks[i*env.NumActions+int(a)] != 1 {
				t.Fatalf("step %d game %d: sampled illegal %v", step, i, a)
			}
			seen[a] = true
		}
		if err := one.Step(a1); err != nil {
			t.Fatal(err)
		}
		two.Step(a2)
	}
	if len(seen) < 50 {
		t.Fatalf("only %d distinct actions in 3000 draws: not uniform over legal ones", len(seen))
	}
}

// benchBatch times SampleLegal + Step at N games: the random-policy loop of
// spider bench, with the legal lists if legal. It reports env-steps per
// second and ns per env-step.
func benchBatch(b *testing.B, enc env.Encoding, workers int, legal bool) {
	const n = 4096
	r := env.MustRules(env.Options{Suits: 4, Encoding: enc})
	bt, err := env.NewBatch(r, env.BatchOptions{N: n, Workers: workers, Presample: true, Legal: legal})
	if err != nil {
		b.Fatal(err)
	}
	defer bt.Close()
	bt.Reset(1)
	actions := make([]env.Action, n)
	for range 200 { // past the deals, into typical positions
		bt.SampleLegal(actions)
		bt.Step(actions)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		bt.SampleLegal(actions)
		if err := bt.Step(actions); err != nil {
			b.Fatal(err)
		}
	}
	sec := b.Elapsed().Seconds()
	b.ReportMetric(float64(n)*float64(b.N)/sec, "env-steps/s")
	b.ReportMetric(sec*1e9/(float64(n)*float64(b.N)), "ns/env-step")
}

func BenchmarkBatchCompact1Worker(b *testing.B)    { benchBatch(b, env.Compact, 1, false) }
func BenchmarkBatchCompactAllWorkers(b *testing.B) { benchBatch(b, env.Compact, 0, false) }
func BenchmarkBatchFloat321Worker(b *testing.B)    { benchBatch(b, env.Float32, 1, false) }
func BenchmarkBatchFloat32AllWorkers(b *testing.B) { benchBatch(b, env.Float32, 0, false) }

// BenchmarkBatchCompactLegalLists is BenchmarkBatchCompactAllWorkers with
// the legal lists (BatchOptions.Legal): their cost per env-step.
func BenchmarkBatchCompactLegalLists(b *testing.B) { benchBatch(b, env.Compact, 0, true) }

// TestBatchSeedsAsGymnasium checks Gymnasium's seeding convention: game i
// of a batch reset with seed s deals what a batch of one reset with s+i
// deals, episode after episode; ResetSeeds restarts the seeded games'
// streams and takes the others to their next episode.
func TestBatchSeedsAsGymnasium(t *testing.T) {
	r := env.MustRules(env.Options{})
	const n, seed = 3, 1 << 63 // the last game's seed wraps past 2^64
	b := newBatch(t, r, env.BatchOptions{N: n, Autoreset: env.Disabled})
	b.Reset(seed)
	single := make([]*env.Batch, n)
	for i := range single {
		single[i] = newBatch(t, r, env.BatchOptions{N: 1, Autoreset: env.Disabled})
		single[i].Reset(seed + uint64(i))
	}
	text := func(s env.State) string {
		b, err := s.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	same := func(what string, want func(i int) env.State) {
		t.Helper()
		for i := range n {
			if got, w := text(b.State(i)), text(want(i)); got != w {
				t.Fatalf("%s: game %d deals\n%s\nwant\n%s", what, i, got, w)
			}
		}
	}
	same("after Reset", func(i int) env.State { return single[i].State(0) })
	if text(b.State(0)) == text(b.State(1)) {
		t.Fatal("two games dealt alike")
	}
	// Next episodes: ResetGames on both sides.
	if err := b.ResetGames([]bool{true, true, true}); err != nil {
		t.Fatal(err)
	}
	for _, s := range single {
		if err := s.ResetGames([]bool{true}); err != nil {
			t.Fatal(err)
		}
	}
	same("second episode", func(i int) env.State { return single[i].State(0) })

	// A list of seeds: game 1 unseeded goes on to its third episode.
	if err := b.ResetSeeds([]uint64{5, 0, 7}, []bool{true, false, true}); err != nil {
		t.Fatal(err)
	}
	if err := single[1].ResetGames([]bool{true}); err != nil {
		t.Fatal(err)
	}
	fresh := func(seed uint64) env.State {
		s := newBatch(t, r, env.BatchOptions{N: 1})
		s.Reset(seed)
		return s.State(0)
	}
	same("ResetSeeds", func(i int) env.State {
		switch i {
		case 0:
			return fresh(5)
		case 2:
			return fresh(7)
		}
		return single[1].State(0)
	})

	never := newBatch(t, r, env.BatchOptions{N: 2})
	if err := never.ResetSeeds([]uint64{1, 0}, []bool{true, false}); err == nil {
		t.Fatal("an unseeded game before the first Reset was accepted")
	}
	if err := never.ResetSeeds([]uint64{1}, []bool{true}); err == nil {
		t.Fatal("one seed for two games was accepted")
	}
	if err := never.ResetSeeds([]uint64{4, 9}, []bool{true, true}); err != nil {
		t.Fatal(err)
	}
	if got, want := text(never.State(1)), text(fresh(9)); got != want {
		t.Fatalf("a never-reset batch seeded by list deals\n%s\nwant\n%s", got, want)
	}
}

// TestClosedBatchRefuses: a batch used after Close says so, rather than
// leave its buffers as they were without a word.
func TestClosedBatchRefuses(t *testing.T) {
	for _, workers := range []int{1, 2, -1} {
		// -1: two workers and Presample, whose SampleLegal only copies.
		opts := env.BatchOptions{N: 4, Workers: workers}
		if workers < 0 {
			opts.Workers, opts.Presample = 2, true
		}
		b, err := env.NewBatch(env.MustRules(env.Options{Suits: 1}), opts)
		if err != nil {
			t.Fatal(err)
		}
		b.Reset(1)
		snap, err := b.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		b.Close()
		actions := make([]env.Action, 4)
		for name, err := range map[string]error{
			"Step":       b.Step(actions),
			"StepSome":   b.StepSome(actions, []int32{1}),
			"ResetGames": b.ResetGames(make([]bool, 4)),
			"ResetSeeds": b.ResetSeeds(make([]uint64, 4), make([]bool, 4)),
			"Restore":    b.Restore(snap),
		} {
			if !errors.Is(err, env.ErrClosed) {
				t.Errorf("%d workers: %s after Close: %v, want ErrClosed", workers, name, err)
			}
		}
		for name, f := range map[string]func(){"Reset": func() { b.Reset(2) }, "SampleLegal": func() { b.SampleLegal(actions) }} {
			func() {
				defer func() {
					if recover() == nil {
						t.Errorf("%d workers: %s after Close did not panic", workers, name)
					}
				}()
				f()
			}()
		}
		b.Close() // a second Close is harmless
	}
}

// TestBatchActionsPastTheLastId: an action id past the last one
// (NumActions or more, as a buggy policy's argmax over a padded output
// might give) is illegal under every policy. The mask rows lie end to end
// in one buffer, so such an id must not be read from the next game's row
// (where it can be 1) nor past the buffer's end.
func TestBatchActionsPastTheLastId(t *testing.T) {
	r := env.MustRules(env.Options{Suits: 1})
	for _, policy := range []env.IllegalPolicy{env.RefuseIllegal, env.NoopIllegal, env.LoseIllegal} {
		b := newBatch(t, r, env.BatchOptions{N: 2, Illegal: policy})
		b.Reset(1)
		before := []env.State{b.State(0), b.State(1)}
		// Game 0's id lands on game 1's first legal action; game 1's
		// just past the buffer.
		actions := []env.Action{env.NumActions + env.NthMasked(b.Masks[env.NumActions:], 0), env.NumActions}
		err := func() (err error) {
			defer func() {
				if v := recover(); v != nil {
					err = fmt.Errorf("panic: %v", v)
				}
			}()
			return b.Step(actions)
		}()
		if policy == env.RefuseIllegal {
			if err == nil || !strings.Contains(err.Error(), "game 0") {
				t.Errorf("%v: Step(%v) = %v; want it refused, naming game 0", policy, actions, err)
			}
		} else if err != nil {
			t.Errorf("%v: Step(%v) = %v; want both flagged illegal", policy, actions, err)
		}
		for i := range 2 {
			// Refused: nothing changes. Noop and lose: flagged, and no
			// move played (the score pays no move's cost).
			s := b.State(i)
			if policy == env.RefuseIllegal && s != before[i] || policy != env.RefuseIllegal && (!b.Illegal[i] || s.Score() != before[i].Score()) {
				t.Errorf("%v: game %d, action %v: illegal %v, score %d -> %d", policy, i, actions[i], b.Illegal[i], before[i].Score(), s.Score())
			}
		}
	}
}

// TestEpisodeReturnDoesNotDrift: a long episode's return is its rewards
// summed without drift. 300,000 illegal no-ops at a penalty of 0.1 return
// -30,000; summed in float32 the batch reported -29,920.4 (and stopped
// moving altogether at 2^24 for a penalty of 1).
func TestEpisodeReturnDoesNotDrift(t *testing.T) {
	const steps = 300_000
	r := env.MustRules(env.Options{Suits: 1, MaxSteps: steps})
	b := newBatch(t, r, env.BatchOptions{N: 1, Illegal: env.NoopIllegal, IllegalPenalty: 0.1})
	b.Reset(1)
	illegal := env.Action(slices.Index(b.Masks, 0)) // the same every step: a no-op changes nothing
	actions := []env.Action{illegal}
	var sum float64
	for k := range steps {
		if err := b.Step(actions); err != nil {
			t.Fatal(err)
		}
		sum += float64(b.Rewards[0])
		if b.Truncated[0] != (k == steps-1) {
			t.Fatalf("step %d: truncated %v", k+1, b.Truncated[0])
		}
	}
	if got, want := b.EpisodeReturn[0], float32(sum); got != want || math.Abs(sum+0.1*steps) > 0.01 {
		t.Errorf("episode return %v, want %v (the rewards' sum %v)", got, want, sum)
	}
}

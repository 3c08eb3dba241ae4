package envtest

import (
	"bytes"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/spiderenv/spider/env"
	"github.com/spiderenv/spider/internal/rng"
)

// Policy picks an action for the game in s, given its mask (a copy, which
// it may change). It must return a legal action: one outside the action
// space or masked out fails the check, naming the policy, the seed and
// the step. s is the whole game, hidden cards included, and a copy too.
type Policy func(s *env.State, mask []uint8) env.Action

// RandomPolicy returns a policy that picks uniformly among the legal
// actions, from its own seeded generator. The policy panics on a mask with
// no legal action, which Check never passes (a game over is not played).
func RandomPolicy(seed uint64) Policy {
	g := rng.New(seed)
	var legal []env.Action
	return func(s *env.State, mask []uint8) env.Action {
		legal = env.AppendMasked(legal[:0], mask)
		return legal[g.IntN(len(legal))]
	}
}

// Configurations returns every rule set and suit count with the given step
// limit: the configurations a conformance run covers. With encodings set,
// each comes in both observation encodings, and the classic float32 ones
// with the simulated clock on (1.5 s an action), so that scoring path is
// checked too; and a few more take the other options to values the rest
// leave alone: columns of 1 and 6 face-up slots (so that long runs
// overflow them), the clock on a compact observation, shaping under
// cardems, a step limit of 1, and any option of env.Options that none of
// these sets to its example value (OptionField.Example) set to it alone.
// It panics if maxSteps is a step limit env.Options refuses.
func Configurations(maxSteps int, encodings bool) []env.Rules {
	var out []env.Rules
	for _, rs := range []env.RuleSet{env.Classic, env.Cardems} {
		for _, suits := range []int{1, 2, 4} {
			o := env.Options{RuleSet: rs, Suits: suits, MaxSteps: maxSteps}
			if !encodings {
				out = append(out, env.MustRules(o))
				continue
			}
			for _, enc := range []env.Encoding{env.Compact, env.Float32} {
				o.Encoding, o.TimePerActionMs = enc, 0
				if rs == env.Classic && enc == env.Float32 {
					o.TimePerActionMs = 1500
				}
				out = append(out, env.MustRules(o))
			}
		}
	}
	if encodings {
		for _, o := range []env.Options{
			{Suits: 2, MaxSteps: maxSteps, FaceUpSlots: 1},
			{RuleSet: env.Cardems, Suits: 4, MaxSteps: maxSteps, FaceUpSlots: 6, Encoding: env.Float32},
			{Suits: 1, MaxSteps: maxSteps, TimePerActionMs: 700},
			{RuleSet: env.Cardems, Suits: 2, MaxSteps: maxSteps, Encoding: env.Float32, Shaping: env.Progress, ShapingGamma: 0.99},
			{Suits: 4, MaxSteps: 1},
		} {
			out = append(out, env.MustRules(o))
		}
		// Each option at its example value, alone where no configuration
		// above has it there, so that an option added to env.Options is
		// played by the conformance checker before any line here names it.
		for _, f := range env.OptionFields() {
			if slices.ContainsFunc(out, func(r env.Rules) bool { return f.Text(r.Options()) == f.Example }) {
				continue
			}
			o := env.Options{MaxSteps: maxSteps}
			if err := f.Set(&o, f.Example); err != nil {
				panic(err)
			}
			out = append(out, env.MustRules(o))
		}
	}
	return out
}

// Config says how hard to check.
type Config struct {
	Games int    // games to play
	Seed  uint64 // game g is dealt from Seed+g
	// SweepEvery tries every one of the 1081 ids with Step at every step of
	// every SweepEvery-th game (0: never); the mask must match exactly.
	SweepEvery int
}

// Stats sums up what the checker saw.
type Stats struct {
	Games, Steps, Won, Lost, Truncated int
	MaxFaceUp                          int // most face-up cards seen in one column
	// Unfinished counts the games of rules without a step limit that were
	// still going after NoLimitSteps steps, where Check moved on.
	Unfinished int
}

// NoLimitSteps is the most steps Check plays of one game under rules
// without a step limit (a negative MaxSteps): a random policy can move
// cards back and forth for ever, and a check must end.
const NoLimitSteps = 20000

// Check plays cfg.Games games under r with policy and fails t at the first
// broken invariant, or at an action the policy chose that is not legal,
// naming the game's seed and step. It panics on zero Rules, as env.New
// does.
func Check(t testing.TB, r env.Rules, policy Policy, cfg Config) Stats {
	t.Helper()
	var st Stats
	for g := range cfg.Games {
		seed := cfg.Seed + uint64(g)
		sweep := cfg.SweepEvery > 0 && g%cfg.SweepEvery == 0
		if err := checkGame(r, policy, seed, sweep, &st); err != nil {
			t.Fatalf("%v, seed %d: %v", r, seed, err)
		}
	}
	return st
}

func checkGame(r env.Rules, policy Policy, seed uint64, sweep bool, st *Stats) error {
	e := env.New(r)
	obs, info := e.Reset(seed)
	st.Games++
	if err := checkEnvPosition(e, obs, info, seed, true); err != nil {
		return fmt.Errorf("after reset: %w", err)
	}
	sum := 0.0
	var mask []uint8
	for step := 0; ; step++ {
		if r.MaxSteps() < 0 && step == NoLimitSteps {
			st.Unfinished++
			return nil
		}
		s := e.State()
		if sweep {
			if err := sweepActions(&s, e.Mask()); err != nil {
				return fmt.Errorf("step %d: %w", step, err)
			}
		}
		// The policy gets copies: one that writes its mask or position
		// must be caught as the policy's fault, not the environment's.
		mask = append(mask[:0], e.Mask()...)
		a := policy(&s, mask)
		if int(a) >= env.NumActions {
			return fmt.Errorf("step %d: the policy chose %d, outside the action space (0 to %d)", step, a, env.NumActions-1)
		}
		if e.Mask()[a] == 0 {
			return fmt.Errorf("step %d: the policy chose %v, which the mask says is illegal", step, a)
		}
		before := e.State()
		obs, reward, term, trunc, info, err := e.Step(a)
		if err != nil {
			return fmt.Errorf("step %d: Step(%v) refused a masked action: %v", step, a, err)
		}
		st.Steps++
		after := e.State()
		// The reward is the score's change and the shaping term, which
		// the environment adds in float32.
		unshaped := reward - float64(shapingTerm(r, &before, &after))
		sum += unshaped
		if err := checkReward(&before, &after, a, unshaped); err != nil {
			return fmt.Errorf("step %d (%v): %w", step, a, err)
		}
		full := step%fullEvery == 0 || term || trunc
		if err := checkEnvPosition(e, obs, info, seed+uint64(step), full); err != nil {
			return fmt.Errorf("step %d (%v): %w", step, a, err)
		}
		if err := checkUndo(e, a, &before, &after); err != nil {
			return fmt.Errorf("step %d (%v): %w", step, a, err)
		}
		if term != after.Terminated() || trunc != after.Truncated() || (term && trunc) {
			return fmt.Errorf("step %d: terminated %v truncated %v, state says %v %v", step, term, trunc, after.Terminated(), after.Truncated())
		}
		if max := r.MaxSteps(); max >= 0 && !term && (after.Steps() >= max) != trunc {
			return fmt.Errorf("step %d: truncated %v at %d of %d steps", step, trunc, after.Steps(), max)
		}
		for c := range env.NumColumns {
			st.MaxFaceUp = max(st.MaxFaceUp, after.FaceUpCount(c))
		}
		if term || trunc {
			switch {
			case after.Status() == env.Won:
				st.Won++
			case after.Status() == env.Lost:
				st.Lost++
			default:
				st.Truncated++
			}
			if got, want := sum, float64(after.Score()-env.StartScore); after.Score() > 0 && got != want {
				return fmt.Errorf("rewards sum to %v, score moved by %v", got, want)
			}
			if _, _, _, _, _, err := e.Step(a); err != env.ErrEpisodeOver {
				return fmt.Errorf("a step after the end returned %v, want ErrEpisodeOver", err)
			}
			return nil
		}
	}
}

// checkReward recomputes the step's score change from the rule sheets.
func checkReward(before, after *env.State, a env.Action, reward float64) error {
	if float64(after.Score()-before.Score()) != reward {
		return fmt.Errorf("reward %v, score went %d -> %d", reward, before.Score(), after.Score())
	}
	r := after.Rules()
	cost, gain := 1, env.RunBonus*(after.Runs()-before.Runs())
	if r.RuleSet() == env.Classic {
		tick := r.TimePerAction()
		cost += int(after.Elapsed()/(2*time.Second) - before.Elapsed()/(2*time.Second))
		if after.Elapsed()-before.Elapsed() != tick {
			return fmt.Errorf("game time advanced %v, want %v", after.Elapsed()-before.Elapsed(), tick)
		}
		if after.Status() == env.Won {
			gain += env.WinBonus
		}
	}
	// Costs never take the score below zero; bonuses add after.
	if got := max(0, before.Score()-cost) + gain; got != after.Score() {
		return fmt.Errorf("score %d -> %d, the rules give %d", before.Score(), after.Score(), got)
	}
	if after.Steps() != before.Steps()+1 {
		return fmt.Errorf("moves %d -> %d", before.Steps(), after.Steps())
	}
	if a == env.Deal && after.StockLeft() >= before.StockLeft() {
		return fmt.Errorf("deal left the stock at %d", after.StockLeft())
	}
	return nil
}

// fullEvery is how often (in steps) checkPosition decodes both encodings
// in full and compares renderings; the cheaper checks run at every step.
const fullEvery = 8

// checkEnvPosition checks the Env's position, mask, observation and info.
func checkEnvPosition(e *env.Env, obs env.Obs, info env.Info, seed uint64, full bool) error {
	s := e.State()
	if err := checkPosition(&s, obs.Compact, obs.Float32, e.Mask(), seed, full); err != nil {
		return err
	}
	want := env.Info{
		Score: s.Score(), Runs: s.Runs(), FaceDown: s.TotalFaceDown(), Moves: s.Steps(),
		Legal: s.NumLegal(), StockLeft: s.StockLeft(), Won: s.Status() == env.Won, Status: s.Status(),
	}
	if info != want || info != e.Info() {
		return fmt.Errorf("info %+v, want %+v", info, want)
	}
	return nil
}

// checkPosition checks the state's invariants, that mask is exactly its
// legal actions, that the observation (u8 or f32, by the encoding; the
// other nil) is the state's, and that resampling the hidden cards changes
// none of what a player sees. With full set it also decodes both encodings
// field by field and compares the renderings of the game and its twin.
func checkPosition(s *env.State, obsU8 []uint8, obsF32 []float32, mask []uint8, seed uint64, full bool) error {
	if err := s.Validate(); err != nil {
		return err
	}
	r := s.Rules()
	n := 0
	for a, ok := range mask {
		if ok > 1 {
			return fmt.Errorf("mask[%d] = %d", a, ok)
		}
		n += int(ok)
		if (ok == 1) != s.Legal(env.Action(a)) {
			return fmt.Errorf("mask[%v] = %d but Legal says %v", env.Action(a), ok, s.Legal(env.Action(a)))
		}
	}
	if n != s.NumLegal() {
		return fmt.Errorf("mask has %d legal actions, NumLegal %d", n, s.NumLegal())
	}
	if (n == 0) != s.Over() {
		return fmt.Errorf("%d legal actions but over=%v", n, s.Over())
	}
	u8 := s.ObserveCompact(make([]uint8, r.CompactLen()))
	if !bytes.Equal(obsU8, u8) && r.Encoding() == env.Compact || obsU8 != nil && r.Encoding() != env.Compact {
		return fmt.Errorf("compact observation differs from the state's")
	}
	var f32 []float32
	if full || r.Encoding() == env.Float32 {
		f32 = s.ObserveFloat32(make([]float32, r.Float32Len()))
		if !slices.Equal(obsF32, f32) && r.Encoding() == env.Float32 || obsF32 != nil && r.Encoding() != env.Float32 {
			return fmt.Errorf("float32 observation differs from the state's")
		}
	}
	if full {
		if err := CheckObservation(s, u8, f32); err != nil {
			return err
		}
	}
	// The hidden cards dealt anew: a player sees the same game.
	twin := s.Resample(seed)
	if err := twin.Validate(); err != nil {
		return fmt.Errorf("resampled twin: %w", err)
	}
	if !bytes.Equal(twin.ObserveCompact(make([]uint8, r.CompactLen())), u8) {
		return fmt.Errorf("compact observation reveals a hidden card")
	}
	if full && !slices.Equal(twin.ObserveFloat32(make([]float32, r.Float32Len())), f32) {
		return fmt.Errorf("float32 observation reveals a hidden card")
	}
	if full && twin.Render() != s.Render() {
		return fmt.Errorf("rendering reveals a hidden card")
	}
	tm := make([]uint8, env.NumActions)
	twin.Mask(tm)
	if !bytes.Equal(tm, mask) {
		return fmt.Errorf("legal actions depend on hidden cards")
	}
	return nil
}

// CheckObservation decodes both encodings of s's observation and checks
// them against the visible board and the documented layout and bounds.
func CheckObservation(s *env.State, u8 []uint8, f32 []float32) error {
	r := s.Rules()
	slots, f := r.FaceUpSlots(), r.CardFeatures()
	if len(u8) != r.CompactLen() || len(f32) != r.Float32Len() {
		return fmt.Errorf("observation lengths %d, %d; want %d, %d", len(u8), len(f32), r.CompactLen(), r.Float32Len())
	}
	high := make([]uint8, r.CompactLen())
	r.CompactHigh(high)
	for i, v := range u8 {
		if v > high[i] {
			return fmt.Errorf("compact[%d] = %d above its bound %d", i, v, high[i])
		}
	}
	for i, v := range f32 {
		if !(v >= 0 && v <= 1) {
			return fmt.Errorf("float32[%d] = %v outside [0, 1]", i, v)
		}
	}
	for i := range env.ObsSlots {
		if f32[i] != float32(u8[i])/env.HeaderBound(i) {
			return fmt.Errorf("float32[%d] = %v, compact says %d/%v", i, f32[i], u8[i], env.HeaderBound(i))
		}
	}
	var up []env.Card
	for c := range env.NumColumns {
		if int(u8[env.ObsFaceDown+c]) != s.FaceDown(c) || int(u8[env.ObsFaceUp+c]) != s.FaceUpCount(c) {
			return fmt.Errorf("column %d counts %d/%d, board %d/%d", c+1, u8[env.ObsFaceDown+c], u8[env.ObsFaceUp+c], s.FaceDown(c), s.FaceUpCount(c))
		}
		up = s.AppendFaceUp(up[:0], c)
		for i := range slots {
			want := env.NoCard
			if i < len(up) {
				want = up[len(up)-1-i]
			}
			got := env.Card(u8[env.ObsSlots+c*slots+i])
			if got != want {
				return fmt.Errorf("column %d slot %d holds %v, board has %v", c+1, i, got, want)
			}
			cell := f32[env.ObsSlots+(c*slots+i)*f:][:f]
			for k, v := range cell {
				on := want != env.NoCard && (k == int(want.Rank())-1 || (f > env.NumRanks && k == env.NumRanks+int(want.Suit())))
				if (v == 1) != on || (v != 0 && v != 1) {
					return fmt.Errorf("column %d slot %d feature %d = %v for %v", c+1, i, k, v, want)
				}
			}
		}
	}
	if int(u8[env.ObsStock]) != s.StockLeft() || int(u8[env.ObsRuns]) != s.Runs() {
		return fmt.Errorf("stock/runs %d/%d, board %d/%d", u8[env.ObsStock], u8[env.ObsRuns], s.StockLeft(), s.Runs())
	}
	for su := range env.NumSuits {
		if int(u8[env.ObsSuitRuns+su]) != s.SuitRuns(env.Suit(su)) {
			return fmt.Errorf("runs of %v: %d, board %d", env.Suit(su), u8[env.ObsSuitRuns+su], s.SuitRuns(env.Suit(su)))
		}
	}
	return nil
}

// checkUndo undoes the last step and checks the game is exactly as before,
// then replays it and checks it is exactly as after; along the way it
// checks that a clone is independent of its original.
func checkUndo(e *env.Env, a env.Action, before, after *env.State) error {
	clone := e.State()
	if _, _, err := e.Undo(); err != nil {
		return err
	}
	if e.State() != *before {
		return fmt.Errorf("undo did not restore the position exactly")
	}
	if clone != *after {
		return fmt.Errorf("undoing the Env changed a clone")
	}
	if _, _, _, _, _, err := e.Step(a); err != nil {
		return fmt.Errorf("replay after undo: %v", err)
	}
	if e.State() != *after {
		return fmt.Errorf("replay after undo differs")
	}
	return nil
}

// sweepActions tries every id with Step on s: legal ones on a clone, which
// must succeed; illegal ones on s itself, which must fail and change
// nothing. The outcome must be the mask.
func sweepActions(s *env.State, mask []uint8) error {
	orig := *s
	for a := range env.NumActions + 5 {
		act := env.Action(a)
		clone := *s
		_, err := clone.Step(act)
		legal := err == nil
		if legal != (a < env.NumActions && mask[a] == 1) {
			return fmt.Errorf("Step(%v) legal=%v (err %v) but mask says otherwise", act, legal, err)
		}
		if !legal {
			if clone != orig {
				return fmt.Errorf("illegal Step(%v) changed the game", act)
			}
			if _, ok := err.(*env.IllegalActionError); !ok {
				return fmt.Errorf("Step(%v) error %T, want *env.IllegalActionError", act, err)
			}
		}
	}
	if *s != orig {
		return fmt.Errorf("sweep changed the game")
	}
	return nil
}

// CheckBatch steps a batch of games under r with random legal actions
// (Batch.SampleLegal) for the given number of steps and checks every game
// after every step as Check checks a single game: its position, mask and
// observation row, and the per-game arrays. Each game is replayed beside
// the batch (State.Step from its position before the step), and the batch
// must agree with the replay: the game after the step, the reward (with
// the shaping term, if any), the terminated and truncated flags, the
// episode statistics of a game that ended, and the autoreset mode's
// contract for it: under NextStep its terminal row is kept until the next
// step restarts it; under SameStep the new episode is dealt at once and
// the ended game's last observation and score are in the Final buffers;
// under Disabled it accepts nothing until CheckBatch resets it with
// ResetGames. Every new episode must be the deal EpisodeSeed names.
func CheckBatch(t testing.TB, r env.Rules, o env.BatchOptions, seed uint64, steps int) {
	t.Helper()
	b, err := env.NewBatch(r, o)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	b.Reset(seed)
	n, obsN := b.N(), r.ObsLen()
	row := func(i int) ([]uint8, []float32) {
		if b.ObsFloat32 != nil {
			return nil, b.ObsFloat32[i*obsN : (i+1)*obsN]
		}
		return b.ObsCompact[i*obsN : (i+1)*obsN], nil
	}
	finalRow := func(i int) ([]uint8, []float32) {
		if b.FinalObsFloat32 != nil {
			return nil, b.FinalObsFloat32[i*obsN : (i+1)*obsN]
		}
		return b.FinalObsCompact[i*obsN : (i+1)*obsN], nil
	}
	// sameObs reports whether a row (u8 or f32) is the observation of s.
	sameObs := func(s *env.State, u8 []uint8, f32 []float32) bool {
		if r.Encoding() == env.Float32 {
			return slices.Equal(f32, s.ObserveFloat32(make([]float32, r.Float32Len())))
		}
		return bytes.Equal(u8, s.ObserveCompact(make([]uint8, r.CompactLen())))
	}
	episode := make([]int, n)
	returns := make([]float64, n) // as the batch sums them
	pending := make([]bool, n)    // NextStep: ended, restarted by the next step
	ended := make([]bool, n)      // Disabled: ended, to be reset
	before := make([]env.State, n)
	actions := make([]env.Action, n)
	fresh := func(i int) env.State { return env.NewGame(r, env.EpisodeSeed(seed, i, episode[i])) }
	for i := range n {
		if s := b.State(i); s != fresh(i) {
			t.Fatalf("%v: game %d after Reset is not the deal of EpisodeSeed(%d, %d, 0)", r, i, seed, i)
		}
	}
	for step := range steps {
		if slices.Contains(ended, true) {
			if err := b.ResetGames(ended); err != nil {
				t.Fatalf("step %d: ResetGames: %v", step, err)
			}
			for i := range n {
				if ended[i] {
					episode[i]++
					ended[i], returns[i] = false, 0
					if s := b.State(i); s != fresh(i) || b.Rewards[i] != 0 || b.Terminated[i] || b.Truncated[i] {
						t.Fatalf("%v, game %d, step %d: ResetGames did not deal episode %d afresh", r, i, step, episode[i])
					}
				}
			}
		}
		for i := range n {
			before[i] = b.State(i)
		}
		b.SampleLegal(actions)
		if err := b.Step(actions); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		for i := range n {
			fail := func(err error) { t.Helper(); t.Fatalf("%v, %v, game %d, step %d: %v", r, o.Autoreset, i, step, err) }
			s := b.State(i)
			done := b.Terminated[i] || b.Truncated[i]
			mask := b.Masks[i*env.NumActions : (i+1)*env.NumActions]
			u8, f32 := row(i)
			if b.Illegal[i] {
				fail(fmt.Errorf("a legal action was flagged illegal"))
			}
			if pending[i] {
				// NextStep: this step only restarted the game.
				pending[i] = false
				episode[i]++
				returns[i] = 0
				if b.Rewards[i] != 0 || done || s != fresh(i) {
					fail(fmt.Errorf("the restarting step gave reward %v, ended %v, and not the deal of episode %d", b.Rewards[i], done, episode[i]))
				}
			} else {
				after := before[i]
				if _, err := after.Step(actions[i]); err != nil {
					fail(fmt.Errorf("the replay refused %v: %v", actions[i], err))
				}
				term := shapingTerm(r, &before[i], &after)
				if want := float32(after.Score()-before[i].Score()) + term; b.Rewards[i] != want {
					fail(fmt.Errorf("reward %v, want %v", b.Rewards[i], want))
				}
				// The reward is checked above; the rules are checked on the
				// score's change itself (subtracting the term again in
				// float32 is not exact for every gamma).
				if err := checkReward(&before[i], &after, actions[i], float64(after.Score()-before[i].Score())); err != nil {
					fail(err)
				}
				if b.Terminated[i] != after.Terminated() || b.Truncated[i] != after.Truncated() {
					fail(fmt.Errorf("terminated %v truncated %v, the replay %v %v", b.Terminated[i], b.Truncated[i], after.Terminated(), after.Truncated()))
				}
				returns[i] += float64(b.Rewards[i])
				if done {
					if b.EpisodeReturn[i] != float32(returns[i]) || int(b.EpisodeLength[i]) != after.Steps() || b.EpisodeWon[i] != (after.Status() == env.Won) || int(b.EpisodeRuns[i]) != after.Runs() {
						fail(fmt.Errorf("episode statistics %v, %d, %v, %d; want %v, %d, %v, %d", b.EpisodeReturn[i], b.EpisodeLength[i], b.EpisodeWon[i], b.EpisodeRuns[i],
							returns[i], after.Steps(), after.Status() == env.Won, after.Runs()))
					}
				}
				switch {
				case done && o.Autoreset == env.SameStep:
					fu8, ff32 := finalRow(i)
					if !b.HasFinal[i] || !sameObs(&after, fu8, ff32) || int(b.FinalScore[i]) != after.Score() {
						fail(fmt.Errorf("the ended game's final observation or score was not kept"))
					}
					episode[i]++
					returns[i] = 0
					if s != fresh(i) {
						fail(fmt.Errorf("the ended game was not restarted with the deal of episode %d", episode[i]))
					}
				case s != after:
					fail(fmt.Errorf("the game differs from its replay"))
				case b.HasFinal != nil && b.HasFinal[i]:
					fail(fmt.Errorf("a final observation for a game that did not restart"))
				}
				if done && o.Autoreset != env.SameStep {
					if !sameObs(&after, u8, f32) || int(b.Score[i]) != after.Score() || int(b.Moves[i]) != after.Steps() {
						fail(fmt.Errorf("the ended game's row is not its last observation"))
					}
					legal := 0
					if o.Autoreset == env.NextStep {
						pending[i], legal = true, env.NumActions
					} else {
						ended[i] = true
					}
					if int(b.NumLegal[i]) != legal || bytes.Count(mask, []byte{1}) != legal {
						fail(fmt.Errorf("an ended game's mask allows %d actions, want %d", b.NumLegal[i], legal))
					}
					continue
				}
			}
			if err := checkPosition(&s, u8, f32, mask, seed+uint64(step*n+i), step%fullEvery == 0); err != nil {
				fail(err)
			}
			if int(b.NumLegal[i]) != s.NumLegal() || int(b.Score[i]) != s.Score() || int(b.Runs[i]) != s.Runs() || int(b.Moves[i]) != s.Steps() {
				fail(fmt.Errorf("per-game arrays disagree with the game"))
			}
		}
	}
}

// shapingTerm is what a step from before to after earns on top of the
// score's change under r's shaping: ShapingGamma*Phi(after) - Phi(before),
// in float32 as the environment computes it (0 without shaping).
func shapingTerm(r env.Rules, before, after *env.State) float32 {
	return float32(r.ShapingGamma())*r.Potential(after) - r.Potential(before)
}

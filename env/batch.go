package env

import (
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"sync"
	"unsafe"

	"github.com/spiderenv/spider/internal/rng"
)

// Autoreset says what a Batch does with a game that has ended, in the
// meaning Gymnasium 1.x gives its vector environments' autoreset modes.
type Autoreset uint8

const (
	// NextStep resets an ended game on the following Step, which ignores
	// that game's action and gives it reward 0 and no termination. Until
	// then the ended game's observation stays its last one and its mask is
	// all ones (any action is accepted, and ignored). Gymnasium's default,
	// and EnvPool's.
	NextStep Autoreset = iota
	// SameStep resets an ended game within the step that ended it: the
	// buffers hold the new game's first observation and mask, while the
	// ended game's last observation and info go to the Final buffers, with
	// HasFinal set.
	SameStep
	// Disabled leaves an ended game ended: stepping it is an error until
	// ResetGames resets it.
	Disabled
	numAutoresets
)

var autoresetNames = [numAutoresets]string{"next-step", "same-step", "disabled"}

// String returns "next-step", "same-step" or "disabled".
func (a Autoreset) String() string {
	if a >= numAutoresets {
		return fmt.Sprintf("Autoreset(%d)", uint8(a))
	}
	return autoresetNames[a]
}

// ParseAutoreset returns the autoreset mode named s (case-insensitive).
func ParseAutoreset(s string) (Autoreset, error) {
	return parseName[Autoreset](autoresetNames[:], s, "autoreset mode")
}

// IllegalPolicy says what a Batch does with an illegal action.
type IllegalPolicy uint8

const (
	// RefuseIllegal refuses the whole step with an error naming the first
	// game whose action is illegal; nothing changes.
	RefuseIllegal IllegalPolicy = iota
	// NoopIllegal leaves that game as it was, sets its Illegal flag and
	// gives it reward -IllegalPenalty; the step counts towards truncation.
	NoopIllegal
	// LoseIllegal ends that game as terminated (a forfeit), sets its Illegal
	// flag and gives it reward -IllegalPenalty.
	LoseIllegal
	numIllegalPolicies
)

var illegalNames = [numIllegalPolicies]string{"error", "noop", "lose"}

// String returns "error", "noop" or "lose".
func (p IllegalPolicy) String() string {
	if p >= numIllegalPolicies {
		return fmt.Sprintf("IllegalPolicy(%d)", uint8(p))
	}
	return illegalNames[p]
}

// ParseIllegalPolicy returns the illegal-action policy named s.
func ParseIllegalPolicy(s string) (IllegalPolicy, error) {
	return parseName[IllegalPolicy](illegalNames[:], s, "illegal-action policy")
}

// MaxBatch is the largest number of games one Batch holds.
const MaxBatch = 1 << 20

// BatchOptions configure a Batch beyond its Rules.
type BatchOptions struct {
	N              int // games, 1 to MaxBatch
	Workers        int // goroutines stepping shards; 0 means GOMAXPROCS
	Autoreset      Autoreset
	Illegal        IllegalPolicy
	IllegalPenalty float32 // subtracted from the reward of an illegal action (noop and lose)
	// Presample makes every Reset and Step also draw, for each game, the
	// uniform legal action SampleLegal will return, while the game's mask
	// is still in cache; SampleLegal then only copies them. For a caller
	// that calls SampleLegal once after every Reset and Step (the random
	// policy) the actions are the same as without it, only faster; the
	// draws happen whether or not SampleLegal is called.
	Presample bool
}

// BatchBuffers are the flat arrays a Batch writes at every Reset and Step.
// Row i of each belongs to game i. The caller reads them in place, without
// copying; they stay valid (and are overwritten) until the next call.
type BatchBuffers struct {
	ObsCompact []uint8   // N x CompactLen, when the encoding is Compact
	ObsFloat32 []float32 // N x Float32Len, when the encoding is Float32
	Masks      []uint8   // N x NumActions: 1 where the action is legal
	NumLegal   []int32   // legal actions per game (see Autoreset for ended games)
	Rewards    []float32
	Terminated []bool
	Truncated  []bool
	Illegal    []bool // the game's action was illegal (noop and lose policies)
	Score      []int32
	Runs       []uint8 // completed runs of the game now in the slot
	Moves      []int32 // actions taken in the current episode

	// Episode statistics of the games that ended in this step (where
	// Terminated or Truncated is set): return, length, win and completed
	// runs. Other entries are stale.
	EpisodeReturn []float32
	EpisodeLength []int32
	EpisodeWon    []bool
	EpisodeRuns   []uint8

	// SameStep only: HasFinal marks the games that ended and restarted in
	// this step; their ended game's last observation is in the Final
	// buffer's row and its score in FinalScore.
	HasFinal        []bool
	FinalObsCompact []uint8
	FinalObsFloat32 []float32
	FinalScore      []int32
}

// Batch steps N independent games of one configuration together, on a
// fixed pool of worker goroutines that each own a contiguous shard, into
// BatchBuffers. Results do not depend on the number of workers: game i's
// first deal comes from (seed, i) and each later deal from its episode
// number. Step and Reset allocate nothing in steady state. A Batch is not
// safe for concurrent use; Close stops its workers.
type Batch struct {
	BatchBuffers
	rules Rules
	opts  BatchOptions
	obsN  int

	states   []State
	base     []uint64 // game i's seed stream: Mix(seed, i)
	episode  []uint32 // game i's episode number
	pending  []bool   // NextStep: reset on the next Step
	ended    []bool   // Disabled: ended and not reset yet
	epReturn []float32

	policy []rng.Rand // game i's generator for SampleLegal
	chunks []uint32   // chunks of game i's mask row that may hold a 1
	next   []Action   // Presample: the action SampleLegal will return

	actions []Action // the current Step's actions, or SampleLegal's destination
	resetM  []bool   // the current ResetGames mask
	phase   phase
	errs    []error // per worker: first refusal found in its shard

	work []chan phase
	wg   sync.WaitGroup
}

type phase uint8

const (
	phaseCheck phase = iota
	phaseStep
	phaseReset
	phaseResetMasked
	phaseSample
)

// NewBatch returns a Batch of o.N games under r. Call Reset before Step.
func NewBatch(r Rules, o BatchOptions) (*Batch, error) {
	switch {
	case r.suits == 0:
		return nil, fmt.Errorf("env: NewBatch with zero Rules; make them with NewRules")
	case o.N < 1 || o.N > MaxBatch:
		return nil, fmt.Errorf("env: batch size %d outside 1 to %d", o.N, MaxBatch)
	case o.Workers < 0:
		return nil, fmt.Errorf("env: negative worker count %d", o.Workers)
	case o.Autoreset >= numAutoresets:
		return nil, fmt.Errorf("env: unknown autoreset mode %d", o.Autoreset)
	case o.Illegal >= numIllegalPolicies:
		return nil, fmt.Errorf("env: unknown illegal-action policy %d", o.Illegal)
	case !(o.IllegalPenalty >= 0) || math.IsInf(float64(o.IllegalPenalty), 1):
		return nil, fmt.Errorf("env: illegal-action penalty %v must be a finite number, not negative", o.IllegalPenalty)
	}
	if o.Workers == 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	o.Workers = min(o.Workers, o.N)
	n := o.N
	b := &Batch{rules: r, opts: o, obsN: r.ObsLen()}
	bb := &b.BatchBuffers
	if r.encoding == Float32 {
		bb.ObsFloat32 = make([]float32, n*b.obsN)
	} else {
		bb.ObsCompact = make([]uint8, n*b.obsN)
	}
	bb.Masks = make([]uint8, n*NumActions)
	bb.NumLegal = make([]int32, n)
	bb.Rewards = make([]float32, n)
	bb.Terminated = make([]bool, n)
	bb.Truncated = make([]bool, n)
	bb.Illegal = make([]bool, n)
	bb.Score = make([]int32, n)
	bb.Runs = make([]uint8, n)
	bb.Moves = make([]int32, n)
	bb.EpisodeReturn = make([]float32, n)
	bb.EpisodeLength = make([]int32, n)
	bb.EpisodeWon = make([]bool, n)
	bb.EpisodeRuns = make([]uint8, n)
	if o.Autoreset == SameStep {
		bb.HasFinal = make([]bool, n)
		bb.FinalScore = make([]int32, n)
		if r.encoding == Float32 {
			bb.FinalObsFloat32 = make([]float32, n*b.obsN)
		} else {
			bb.FinalObsCompact = make([]uint8, n*b.obsN)
		}
	}
	b.states = make([]State, n)
	b.base = make([]uint64, n)
	b.episode = make([]uint32, n)
	b.pending = make([]bool, n)
	b.ended = make([]bool, n)
	b.epReturn = make([]float32, n)
	b.policy = make([]rng.Rand, n)
	b.chunks = make([]uint32, n)
	if o.Presample {
		b.next = make([]Action, n)
	}
	b.errs = make([]error, o.Workers)
	b.work = make([]chan phase, o.Workers)
	for w := range b.work {
		b.work[w] = make(chan phase)
		go b.worker(w, b.work[w])
	}
	return b, nil
}

// Rules returns the batch's game configuration.
func (b *Batch) Rules() Rules { return b.rules }

// Options returns the batch's options, with the worker count resolved.
func (b *Batch) Options() BatchOptions { return b.opts }

// N returns the number of games.
func (b *Batch) N() int { return b.opts.N }

// Ended reports whether game i has ended and awaits its reset (NextStep's
// next Step, or ResetGames under Disabled), a forfeit included.
func (b *Batch) Ended(i int) bool { return b.pending[i] || b.ended[i] }

// State returns a copy of game i.
func (b *Batch) State(i int) State { return b.states[i] }

// EpisodeSeed returns the deal seed of episode k of game i in a batch reset
// with seed: the same whatever the number of workers, so a whole run is
// reproducible from one seed, and a single Env reset with it replays the
// game.
func EpisodeSeed(seed uint64, i, k int) uint64 {
	return rng.Mix(rng.Mix(seed, uint64(i)), uint64(k))
}

// Close stops the workers. The Batch must not be used afterwards.
func (b *Batch) Close() {
	for _, c := range b.work {
		close(c)
	}
	b.work = nil
}

// Reset starts episode 0 of every game, game i dealt from
// EpisodeSeed(seed, i, 0), and fills every buffer.
func (b *Batch) Reset(seed uint64) {
	for i := range b.base {
		b.base[i] = rng.Mix(seed, uint64(i))
		b.episode[i] = 0
		b.policy[i] = rng.New(rng.Mix(^seed, uint64(i)))
	}
	b.run(phaseReset)
}

// ResetGames resets the games where mask is true to their next episode
// (seeded from their seed stream) and leaves the others' games as they
// are, rewriting only the reset games' rows. Since no game stepped, every
// game's reward, ended and illegal flags (and HasFinal) read zero after it.
// It returns an error, and changes nothing, if mask is not N long or the
// batch was never Reset.
func (b *Batch) ResetGames(mask []bool) error {
	if len(mask) != b.opts.N {
		return fmt.Errorf("env: reset mask of %d entries for %d games", len(mask), b.opts.N)
	}
	if b.states[0].rules.suits == 0 {
		return fmt.Errorf("env: ResetGames before Reset")
	}
	b.resetM = mask
	b.run(phaseResetMasked)
	b.resetM = nil
	b.clearStepFlags()
	return nil
}

// clearStepFlags zeroes what only a step sets: rewards and the ended,
// illegal and final flags.
func (b *Batch) clearStepFlags() {
	clear(b.Rewards)
	clear(b.Terminated)
	clear(b.Truncated)
	clear(b.Illegal)
	clear(b.HasFinal)
}

// Step plays actions[i] in game i, in parallel, and writes the buffers.
// Under RefuseIllegal an illegal action (or, with Disabled autoreset, an
// action for an ended game) refuses the whole step with an error naming the
// first such game, and nothing changes. A Step with the wrong number of
// actions or before Reset is refused the same way.
func (b *Batch) Step(actions []Action) error {
	if len(actions) != b.opts.N {
		return fmt.Errorf("env: %d actions for %d games", len(actions), b.opts.N)
	}
	if b.states[0].rules.suits == 0 {
		return fmt.Errorf("env: Step before Reset")
	}
	b.actions = actions
	if b.opts.Illegal == RefuseIllegal || b.opts.Autoreset == Disabled {
		b.run(phaseCheck)
		for _, err := range b.errs {
			if err != nil {
				return err
			}
		}
	}
	b.run(phaseStep)
	return nil
}

// SampleLegal writes into dst (N long) one uniformly random legal action
// per game, drawn in parallel by the workers from the masks, each game with
// its own generator seeded by Reset: the random policy at full speed, and
// the same actions whatever the number of workers. A game with no legal
// action (ended, under Disabled autoreset) gets Deal, which Step refuses
// until the game is reset. It panics if dst is not N long, which is a
// programming error.
func (b *Batch) SampleLegal(dst []Action) {
	if len(dst) != b.opts.N {
		panic(fmt.Sprintf("env: SampleLegal into %d actions for %d games", len(dst), b.opts.N))
	}
	if b.next != nil {
		copy(dst, b.next)
		return
	}
	b.actions = dst
	b.run(phaseSample)
}

// sample draws game i's random legal action.
func (b *Batch) sample(i int) Action {
	if b.NumLegal[i] == 0 {
		return Deal // an ended game under Disabled: nothing is legal
	}
	return nthInChunks(b.maskRow(i), b.policy[i].IntN(int(b.NumLegal[i])), b.chunks[i])
}

// run has every worker do p on its shard and waits for all of them. A
// single worker's shard runs on the calling goroutine instead, which saves
// the hand-off for small batches.
func (b *Batch) run(p phase) {
	b.phase = p
	if len(b.work) == 1 {
		b.wg.Add(1)
		b.do(0, p)
		return
	}
	b.wg.Add(len(b.work))
	for _, c := range b.work {
		c <- p
	}
	b.wg.Wait()
}

// shard returns worker w's contiguous range of games.
func (b *Batch) shard(w int) (lo, hi int) {
	n, k := b.opts.N, len(b.errs)
	return w * n / k, (w + 1) * n / k
}

func (b *Batch) worker(w int, work <-chan phase) {
	for p := range work {
		b.do(w, p)
	}
}

// do runs phase p over worker w's shard and marks it done.
func (b *Batch) do(w int, p phase) {
	lo, hi := b.shard(w)
	switch p {
	case phaseCheck:
		b.errs[w] = nil
		for i := lo; i < hi; i++ {
			if err := b.check(i); err != nil {
				b.errs[w] = err
				break
			}
		}
	case phaseStep:
		for i := lo; i < hi; i++ {
			if j := i + prefetchAhead; j < hi {
				b.prefetch(j)
			}
			b.step(i)
			if b.next != nil {
				b.next[i] = b.sample(i)
			}
		}
	case phaseReset:
		for i := lo; i < hi; i++ {
			b.reset(i)
			if b.next != nil {
				b.next[i] = b.sample(i)
			}
		}
	case phaseSample:
		for i := lo; i < hi; i++ {
			b.actions[i] = b.sample(i)
		}
	case phaseResetMasked:
		for i := lo; i < hi; i++ {
			if b.resetM[i] {
				b.episode[i]++
				b.reset(i)
				if b.next != nil {
					b.next[i] = b.sample(i)
				}
			}
		}
	}
	b.wg.Done()
}

// prefetchAhead is how many games ahead of the one being stepped the
// workers prefetch: far enough for the misses to land before the game's
// turn, near enough that the lines are still in cache then.
const prefetchAhead = 4

// prefetch requests the cache lines game j's step will touch: its state's
// counters, the two columns of its action, its mask chunks and its
// observation row's counters and columns.
func (b *Batch) prefetch(j int) {
	s := &b.states[j]
	base := uintptr(unsafe.Pointer(s))
	prefetch(base)
	prefetch(base + 64)
	cols := uintptr(unsafe.Pointer(&s.cols[0][0]))
	var obs uintptr
	if b.ObsFloat32 != nil {
		obs = uintptr(unsafe.Pointer(&b.ObsFloat32[j*b.obsN]))
	} else {
		obs = uintptr(unsafe.Pointer(&b.ObsCompact[j*b.obsN]))
	}
	prefetch(obs)
	if a := b.actions[j]; a < Deal && !b.pending[j] {
		src, dst, _ := a.Move()
		slots := uintptr(b.rules.slots)
		per := uintptr(1)
		if b.ObsFloat32 != nil {
			per = uintptr(4 * b.rules.CardFeatures())
		}
		for _, c := range [2]int{src, dst} {
			col := cols + uintptr(c)*maxHeight
			prefetch(col)
			prefetch(col + 64)
			prefetch(obs + (ObsSlots*bytesPer(b.ObsFloat32 != nil) + uintptr(c)*slots*per))
		}
	}
	mask := uintptr(unsafe.Pointer(&b.Masks[j*NumActions]))
	for m := b.chunks[j]; m != 0; m &= m - 1 {
		prefetch(mask + uintptr(bits.TrailingZeros32(m))<<6)
	}
}

func bytesPer(float bool) uintptr {
	if float {
		return 4
	}
	return 1
}

// check finds why game i's action would refuse the step, if it would.
func (b *Batch) check(i int) error {
	a := b.actions[i]
	if b.ended[i] {
		return fmt.Errorf("env: game %d has ended; reset it before stepping it (autoreset disabled)", i)
	}
	if b.pending[i] || b.opts.Illegal != RefuseIllegal || b.legal(i, a) {
		return nil
	}
	// The reason is only wanted now, so it is computed only now.
	return fmt.Errorf("env: game %d: %w", i, b.states[i].Check(a))
}

// legal reports whether a is legal in game i, from its mask row: the mask
// is exactly the legal set (the conformance tests prove it), and one byte
// is cheaper to read than the game's counters.
func (b *Batch) legal(i int, a Action) bool {
	return a < NumActions && b.Masks[i*NumActions+int(a)] == 1
}

// rows of game i in the observation and mask buffers.
func (b *Batch) obsRow(i int) ([]uint8, []float32) {
	lo, hi := i*b.obsN, (i+1)*b.obsN
	if b.ObsFloat32 != nil {
		return nil, b.ObsFloat32[lo:hi]
	}
	return b.ObsCompact[lo:hi], nil
}

func (b *Batch) maskRow(i int) []uint8 { return b.Masks[i*NumActions : (i+1)*NumActions] }

// reset deals episode b.episode[i] of game i and writes its rows afresh.
func (b *Batch) reset(i int) {
	s := &b.states[i]
	*s = NewGame(b.rules, rng.Mix(b.base[i], uint64(b.episode[i])))
	u8, f32 := b.obsRow(i)
	s.Observe(u8, f32)
	n, chunks := s.writeMask(b.maskRow(i), b.chunks[i])
	b.NumLegal[i], b.chunks[i] = int32(n), chunks
	b.pending[i], b.ended[i] = false, false
	b.epReturn[i] = 0
	b.Rewards[i] = 0
	b.Terminated[i], b.Truncated[i], b.Illegal[i] = false, false, false
	if b.HasFinal != nil {
		b.HasFinal[i] = false
	}
	b.Score[i], b.Runs[i], b.Moves[i] = s.score, s.runs, s.steps
}

// step plays game i's action (checked already under RefuseIllegal).
func (b *Batch) step(i int) {
	if b.pending[i] {
		b.episode[i]++
		b.reset(i)
		return
	}
	s := &b.states[i]
	a := b.actions[i]
	if b.HasFinal != nil {
		b.HasFinal[i] = false
	}
	b.Illegal[i] = false
	before := s.score
	var reward float32
	forfeit := false
	if b.opts.Illegal != RefuseIllegal && !b.legal(i, a) {
		// Under RefuseIllegal the check phase has passed every action.
		b.Illegal[i] = true
		reward = -b.opts.IllegalPenalty
		s.steps++ // an illegal try still uses up a step of the limit
		forfeit = b.opts.Illegal == LoseIllegal
	} else {
		u, n, chunks := s.applyMask(a, b.maskRow(i), b.chunks[i])
		b.NumLegal[i], b.chunks[i] = int32(n), chunks
		reward = float32(s.score - before)
		u8, f32 := b.obsRow(i)
		s.Update(u8, f32, u.Columns())
	}
	b.Rewards[i] = reward
	b.epReturn[i] += reward
	term := s.Terminated() || forfeit
	trunc := !term && s.Truncated()
	b.Terminated[i], b.Truncated[i] = term, trunc
	b.Score[i], b.Runs[i], b.Moves[i] = s.score, s.runs, s.steps
	if !term && !trunc {
		return // after a no-op the position, mask and observation are as they were
	}
	b.EpisodeReturn[i] = b.epReturn[i]
	b.EpisodeLength[i] = s.steps
	b.EpisodeWon[i] = s.status == Won
	b.EpisodeRuns[i] = s.runs
	switch b.opts.Autoreset {
	case NextStep:
		// The next Step accepts and ignores any action for this game, so
		// every id is allowed: a policy sampling from the mask never meets
		// an empty one.
		b.pending[i] = true
		m := b.maskRow(i)
		for k := range m {
			m[k] = 1
		}
		b.NumLegal[i], b.chunks[i] = NumActions, AllChunks
	case Disabled:
		// Nothing is accepted until ResetGames, a forfeited game included.
		b.ended[i] = true
		clearChunks(b.maskRow(i), b.chunks[i])
		b.NumLegal[i], b.chunks[i] = 0, 0
	case SameStep:
		lo, hi := i*b.obsN, (i+1)*b.obsN
		if b.ObsFloat32 != nil {
			copy(b.FinalObsFloat32[lo:hi], b.ObsFloat32[lo:hi])
		} else {
			copy(b.FinalObsCompact[lo:hi], b.ObsCompact[lo:hi])
		}
		b.FinalScore[i] = s.score
		illegal := b.Illegal[i]
		b.episode[i]++
		b.reset(i)
		// reset cleared the step's results; the ended game's are the step's.
		b.Rewards[i] = reward
		b.Terminated[i], b.Truncated[i] = term, trunc
		b.Illegal[i] = illegal
		b.HasFinal[i] = true
	}
}

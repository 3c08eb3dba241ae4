package env

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"unsafe"

	"github.com/spiderenv/spider/internal/rng"
)

// Batch steps N independent games of one configuration together, on a
// fixed pool of worker goroutines that each own a contiguous shard, into
// BatchBuffers. Results do not depend on the number of workers: game i's
// deals come from the seed stream of seed+i and its episode number (see
// EpisodeSeed). Step and Reset allocate nothing in steady state. A Batch is not
// safe for concurrent use; Close stops its workers. A Batch never closed
// keeps its workers, and through them its games and buffers, until the
// process exits: the garbage collector cannot take it while they wait. The
// zero Batch is a closed one (Step returns ErrClosed, Reset panics): make
// it with NewBatch.
type Batch struct {
	BatchBuffers
	rules Rules
	opts  BatchOptions
	obsN  int

	states   []State
	base     []uint64  // game i's seed stream: Mix(seed+i, 0)
	episode  []uint32  // game i's episode number
	pending  []bool    // NextStep: reset on the next Step
	ended    []bool    // Disabled: ended and not reset yet
	epReturn []float64 // summed in float64: a float32 sum drifts over long episodes

	policy []rng.Rand // game i's generator for SampleLegal
	chunks []uint32   // chunks of game i's mask row that may hold a 1
	next   []Action   // Presample: the action SampleLegal will return

	actions []Action // the current Step's actions, or SampleLegal's destination
	ids     []int32  // StepSome's games; nil when every game steps
	resetM  []bool   // the current ResetGames mask; nil resets every game
	phase   phase
	errs    []error // per worker: first refusal found in its shard
	panics  []any   // per worker: what its last phase panicked with (run re-panics)

	work   []chan phase
	wg     sync.WaitGroup
	exited sync.WaitGroup // the workers, until they have exited
}

// NewBatch returns a Batch of o.N games under r. Call Reset before Step.
func NewBatch(r Rules, o BatchOptions) (*Batch, error) { return newBatch(r, o, nil) }

// NewBatchIn returns a Batch of o.N games under r whose BatchBuffers live
// in mem, laid out as BatchLayout(r, o) says: a block another process
// maps too (the server's shared memory) sees every Reset and Step without
// a copy. mem must hold BatchLayout(r, o).Size bytes and start at an
// address that is a multiple of 8 (a mapping's, or any Go allocation's of
// 8 bytes or more, is); NewBatchIn zeroes them. The Batch updates its
// buffers in place (see BatchBuffers), so nobody else may write to mem:
// the server shares it read-only (a sealed memfd).
func NewBatchIn(r Rules, o BatchOptions, mem []byte) (*Batch, error) {
	switch {
	case mem == nil:
		return nil, fmt.Errorf("env: NewBatchIn with no memory")
	case len(mem) > 0 && uintptr(unsafe.Pointer(&mem[0]))%blockAlign != 0:
		// Its float32 and int32 arrays would be misaligned: slower on
		// amd64, a fault on some processors, and a checkptr panic under
		// -race.
		return nil, fmt.Errorf("env: NewBatchIn's block starts at %#x, not a multiple of %d", uintptr(unsafe.Pointer(&mem[0])), blockAlign)
	}
	return newBatch(r, o, mem)
}

// blockAlign is the alignment NewBatchIn needs of its block: that of the
// widest element of a buffer, with room to spare.
const blockAlign = 8

func newBatch(r Rules, o BatchOptions, mem []byte) (*Batch, error) {
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
	if mem != nil {
		need := BatchLayout(r, o).Size
		if len(mem) < need {
			return nil, fmt.Errorf("env: a block of %d bytes for buffers that need %d", len(mem), need)
		}
		clear(mem[:need])
	}
	b.BatchBuffers = newBuffers(r, o, mem)
	b.states = make([]State, n)
	b.base = make([]uint64, n)
	b.episode = make([]uint32, n)
	b.pending = make([]bool, n)
	b.ended = make([]bool, n)
	b.epReturn = make([]float64, n)
	b.policy = make([]rng.Rand, n)
	b.chunks = make([]uint32, n)
	if o.Presample {
		b.next = make([]Action, n)
		for i := range b.next { // until Reset, as SampleLegal says
			b.next[i] = Deal
		}
	}
	b.errs = make([]error, o.Workers)
	b.panics = make([]any, o.Workers)
	b.work = make([]chan phase, o.Workers)
	for w := range b.work {
		b.work[w] = make(chan phase)
		b.exited.Add(1)
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

// State returns a copy of game i, its hidden cards included, as Env.State
// does: a search on it peeks. After a forfeit (LoseIllegal) under
// NextStep or Disabled autoreset it is the position the illegal action
// was tried in, the try counted in its steps, which the rules may still
// call playing (or truncated, at the step limit): the forfeit is the
// batch's, and Ended and Terminated say so (SameStep has dealt the next
// game).
func (b *Batch) State(i int) State { return b.states[i] }

// EpisodeSeed returns the deal seed of episode k of game i in a batch reset
// with seed: the same whatever the number of workers, so a whole run is
// reproducible from one seed, and Env.Reset(EpisodeSeed(seed, i, k))
// replays the game. Game i plays the episodes of a batch of one reset with
// seed+i (wrapping at 2^64), the convention of Gymnasium's vector envs,
// which seed env i with seed+i: a batch of N and N batches of one seeded
// that way deal alike. A batch's seed is not a deal seed: Env.Reset(seed)
// and NewGame deal the game of seed itself (the deal `spider eval --seeds`
// plays), which is not game 0's first deal of a batch reset with seed.
func EpisodeSeed(seed uint64, i, k int) uint64 {
	return rng.Mix(stream(seed+uint64(i)), uint64(k))
}

// stream returns the base of the episode seeds of a game seeded with seed.
func stream(seed uint64) uint64 { return rng.Mix(seed, 0) }

// seedGame makes seed game i's stream, from its first episode.
func (b *Batch) seedGame(i int, seed uint64) {
	b.base[i] = stream(seed)
	b.episode[i] = 0
	b.policy[i] = rng.New(rng.Mix(^seed, 0))
}

// Close stops the workers and waits until they have exited. The Batch
// must not be used afterwards: Step, StepSome, ResetGames,
// ResetGamesSeeded, ResetSeeds and Restore return ErrClosed, and Reset and
// SampleLegal panic, rather than leave the buffers as they were without a
// word.
func (b *Batch) Close() {
	for _, c := range b.work {
		close(c)
	}
	b.work = nil
	// Once Close returns no worker holds the Batch, so a caller that lets
	// go of it can have it collected at once (the server does, to stay
	// within its memory limit).
	b.exited.Wait()
}

// ErrClosed is returned by a Batch used after Close.
var ErrClosed = errors.New("env: the batch is closed")

// Reset starts episode 0 of every game, game i dealt from
// EpisodeSeed(seed, i, 0), and fills every buffer. It panics on a closed
// Batch.
func (b *Batch) Reset(seed uint64) {
	for i := range b.base {
		b.seedGame(i, seed+uint64(i))
	}
	b.run(phaseReset)
}

// ResetSeeds resets every game: game i where seeded[i] starts the episodes
// of seeds[i] afresh (the deals of a batch of one Reset with seeds[i]), the
// others go on to their next episode, as ResetGames would take them. This
// is Gymnasium's reset with a list of seeds, None meaning no seed. It
// returns an error, and changes nothing, if a slice is not N long, or if a
// game has no seed and the batch was never Reset (it has no stream yet).
func (b *Batch) ResetSeeds(seeds []uint64, seeded []bool) error {
	n := b.opts.N
	if b.work == nil {
		return ErrClosed
	}
	if len(seeds) != n || len(seeded) != n {
		return fmt.Errorf("env: %d seeds and %d seeded flags for %d games", len(seeds), len(seeded), n)
	}
	if b.states[0].rules.suits == 0 {
		if slices.Contains(seeded, false) {
			return fmt.Errorf("env: a game without a seed before the first Reset")
		}
		for i, seed := range seeds {
			b.seedGame(i, seed)
		}
		b.run(phaseReset)
		return nil
	}
	// ResetGamesSeeded with every game in the mask, without making one:
	// a reset allocates nothing.
	b.resetGamesSeeded(nil, seeds, seeded)
	return nil
}

// ResetGamesSeeded resets the games where mask is true as ResetSeeds would
// (game i where seeded[i] starts the episodes of seeds[i] afresh, the others
// go on to their next episode) and leaves the other games as ResetGames
// does; the seeds of games outside the mask are not read. This is
// Gymnasium's vector reset with seeds and options["reset_mask"]. It returns
// an error, and changes nothing, if a slice is not N long or the batch was
// never Reset.
func (b *Batch) ResetGamesSeeded(mask []bool, seeds []uint64, seeded []bool) error {
	n := b.opts.N
	if b.work == nil {
		return ErrClosed
	}
	if len(mask) != n || len(seeds) != n || len(seeded) != n {
		return fmt.Errorf("env: reset mask of %d entries, %d seeds and %d seeded flags for %d games", len(mask), len(seeds), len(seeded), n)
	}
	if b.states[0].rules.suits == 0 {
		return calledAs{"env: ResetGamesSeeded before Reset", ErrNotReset}
	}
	b.resetGamesSeeded(mask, seeds, seeded)
	return nil
}

// resetGamesSeeded is ResetGamesSeeded after its checks; a nil mask
// resets every game.
func (b *Batch) resetGamesSeeded(mask []bool, seeds []uint64, seeded []bool) {
	for i, s := range seeded {
		if s && (mask == nil || mask[i]) {
			b.seedGame(i, seeds[i])
			// resetGames counts the episode up before dealing: from the
			// wrapped -1 back to 0.
			b.episode[i]--
		}
	}
	b.resetGames(mask)
}

// ResetGames resets the games where mask is true to their next episode
// (seeded from their seed stream) and leaves the others' games as they
// are, rewriting only the reset games' rows. Since no game stepped, every
// game's reward, ended and illegal flags (and HasFinal) read zero after it.
// It returns an error, and changes nothing, if mask is not N long or the
// batch was never Reset.
func (b *Batch) ResetGames(mask []bool) error {
	if b.work == nil {
		return ErrClosed
	}
	if len(mask) != b.opts.N {
		return fmt.Errorf("env: reset mask of %d entries for %d games", len(mask), b.opts.N)
	}
	if b.states[0].rules.suits == 0 {
		return calledAs{"env: ResetGames before Reset", ErrNotReset}
	}
	b.resetGames(mask)
	return nil
}

// resetGames is ResetGames after its checks; a nil mask resets every game.
func (b *Batch) resetGames(mask []bool) {
	b.resetM = mask
	b.run(phaseResetMasked)
	b.resetM = nil
	b.clearStepFlags()
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
// actions or before Reset is refused the same way. The errors are the
// Env's for the same mistakes under errors.Is: an illegal action an
// *IllegalActionError, an ended game's ErrEpisodeOver, a Step before
// Reset ErrNotReset.
func (b *Batch) Step(actions []Action) error {
	if b.work == nil {
		return ErrClosed
	}
	if len(actions) != b.opts.N {
		return fmt.Errorf("env: %d actions for %d games", len(actions), b.opts.N)
	}
	if b.states[0].rules.suits == 0 {
		return ErrNotReset
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

// StepSome plays actions[i] in game i for the games listed in ids only,
// in parallel, and writes those games' rows of the buffers; the other
// games, their rows included, stay exactly as they were (their rewards and
// flags are stale, not zero). actions is N long, as for Step, and only its
// entries at ids are read: a caller stepping the games in turns (EnvPool's
// send/recv, with the policy computing on one part while another steps)
// keeps one slice. ids must be strictly increasing game indices; the
// workers split the list, not the games, so any subset keeps them all
// busy. Refusals are Step's, and nothing changes after one, nor after a
// bad ids list.
func (b *Batch) StepSome(actions []Action, ids []int32) error {
	if b.work == nil {
		return ErrClosed
	}
	if len(actions) != b.opts.N {
		return fmt.Errorf("env: %d actions for %d games", len(actions), b.opts.N)
	}
	if b.states[0].rules.suits == 0 {
		return ErrNotReset
	}
	prev := int32(-1)
	for k, id := range ids {
		if id <= prev || int(id) >= b.opts.N {
			if id < 0 || int(id) >= b.opts.N {
				return fmt.Errorf("env: game id %d (item %d) is outside 0 to %d", id, k, b.opts.N-1)
			}
			return fmt.Errorf("env: game ids must be strictly increasing: item %d is %d after %d", k, id, prev)
		}
		prev = id
	}
	if len(ids) == 0 {
		return nil
	}
	b.ids = ids
	defer func() { b.ids = nil }()
	return b.Step(actions)
}

// SampleLegal writes into dst (N long) one uniformly random legal action
// per game, drawn in parallel by the workers from the masks, each game with
// its own generator seeded by Reset: the random policy at full speed, and
// the same actions whatever the number of workers. A game with no legal
// action (ended, under Disabled autoreset) gets Deal, which Step refuses
// until the game is reset; so does every game of a Batch never reset,
// which Step refuses with ErrNotReset. It panics if dst is not N long, which is a
// programming error, or on a closed Batch.
func (b *Batch) SampleLegal(dst []Action) {
	if len(dst) != b.opts.N {
		panic(fmt.Sprintf("env: SampleLegal into %d actions for %d games", len(dst), b.opts.N))
	}
	if b.next != nil {
		if b.work == nil { // the presampled actions are stale, not an answer
			panic("env: a closed Batch was used")
		}
		copy(dst, b.next)
		return
	}
	b.actions = dst
	b.run(phaseSample)
}

package env

import (
	"fmt"
	"runtime/debug"
)

// phase is the job run hands every worker: one pass over its shard.
type phase uint8

const (
	phaseCheck phase = iota
	phaseStep
	phaseReset
	phaseResetMasked
	phaseSample
)

// run has every worker do p on its shard and waits for all of them. A
// single worker's shard runs on the calling goroutine instead, which saves
// the hand-off for small batches. A panic in a worker's shard is raised
// again here, on the caller's goroutine, as if the caller had stepped the
// game itself: a server recovers it there and closes that connection
// alone, where a panic left on the worker's goroutine would end the
// process and every other connection with it.
func (b *Batch) run(p phase) {
	if b.work == nil {
		panic("env: a closed Batch was used")
	}
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
	for w, v := range b.panics {
		if v != nil {
			// The first is raised; the others are dropped with it, so that
			// a caller that recovers finds the batch usable again.
			clear(b.panics)
			panic(fmt.Sprintf("env: batch worker %d: %v", w, v))
		}
	}
}

// testPhase, when set by a test, runs at the start of each worker's phase:
// a way to make one panic.
var testPhase func(w int, p phase)

// shard returns worker w's contiguous range of games, or of the ids
// StepSome steps.
func (b *Batch) shard(w int) (lo, hi int) {
	n, k := b.opts.N, len(b.errs)
	if b.ids != nil {
		n = len(b.ids)
	}
	return w * n / k, (w + 1) * n / k
}

// worker is worker w's goroutine: it does each phase it receives on its
// shard until the batch closes its channel. A phase that panics is marked
// done with the panic kept for run, and the worker waits for the next.
func (b *Batch) worker(w int, work <-chan phase) {
	defer b.exited.Done()
	for p := range work {
		b.guarded(w, p)
	}
}

// guarded runs do(w, p), keeping a panic in b.panics[w] and marking the
// phase done, which do would not reach.
func (b *Batch) guarded(w int, p phase) {
	defer func() {
		if v := recover(); v != nil {
			b.panics[w] = fmt.Sprintf("%v\n%s", v, debug.Stack())
			b.wg.Done()
		}
	}()
	b.do(w, p)
}

// do runs phase p over worker w's shard and marks it done.
func (b *Batch) do(w int, p phase) {
	if testPhase != nil {
		testPhase(w, p)
	}
	lo, hi := b.shard(w)
	switch p {
	case phaseCheck:
		b.errs[w] = nil
		if b.ids != nil {
			for _, i := range b.ids[lo:hi] {
				if err := b.check(int(i)); err != nil {
					b.errs[w] = err
					break
				}
			}
			break
		}
		for i := lo; i < hi; i++ {
			if err := b.check(i); err != nil {
				b.errs[w] = err
				break
			}
		}
	case phaseStep:
		if b.ids != nil {
			b.stepIDs(b.ids[lo:hi])
			break
		}
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
			if b.resetM == nil || b.resetM[i] {
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

// stepIDs steps the games listed in ids, as phaseStep steps a shard.
func (b *Batch) stepIDs(ids []int32) {
	for k, i := range ids {
		if k+prefetchAhead < len(ids) {
			b.prefetch(int(ids[k+prefetchAhead]))
		}
		b.step(int(i))
		if b.next != nil {
			b.next[i] = b.sample(int(i))
		}
	}
}

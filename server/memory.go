package server

import (
	"context"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"time"
	"unsafe"

	"github.com/spiderenv/spider/env"
	"github.com/spiderenv/spider/internal/bytesize"
	"github.com/spiderenv/spider/internal/rng"
	"github.com/spiderenv/spider/picture"
)

// The server counts, against Config.MaxMemory, every buffer a connection
// holds: a connection's fixed buffers from the moment it is accepted, its
// frame buffer as it grows, and at make its batch (every per-game array
// env.NewBatch allocates, the games' states and the workers), its
// per-game request state and its reply buffer, sized once for the largest
// reply the batch can produce. A connection reserves the bytes before it
// allocates them and gives them back when it drops them or closes, so the
// bytes reserved are at least the live bytes the connections hold; the Go
// memory limit the command line sets from MemoryLimit makes the garbage
// collector keep the dead ones from piling up on top.

// connBytes is what every connection holds before it makes a batch: its
// buffered reader and writer (64 KiB each), its goroutine's stack, its
// state and the small replies of hello and failures. It is reserved when
// the connection is accepted.
const connBytes = 192 << 10

// Overhead is the memory the serving process may need beyond what
// MaxMemory counts: the program itself, the Go runtime and its collector's
// bookkeeping, goroutine stacks above their first pages, and the garbage
// of replaced and closed buffers the collector has not reclaimed yet.
// MemoryLimit gives the collector half of it, so that it runs before the
// garbage takes the process past MaxMemory + Overhead.
const Overhead = 64 << 20

// keepFrame is the size up to which a connection keeps its frame buffer
// between requests. A larger one (a big reset with a list of seeds, or a
// hostile frame of garbage) is dropped once its request is answered, and
// its bytes given back.
func keepFrame(games int) int { return max(64<<10, 16*games+4<<10) }

// bigGarbage is the size from which memory a connection lets go of (a
// frame buffer replaced by a larger one, or dropped; a closed connection's
// batch) is collected at once rather than left to the collector's pacing
// (see giveBack and reserve): collected before another reservation
// could take its bytes while it is still on the heap. A collection costs
// about a millisecond on a small heap of batches and tens on a gigabyte
// (measured: 5 to 58 ms a make beside a batch of 850 MB), so it runs
// only when a reservation needs the bytes.
const bigGarbage = 4 << 20

// freeOSAt is the number of bytes connections must have given back
// (closing, or dropping a large frame) for the server to return the freed
// memory to the operating system right away, rather than whenever the
// runtime's scavenger gets to it; at most an eighth of MaxMemory. A
// variable so tests can change it.
var freeOSAt int64 = 32 << 20

// stateBytes is the size of one game's State, the largest per-game cost of
// a batch after the observations and masks.
const stateBytes = int64(unsafe.Sizeof(env.State{}))

// workerBytes is what one batch worker goroutine holds: its stack, which
// starts at a few KiB and grows with the deepest call it makes, and its
// channel.
const workerBytes = 16 << 10

// BatchBytes returns the bytes env.NewBatch allocates for a batch of o.N
// games under r: the observation rows (twice under same-step autoreset,
// whose final observations have rows of their own), the mask rows, every
// per-game array of env.BatchBuffers, each game's State and bookkeeping,
// and the worker goroutines. The server's --max-memory reserves it before
// a make builds the batch; spider bench checks it against the machine's
// memory. It belongs with env.NewBatch, whose allocations it mirrors; a
// test in this package compares it with what NewBatch really allocates.
func BatchBytes(r env.Rules, o env.BatchOptions) int64 {
	obs := int64(r.ObsLen())
	if r.Encoding() == env.Float32 {
		obs *= 4
	}
	// Rewards, NumLegal, Score, Moves, EpisodeReturn and EpisodeLength
	// (4 bytes each); Terminated, Truncated, Illegal, Runs, EpisodeWon and
	// EpisodeRuns (1 byte each).
	perGame := obs + env.NumActions + 6*4 + 6*1
	if o.Autoreset == env.SameStep {
		perGame += obs + 1 + 4 // FinalObs, HasFinal, FinalScore
	}
	// The State, the seed stream's base, the episode number, the pending
	// and ended flags, the running return, the sampling generator and the
	// mask's chunk bits.
	perGame += stateBytes + 8 + 4 + 1 + 1 + 4 + int64(unsafe.Sizeof(rng.Rand{})) + 4
	if o.Presample {
		perGame += 2
	}
	if o.Legal {
		perGame += 2 * env.NumActions // the legal lists
	}
	workers := o.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, max(o.N, 1))
	return int64(o.N)*perGame + int64(workers)*workerBytes
}

// connGameBytes is what a connection keeps per game beside its batch: the
// step's actions, reset's mask, seeds and seeded flags, and a step's
// env_ids.
const connGameBytes = 2 + 1 + 8 + 1 + 4

// stepReplyFields are the arrays of a step (and reset) reply: the key and
// the bytes each game adds. obs, masks and the same-step fields are sized
// by stepReplyBytes.
var stepReplyFields = []struct {
	key     string
	perGame int64
}{
	{"num_legal", 4}, {"rewards", 4}, {"terminated", 1}, {"truncated", 1}, {"illegal", 1},
	{"score", 4}, {"moves", 4}, {"runs", 1}, {"episode_return", 4}, {"episode_length", 4},
	{"episode_won", 1}, {"episode_runs", 1},
}

// binField is the most a bin field of n bytes under key takes: a fixstr
// key and a bin32 header.
func binField(key string, n int64) int64 { return 1 + int64(len(key)) + 5 + n }

// refField is what a bin field the reply refers to (encoder.binRef) takes
// of the reply buffer: its key and header; its bytes stay in the batch.
func refField(key string) int64 { return binField(key, 0) }

// stepReplyBytes returns the most bytes a step or reset reply of a batch
// takes of the reply buffer: the frame header, the map header, "ok", an
// "id", and each array's key and header. The arrays themselves are
// written from the batch's buffers (and the packed masks), not copied.
func stepReplyBytes(r env.Rules, o env.BatchOptions, bits bool) int64 {
	size := int64(frameHeader+5) + 4 + 3 + 9 // header, "ok": true, "id": int64
	size += refField("obs") + refField("masks")
	for _, f := range stepReplyFields {
		size += refField(f.key)
	}
	if o.Autoreset == env.SameStep {
		size += refField("has_final") + refField("final_obs") + refField("final_score")
	}
	return size
}

// stepFrameBytes returns the size of a step reply's whole frame, arrays
// included: what the socket's send buffer is sized for.
func stepFrameBytes(r env.Rules, o env.BatchOptions, bits bool) int64 {
	n := int64(o.N)
	obs := int64(r.ObsLen())
	if r.Encoding() == env.Float32 {
		obs *= 4
	}
	size := stepReplyBytes(r, o, bits) + n*obs
	if bits {
		size += n * PackedRowBytes
	} else {
		size += n * env.NumActions
	}
	for _, f := range stepReplyFields {
		size += n * f.perGame
	}
	if o.Autoreset == env.SameStep {
		size += n*obs + 5*n
	}
	return size
}

// makeReplyBytes returns the most bytes a make reply for r takes: its two
// observation bounds and room for the other fields and every game option.
func makeReplyBytes(r env.Rules) int64 {
	obs := int64(r.ObsLen())
	if r.Encoding() == env.Float32 {
		obs *= 4
	}
	return binField("obs_low", obs) + binField("obs_high", obs) + 2<<10
}

// rgbReplyBytes is the most a render reply with a picture takes.
const rgbReplyBytes = picture.Size + 256

// reserve takes n bytes of the memory limit, or reports false, taking
// nothing, if they do not fit beside what the connections hold and what
// the hint agents share.
//
// Bytes given back in large pieces may still be on the heap, garbage the
// collector has not reached: when n fits only if they are not counted,
// reserve collects them first, so that the process never holds the new
// bytes and the garbage at once past the limit.
func (s *Server) reserve(n int64) bool {
	if n <= 0 {
		return true
	}
	limit := int64(s.cfg.MaxMemory) - int64(s.cfg.HintShared)
	for {
		used := s.mem.Load()
		if used+n > limit {
			return false
		}
		if g := s.garbage.Load(); g > 0 && used+n+g > limit {
			s.collect(false)
			continue
		}
		if s.mem.CompareAndSwap(used, used+n) {
			return true
		}
	}
}

// collect runs the collector, for the garbage given back before it, and
// takes that garbage off the count; with freeOS it also returns the freed
// memory to the operating system, and runs even when no garbage is
// counted. Collections run one at a time (gcMu): two at once would each
// take the same garbage off the count, which would then fall below what
// is on the heap (below zero, measured), and reserve would let new bytes
// in beside garbage it no longer sees (a peak of 346 MiB at --max-memory
// 256MiB, against 320).
func (s *Server) collect(freeOS bool) {
	s.gcMu.Lock()
	defer s.gcMu.Unlock()
	g := s.garbage.Load()
	switch {
	case freeOS:
		returnToSystem() // collects first
	case g > 0:
		runtime.GC()
	default:
		return
	}
	s.garbage.Add(-g)
}

// roomOutsideHeap makes room for a segment about to be mapped outside Go's
// heap, whose bytes are already reserved. Heap pages the collector has
// freed stay in the process until they are returned to the system; the
// heap reuses them, so a reservation served from the heap needs only the
// collection reserve runs, but a segment is new memory beside them: with
// the freed pages, the garbage not yet collected and the segment at once
// the process went 32 MiB past --max-memory and its overhead (a 64 MiB
// frame refused just before a shared batch). When they would not fit
// beside what is reserved, they are collected and returned first.
func (s *Server) roomOutsideHeap() {
	limit := int64(s.cfg.MaxMemory) - int64(s.cfg.HintShared)
	if s.mem.Load()+s.garbage.Load()+heapFree() > limit {
		s.collect(true)
	}
}

// returnToSystem collects and returns freed memory to the system (a
// variable, so that a test can count the calls).
var returnToSystem = debug.FreeOSMemory

// heapFree returns the bytes of heap pages that are free but not yet
// returned to the system (a variable, so that a test can set them).
var heapFree = func() int64 {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/free:bytes"}}
	metrics.Read(sample)
	if sample[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(sample[0].Value.Uint64())
}

// unreserve gives back n bytes of the memory limit.
func (s *Server) unreserve(n int64) {
	if n > 0 {
		s.mem.Add(-n)
	}
}

// maxMemoryText is MaxMemory as a limit reply names it: its size, and the
// part the hint agents hold for the server's life, if any.
func (s *Server) maxMemoryText() string {
	t := bytesize.Format(int64(s.cfg.MaxMemory))
	if s.cfg.HintShared > 0 {
		t += ", " + bytesize.Format(int64(s.cfg.HintShared)) + " of it held by the hint network"
	}
	return t
}

// Memory returns the bytes of the memory limit the connections hold now.
func (s *Server) Memory() int64 { return s.mem.Load() }

// MemoryLimit returns the Go memory limit (debug.SetMemoryLimit) for a
// process that runs this server: MaxMemory and half the Overhead, so that
// the garbage collector runs before the garbage of closed connections and
// replaced buffers takes the process past MaxMemory + Overhead.
func (s *Server) MemoryLimit() int64 { return MemoryLimitFor(s.cfg.MaxMemory) }

// segmentMaker makes a connection's segment: newSegment, or in a test one
// that fails, since a make that asked for shared memory and could not
// have it is served over the socket and nothing else reaches that path.
var segmentMaker = newSegment

// openSegment makes a shared-memory segment for a batch of n games of
// layout l, counting it (see OwnsMemoryLimit).
func (s *Server) openSegment(l env.Layout, n int) (*segment, error) {
	seg, err := segmentMaker(l, n)
	if err == nil {
		s.heldShm(int64(len(seg.buffers) + len(seg.actions)))
	}
	return seg, err
}

// closeSegment closes a segment of openSegment. Its batch must be closed
// first.
func (s *Server) closeSegment(seg *segment) {
	n := int64(len(seg.buffers) + len(seg.actions))
	seg.close()
	s.heldShm(-n)
}

// heldShm counts n more bytes of shared memory held (fewer if negative)
// and, when the server owns the Go memory limit, sets it to MemoryLimit
// less the segments: the collector does not see them, and would let the
// heap grow to the whole limit on top of them.
func (s *Server) heldShm(n int64) {
	s.shmMu.Lock()
	defer s.shmMu.Unlock()
	s.shm += n
	if s.cfg.OwnsMemoryLimit {
		debug.SetMemoryLimit(s.MemoryLimit() - s.shm)
	}
}

// MemoryLimitFor is MemoryLimit for a server of the given MaxMemory (0 or
// less: the default, as New reads it), for a program that sets it before
// it makes the server (while it loads a hint network, say).
func MemoryLimitFor(maxMemory int) int64 {
	if maxMemory <= 0 {
		maxMemory = DefaultConfig().MaxMemory
	}
	return int64(maxMemory) + Overhead/2
}

// giveBack returns n bytes of the memory limit that a connection held
// and has let go of (it keeps no reference to them). n of bigGarbage or
// more is counted as garbage until a collection: the bytes given back may
// be taken at once by another connection, and until the collector's next
// cycle the process would hold both, so reserve collects first when they
// would not fit beside it. A collection costs tens of milliseconds on a
// heap of a gigabyte, so it is run only then, not at every give-back.
func (s *Server) giveBack(n int64) {
	if n >= bigGarbage {
		s.garbage.Add(n)
	}
	s.unreserve(n)
	s.gaveBack(n)
}

// gaveBack counts n bytes given back, and once they add up to freeOSAt
// (or an eighth of MaxMemory, if less) asks for the memory to be returned
// to the operating system. Without it the heap of closed connections is
// only collected when something allocates again, and stays in the process
// for minutes.
func (s *Server) gaveBack(n int64) {
	at := min(freeOSAt, int64(s.cfg.MaxMemory)/8)
	if s.freed.Add(n) < at {
		return
	}
	s.freed.Store(0)
	select {
	case s.freeOS <- struct{}{}:
	default: // one is pending: it will return these bytes too
	}
}

// requestStarts counts a request being answered, until requestEnds.
func (s *Server) requestStarts() { s.busy.Add(1) }

// requestEnds counts a request answered, and when.
func (s *Server) requestEnds() {
	s.lastDone.Store(sinceStart()) // before busy falls: quiet reads them in the other order
	s.busy.Add(-1)
}

// processStart is what sinceStart counts from.
var processStart = time.Now()

// sinceStart returns the nanoseconds since the process started, on the
// monotonic clock.
func sinceStart() int64 { return int64(time.Since(processStart)) }

// quietFor is how long no request must have been answered before memory
// given back is returned to the system: the forced collection that
// returns it stops every goroutine, for tens of milliseconds on a heap
// just freed of a large batch, and returned at once it held up every
// other connection's steps 10-240 ms each time one closed a large batch.
const quietFor = 100 * time.Millisecond

// returnMemoryLoop returns memory to the system when gaveBack asks, until
// ctx ends. It waits a moment first, so that the goroutines of a closed
// connection's batch workers have let go of it, and a burst of closing
// connections costs one collection; then until the server is quiet
// (quietFor). While connections are answered without such a pause the
// memory stays in the process, where the heap reuses it; what
// --max-memory bounds is kept by reserve and roomOutsideHeap, which
// collect when a reservation needs the room, quiet or not.
func (s *Server) returnMemoryLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.freeOS:
		}
		wait := 50 * time.Millisecond
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
			if s.busy.Load() != 0 {
				wait = quietFor
				continue
			}
			idle := time.Duration(sinceStart() - s.lastDone.Load())
			if idle >= quietFor {
				break
			}
			wait = quietFor - idle
		}
		s.collect(true)
	}
}

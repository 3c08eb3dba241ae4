package env

import (
	"math/bits"
	"unsafe"
)

// prefetchAhead is how many games ahead of the one being stepped the
// workers prefetch: far enough for the misses to land before the game's
// turn, near enough that the lines are still in cache then.
const prefetchAhead = 4

// prefetch requests the cache lines game j's step will touch: its state's
// counters, the two columns of its action, its mask chunks and its
// observation row's counters and columns, and the first two lines of its
// legal list when the batch keeps lists (64 ids, more than most games
// list).
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
	if b.Legal != nil {
		list := uintptr(unsafe.Pointer(&b.Legal[j*NumActions]))
		prefetch(list)
		prefetch(list + 64)
	}
}

// bytesPer is the size of one observation value: 4 for float32, 1 for
// the compact encoding.
func bytesPer(float bool) uintptr {
	if float {
		return 4
	}
	return 1
}

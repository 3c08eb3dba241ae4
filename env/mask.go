package env

import (
	"encoding/binary"
	"math/bits"
	"slices"
)

// Mask writes one byte per action id into dst: 1 exactly when the action is
// legal, else 0. It returns the number of legal actions. Once the episode is
// over (terminated or truncated) every byte is 0. It never allocates.
// It panics if len(dst) < NumActions, which is a programming error.
func (s *State) Mask(dst []uint8) int {
	n, _ := s.writeMask(dst, AllChunks, nil)
	return n
}

// MaskChunks is the number of 64-byte chunks of a mask; a chunk set (bit
// j for bytes 64j to 64j+63) says which chunks may hold a 1.
const MaskChunks = (NumActions + 63) / 64

// AllChunks is the chunk set of a whole mask.
const AllChunks uint32 = 1<<MaskChunks - 1

// mask sets the legal ids in dst, which must be zeroed, and returns their
// number and the set of chunks it wrote; with a list (not nil, at least
// NumActions long) it also writes the ids there, in increasing order: a
// source column's ids come out of its loops in a few ascending runs, put
// in order by sorting that column's handful, and the deal
// (the largest id) comes last. The loss test (anyLegal) is a separate
// early-exit loop; Validate checks that the two agree.
func (s *State) mask(dst []uint8, list []int16) (n int, chunks uint32) {
	deal := s.dealReason() == ""
	if deal {
		dst[Deal] = 1
		chunks |= 1 << (Deal >> 6)
	}
	// byRank[r] is the set of columns whose top card has rank r, and bit r
	// of present says whether that set is non-empty, so each source visits
	// only the ranks its run can land on that some column shows.
	var byRank [NumRanks + 2]uint16
	var present, empty uint16
	for c, t := range s.top {
		if t == NoCard {
			empty |= 1 << c
		} else {
			byRank[t.Rank()] |= 1 << c
			present |= 1 << t.Rank()
		}
	}
	const row = (NumColumns - 1) * MaxMove
	for src := range NumColumns {
		r := int(s.run[src])
		if r == 0 {
			continue
		}
		first := n
		out := dst[src*row : (src+1)*row]
		t := int(s.top[src].Rank())
		// Ranks t+1 .. t+r: the k-th card from the top lands on rank t+k.
		for w := present & (uint16(1)<<(t+r+1) - uint16(1)<<(t+1)); w != 0; w &= w - 1 {
			rank := bits.TrailingZeros16(w)
			k := rank - t
			for m := byRank[rank]; m != 0; m &= m - 1 {
				to := bits.TrailingZeros16(m)
				if to > src {
					to--
				}
				id := to*MaxMove + k - 1
				out[id] = 1
				chunks |= 1 << ((src*row + id) >> 6)
				if list != nil {
					list[n] = int16(src*row + id)
				}
				n++
			}
		}
		for m := empty; m != 0; m &= m - 1 {
			to := bits.TrailingZeros16(m)
			if to > src {
				to--
			}
			lo := to * MaxMove
			cell := out[lo : lo+r]
			for k := range cell {
				cell[k] = 1
			}
			chunks |= 1<<((src*row+lo)>>6) | 1<<((src*row+lo+r-1)>>6)
			if list != nil {
				for k := range r {
					list[n+k] = int16(src*row + lo + k)
				}
			}
			n += r
		}
		if list != nil {
			slices.Sort(list[first:n]) // a handful, in a few ascending runs: an insertion sort
		}
	}
	if deal {
		if list != nil {
			list[n] = int16(Deal)
		}
		n++
	}
	return n, chunks
}

// writeMask is Mask for a dst whose possible 1s lie in the chunk set old
// (as a previous writeMask returned it): it clears only those chunks, so a
// mask that is mostly zeros costs a few cache lines instead of seventeen.
// It returns the number of legal actions and the new chunk set; with a
// list (not nil) it also lists the legal ids there, as mask does.
func (s *State) writeMask(dst []uint8, old uint32, list []int16) (int, uint32) {
	dst = fit(dst, NumActions, "env: mask buffer shorter than NumActions")
	clearChunks(dst, old)
	if s.Over() {
		return 0, 0
	}
	return s.mask(dst, list)
}

// NumLegal returns the number of legal actions (0 once the episode is over).
func (s *State) NumLegal() int {
	var m [NumActions]uint8
	return s.Mask(m[:])
}

// AppendLegal appends the legal actions in id order to dst and returns the
// extended slice.
func (s *State) AppendLegal(dst []Action) []Action {
	var m [NumActions]uint8
	if s.Mask(m[:]) == 0 {
		return dst
	}
	return AppendMasked(dst, m[:])
}

// NthMasked returns the k-th action (counting from 0 in id order) whose
// byte in mask is 1, for drawing a uniform legal action: NthMasked(mask,
// rand.IntN(numLegal)). Mask bytes must be 0 or 1, as Mask writes them
// (with others it may return a wrong id or panic). It
// reads eight bytes at a time and never allocates. It panics if k is
// negative or fewer than k+1 bytes are set, which is a programming error.
func NthMasked(mask []uint8, k int) Action {
	if k < 0 {
		panic("env: NthMasked: a negative index")
	}
	i := 0
	for ; i+8 <= len(mask); i += 8 {
		w := binary.LittleEndian.Uint64(mask[i:])
		c := bits.OnesCount64(w)
		if k >= c {
			k -= c
			continue
		}
		for ; ; i++ {
			if mask[i] == 1 {
				if k == 0 {
					return Action(i)
				}
				k--
			}
		}
	}
	for ; i < len(mask); i++ {
		if mask[i] == 1 {
			if k == 0 {
				return Action(i)
			}
			k--
		}
	}
	panic("env: NthMasked: fewer set bytes than asked for")
}

// clearChunks zeroes the chunks of mask in the set chunks.
func clearChunks(mask []uint8, chunks uint32) {
	if chunks == AllChunks {
		clear(mask)
		return
	}
	for m := chunks; m != 0; m &= m - 1 {
		lo := bits.TrailingZeros32(m) << 6
		clear(mask[lo:min(lo+64, len(mask))])
	}
}

// nthInChunks is NthMasked for a mask whose 1s all lie in the chunk set.
// It counts set bytes eight at a time and, in the word that holds the
// k-th, gathers the eight bytes into eight bits to pick it without a loop
// over bytes.
func nthInChunks(mask []uint8, k int, chunks uint32) Action {
	for m := chunks; m != 0; m &= m - 1 {
		lo := bits.TrailingZeros32(m) << 6
		hi := min(lo+64, len(mask))
		i := lo
		for ; i+8 <= hi; i += 8 {
			w := binary.LittleEndian.Uint64(mask[i:])
			c := bits.OnesCount64(w)
			if k >= c {
				k -= c
				continue
			}
			// Byte j's low bit lands on bit j (mask bytes are 0 or 1).
			b := uint8((w * 0x0102040810204080) >> 56)
			for ; k > 0; k-- {
				b &= b - 1
			}
			return Action(i + bits.TrailingZeros8(b))
		}
		for ; i < hi; i++ {
			if mask[i] == 1 {
				if k == 0 {
					return Action(i)
				}
				k--
			}
		}
	}
	panic("env: nthInChunks: fewer set bytes than asked for")
}

// AppendMasked appends to dst, in id order, every action whose byte in mask
// is non-zero, and returns the extended slice: the legal actions of a mask
// from Mask or Env.Mask.
func AppendMasked(dst []Action, mask []uint8) []Action {
	for a, ok := range mask {
		if ok != 0 {
			dst = append(dst, Action(a))
		}
	}
	return dst
}

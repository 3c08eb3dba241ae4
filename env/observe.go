package env

import "math/bits"

// The observation is a flat vector with one layout and two encodings. Both
// hold exactly what a player sees and nothing else: face-down cards are
// counted, never named, and the stock is a count, never an order.
//
//	offset          length  field
//	0               10      face-down cards per column
//	10              10      face-up cards per column (the full count, even past the slots)
//	20              1       cards left in the stock
//	21              1       completed runs
//	22              4       completed runs per suit (spades, hearts, diamonds, clubs)
//	26              10*S    face-up cards, column by column, S slots each, slot 0 the top card
//
// S is Rules.FaceUpSlots (default 78, the most a classic game can reach;
// RULES.md proves it). A column with more than S face-up
// cards shows its top S; the count field still says how many there are.
//
// Compact (uint8): each field is its count; a card slot holds the card's
// code (1-52, Card) or 0 for no card.
//
// Float32: each count is divided by its bound (5, 104, 50, 8, 8) so every
// value lies in [0, 1]; each card slot becomes F floats: a one-hot of the
// rank (13) followed, with 2 or 4 suits, by a one-hot of the suit (2 or 4);
// an empty slot is all zeros. So F is 13, 15 or 17.
const (
	ObsFaceDown = 0
	ObsFaceUp   = ObsFaceDown + NumColumns
	ObsStock    = ObsFaceUp + NumColumns
	ObsRuns     = ObsStock + 1
	ObsSuitRuns = ObsRuns + 1
	ObsSlots    = ObsSuitRuns + NumSuits // 26: first card slot
)

// headerBound is the divisor of each counter in the float32 encoding: the
// most that field can hold.
var headerBound = func() (b [ObsSlots]float32) {
	for i := range b {
		switch {
		case i < ObsFaceUp:
			b[i] = maxFaceDown
		case i < ObsStock:
			b[i] = NumCards
		case i == ObsStock:
			b[i] = StockSize
		default:
			b[i] = NumRuns
		}
	}
	return b
}()

// HeaderBound returns the divisor that scales counter i (0 <= i < ObsSlots)
// into [0, 1] in the float32 encoding: 5, 104, 50 or 8. It panics if i
// is out of that range.
func HeaderBound(i int) float32 { return headerBound[i] }

// header writes the counters that open every observation into h.
func (s *State) header(h []uint8) {
	for c := range NumColumns {
		h[ObsFaceDown+c] = s.down[c]
		h[ObsFaceUp+c] = s.height[c] - s.down[c]
	}
	h[ObsStock] = uint8(s.StockLeft())
	h[ObsRuns] = s.runs
	copy(h[ObsSuitRuns:ObsSlots], s.suitRuns[:])
}

// updateHeader rewrites the counters of h that the columns in cols and the
// stock and runs can have changed.
func (s *State) updateHeader(h []uint8, cols uint16) {
	if cols == AllColumns {
		s.header(h)
		return
	}
	for m := cols; m != 0; m &= m - 1 {
		c := bits.TrailingZeros16(m)
		h[ObsFaceDown+c] = s.down[c]
		h[ObsFaceUp+c] = s.height[c] - s.down[c]
	}
	h[ObsStock] = uint8(s.StockLeft())
	h[ObsRuns] = s.runs
	copy(h[ObsSuitRuns:ObsSlots], s.suitRuns[:])
}

// CompactLen returns the length of the compact observation.
func (r Rules) CompactLen() int { return ObsSlots + NumColumns*int(r.slots) }

// CardFeatures returns F, the number of float32 values per card slot.
func (r Rules) CardFeatures() int {
	if r.suits == 1 {
		return NumRanks
	}
	return NumRanks + int(r.suits)
}

// Float32Len returns the length of the float32 observation.
func (r Rules) Float32Len() int { return ObsSlots + NumColumns*int(r.slots)*r.CardFeatures() }

// ObsLen returns the length of the observation in the configured encoding.
func (r Rules) ObsLen() int {
	if r.encoding == Float32 {
		return r.Float32Len()
	}
	return r.CompactLen()
}

// CompactHigh fills dst (length CompactLen) with the inclusive upper bound
// of each compact field; every lower bound is 0. It panics if dst is too
// short, which is a programming error.
func (r Rules) CompactHigh(dst []uint8) {
	dst = fit(dst, r.CompactLen(), "env: CompactHigh: dst shorter than CompactLen")
	for c := range NumColumns {
		dst[ObsFaceDown+c] = maxFaceDown
		dst[ObsFaceUp+c] = NumCards
	}
	dst[ObsStock] = StockSize
	dst[ObsRuns] = NumRuns
	// Per suit, 8 rather than the tighter 8/suits (or 0 for an absent
	// suit): Gymnasium warns about a Box whose low equals its high.
	for su := range NumSuits {
		dst[ObsSuitRuns+su] = NumRuns
	}
	top := uint8(int(r.suits) * NumRanks)
	for i := ObsSlots; i < len(dst); i++ {
		dst[i] = top
	}
}

// fit returns dst[:n], and panics with msg if len(dst) < n: a buffer
// whose length is short is a caller's mistake even when its capacity
// would do (buf[:0] passed by mistake), and the docs promise the panic.
func fit[T any](dst []T, n int, msg string) []T {
	if len(dst) < n {
		panic(msg)
	}
	return dst[:n]
}

// AllColumns is the column set of every column, for the Update methods.
const AllColumns uint16 = 1<<NumColumns - 1

// ObserveCompact writes the compact observation of s into dst and returns
// dst[:CompactLen]. It never allocates. It panics if dst is shorter than
// CompactLen, which is a programming error.
func (s *State) ObserveCompact(dst []uint8) []uint8 {
	dst = fit(dst, s.rules.CompactLen(), "env: ObserveCompact: dst shorter than CompactLen")
	clear(dst)
	return s.UpdateCompact(dst, AllColumns)
}

// UpdateCompact brings dst, a compact observation of this game before
// some actions, up to date with s, rewriting the counters and only the
// card slots of the columns in the set cols (bit c for column c; bits
// past the last column are ignored). cols must
// include every column those actions changed (see Undo.Columns); a move
// changes two, so this is far cheaper than a full ObserveCompact.
// It returns dst[:CompactLen] and never allocates.
func (s *State) UpdateCompact(dst []uint8, cols uint16) []uint8 {
	cols &= AllColumns
	slots := int(s.rules.slots)
	dst = fit(dst, ObsSlots+NumColumns*slots, "env: UpdateCompact: dst shorter than CompactLen")
	for c := range NumColumns {
		if cols&(1<<c) == 0 {
			continue
		}
		old := min(int(dst[ObsFaceUp+c]), slots)
		out := dst[ObsSlots+c*slots : ObsSlots+(c+1)*slots]
		up := s.visible(c, slots)
		for i, card := range up {
			out[len(up)-1-i] = uint8(card)
		}
		if old > len(up) {
			clear(out[len(up):old])
		}
	}
	s.updateHeader(dst[:ObsSlots], cols)
	return dst
}

// visible returns the face-up cards of column c that the slots show,
// deepest first.
func (s *State) visible(c, slots int) []Card {
	h := int(s.height[c])
	lo := max(int(s.down[c]), h-slots)
	return s.cols[c][lo:h]
}

// ObserveFloat32 writes the float32 observation of s into dst and returns
// dst[:Float32Len]. It never allocates. It panics if dst is shorter than
// Float32Len, which is a programming error.
func (s *State) ObserveFloat32(dst []float32) []float32 {
	dst = fit(dst, s.rules.Float32Len(), "env: ObserveFloat32: dst shorter than Float32Len")
	clear(dst)
	return s.UpdateFloat32(dst, AllColumns)
}

// UpdateFloat32 is UpdateCompact for the float32 encoding: dst holds a
// float32 observation of this game before some actions, and only the
// columns in cols are rewritten, each only as far as its deepest slot in
// use before or after. It returns dst[:Float32Len] and never allocates.
func (s *State) UpdateFloat32(dst []float32, cols uint16) []float32 {
	slots := int(s.rules.slots)
	f := s.rules.CardFeatures()
	dst = fit(dst, ObsSlots+NumColumns*slots*f, "env: UpdateFloat32: dst shorter than Float32Len")
	suited := s.rules.suits > 1
	for c := range NumColumns {
		if cols&(1<<c) == 0 {
			continue
		}
		// The header still holds the old count; it is exact after rounding.
		old := min(int(dst[ObsFaceUp+c]*NumCards+0.5), slots)
		up := s.visible(c, slots)
		col := dst[ObsSlots+c*slots*f:]
		clear(col[:max(old, len(up))*f])
		for i, card := range up {
			cell := col[(len(up)-1-i)*f:]
			cell[card.Rank()-1] = 1
			if suited {
				cell[NumRanks+int(card.Suit())] = 1
			}
		}
	}
	var h [ObsSlots]uint8
	s.header(h[:])
	for i, v := range h {
		dst[i] = float32(v) / headerBound[i]
	}
	return dst
}

// Observe writes the observation of s in its configured encoding: into u8
// for Compact, into f32 for Float32 (the other may be nil).
func (s *State) Observe(u8 []uint8, f32 []float32) {
	if s.rules.encoding == Float32 {
		s.ObserveFloat32(f32)
		return
	}
	s.ObserveCompact(u8)
}

// Update is UpdateCompact or UpdateFloat32, by the configured encoding.
func (s *State) Update(u8 []uint8, f32 []float32, cols uint16) {
	if s.rules.encoding == Float32 {
		s.UpdateFloat32(f32, cols)
		return
	}
	s.UpdateCompact(u8, cols)
}

package env

import (
	"testing"

	"github.com/spiderenv/spider/internal/rng"
)

// TestMaskChunksCoverEveryOne checks, along random games, that the chunk
// set writeMask returns covers every 1 it wrote, and that nthInChunks
// agrees with the full scan of NthMasked.
func TestMaskChunksCoverEveryOne(t *testing.T) {
	g := rng.New(3)
	for _, suits := range []int{1, 4} {
		r := MustRules(Options{RuleSet: Cardems, Suits: suits, MaxSteps: 400})
		for seed := range uint64(20) {
			s := NewGame(r, seed)
			mask := make([]uint8, NumActions)
			chunks := AllChunks
			for !s.Over() {
				var n int
				n, chunks = s.writeMask(mask, chunks, nil)
				for id, v := range mask {
					if v == 1 && chunks&(1<<(id>>6)) == 0 {
						t.Fatalf("mask[%d] = 1 outside the chunk set %b", id, chunks)
					}
				}
				for k := range n {
					if a, b := nthInChunks(mask, k, chunks), NthMasked(mask, k); a != b {
						t.Fatalf("nthInChunks(%d) = %v, NthMasked %v", k, a, b)
					}
				}
				s.apply(NthMasked(mask, g.IntN(n)))
			}
		}
	}
}

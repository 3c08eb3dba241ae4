package env_test

import (
	"slices"
	"testing"

	"github.com/spiderenv/spider/env"
	"github.com/spiderenv/spider/internal/rng"
)

// TestNthMaskedFindsEachSetByte checks NthMasked and AppendMasked on random
// masks of every length up to the action space's, against the set bytes
// listed while building them.
func TestNthMaskedFindsEachSetByte(t *testing.T) {
	g := rng.New(8)
	for trial := range 200 {
		n := 1 + g.IntN(env.NumActions)
		if trial%3 == 0 {
			n = env.NumActions
		}
		mask := make([]uint8, n)
		var set []env.Action
		for i := range mask {
			if g.IntN(5) == 0 || i == n-1 {
				mask[i] = 1
				set = append(set, env.Action(i))
			}
		}
		for k, want := range set {
			if got := env.NthMasked(mask, k); got != want {
				t.Fatalf("mask of %d: NthMasked(%d) = %d, want %d", n, k, got, want)
			}
		}
		if got := env.AppendMasked(nil, mask); !slices.Equal(got, set) {
			t.Fatalf("mask of %d: AppendMasked = %v, want %v", n, got, set)
		}
		wantPanic(t, "NthMasked: fewer set bytes than asked for", func() { env.NthMasked(mask, len(set)) })
	}
}

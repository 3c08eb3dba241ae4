package env

import (
	"slices"
	"testing"

	"github.com/spiderenv/spider/internal/rng"
)

// referenceResample is Resample as first written: the unseen cards copied
// out, sorted, shuffled and put back. Resample counts them into order
// instead, and must deal the same game for every seed, or every recorded
// search game would be played otherwise.
func referenceResample(s *State, seed uint64) State {
	next := *s
	var hidden [NumCards]Card
	n := 0
	for c := range NumColumns {
		n += copy(hidden[n:], s.cols[c][:s.down[c]])
	}
	n += copy(hidden[n:], s.stock[s.dealt:])
	slices.Sort(hidden[:n])
	g := rng.New(seed)
	for i := n - 1; i > 0; i-- {
		j := g.IntN(i + 1)
		hidden[i], hidden[j] = hidden[j], hidden[i]
	}
	n = 0
	for c := range NumColumns {
		n += copy(next.cols[c][:s.down[c]], hidden[n:])
	}
	copy(next.stock[s.dealt:], hidden[n:])
	return next
}

func TestResampleIsTheSortedShuffle(t *testing.T) {
	checked := 0
	for _, suits := range []int{1, 2, 4} {
		r := MustRules(Options{Suits: suits})
		for seed := uint64(1); seed <= 20; seed++ {
			s := NewGame(r, seed)
			g := rng.New(seed)
			var legal []Action
			for move := 0; move < 120 && !s.Over(); move++ {
				if move%10 == 0 {
					for k := range uint64(3) {
						if got, want := s.Resample(seed*100+k), referenceResample(&s, seed*100+k); got != want {
							t.Fatalf("suits %d seed %d move %d: Resample deals another game than the sorted shuffle", suits, seed, move)
						}
						checked++
					}
				}
				legal = s.AppendLegal(legal[:0])
				s.Step(legal[g.IntN(len(legal))])
			}
		}
	}
	if checked < 500 {
		t.Fatalf("only %d resamples checked", checked)
	}
}

// BenchmarkResample resamples a new four-suit deal (94 unseen cards);
// /sorted is the reference it replaced, for comparison.
func BenchmarkResample(b *testing.B) {
	s := NewGame(MustRules(Options{Suits: 4}), 1)
	for _, c := range []struct {
		name string
		f    func(*State, uint64) State
	}{{"counted", (*State).Resample}, {"sorted", referenceResample}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			var sink State
			for i := 0; b.Loop(); i++ {
				sink = c.f(&s, uint64(i))
			}
			_ = sink
		})
	}
}

package train

import (
	"math"

	"github.com/spiderenv/spider/internal/rng"
)

// sampleMasked draws an action from the softmax of logits over the legal
// actions (mask byte 1) and returns it with its log-probability. It panics
// if no action is legal, which the batch's autoreset rules out.
func sampleMasked(g *rng.Rand, logits []float32, mask []uint8) (int, float32) {
	mx := float32(math.Inf(-1))
	for i, m := range mask {
		if m != 0 && logits[i] > mx {
			mx = logits[i]
		}
	}
	sum := 0.0
	for i, m := range mask {
		if m != 0 {
			sum += math.Exp(float64(logits[i] - mx))
		}
	}
	if sum == 0 {
		panic("train: sampleMasked with no legal action")
	}
	u := g.Float64() * sum
	last := -1
	for i, m := range mask {
		if m == 0 {
			continue
		}
		last = i
		if u -= math.Exp(float64(logits[i] - mx)); u < 0 {
			break
		}
	}
	return last, float32(float64(logits[last]-mx) - math.Log(sum))
}

package nn_test

import (
	"fmt"

	"github.com/spiderenv/spider/agents/nn"
	"github.com/spiderenv/spider/env"
)

// Build a network for one-suit games, observe a deal and pick the most
// likely legal action.
func Example() {
	r := env.MustRules(env.Options{Suits: 1, FaceUpSlots: 8, Encoding: env.Float32})
	net, err := nn.New(nn.SpecFor(r, []int{32}), 1)
	if err != nil {
		panic(err)
	}
	s := env.NewGame(r, 7)
	obs := s.ObserveFloat32(make([]float32, r.Float32Len()))
	mask := make([]uint8, env.NumActions)
	s.Mask(mask)
	logits, value := make([]float32, env.NumActions), make([]float32, 1)
	net.Forward(logits, value, obs, 1, net.NewScratch(1))
	a, ok := nn.Best(logits, mask)
	fmt.Println("observation:", len(obs), "legal:", s.Legal(a), ok)
	// Output:
	// observation: 1066 legal: true true
}

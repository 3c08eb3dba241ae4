package train

import (
	"context"

	"github.com/spiderenv/spider/agents"
)

// testValidating, when a test sets it, runs as a validation starts.
var testValidating func()

// validate plays the validation deals with the network as agents.Neural
// plays it (the most likely legal action, one forward pass a move, with its
// loop avoidance) and returns the win rate and mean completed runs. It
// reads the weights only, so it changes nothing a checkpoint holds and a
// resumed run validates the same way.
func (t *Trainer) validate(ctx context.Context) (winRate, runs float64, err error) {
	maker, err := agents.NeuralMaker(t.Net)
	if err != nil {
		return 0, 0, err
	}
	// A finished game's moves are dropped as it ends: a validation of
	// 100,000 deals would otherwise hold every move list to the end.
	drop := func(_, _ int, res *agents.Result) { res.Actions = nil }
	seeds := t.Config.valSeeds()
	var progress func(done, total int)
	if t.Progress != nil {
		// Thousands of deals, or a wide network's, take minutes.
		t.Progress("validate", 0, len(seeds))
		progress = func(done, total int) { t.Progress("validate", done, total) }
	}
	ev, err := agents.EvaluateEach(ctx, t.rules, []agents.Policy{{Name: "nn", Maker: maker}}, seeds, 0, progress, drop)
	if err != nil {
		return 0, 0, err
	}
	for _, r := range ev.Results[0] {
		if r.Won {
			winRate++
		}
		runs += float64(r.Runs)
	}
	n := float64(len(ev.Results[0]))
	return winRate / n, runs / n, nil
}

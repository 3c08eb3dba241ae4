package cli

import (
	"testing"

	"github.com/spiderenv/spider/agents"
	"github.com/spiderenv/spider/env"
)

// TestSummarizeComparesAWithB: in a comparison of policies A (listed
// first) and B, "only A won" counts the deals A won and B lost, and the
// score and runs differences are A's minus B's.
func TestSummarizeComparesAWithB(t *testing.T) {
	ev := &agents.Evaluation{Rules: env.MustRules(env.Options{Suits: 1}), Policies: []string{"greedy", "first"}, Seeds: []uint64{1, 2, 3, 4}}
	ev.Results = [][]agents.Result{
		{{Seed: 1, Won: true, Score: 900, Runs: 8}, {Seed: 2, Won: true, Score: 800, Runs: 8}, {Seed: 3, Won: true, Score: 700, Runs: 8}, {Seed: 4, Score: 400, Runs: 3}},
		{{Seed: 1, Won: true, Score: 850, Runs: 8}, {Seed: 2, Score: 300, Runs: 2}, {Seed: 3, Score: 200, Runs: 1}, {Seed: 4, Score: 100, Runs: 0}},
	}
	rep := summarize(ev, nil)
	if len(rep.Comparisons) != 1 {
		t.Fatalf("%d comparisons", len(rep.Comparisons))
	}
	c := rep.Comparisons[0]
	if c.A != rep.Policies[0].Policy || c.B != rep.Policies[1].Policy {
		t.Fatalf("comparison of %s with %s; policies %s, %s", c.A, c.B, rep.Policies[0].Policy, rep.Policies[1].Policy)
	}
	if c.OnlyAWon != 2 || c.OnlyBWon != 0 {
		t.Errorf("only A won %d, only B won %d; want 2 and 0", c.OnlyAWon, c.OnlyBWon)
	}
	if c.ScoreDiff != (50+500+500+300)/4.0 || c.RunsDiff != (0+6+7+3)/4.0 {
		t.Errorf("score A-B %v, runs A-B %v; want %v and %v", c.ScoreDiff, c.RunsDiff, (50+500+500+300)/4.0, (0+6+7+3)/4.0)
	}
}

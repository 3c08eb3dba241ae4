package cli

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"slices"
	"strings"
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

// TestEvalTextAndCSVSayWhatSummarizeFound: the text's paired-comparison
// row prints each p-value under its own column, and the failures a
// summary counts reach the CSV (a swapped column or a dropped count went
// unseen: no test read the text table or the count).
func TestEvalTextAndCSVSayWhatSummarizeFound(t *testing.T) {
	ev := &agents.Evaluation{Rules: env.MustRules(env.Options{Suits: 1}), Policies: []string{"greedy", "first"}, Seeds: []uint64{1, 2, 3, 4, 5, 6}}
	ev.Results = [][]agents.Result{
		{{Seed: 1, Won: true, Score: 900, Runs: 8}, {Seed: 2, Won: true, Score: 800, Runs: 8}, {Seed: 3, Won: true, Score: 700, Runs: 8}, {Seed: 4, Score: 400, Runs: 3}, {Seed: 5, Won: true, Score: 950, Runs: 8}, {Seed: 6, Score: 420, Runs: 2}},
		{{Seed: 1, Won: true, Score: 850, Runs: 8}, {Seed: 2, Score: 300, Runs: 2}, {Seed: 3, Score: 200, Runs: 1}, {Seed: 4, Score: 100, Runs: 0, Failure: "remote agent: timed out"}, {Seed: 5, Score: 610, Runs: 4}, {Seed: 6, Score: 400, Runs: 1}},
	}
	rep := summarize(ev, nil)
	if rep.Policies[0].Failures != 0 || rep.Policies[1].Failures != 1 || len(rep.Failures) != 1 {
		t.Fatalf("failures %d and %d, listed %d; want 0, 1 and 1", rep.Policies[0].Failures, rep.Policies[1].Failures, len(rep.Failures))
	}
	c := rep.Comparisons[0]
	if c.WinsP == c.ScoreP || c.ScoreP == c.RunsP || c.WinsP == c.RunsP {
		t.Fatalf("p-values %v, %v, %v: the test needs three different ones", c.WinsP, c.ScoreP, c.RunsP)
	}
	var text bytes.Buffer
	if err := writeEval(&text, rep, evalOptions{}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(text.String(), "\n")
	i := slices.IndexFunc(lines, func(l string) bool { return strings.Contains(l, "only A won") })
	if i < 0 || i+1 >= len(lines) {
		t.Fatalf("no comparison table in:\n%s", text.String())
	}
	wantHead := "A B only A won only B won wins p score A-B score p runs A-B runs p"
	row := strings.Fields(lines[i+1])
	if strings.Join(strings.Fields(lines[i]), " ") != wantHead || len(row) != 9 {
		t.Fatalf("comparison table:\n%s\n%s", lines[i], lines[i+1])
	}
	// A, B, only A won, only B won, wins p, score A-B, score p, runs A-B, runs p.
	got := map[string]string{"wins p": row[4], "score p": row[6], "runs p": row[8]}
	for col, want := range map[string]float64{"wins p": c.WinsP, "score p": c.ScoreP, "runs p": c.RunsP} {
		if got[col] != fmt.Sprintf("%.3g", want) {
			t.Errorf("%s printed %s; want %.3g (row %q)", col, got[col], want, row)
		}
	}
	var csvOut bytes.Buffer
	o := evalOptions{}
	o.out.csv = true
	if err := writeEval(&csvOut, rep, o); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&csvOut).ReadAll()
	if err != nil || len(rows) != 3 {
		t.Fatalf("CSV %q: %v", rows, err)
	}
	k := slices.Index(rows[0], "failures")
	if k < 0 || rows[1][k] != "0" || rows[2][k] != "1" {
		t.Fatalf("CSV failures column %d: %q", k, rows)
	}
}

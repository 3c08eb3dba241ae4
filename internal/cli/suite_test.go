package cli

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/spiderenv/spider/agents"
	"github.com/spiderenv/spider/agents/suites"
	"github.com/spiderenv/spider/env"
	"github.com/spiderenv/spider/internal/alloccount"
)

func runMain(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = Main(args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func TestEvalListSuites(t *testing.T) {
	code, out, errs := runMain("eval", "--list-suites", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var rows []suiteRow
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(suites.All()) || rows[0].Name != "classic-1suit-test" || rows[0].First != 100001 || rows[0].LastSeed != 101000 {
		t.Fatalf("suites %+v", rows)
	}
	code, out, _ = runMain("eval", "--list-suites")
	if code != 0 || !strings.Contains(out, "classic-4suit-test") || !strings.Contains(out, "100001-100200") {
		t.Fatalf("exit %d, table:\n%s", code, out)
	}
}

func TestEvalSuiteRefusesContradictingFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--suits", "2"}, "--suite classic-1suit-dev plays --suits 1, not 2: drop --suits"},
		{[]string{"--max-steps", "500"}, "plays --max-steps 1000, not 500"},
		{[]string{"--rules", "cardems"}, "plays --rules classic, not cardems"},
		{[]string{"--time-per-action-ms", "1500"}, "--time-per-action-ms"},
		{[]string{"--games", "3"}, "fixes the deals: drop --games"},
		{[]string{"--seeds", "1-3"}, "drop --seeds"},
		{[]string{"--start", "5"}, "drop --start"},
	} {
		args := append([]string{"eval", "--suite", "classic-1suit-dev", "--policies", "first"}, tc.args...)
		code, out, errs := runMain(args...)
		if code != 2 || !strings.Contains(errs, tc.want) || out != "" {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, code, errs, tc.want)
		}
	}
	// Every option of kind game, those added later too, is fixed by the
	// suite; the others are the player's to choose.
	for _, f := range env.OptionFields() {
		if !f.Game {
			continue
		}
		if code, _, errs := runMain("eval", "--suite", "classic-1suit-dev", "--policies", "first", "--"+f.Flag, f.Example); code != 2 || !strings.Contains(errs, "drop --"+f.Flag) {
			t.Errorf("--%s %s with a suite: exit %d, %q", f.Flag, f.Example, code, errs)
		}
	}
	if code, _, errs := runMain("eval", "--suite", "classic-9suit-dev"); code != 2 || !strings.Contains(errs, `unknown suite "classic-9suit-dev"`) {
		t.Errorf("unknown suite: exit %d, %q", code, errs)
	}
}

func TestEvalSuiteJSON(t *testing.T) {
	// Flags that agree with the suite, and encodings it does not fix, are fine.
	code, out, errs := runMain("eval", "--suite", "cardems-1suit-dev", "--rules", "cardems", "--obs", "float32", "--policies", "first,random", "--json", "--per-game")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var rep map[string]any
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	suite := rep["suite"].(map[string]any)
	if rep["schema"] != "spider-eval/1" || suite["name"] != "cardems-1suit-dev" || suite["version"] != "1" || rep["rules"] != "cardems" ||
		rep["max_steps"] != 1000.0 || rep["deals"] != 200.0 || rep["seeds"] != "1-200" || rep["obs"] != "float32" {
		t.Fatalf("report %v", rep)
	}
	if f, ok := rep["failures"].([]any); !ok || len(f) != 0 {
		t.Errorf("failures %v: want an empty list", rep["failures"])
	}
	if g := rep["games"].([]any); len(g) != 400 || g[0].(map[string]any)["seed"] != 1.0 || len(g[0].(map[string]any)["actions_sha256"].(string)) != 16 {
		t.Errorf("per-game rows: %d, first %v", len(g), g[0])
	}
	if !strings.Contains(rep["program_version"].(string), "go1.") {
		t.Errorf("program_version %v", rep["program_version"])
	}
}

func TestEvalRemotePolicyRefusals(t *testing.T) {
	code, _, errs := runMain("eval", "--seeds", "1", "--policies", "greedy,remote:192.0.2.1:7000")
	if code != 2 || !strings.Contains(errs, "must be loopback") {
		t.Errorf("non-loopback agent: exit %d, %q", code, errs)
	}
	code, _, errs = runMain("eval", "--seeds", "1", "--policies", "greedy,remote:unix:"+filepath.Join(t.TempDir(), "none.sock"))
	// A socket file that is not there is a missing file named: exit 2
	// (it was 1).
	if code != 2 || !strings.Contains(errs, "remote agent unix:") || !strings.Contains(errs, "no such file") {
		t.Errorf("absent agent: exit %d, %q", code, errs)
	}
	code, _, errs = runMain("eval", "--seeds", "1", "--policies", "greedy,remote:unix:"+filepath.Join(t.TempDir(), "none.sock"), "--remote-batch", "5000")
	if code != 2 || !strings.Contains(errs, "--remote-batch 5000") {
		t.Errorf("--remote-batch 5000: exit %d, %q", code, errs)
	}
}

func TestResultsTable(t *testing.T) {
	dir := t.TempDir()
	for name, args := range map[string][]string{
		"dev-a.json": {"--suite", "classic-1suit-dev", "--policies", "first,random"},
		"dev-b.json": {"--suite", "classic-2suit-dev", "--policies", "first"},
		"dev-c.json": {"--suite", "classic-1suit-dev", "--policies", "search", "--nodes", "2", "--draw", "3"},
		"dev-d.json": {"--suite", "classic-2suit-dev", "--policies", "oracle", "--nodes", "2", "--move-ms", "500"},
		"seeds.json": {"--seeds", "1-2", "--policies", "first"},
	} {
		code, out, errs := runMain(append([]string{"eval", "--json"}, args...)...)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", name, code, errs)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	md := filepath.Join(dir, "results.md")
	before, after := "# Results\n\nhand-written text\n\n", "\n\nmore hand-written text\n"
	if err := os.WriteFile(md, []byte(before+resultsBegin+"\nold table\n"+resultsEnd+after), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := runMain("results", "--update", md, filepath.Join(dir, "dev-b.json"), filepath.Join(dir, "dev-a.json"), filepath.Join(dir, "dev-c.json"), filepath.Join(dir, "dev-d.json"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	b, _ := os.ReadFile(md)
	got := string(b)
	if !strings.HasPrefix(got, before+resultsBegin+"\n| suite |") || !strings.HasSuffix(got, "\n"+resultsEnd+after) || strings.Contains(got, "old table") {
		t.Fatalf("updated file:\n%s", got)
	}
	// Rows follow the suites' order, whatever the files' order.
	i1, i2 := strings.Index(got, "| classic-1suit-dev (v1) | classic | 1 | 1000 | random | 200 |"), strings.Index(got, "| classic-2suit-dev (v1) | classic | 2 | 1000 | first | 200 |")
	if i1 < 0 || i2 < 0 || i2 < i1 || strings.Count(got, "\n| classic-") != 5 {
		t.Fatalf("table rows:\n%s", got)
	}
	// A search budget or draw other than the default is part of the
	// policy's name (the oracle samples nothing, so no draw in its name).
	if !strings.Contains(got, "| search (2 nodes, draw 3) | 200 |") || !strings.Contains(got, "| oracle (sees hidden cards) (2 nodes, at most 500 ms a move) | 200 |") {
		t.Fatalf("table rows:\n%s", got)
	}
	// The same rows for a program: --json and --csv (not with --update).
	files := []string{filepath.Join(dir, "dev-b.json"), filepath.Join(dir, "dev-a.json"), filepath.Join(dir, "dev-c.json"), filepath.Join(dir, "dev-d.json")}
	code, out, errs := runMain(append([]string{"results", "--json"}, files...)...)
	var rows []resultsRow
	if err := json.Unmarshal([]byte(out), &rows); code != 0 || err != nil || len(rows) != 5 {
		t.Fatalf("--json: exit %d (%s), %v:\n%s", code, errs, err, out)
	}
	for _, r := range rows {
		if !strings.Contains(got, fmt.Sprintf("| %s (v%s) | %s | %d | %d | %s | %d | %.1f%% ", r.Suite, r.SuiteVersion, r.Rules, r.Suits, r.MaxSteps, r.Policy, r.Games, 100*r.WinRate)) || r.Wins != int(math.Round(r.WinRate*float64(r.Games))) {
			t.Errorf("a JSON row the table does not have: %+v", r)
		}
	}
	// The budget in the name is in fields of its own too, the default
	// written as such.
	budgets := map[string][3]int{}
	for _, r := range rows {
		budgets[r.Policy] = [3]int{r.Nodes, r.MoveMs, int(r.Draw)}
	}
	for name, want := range map[string][3]int{
		"search (2 nodes, draw 3)": {2, 0, 3}, "oracle (sees hidden cards) (2 nodes, at most 500 ms a move)": {2, 500, 0}, "random": {agents.DefaultNodes, 0, 0},
	} {
		if got, ok := budgets[name]; !ok || got != want {
			t.Errorf("--json row %q: nodes, move_ms, draw %v (found %v), want %v", name, got, ok, want)
		}
	}
	code, out, errs = runMain(append([]string{"results", "--csv"}, files...)...)
	recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if code != 0 || err != nil || len(recs) != 6 || recs[0][0] != "suite" || recs[1][5] != rows[0].Policy {
		t.Fatalf("--csv: exit %d (%s), %v:\n%s", code, errs, err, out)
	}
	for i, r := range rows {
		if n := len(recs[0]); recs[0][n-4] != "nodes" || recs[i+1][n-4] != strconv.Itoa(r.Nodes) || recs[i+1][n-3] != strconv.Itoa(r.MoveMs) || recs[i+1][n-2] != strconv.FormatUint(r.Draw, 10) {
			t.Errorf("--csv row %d: %v under %v, want the JSON row's budget %+v", i+1, recs[i+1], recs[0], r)
		}
	}
	hashed := editReport(t, filepath.Join(dir, "dev-a.json"), dir, "hashed.json", func(_, first map[string]any) { first["checkpoint_sha256"] = strings.Repeat("cd", 32) })
	code, out, errs = runMain("results", "--json", hashed)
	var hashedRows []resultsRow
	if err := json.Unmarshal([]byte(out), &hashedRows); code != 0 || err != nil || len(hashedRows) != 2 || hashedRows[0].Checkpoint != strings.Repeat("cd", 32) || hashedRows[1].Checkpoint != "" {
		t.Errorf("--json of a network's report: exit %d (%s), %v: %+v", code, errs, err, hashedRows)
	}
	// Anything else there is refused: the tables write it as it is.
	for i, bad := range []string{`=HYPERLINK("http://x","click")`, "\x1b[31mred", strings.Repeat("cd", 31)} {
		forged := editReport(t, filepath.Join(dir, "dev-a.json"), dir, fmt.Sprintf("forged-hash-%d.json", i), func(_, first map[string]any) { first["checkpoint_sha256"] = bad })
		if code, out, errs := runMain("results", "--csv", forged); code == 0 || !strings.Contains(errs, "checkpoint_sha256 is not 64 hex digits") {
			t.Errorf("checkpoint_sha256 %q: exit %d, %q, %s", bad, code, errs, out)
		}
	}
	if code, _, errs := runMain("results", "--update", md, "--json", files[0]); code != 2 || !strings.Contains(errs, "drop --json and --csv") {
		t.Errorf("--update with --json: exit %d, %s", code, errs)
	}
	var timed map[string]any
	if b, err := os.ReadFile(filepath.Join(dir, "dev-d.json")); err != nil || json.Unmarshal(b, &timed) != nil || timed["move_ms"] != 500.0 || timed["nodes"] != 2.0 || (timed["draw"] != nil && timed["draw"] != 0.0) {
		t.Fatalf("dev-d.json: move_ms %v, nodes %v, draw %v (%v)", timed["move_ms"], timed["nodes"], timed["draw"], err)
	}
	// A stopped evaluation holds part of its suite: never a table row.
	var stopped map[string]any
	if b, err := os.ReadFile(filepath.Join(dir, "dev-a.json")); err != nil || json.Unmarshal(b, &stopped) != nil {
		t.Fatalf("dev-a.json: %v", err)
	}
	stopped["stopped"] = true
	if b, err := json.Marshal(stopped); err != nil || os.WriteFile(filepath.Join(dir, "stopped.json"), b, 0o644) != nil {
		t.Fatalf("stopped.json: %v", err)
	}
	// A report that names a suite but whose games are not the suite's.
	delete(stopped, "stopped")
	stopped["time_per_action_ms"] = 1500
	if b, err := json.Marshal(stopped); err != nil || os.WriteFile(filepath.Join(dir, "other-game.json"), b, 0o644) != nil {
		t.Fatalf("other-game.json: %v", err)
	}
	// A report whose figures are not a whole run of the suite: fewer
	// deals, or a policy's fewer games, or more wins than games.
	edited := func(name string, edit func(rep, first map[string]any)) string {
		return editReport(t, filepath.Join(dir, "dev-a.json"), dir, name, edit)
	}
	fewer := edited("fewer.json", func(rep, _ map[string]any) { rep["deals"], rep["seeds"] = 40, "1001-1040" })
	fewerGames := edited("fewer-games.json", func(_, first map[string]any) { first["games"] = 40 })
	moreWins := edited("more-wins.json", func(_, first map[string]any) { first["wins"] = 201 })
	// Its rate and interval are the wins': a forged rate is not printed.
	forged := edited("forged.json", func(_, first map[string]any) {
		first["win_rate"], first["win_rate_lo95"], first["win_rate_hi95"] = 0.99, 0.98, 1
	})
	if code, out, errs := runMain("results", forged); code != 0 || strings.Contains(out, "99.0%") || !strings.Contains(out, "| first | 200 | 0.0% (0.0-1.9) |") {
		t.Errorf("results of a forged rate: exit %d: %s%s", code, out, errs)
	}
	// Markers in the wrong order hold no section: the end before the begin.
	swapped := filepath.Join(dir, "swapped.md")
	if err := os.WriteFile(swapped, []byte(before+resultsEnd+"\nkept\n"+resultsBegin+after), 0o644); err != nil {
		t.Fatal(err)
	}
	huge := filepath.Join(dir, "huge.md")
	if err := os.WriteFile(huge, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(huge, maxUpdateBytes+1); err != nil { // sparse: no disk taken
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty.json") // what an empty pipe reads as
	if err := os.WriteFile(empty, []byte(" \n"), 0o644); err != nil {
		t.Fatal(err)
	}
	type refusalCase struct {
		args []string
		want string
	}
	var cases []refusalCase
	for _, tc := range []refusalCase{
		{[]string{filepath.Join(dir, "seeds.json")}, "no suite: the results table takes only runs of spider eval --suite NAME"},
		{[]string{filepath.Join(dir, "other-game.json")}, "names suite classic-1suit-dev but played another game (--time-per-action-ms 0 and 1500)"},
		{[]string{filepath.Join(dir, "stopped.json")}, "a stopped evaluation"},
		{[]string{md}, "not an eval report: want a JSON object"},
		{[]string{empty}, "empty.json: not an eval report: empty"},
		{[]string{"--update", filepath.Join(dir, "dev-a.json"), filepath.Join(dir, "dev-a.json")}, "no section between"},
		{[]string{"--update", swapped, filepath.Join(dir, "dev-a.json")}, "no section between"},
		{[]string{"--update", filepath.Join(dir, "missing.md"), filepath.Join(dir, "dev-a.json")}, "no such file"},
		{[]string{"--update", dir, filepath.Join(dir, "dev-a.json")}, "a folder, not a file"},
		{[]string{"--update", huge, filepath.Join(dir, "dev-a.json")}, "more than any valid file can have"},
		{[]string{filepath.Join(dir, "dev-a.json"), filepath.Join(dir, "missing.json")}, "no such file"},
		{[]string{fewer}, "40 deals (seeds 1001-1040), but suite classic-1suit-dev is 200 (seeds 1-200): not a whole run of the suite"},
		{[]string{fewerGames}, "first played 40 games with 0 wins and 0 failures, which a run of suite classic-1suit-dev (200 deals) cannot have"},
		{[]string{moreWins}, "first played 200 games with 201 wins"},
		// Its rows would be in the table twice.
		{[]string{filepath.Join(dir, "dev-a.json"), filepath.Join(dir, ".", "dev-a.json")}, "dev-a.json is listed twice"},
	} {
		cases = append(cases, tc)
	}
	// A device or a named pipe was read without end: /dev/zero took the
	// machine's memory, past any stop. (Unix only: elsewhere neither is
	// made here.)
	if _, err := os.Stat("/dev/zero"); err == nil {
		cases = append(cases, refusalCase{[]string{"--update", "/dev/zero", filepath.Join(dir, "dev-a.json")}, "not a regular file"})
	}
	if fifo := filepath.Join(dir, "fifo.md"); makeFifo(fifo) == nil {
		cases = append(cases, refusalCase{[]string{"--update", fifo, filepath.Join(dir, "dev-a.json")}, "a named pipe, not a regular file"})
	}
	for _, tc := range cases {
		// Input to fix, not work that failed: a usage error's 2.
		if code, _, errs := runMain(append([]string{"results"}, tc.args...)...); code != 2 || !strings.Contains(errs, tc.want) {
			t.Errorf("results %v: exit %d, %q; want 2 and %q", tc.args, code, errs, tc.want)
		}
	}
	if b2, _ := os.ReadFile(md); string(b2) != got {
		t.Errorf("a failed run changed the file")
	}
	// --update through a link rewrites the link's target, and keeps the
	// link and the file's mode.
	if err := os.Chmod(md, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.md")
	if err := os.Symlink("results.md", link); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := runMain("results", "--update", link, filepath.Join(dir, "dev-a.json")); code != 0 {
		t.Fatalf("--update through a link: exit %d: %s", code, errs)
	}
	fi, err := os.Lstat(link)
	if err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link was replaced: %v (%v)", fi.Mode(), err)
	}
	if fi, err = os.Stat(md); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("results.md's mode %v (%v); want 0600 kept", fi.Mode().Perm(), err)
	}
	if b, _ = os.ReadFile(md); strings.Count(string(b), "\n| classic-") != 2 {
		t.Fatalf("results.md was not rewritten through the link:\n%s", b)
	}
	got = string(b)
	// A stopped run (Ctrl-C) prints and rewrites nothing, --pair neither.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	devA := filepath.Join(dir, "dev-a.json")
	for _, o := range []resultsOptions{{files: []string{devA}}, {files: []string{devA}, update: md}, {files: []string{devA, devA}, pair: true}} {
		var out bytes.Buffer
		if err := runResults(ctx, o, &out, io.Discard); !errors.Is(err, context.Canceled) || out.Len() != 0 {
			t.Errorf("%+v stopped: %v, wrote %q", o, err, out.String())
		}
	}
	if b2, _ := os.ReadFile(md); string(b2) != got {
		t.Errorf("a stopped run changed the file")
	}
}

// writeEditedReport writes to path the eval report src changed by edit:
// a report is input like any other file.
func writeEditedReport(t *testing.T, path string, src []byte, edit func(rep map[string]any)) string {
	t.Helper()
	var rep map[string]any
	if err := json.Unmarshal(src, &rep); err != nil {
		t.Fatal(err)
	}
	edit(rep)
	out, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestResultsPair pairs two reports deal by deal: the rows must match the
// games they hold, counted here again on the seeds both played.
func TestResultsPair(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, args ...string) string {
		t.Helper()
		code, out, errs := runMain(append([]string{"eval", "--json"}, args...)...)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", name, code, errs)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	a := write("a.json", "--seeds", "1-30", "--policies", "first,random", "--per-game")
	b := write("b.json", "--seeds", "11-40", "--policies", "random,first", "--per-game")
	noGames := write("c.json", "--seeds", "1-3", "--policies", "first")
	twoSuits := write("d.json", "--seeds", "1-3", "--suits", "2", "--policies", "first", "--per-game")
	code, out, errs := runMain("results", "--pair", a, b)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var ra, rb evalReport
	for path, rep := range map[string]*evalReport{a: &ra, b: &rb} {
		if b, err := os.ReadFile(path); err != nil || json.Unmarshal(b, rep) != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
	score := func(rep evalReport, policy string) map[uint64]int {
		m := map[uint64]int{}
		for _, g := range rep.Games {
			if g.Policy == policy {
				m[g.Seed] = g.Score
			}
		}
		return m
	}
	first, random := score(ra, "first"), score(rb, "random")
	diff, n := 0, 0
	for seed, s := range first {
		if r, ok := random[seed]; ok {
			diff += s - r
			n++
		}
	}
	if n != 20 {
		t.Fatalf("%d common seeds", n)
	}
	same := fmt.Sprintf("| first (%s) | first (%s) | 20 | 0 | 0 | 0 | 0 | 1 | +0.0 (1) | +0.00 (1) |", a, b)
	against := fmt.Sprintf("| first (%s) | random (%s) | 20 | 0 | 0 | 0 | 0 | 1 | %+.1f (", a, b, float64(diff)/20)
	if strings.Count(out, "\n") != 6 || !strings.Contains(out, same) || !strings.Contains(out, against) {
		t.Fatalf("want rows %q and %q...; got\n%s", same, against, out)
	}
	// crafted writes a's report changed by edit: a report is input like
	// any other file.
	crafted := func(name string, edit func(rep map[string]any)) string {
		t.Helper()
		b, err := os.ReadFile(a)
		if err != nil {
			t.Fatal(err)
		}
		return writeEditedReport(t, filepath.Join(dir, name), b, edit)
	}
	firstGame := func(rep map[string]any) map[string]any { return rep["games"].([]any)[0].(map[string]any) }
	ghost := crafted("ghost.json", func(rep map[string]any) { firstGame(rep)["policy"] = "ghost" })
	twice := crafted("twice.json", func(rep map[string]any) { firstGame(rep)["seed"] = 2 })
	// Text the tables would print as it is: an escape sequence that
	// clears the terminal, a line break that splits a Markdown row.
	escape := crafted("escape.json", func(rep map[string]any) {
		rep["policies"].([]any)[0].(map[string]any)["policy"] = "first\x1b[2J"
		for _, g := range rep["games"].([]any) {
			g.(map[string]any)["policy"] = "first\x1b[2J"
		}
	})
	lineBreak := crafted("break.json", func(rep map[string]any) { rep["program_version"] = "spider\n| forged | row |" })
	// A field eval does not write, such as a newer build's game option.
	newer := crafted("newer.json", func(rep map[string]any) { rep["from_a_newer_build"] = 7 })
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{a}, "--pair wants two eval JSON files"},
		{[]string{ghost, b}, `game 1 is played by "ghost", which is not among its policies`},
		{[]string{a, twice}, `"first" plays seed 2 twice`},
		{[]string{escape, b}, `"first\x1b[2J" is not printable text`},
		{[]string{a, lineBreak}, `"spider\n| forged | row |" is not printable text`},
		{[]string{a, noGames}, "no games: pairing needs spider eval --per-game"},
		{[]string{a, newer}, `the field "from_a_newer_build" is not one this build's eval writes`},
		{[]string{a, twoSuits}, "played different games (--suits 1 and 2)"},
		{[]string{a, write("e.json", "--seeds", "50-52", "--policies", "first", "--per-game")}, "share no seed"},
	} {
		if code, _, errs := runMain(append([]string{"results", "--pair"}, tc.args...)...); code != 2 || !strings.Contains(errs, tc.want) {
			t.Errorf("results --pair %v: exit %d, %q; want 2, %q", tc.args, code, errs, tc.want)
		}
	}
	// Each option of kind game, those added later too, keeps two reports
	// apart; the others (what a policy is shown or rewarded) do not.
	for _, f := range env.OptionFields() {
		var o env.Options
		if err := f.Set(&o, f.Example); err != nil {
			t.Fatal(err)
		}
		other := crafted(f.Key+".json", func(rep map[string]any) { rep[f.Key] = f.Value(o) })
		code, _, errs := runMain("results", "--pair", a, other)
		if want := "played different games (--" + f.Flag + " "; f.Game && (code != 2 || !strings.Contains(errs, want)) {
			t.Errorf("%s at %s: exit %d, %q; want 2, %q", f.Key, f.Example, code, errs, want)
		} else if !f.Game && code != 0 {
			t.Errorf("%s at %s: exit %d, %q; want the pair", f.Key, f.Example, code, errs)
		}
	}
}

// TestResultsPairTinyP pairs reports whose p-values are too small to
// round: a p that underflows must not print as 0 (certainty), and the
// CSV must not round 2e-6 to four decimals of zeros.
func TestResultsPairTinyP(t *testing.T) {
	dir := t.TempDir()
	// shifted writes eval's report of seeds with every game's score raised
	// by shift.
	shifted := func(name, seeds string, shift float64) string {
		t.Helper()
		code, out, errs := runMain("eval", "--json", "--per-game", "--policies", "first", "--max-steps", "3", "--seeds", seeds)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", name, code, errs)
		}
		return writeEditedReport(t, filepath.Join(dir, name), []byte(out), func(rep map[string]any) {
			for _, g := range rep["games"].([]any) {
				g.(map[string]any)["score"] = g.(map[string]any)["score"].(float64) + shift
			}
		})
	}
	// 1,100 deals a point apart: the sign test's p is 2^-1099, below what
	// a float64 holds.
	a, b := shifted("a.json", "1-1100", 0), shifted("b.json", "1-1100", 1)
	code, out, errs := runMain("results", "--pair", a, b)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "| -1.0 (< 1e-300) | +0.00 (1) |") {
		t.Errorf("an underflowed p is not shown as such:\n%s", out)
	}
	// 20 deals: 2^-19, about 1.9e-6.
	c := shifted("c.json", "1-20", 1)
	code, out, errs = runMain("results", "--pair", "--csv", a, c)
	if code != 0 {
		t.Fatalf("--csv: exit %d: %s", code, errs)
	}
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil || len(rows) != 2 {
		t.Fatalf("csv %q: %v", out, err)
	}
	col := map[string]string{}
	for i, h := range rows[0] {
		col[h] = rows[1][i]
	}
	if p, err := strconv.ParseFloat(col["score_p"], 64); err != nil || math.Abs(p-math.Exp2(-19)) > 1e-15 {
		t.Errorf("score_p %q (%v); want 2^-19", col["score_p"], err)
	}
	if col["runs_p"] != "1" {
		t.Errorf("runs_p %q; want 1", col["runs_p"])
	}
}

// TestResultsPairLists pairs comma-separated lists of reports: parts of a
// seed range pair game with game as one report would, and several plays
// of a deal (draws) are pooled and compared by each deal's share of wins.
func TestResultsPairLists(t *testing.T) {
	dir := t.TempDir()
	code, out, errs := runMain("eval", "--json", "--seeds", "1-4", "--policies", "first", "--per-game")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	// withWins writes the report with its games won as the pattern says,
	// so that the shares below are known.
	withWins := func(name string, draw int, won ...bool) string {
		t.Helper()
		var rep map[string]any
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatal(err)
		}
		rep["draw"] = draw
		games := rep["games"].([]any)
		if len(games) != len(won) {
			t.Fatalf("%d games", len(games))
		}
		for i, g := range games {
			g.(map[string]any)["won"] = won[i]
			g.(map[string]any)["score"] = 100 + i // the same in every report
			if draw != 0 {
				// Another draw plays other games.
				g.(map[string]any)["actions_sha256"] = fmt.Sprintf("%016x", 1000*draw+i)
			}
		}
		b, err := json.Marshal(rep)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	a1 := withWins("a1.json", 0, true, true, false, false)
	a2 := withWins("a2.json", 1, true, false, false, false)
	b1 := withWins("b1.json", 0, false, true, true, false)
	// Deal shares: A 1, 1/2, 0, 0; B 0, 1, 1, 0. A more often on deal 1, B
	// on deals 2 and 3 (sign test of 1 against 2: p = 1).
	code, got, errs := runMain("results", "--pair", a1+","+a2, b1)
	// The same scores on both sides: each deal's mean over its plays is
	// compared, so the difference is nothing (a sum would double A's).
	want := fmt.Sprintf("| first (%s,%s) | first (%s) | 4 | 8 | 4 | 3 | 2 | 1 | 2 | 1 | +0.0 (1) | +0.00 (1) |", a1, a2, b1)
	if code != 0 || !strings.Contains(got, "| deals A won more often |") || !strings.Contains(got, want) {
		t.Fatalf("exit %d (%s); want a row starting %q, got\n%s", code, errs, want, got)
	}
	// The same row for a program.
	code, got, errs = runMain("results", "--pair", "--json", a1+","+a2, b1)
	var pairs []pairResult
	if err := json.Unmarshal([]byte(got), &pairs); code != 0 || err != nil || len(pairs) != 1 {
		t.Fatalf("--pair --json: exit %d (%s), %v:\n%s", code, errs, err, got)
	}
	if p := pairs[0]; p.Test != "sign" || p.Deals != 4 || p.APlays != 8 || p.BPlays != 4 || p.AWon != 3 || p.BWon != 2 || p.AMore != 1 || p.BMore != 2 || p.WinsP != 1 || p.ScoreDiff != 0 || p.AFiles != a1+","+a2 {
		t.Errorf("--pair --json: %+v", p)
	}
	code, got, errs = runMain("results", "--pair", "--csv", a1, b1)
	if recs, err := csv.NewReader(strings.NewReader(got)).ReadAll(); code != 0 || err != nil || len(recs) != 2 || recs[1][11] != "mcnemar" {
		t.Errorf("--pair --csv: exit %d (%s), %v:\n%s", code, errs, err, got)
	}
	evalTo := func(name string, args ...string) string { return evalToFile(t, dir, name, args...) }
	// Two halves of a seed range pair as one report: game with game.
	h1, h2 := evalTo("h1.json", "--policies", "first", "--seeds", "1-2"), evalTo("h2.json", "--policies", "first", "--seeds", "3-4")
	code, got, errs = runMain("results", "--pair", h1+","+h2, b1)
	want = fmt.Sprintf("| first (%s,%s) | first (%s) | 4 | 0 | 2 | 0 | 2 | 0.5 |", h1, h2, b1)
	if code != 0 || !strings.Contains(got, want) {
		t.Fatalf("exit %d (%s); want a row starting %q, got\n%s", code, errs, want, got)
	}
	if code, _, errs := runMain("results", "--pair", a1+","+filepath.Join(dir, "missing.json"), b1); code != 2 || !strings.Contains(errs, "missing.json") {
		t.Errorf("a missing file in a list: exit %d, %q", code, errs)
	}
	if code, _, errs := runMain("results", "--pair", a1+","+a1, b1); code != 2 || !strings.Contains(errs, "listed twice") {
		t.Errorf("a report listed twice: exit %d, %q", code, errs)
	}
	// A copy under another name holds the same games: they count once,
	// and pair game with game as the report alone does.
	code, got, errs = runMain("results", "--pair", a1+","+withWins("copy.json", 0, true, true, false, false), b1)
	if want := "| 4 | 2 | 2 | 1 | 1 | 1 |"; code != 0 || !strings.Contains(got, "| only A won |") || !strings.Contains(got, want) {
		t.Errorf("a report pooled with its copy: exit %d (%s); want a row with %q, got\n%s", code, errs, want, got)
	}
	// Search at two budgets: each side's rows say which, and a side pools
	// only draws of one budget.
	budget := func(name string, args ...string) string {
		t.Helper()
		return evalTo(name, append([]string{"--seeds", "1-2", "--policies", "search"}, args...)...)
	}
	s50, s60, s50d1 := budget("s50.json", "--nodes", "50"), budget("s60.json", "--nodes", "60"), budget("s50d1.json", "--nodes", "50", "--draw", "1")
	code, got, errs = runMain("results", "--pair", s50, s60)
	if want := fmt.Sprintf("| search (50 nodes) (%s) | search (60 nodes) (%s) |", s50, s60); code != 0 || !strings.Contains(got, want) {
		t.Errorf("exit %d (%s); want a row starting %q, got\n%s", code, errs, want, got)
	}
	code, got, errs = runMain("results", "--pair", s50d1, s50+","+s50d1)
	if want := fmt.Sprintf("| search (50 nodes, draw 1) (%s) | search (50 nodes) (%s,%s) |", s50d1, s50, s50d1); code != 0 || !strings.Contains(got, want) {
		t.Errorf("exit %d (%s); want a row starting %q, got\n%s", code, errs, want, got)
	}
	if code, _, errs := runMain("results", "--pair", s50+","+s60, s50d1); code != 2 || !strings.Contains(errs, "played search with different budgets (--nodes 50 and 60") {
		t.Errorf("two budgets pooled: exit %d, %q", code, errs)
	}
	// Draws pooled in either order name no draw; a time limit a move is a
	// budget too.
	code, got, errs = runMain("results", "--pair", s50, s50d1+","+s50)
	if want := fmt.Sprintf("| search (50 nodes) (%s) | search (50 nodes) (%s,%s) |", s50, s50d1, s50); code != 0 || !strings.Contains(got, want) {
		t.Errorf("exit %d (%s); want a row starting %q, got\n%s", code, errs, want, got)
	}
	sms := budget("sms.json", "--nodes", "50", "--move-ms", "1000")
	if code, _, errs := runMain("results", "--pair", s50+","+sms, s50d1); code != 2 || !strings.Contains(errs, "--move-ms 0 and 1000") {
		t.Errorf("two time limits pooled: exit %d, %q", code, errs)
	}
	// A budget binds only the reports that played search: a greedy
	// report pools with any, and its games are counted once. (Eval now
	// refuses --nodes without a search; reports from before say it.)
	g := budget("g.json", "--policies", "greedy")
	var greedy map[string]any
	if b, err := os.ReadFile(g); err != nil || json.Unmarshal(b, &greedy) != nil {
		t.Fatalf("g.json: %v", err)
	}
	greedy["nodes"] = 70
	if b, err := json.Marshal(greedy); err != nil || os.WriteFile(g, b, 0o644) != nil {
		t.Fatalf("g.json: %v", err)
	}
	code, got, errs = runMain("results", "--pair", s50+","+g, s50d1)
	if want := fmt.Sprintf("| greedy (%s,%s) | search (50 nodes, draw 1) (%s) | 2 |", s50, g, s50d1); code != 0 || !strings.Contains(got, want) {
		t.Errorf("exit %d (%s); want a row starting %q, got\n%s", code, errs, want, got)
	}
}

// evalToFile writes the report of spider eval --json --per-game with args
// to dir/name.
func evalToFile(t *testing.T, dir, name string, args ...string) string {
	t.Helper()
	code, o, errs := runMain(append([]string{"eval", "--json", "--per-game"}, args...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(o), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// editReport writes to dir/name the report of the file src after edit,
// which is given the report and its first policy.
func editReport(t *testing.T, src, dir, name string, edit func(rep, first map[string]any)) string {
	t.Helper()
	var rep map[string]any
	if b, err := os.ReadFile(src); err != nil || json.Unmarshal(b, &rep) != nil {
		t.Fatalf("%s: %v", src, err)
	}
	edit(rep, rep["policies"].([]any)[0].(map[string]any))
	path := filepath.Join(dir, name)
	if b, err := json.Marshal(rep); err != nil || os.WriteFile(path, b, 0o644) != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return path
}

// TestResultsPoolsOnePlayer: a side of --pair pools the reports of one
// player under a name, and names it from the reports that played it.
// Before, two networks saved in turn under one path, or two builds, were
// pooled as draws of one policy, and a side whose first report lacked
// search named it without its budget.
func TestResultsPoolsOnePlayer(t *testing.T) {
	dir := t.TempDir()
	a := evalToFile(t, dir, "a.json", "--policies", "greedy", "--seeds", "1-2")
	b := evalToFile(t, dir, "b.json", "--policies", "greedy", "--seeds", "3-4")
	both := evalToFile(t, dir, "both.json", "--policies", "greedy", "--seeds", "1-4")
	if code, out, errs := runMain("results", "--pair", a+","+b, both); code != 0 || !strings.Contains(out, "| greedy (") {
		t.Fatalf("two parts of one player: exit %d: %s%s", code, out, errs)
	}
	build := editReport(t, b, dir, "build.json", func(rep, _ map[string]any) { rep["program_version"] = "v0.0.1 (another build)" })
	network := editReport(t, b, dir, "network.json", func(_, first map[string]any) { first["checkpoint_sha256"] = strings.Repeat("ab", 32) })
	spec := editReport(t, b, dir, "spec.json", func(_, first map[string]any) { first["spec"] = "Greedy" })
	for _, tc := range []struct{ other, want string }{
		{build, "played greedy as different builds (" + programVersion() + " and v0.0.1 (another build)): only draws or parts of one player pool"},
		{network, "played greedy as networks of different files (checkpoint sha256 none and " + strings.Repeat("ab", 32) + ")"},
		{spec, "played greedy as different specs (greedy and Greedy)"},
	} {
		if code, _, errs := runMain("results", "--pair", a+","+tc.other, both); code != 2 || !strings.Contains(errs, tc.want) {
			t.Errorf("pooled with %s: exit %d, %q; want 2 and %q", filepath.Base(tc.other), code, errs, tc.want)
		}
	}
	// A remote agent is known by its name: its address is often a
	// temporary one, and the build does not choose its moves.
	remote := func(name, src, addr, program string) string {
		return editReport(t, src, dir, name, func(rep, first map[string]any) {
			first["spec"], rep["program_version"] = "remote:unix:"+addr, program
		})
	}
	ra, rb := remote("ra.json", a, "/tmp/x/s", "v1"), remote("rb.json", b, "/tmp/y/s", "v2")
	if code, out, errs := runMain("results", "--pair", ra+","+rb, both); code != 0 || !strings.Contains(out, "| greedy (") {
		t.Errorf("two parts of one remote agent: exit %d: %s%s", code, out, errs)
	}
	// The side's search is named with its budget whichever report comes
	// first, though the other did not play it.
	s := evalToFile(t, dir, "s.json", "--policies", "search", "--nodes", "50", "--seeds", "3-4")
	for _, side := range []string{a + "," + s, s + "," + a} {
		code, out, errs := runMain("results", "--pair", side, both)
		if want := "| search (50 nodes) (" + side + ") |"; code != 0 || !strings.Contains(out, want) {
			t.Errorf("side %s: exit %d (%s); want a row with %q, got\n%s", side, code, errs, want, out)
		}
	}
}

// TestResultsRefusesRowsEvalNeverWrites: a report's arrays are read an
// item at a time, and an item eval never writes is refused before the
// next is read. Before, a report of a million empty policies ({}, 3 MB)
// took 1.8 GB of memory to print, and one of 21 million, 63 MB, ended
// results with Go's fatal out of memory.
func TestResultsRefusesRowsEvalNeverWrites(t *testing.T) {
	dir := t.TempDir()
	head := `{"schema":"spider-eval/1","suite":{"name":"classic-1suit-test","version":"1"},"deals":1000,"seeds":"100001-101000","program_version":"x",`
	write := func(name, body string, items string, n int) string {
		t.Helper()
		var b strings.Builder
		b.WriteString(head + body + "[")
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strings.ReplaceAll(items, "N", fmt.Sprint(i)))
		}
		b.WriteString("]}")
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	policy := `"policies":[{"policy":"first","spec":"first","games":1000}],`
	empty := write("empty.json", `"policies":`, `{}`, 1_000_000)
	many := write("many.json", `"policies":`, `{"policy":"pN","spec":"first"}`, maxReportPolicies+1)
	games := write("games.json", policy+`"games":`, `{}`, 1_000_000)
	hash := write("hash.json", policy+`"games":`, `{"policy":"first","seed":N,"won":false,"score":1,"runs":0,"moves":9,"actions_sha256":"not hex digits!"}`, 3)
	good := write("good.json", policy+`"games":`, `{"policy":"first","seed":N,"won":false,"score":1,"runs":0,"moves":9,"actions_sha256":"0123456789abcdef"}`, 3)
	short := write("short.json", policy+`"games":`, `{"policy":"first","seed":N,"won":false,"score":1,"runs":0,"moves":9,"actions_sha256":"01234567"}`, 3)
	// Fields eval never writes, in a row or the suite, and a row without
	// its result (read as a loss at score 0, it would pair).
	extraGame := write("extra-game.json", policy+`"games":`, `{"policy":"first","seed":N,"won":false,"score":1,"runs":0,"moves":9,"actions_sha256":"0123456789abcdef","extra_field":1}`, 3)
	extraPolicy := write("extra-policy.json", `"policies":`, `{"policy":"first","spec":"first","newthing":1}`, 1)
	noWon := write("no-won.json", policy+`"games":`, `{"policy":"first","seed":N,"score":1,"runs":0,"moves":9,"actions_sha256":"0123456789abcdef"}`, 3)
	extraSuite := filepath.Join(dir, "extra-suite.json")
	if err := os.WriteFile(extraSuite, []byte(strings.Replace(head, `"version":"1"}`, `"version":"1","note":"x"}`, 1)+policy[:len(policy)-1]+"}"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A million keys eval never writes (12 MB): refused at the first,
	// without a list of them all (which took 14 times the file).
	var keys strings.Builder
	keys.WriteString(`{"schema":"spider-eval/1"`)
	for i := range 1_000_000 {
		fmt.Fprintf(&keys, `,"k%d":0`, i)
	}
	keys.WriteString("}")
	manyKeys := filepath.Join(dir, "keys.json")
	if err := os.WriteFile(manyKeys, []byte(keys.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	// A key given twice would add its second array to the first.
	twice := write("twice.json", policy+`"policies":`, `{"policy":"second","spec":"first"}`, 1)
	array := filepath.Join(dir, "array.json")
	wrong := filepath.Join(dir, "wrong.json")
	if os.WriteFile(array, []byte(" []"), 0o644) != nil || os.WriteFile(wrong, []byte(`{"deals":"many"}`), 0o644) != nil {
		t.Fatal("writing the reports")
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{empty}, "policies: item 1: a policy without its name or spec"},
		{[]string{many}, "policies: more than 256"},
		{[]string{"--pair", empty, good}, "policies: item 1: a policy without its name or spec"},
		{[]string{"--pair", good, games}, "games: item 1: a game without its policy"},
		{[]string{"--pair", hash, good}, `games: item 1: a game whose actions_sha256 is not 16 hex digits ("not hex digits!")`},
		{[]string{"--pair", short, good}, `games: item 1: a game whose actions_sha256 is not 16 hex digits ("01234567")`},
		{[]string{twice}, "policies given twice"},
		{[]string{"--pair", extraGame, good}, `games: item 1: the field "extra_field" is not one this build's eval writes`},
		{[]string{extraPolicy}, `policies: item 1: the field "newthing" is not one this build's eval writes`},
		{[]string{"--pair", noWon, good}, "games: item 1: a game without its won"},
		{[]string{extraSuite}, `the field "note" is not one this build's eval writes`},
		{[]string{manyKeys}, `the field "k0" is not one this build's eval writes`},
		{[]string{array}, "not an eval report: want a JSON object"},
		{[]string{wrong}, `not an eval report: "deals" holds a JSON string`},
		// A device is refused unread: /dev/zero was read to 64 MiB first.
		{[]string{"/dev/zero"}, "/dev/zero: not a regular file (a device or socket)"},
		{[]string{dir}, "a folder, not a file"},
	} {
		var code int
		var errs string
		got := alloccount.Bytes(func() { code, _, errs = runMain(append([]string{"results"}, tc.args...)...) })
		if code != 2 || !strings.Contains(errs, tc.want) {
			t.Errorf("results %v: exit %d, %q; want 2, %q", tc.args, code, errs, tc.want)
		}
		// The file is read whole (up to 64 MiB); its items are not all
		// decoded.
		if got > 32<<20 {
			t.Errorf("results %v allocated %d bytes", tc.args, got)
		}
	}
	// The plain table does not read the games; the pairing reads good's.
	if code, out, errs := runMain("results", games); code != 0 || !strings.Contains(out, "| first |") {
		t.Errorf("results of a suite report with games it does not read: exit %d: %s%s", code, out, errs)
	}
	if code, out, errs := runMain("results", "--pair", good, good+"x"); code != 2 || !strings.Contains(errs, "no such file") {
		t.Errorf("results --pair with a missing file: exit %d: %s%s", code, out, errs)
	}
	// What --pair holds is checked before it reads: 8 times the files'
	// bytes (pairRowBytes a row of at least minGameRowBytes).
	fi, err := os.Stat(good)
	if err != nil {
		t.Fatal(err)
	}
	fakeMemory(t, 32<<30, 2*fi.Size()*6)
	if code, _, errs := runMain("results", "--pair", good, good); code != 2 || !strings.Contains(errs, "pairing") || !strings.Contains(errs, "pair fewer reports at a time") {
		t.Errorf("results --pair with %d bytes available: exit %d: %s", 2*fi.Size()*6, code, errs)
	}
	fakeMachine(t)
	if code, out, errs := runMain("results", "--pair", good, good); code != 0 || !strings.Contains(out, "| first (") {
		t.Errorf("results --pair of good reports: exit %d: %s%s", code, out, errs)
	}
}

// TestSameBuildIgnoresTheBLASBeyondNetworks: one binary's parts run on two
// machines pool, though OpenBLAS picked another kernel on each, unless a
// network played (its sums depend on the kernel).
func TestSameBuildIgnoresTheBLASBeyondNetworks(t *testing.T) {
	zen := "v0.0.0-x (commit abc, go1.26.8 linux/amd64, blas openblas (Zen kernel))"
	haswell := "v0.0.0-x (commit abc, go1.26.8 linux/amd64, blas openblas (Haswell kernel))"
	gonum := "v0.0.0-x (commit abc, go1.26.8 linux/amd64, blas gonum)"
	other := "v0.0.0-y (commit def, go1.26.8 linux/amd64, blas openblas (Zen kernel))"
	for _, c := range []struct {
		a, b string
		net  bool
		want bool
	}{
		{zen, haswell, false, true}, {zen, gonum, false, true}, {zen, other, false, false},
		{zen, haswell, true, false}, {zen, zen, true, true}, {"dev (go1.26.8 linux/amd64)", gonum, false, false},
	} {
		if got := sameBuild(c.a, c.b, c.net); got != c.want {
			t.Errorf("sameBuild(%q, %q, net %v) = %v, want %v", c.a, c.b, c.net, got, c.want)
		}
	}
}

// TestResultsPairRefusesTwoRulesForFailedGames: a report written before
// failed_score kept its failed games' scores; pairing it with one that
// counts them at the lowest they could reach would compare two rules as
// one, and is refused where games failed.
func TestResultsPairRefusesTwoRulesForFailedGames(t *testing.T) {
	dir := t.TempDir()
	a := evalToFile(t, dir, "a.json", "--policies", "greedy", "--seeds", "1-2")
	b := evalToFile(t, dir, "b.json", "--policies", "random", "--seeds", "1-2")
	failed := func(name, src string, old bool) string {
		return editReport(t, src, dir, name, func(rep, _ map[string]any) {
			rep["games"].([]any)[0].(map[string]any)["failure"] = "illegal action 1081 at move 3"
			if old {
				delete(rep, "failed_score")
			}
		})
	}
	newer, older := failed("new.json", a, false), failed("old.json", b, true)
	want := "score their failed games differently (at the lowest score they could still have ended with and at the score they had: a report written before failed_score)"
	if code, _, errs := runMain("results", "--pair", newer, older); code != 2 || !strings.Contains(errs, want) {
		t.Errorf("two rules: exit %d, %q; want 2 and %q", code, errs, want)
	}
	// One rule, or a report whose games all ended, pairs.
	for _, pair := range [][2]string{{newer, failed("new2.json", b, false)}, {newer, b}, {older, a}} {
		if code, _, errs := runMain("results", "--pair", pair[0], pair[1]); code != 0 {
			t.Errorf("%s against %s: exit %d: %s", filepath.Base(pair[0]), filepath.Base(pair[1]), code, errs)
		}
	}
	var rep map[string]any
	if raw, err := os.ReadFile(a); err != nil || json.Unmarshal(raw, &rep) != nil || rep["failed_score"] != "lowest" {
		t.Errorf("eval writes failed_score %v", rep["failed_score"])
	}
}

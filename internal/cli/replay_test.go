package cli

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/draw"
	"image/gif"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spiderenv/spider/agents"
	"github.com/spiderenv/spider/env"
	"github.com/spiderenv/spider/internal/rng"
	"github.com/spiderenv/spider/picture"
	"github.com/spiderenv/spider/record"
)

// saveRandomGame plays seed's deal at random until it ends (the step
// limit included), saves it into dir and returns the file and the final
// position.
func saveRandomGame(t *testing.T, dir string, o env.Options, seed uint64) (string, env.State) {
	t.Helper()
	r := env.MustRules(o)
	s := env.NewGame(r, seed)
	g := rng.New(seed)
	var actions []env.Action
	for !s.Over() {
		legal := s.AppendLegal(nil)
		a := legal[g.IntN(len(legal))]
		if _, err := s.Step(a); err != nil {
			t.Fatal(err)
		}
		actions = append(actions, a)
	}
	path := filepath.Join(dir, "game.spider")
	if err := record.Save(path, record.New(r, seed, "random", actions, &s)); err != nil {
		t.Fatal(err)
	}
	return path, s
}

// TestReplaySaysTruncated replays a game stopped by the step limit: its
// summary must say so, not "playing".
func TestReplaySaysTruncated(t *testing.T) {
	path, final := saveRandomGame(t, t.TempDir(), env.Options{Suits: 2, MaxSteps: 12}, 3)
	if !final.Truncated() {
		t.Fatal("the game should have reached its step limit")
	}
	var out bytes.Buffer
	if err := runReplay(context.Background(), replayOptions{}, path, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "replayed exactly: truncated, score") {
		t.Fatalf("the summary does not say truncated:\n%s", out.String())
	}
}

// TestReplayWritesGIFAndFrames replays a short game into an animation and
// PNG frames, and reads both back: a frame per position, the deal and the
// end held longer, each picture the position's.
func TestReplayWritesGIFAndFrames(t *testing.T) {
	dir := t.TempDir()
	path, final := saveRandomGame(t, dir, env.Options{Suits: 4, MaxSteps: 15}, 5)
	o := replayOptions{gif: filepath.Join(dir, "game.gif"), frames: filepath.Join(dir, "frames"), delay: 250 * time.Millisecond}
	var out, errb bytes.Buffer
	if err := runReplay(context.Background(), o, path, &out, &errb); err != nil {
		t.Fatal(err)
	}
	// A short replay's end is said once, on stdout: no progress line
	// repeats it on stderr.
	if strings.Contains(errb.String(), "replay: drew") {
		t.Errorf("a 16-picture replay wrote progress: %q", errb.String())
	}
	if !strings.Contains(out.String(), "wrote "+o.gif+": 16 frames") || !strings.Contains(out.String(), "wrote 16 pictures into "+o.frames) {
		t.Errorf("the output does not say what was written:\n%s", out.String())
	}
	f, err := os.Open(o.gif)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	anim, err := gif.DecodeAll(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(anim.Image) != 16 {
		t.Fatalf("%d frames for 15 moves; want one per position, the deal included", len(anim.Image))
	}
	for i, d := range anim.Delay {
		want := 25
		switch i {
		case 0:
			want = 100
		case len(anim.Delay) - 1:
			want = 300
		}
		if d != want {
			t.Errorf("frame %d shows for %d cs, want %d", i, d, want)
		}
	}
	screen := image.NewPaletted(image.Rect(0, 0, picture.Width, picture.Height), picture.Palette)
	for _, frame := range anim.Image {
		draw.Draw(screen, frame.Bounds(), frame, frame.Bounds().Min, draw.Src)
	}
	want := picture.Paletted(picture.Draw(make([]uint8, picture.Size), &final))
	if !bytes.Equal(screen.Pix, want.Pix) {
		t.Error("the animation's last frame is not the final position")
	}
	names, _ := filepath.Glob(filepath.Join(o.frames, "*.png"))
	if len(names) != 16 || filepath.Base(names[0]) != "0000.png" || filepath.Base(names[15]) != "0015.png" {
		t.Fatalf("frames %v; want 0000.png to 0015.png", names)
	}
	// Another replay into the same folder would mix two games' frames,
	// even where only the first is left.
	again := replayOptions{frames: o.frames, delay: time.Second}
	if err := runReplay(context.Background(), again, path, io.Discard, io.Discard); !isUsage(err) || !strings.Contains(err.Error(), "already holds pictures") {
		t.Fatalf("frames into a folder of frames: %v", err)
	}
	first := replayOptions{frames: filepath.Join(dir, "first"), delay: time.Second}
	if err := os.MkdirAll(first.frames, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(first.frames, "0000.png"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := runReplay(context.Background(), first, path, io.Discard, io.Discard); !isUsage(err) || !strings.Contains(err.Error(), "already holds pictures") {
		t.Fatalf("frames into a folder holding 0000.png: %v", err)
	}
	pf, err := os.Open(names[15])
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	last, err := png.Decode(pf)
	if err != nil {
		t.Fatal(err)
	}
	if m, ok := last.(*image.Paletted); !ok || !bytes.Equal(m.Pix, want.Pix) {
		t.Error("the last PNG is not the final position")
	}
}

// TestReplayStoppedLeavesNoFrames stops a replay while it draws frames:
// the frames written are removed (and the folders it made, nested or
// not), so the same command can run again, while a folder it did not make
// stays.
func TestReplayStoppedLeavesNoFrames(t *testing.T) {
	dir := t.TempDir()
	path, _ := saveRandomGame(t, dir, env.Options{Suits: 4, MaxSteps: 15}, 5)
	for _, tc := range []struct {
		folder string
		made   bool
	}{{"a", true}, {"b", false}, {"c/d/e", true}} {
		o := replayOptions{frames: filepath.Join(dir, tc.folder), delay: time.Second, every: 1}
		if !tc.made {
			if err := os.Mkdir(o.frames, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		ctx, cancel := context.WithCancel(context.Background())
		if err := runReplay(ctx, o, path, &cancelOn{text: "\n3. ", cancel: cancel}, io.Discard); !errors.Is(err, context.Canceled) {
			t.Fatalf("%+v: a replay stopped at move 3: %v", tc, err)
		}
		checkNoFrames(t, o.frames, filepath.Join(dir, strings.Split(tc.folder, "/")[0]), tc.made)
		var out bytes.Buffer
		if err := runReplay(context.Background(), o, path, &out, io.Discard); err != nil || !strings.Contains(out.String(), "wrote 16 pictures") {
			t.Fatalf("%+v: the replay run again: %v\n%s", tc, err, out.String())
		}
	}
}

// TestReplayStoppedInTurningPointLeavesNoFrames stops a replay in its
// turning-point search, once every frame is drawn but before they are
// reported: they are removed as well.
func TestReplayStoppedInTurningPointLeavesNoFrames(t *testing.T) {
	dir := t.TempDir()
	var stderr bytes.Buffer
	// Greedy loses deal 3 within 200 moves, and the oracle wins it (TestReplayTurningPoint).
	if code := Main([]string{"eval", "--policies", "greedy", "--seeds", "3", "--max-steps", "200", "--record", dir}, strings.NewReader(""), io.Discard, &stderr); code != 0 {
		t.Fatalf("eval: exit %d: %s", code, stderr.String())
	}
	o := replayOptions{frames: filepath.Join(dir, "frames"), delay: time.Second, turning: true, nodes: 2000}
	ctx, cancel := context.WithCancel(context.Background())
	// The first bisection step is reported after every frame is drawn.
	err := runReplay(ctx, o, filepath.Join(dir, "greedy-max-steps200-3.spider"), io.Discard, &cancelOn{text: "turning point: the oracle from move", cancel: cancel})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("a replay stopped in its turning-point search: %v", err)
	}
	checkNoFrames(t, o.frames, o.frames, true)
}

// checkNoFrames fails unless frames holds no picture, and top (frames or
// a parent) is gone if the replay made it, there if not.
func checkNoFrames(t *testing.T, frames, top string, made bool) {
	t.Helper()
	names, _ := filepath.Glob(filepath.Join(frames, "*.png"))
	_, err := os.Stat(top)
	if len(names) != 0 || (err == nil) == made {
		t.Fatalf("%d frames left in %s; %s: %v", len(names), frames, top, err)
	}
}

// TestReplayPicturesRefuseBadInput checks that a record that does not
// replay, or a delay out of range, leaves no file behind.
func TestReplayPicturesRefuseBadInput(t *testing.T) {
	dir := t.TempDir()
	path, _ := saveRandomGame(t, dir, env.Options{Suits: 1, MaxSteps: 10}, 2)
	g, err := record.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	g.Score++ // the replay will end with another score
	if err := record.Save(path, g); err != nil {
		t.Fatal(err)
	}
	o := replayOptions{gif: filepath.Join(dir, "bad.gif"), frames: filepath.Join(dir, "frames"), delay: time.Second}
	if err := runReplay(context.Background(), o, path, &bytes.Buffer{}, io.Discard); err == nil || !strings.Contains(err.Error(), "the record says") {
		t.Fatalf("a record that does not replay: %v", err)
	}
	o.delay = time.Millisecond
	if err := runReplay(context.Background(), o, path, &bytes.Buffer{}, io.Discard); err == nil || !strings.Contains(err.Error(), "--delay 1ms") {
		t.Fatalf("a delay of 1ms: %v", err)
	} else if _, ok := err.(usageError); !ok {
		t.Fatalf("a delay of 1ms: %v is not a usage error", err)
	}
	for _, p := range []string{o.gif, o.frames} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s exists after a refused replay", p)
		}
	}
	// A GIF that cannot be written is refused before any frame is.
	good, _ := saveRandomGame(t, t.TempDir(), env.Options{Suits: 1, MaxSteps: 10}, 2)
	o = replayOptions{gif: filepath.Join(dir, "missing", "a.gif"), frames: filepath.Join(dir, "frames"), delay: time.Second}
	err = runReplay(context.Background(), o, good, &bytes.Buffer{}, io.Discard)
	if _, ok := err.(usageError); !ok || !strings.Contains(err.Error(), "--gif "+o.gif+": its folder") {
		t.Fatalf("a GIF in a missing folder: %v", err)
	}
	if _, err := os.Stat(o.frames); !os.IsNotExist(err) {
		t.Errorf("frames were written for a replay whose GIF cannot be (%v)", err)
	}
}

// TestReplayTable replays a game as CSV and as JSON: a row per position,
// the deal first, each row's figures those of the position the game
// reaches when played again here, the last row saying how it ended.
func TestReplayTable(t *testing.T) {
	// A game search wins has runs, empty columns and deals to show.
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	if code := Main([]string{"eval", "--policies", "search", "--seeds", "7", "--nodes", "3000", "--record", dir}, strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatalf("eval: exit %d: %s", code, stderr.String())
	}
	path := filepath.Join(dir, "search-n3000-7.spider") // the budget in its name
	g, err := record.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	o := env.Options{Suits: 1}
	r := env.MustRules(o)
	s := env.NewGame(r, 7)
	want := [][]string{replayHeader, {"0", "", "500", "0", "44", "50", "0", "playing"}}
	dealt, emptied := false, false
	for i, raw := range g.Actions {
		a := env.Action(raw)
		s.Step(a)
		dealt = dealt || a == env.Deal
		empty := 0
		for c := range env.NumColumns {
			if s.Height(c) == 0 {
				empty++
			}
		}
		emptied = emptied || empty > 0
		want = append(want, []string{strconv.Itoa(i + 1), a.String(), strconv.Itoa(s.Score()), strconv.Itoa(s.Runs()),
			strconv.Itoa(s.TotalFaceDown()), strconv.Itoa(s.StockLeft()), strconv.Itoa(empty), statusOf(&s)})
	}
	if !dealt || !emptied || want[len(want)-1][7] != "won" {
		t.Fatalf("search's game should deal, empty a column and win; it ends %v", want[len(want)-1])
	}
	var out bytes.Buffer
	if err := runReplay(context.Background(), replayOptions{every: 1, out: outputFlags{csv: true}}, path, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&out).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(want) {
		t.Fatalf("CSV: %d rows, want %d", len(rows), len(want))
	}
	for i := range rows {
		if !reflect.DeepEqual(rows[i], want[i]) {
			t.Fatalf("CSV row %d: %v, want %v", i, rows[i], want[i])
		}
	}

	out.Reset()
	if err := runReplay(context.Background(), replayOptions{every: 1, out: outputFlags{json: true}}, path, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	var sum replaySummary
	if err := json.Unmarshal(out.Bytes(), &sum); err != nil {
		t.Fatal(err)
	}
	// The options at the top, "rules" the rule set's name, as in eval's
	// and bench's reports (it was an object of the options); a move as
	// the CSV writes it (8>5x1, not 8\u003e5x1).
	var top map[string]any
	if err := json.Unmarshal(out.Bytes(), &top); err != nil || top["rules"] != "classic" || top["suits"] != 1.0 {
		t.Errorf("the JSON's rules %v and suits %v (%v)", top["rules"], top["suits"], err)
	}
	if !strings.Contains(out.String(), `"action":"`+want[1][1]+`"`) || strings.Contains(out.String(), `\u003e`) {
		t.Errorf("the JSON's moves are escaped:\n%.400s", out.String())
	}
	if sum.Seed != 7 || sum.Player != "search (3000 nodes)" || sum.Suits != 1 || len(sum.Positions) != len(want)-1 {
		t.Fatalf("JSON summary: seed %d, player %q, %d suits, %d positions", sum.Seed, sum.Player, sum.Suits, len(sum.Positions))
	}
	for i, p := range sum.Positions {
		got := []string{strconv.Itoa(p.Move), p.Action, strconv.Itoa(p.Score), strconv.Itoa(p.Runs),
			strconv.Itoa(p.FaceDown), strconv.Itoa(p.StockLeft), strconv.Itoa(p.Empty), p.Status}
		if !reflect.DeepEqual(got, want[i+1]) {
			t.Fatalf("JSON position %d: %v, want %v", i, got, want[i+1])
		}
	}

	// --every thins the rows as it thins the boards: the deal, every
	// tenth move and the last (0: the deal and the last).
	for _, every := range []int{10, 0} {
		out.Reset()
		stderr.Reset()
		if code := Main([]string{"replay", path, "--csv", "--every", strconv.Itoa(every)}, strings.NewReader(""), &out, &stderr); code != 0 {
			t.Fatalf("--every %d: exit %d: %s", every, code, stderr.String())
		}
		rows, err := csv.NewReader(&out).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		var wantRows [][]string
		for i, w := range want {
			if i <= 1 || (every > 0 && (i-1)%every == 0) || i == len(want)-1 {
				wantRows = append(wantRows, w)
			}
		}
		if !reflect.DeepEqual(rows, wantRows) {
			t.Fatalf("--every %d: %d rows, want %d: %v", every, len(rows), len(wantRows), rows)
		}
	}

	// A record that does not replay writes no table.
	g.Score++
	if err := record.Save(path, g); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := runReplay(context.Background(), replayOptions{every: 1, out: outputFlags{csv: true}}, path, &out, io.Discard); err == nil || out.Len() > 0 {
		t.Fatalf("a record that does not replay: %v, wrote %d bytes", err, out.Len())
	}
	// Nor any board: it is refused, as input to fix, before it is shown.
	if err := runReplay(context.Background(), replayOptions{every: 1}, path, &out, io.Discard); out.Len() > 0 {
		t.Fatalf("a record that does not replay, as text: %v, wrote %d bytes", err, out.Len())
	} else {
		wantUsage(t, "a record that does not replay, as text", err, "the record says")
	}
	stderr.Reset()
	if code := Main([]string{"replay", path, "--json", "--csv"}, strings.NewReader(""), &out, &stderr); code != 2 || !strings.Contains(stderr.String(), "choose one of --json and --csv") {
		t.Fatalf("--json --csv: exit %d, %q", code, stderr.String())
	}
}

// TestReplayTurningPoint bisects greedy's lost games for the move after
// which the oracle no longer wins, and checks the answer against the
// oracle played again from both sides of it.
func TestReplayTurningPoint(t *testing.T) {
	if testing.Short() {
		t.Skip("plays about ten oracle games")
	}
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	// Within 200 moves greedy loses deal 3 and the oracle wins it; within
	// 100 the oracle cannot win it at all; greedy wins deal 2.
	for _, steps := range []string{"200", "100"} {
		if code := Main([]string{"eval", "--policies", "greedy", "--seeds", "2,3", "--max-steps", steps, "--record", filepath.Join(dir, steps)}, strings.NewReader(""), &stdout, &stderr); code != 0 {
			t.Fatalf("eval: exit %d: %s", code, stderr.String())
		}
	}
	const nodes = 2000
	path := filepath.Join(dir, "200", "greedy-max-steps200-3.spider")
	stdout.Reset()
	stderr.Reset()
	if err := runReplay(context.Background(), replayOptions{every: 1, out: outputFlags{json: true}, turning: true, nodes: nodes}, path, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	var sum replaySummary
	if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil {
		t.Fatal(err)
	}
	tp := sum.Turning
	if tp == nil || !tp.OracleWinsDeal || tp.Move < 1 || tp.Move > 200 || tp.Games < 2 || tp.Nodes != nodes {
		t.Fatalf("turning point %+v", tp)
	}
	if n := strings.Count(stderr.String(), "turning point: the oracle from move "); n != tp.Games {
		t.Errorf("%d oracle games reported on stderr, %d counted:\n%s", n, tp.Games, stderr.String())
	}
	g, err := record.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	r, _ := g.RulesOf()
	s := env.NewGame(r, 3)
	for _, a := range g.Actions[:tp.Move-1] {
		s.Step(env.Action(a))
	}
	before := agents.PlayFrom(context.Background(), s, 3, &agents.Search{Nodes: nodes, Peek: true})
	if want := env.Action(g.Actions[tp.Move-1]).String(); tp.Action != want || !before.Won || tp.OracleMoves != before.Moves || tp.Before.Move != tp.Move-1 || tp.Before.FaceDown != s.TotalFaceDown() {
		t.Fatalf("turning point %+v: the move played there is %s; the oracle from before it: won %v in %d moves", tp, want, before.Won, before.Moves)
	}
	// The row of the position before it names the move that led there,
	// as every row of the table does.
	if tp.Move > 1 && tp.Before.Action != env.Action(g.Actions[tp.Move-2]).String() {
		t.Fatalf("the position before the turning point (move %d) came by %s, not %s", tp.Before.Move, env.Action(g.Actions[tp.Move-2]), tp.Before.Action)
	}
	s.Step(env.Action(g.Actions[tp.Move-1]))
	if after := agents.PlayFrom(context.Background(), s, 3, &agents.Search{Nodes: nodes, Peek: true}); after.Won {
		t.Fatalf("the oracle wins after move %d too", tp.Move)
	}

	for _, tc := range []struct{ file, want string }{
		{filepath.Join("100", "greedy-max-steps100-3.spider"), "turning point: none, the oracle (2000 nodes) does not win this deal either"},
		{filepath.Join("200", "greedy-max-steps200-2.spider"), "turning point: none, the game was won"},
	} {
		stdout.Reset()
		if err := runReplay(context.Background(), replayOptions{turning: true, nodes: nodes}, filepath.Join(dir, tc.file), &stdout, io.Discard); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(stdout.String(), tc.want) {
			t.Errorf("%s: the output does not say %q:\n%s", tc.file, tc.want, stdout.String())
		}
	}

	// A game stopped before its end (spider play saves one its player
	// quits), here after 2 and after 0 of the lost game's moves: the
	// oracle still wins from its last position, so nothing turned it.
	// Before, the bisection named move 2 all the same, and a record of
	// no moves panicked.
	for _, k := range []int{2, 0} {
		s := env.NewGame(r, 3)
		var played []env.Action
		for _, a := range g.Actions[:k] {
			s.Step(env.Action(a))
			played = append(played, env.Action(a))
		}
		part := filepath.Join(dir, fmt.Sprintf("stopped-%d.spider", k))
		if err := record.Save(part, record.New(r, 3, "greedy", played, &s)); err != nil {
			t.Fatal(err)
		}
		stdout.Reset()
		if err := runReplay(context.Background(), replayOptions{turning: true, nodes: nodes}, part, &stdout, io.Discard); err != nil {
			t.Fatal(err)
		}
		if want := "turning point: none, the oracle (2000 nodes) still wins from the last position"; !strings.Contains(stdout.String(), want) {
			t.Errorf("a game stopped after %d moves: the output does not say %q:\n%s", k, want, stdout.String())
		}
		// In the JSON, no position before a turning point that is not.
		stdout.Reset()
		if err := runReplay(context.Background(), replayOptions{turning: true, nodes: nodes, out: outputFlags{json: true}}, part, &stdout, io.Discard); err != nil {
			t.Fatal(err)
		}
		var sum struct {
			Turning map[string]any `json:"turning_point"`
		}
		if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil || sum.Turning["oracle_wins_end"] != true || sum.Turning["before"] != nil {
			t.Errorf("a game stopped after %d moves, as JSON: %v, %v", k, sum.Turning, err)
		}
	}
	if code := Main([]string{"replay", path, "--turning-point", "--csv"}, strings.NewReader(""), &stdout, &stderr); code != 2 {
		t.Errorf("--turning-point --csv: exit %d", code)
	}
}

// TestTurningPointOracleGamesShowProgress: an oracle game of a large
// budget ran over a minute with nothing on stderr; while one plays, a
// plain line says so every progressEvery.
func TestTurningPointOracleGamesShowProgress(t *testing.T) {
	real := progressEvery
	progressEvery = time.Millisecond
	t.Cleanup(func() { progressEvery = real })
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	if code := Main([]string{"eval", "--policies", "greedy", "--seeds", "3", "--max-steps", "100", "--record", dir}, strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatalf("eval: exit %d: %s", code, stderr.String())
	}
	stderr.Reset()
	// The oracle cannot win deal 3 within 100 moves: one game, from the deal.
	if err := runReplay(context.Background(), replayOptions{turning: true, nodes: 2000}, filepath.Join(dir, "greedy-max-steps100-3.spider"), io.Discard, &stderr); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
	last := lines[len(lines)-1]
	if len(lines) < 2 || !strings.HasPrefix(lines[0], "turning point: still playing the oracle from move 0 of 100, ") ||
		last != "turning point: the oracle from move 0 of 100 does not win" || strings.Contains(stderr.String(), "\r") {
		t.Fatalf("stderr %q; want lines that the oracle game is still playing, then its result", stderr.String())
	}
}

// TestReplayTurningPointChecksFirst replays, with --turning-point, a
// record of a million actions whose first is illegal: it must be refused
// as such before anything is kept per action (1.2 KB a position would be
// over a gigabyte).
func TestReplayTurningPointChecksFirst(t *testing.T) {
	r := env.MustRules(env.Options{MaxSteps: -1})
	s := env.NewGame(r, 1)
	g := record.New(r, 1, "long", nil, &s)
	g.Actions = make([]uint16, 1<<20)
	for i := range g.Actions {
		g.Actions[i] = uint16(env.Deal)
	}
	g.Actions[0] = uint16(env.Action(0)) // not legal at this deal (checked below)
	if s.Legal(env.Action(0)) {
		t.Fatal("action 0 is legal at the deal; pick another")
	}
	path := filepath.Join(t.TempDir(), "long.spider")
	if err := record.Save(path, g); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	err := runReplay(context.Background(), replayOptions{turning: true}, path, io.Discard, io.Discard)
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "action 1:") {
		t.Fatalf("got %v, want the first action refused", err)
	}
	// The record itself is 2 MB in memory; a position per action would be 1.2 GB.
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
		t.Fatalf("allocated %d MB before refusing the record", grew>>20)
	}
}

// randomRecord saves a game of n random legal moves under o and returns
// its path.
func randomRecord(t *testing.T, o env.Options, seed uint64, n int) string {
	t.Helper()
	r := env.MustRules(o)
	s := env.NewGame(r, seed)
	g := rng.New(seed)
	var acts []env.Action
	for range n {
		l := s.AppendLegal(nil)
		a := l[g.IntN(len(l))]
		s.Step(a)
		acts = append(acts, a)
	}
	path := filepath.Join(t.TempDir(), "r.spider")
	if err := record.Save(path, record.New(r, seed, "test", acts, &s)); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestTurningPointEndsWithoutStepLimit: in a game without a step limit
// (as spider play records them), or with a step limit of 2^30 (a record
// of 196 bytes made the oracle play on for years), the oracle plays
// within 1000 moves of each position, so the bisection ends even where
// it cannot win.
func TestTurningPointEndsWithoutStepLimit(t *testing.T) {
	for _, limit := range []int{-1, 1 << 30} {
		path := randomRecord(t, env.Options{Suits: 2, MaxSteps: limit}, 7, 50)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		var out bytes.Buffer
		if err := runReplay(ctx, replayOptions{turning: true, nodes: 500}, path, &out, io.Discard); err != nil {
			t.Fatalf("step limit %d: %v\n%s", limit, err, out.String())
		}
		if !strings.Contains(out.String(), "turning point:") {
			t.Fatalf("step limit %d: no turning point line:\n%s", limit, out.String())
		}
	}
}

// TestReplayTableIsStreamed: --json and --csv of a long game write its
// rows as they come, holding none of them: halfway through the output the
// heap holds less than a megabyte more than before (the JSON of every row
// encoded at once, as before, held 8 MB more for these 20,001 positions),
// and the output is still every position, the JSON one value.
func TestReplayTableIsStreamed(t *testing.T) {
	path := randomRecord(t, env.Options{Suits: 1, MaxSteps: -1}, 3, 20000)
	for _, o := range []outputFlags{{json: true}, {csv: true}} {
		var out bytes.Buffer
		probe := &heapProbe{at: 1 << 20, out: &out}
		runtime.GC()
		var base runtime.MemStats
		runtime.ReadMemStats(&base)
		if err := runReplay(context.Background(), replayOptions{every: 1, out: o}, path, io.MultiWriter(&out, probe), io.Discard); err != nil {
			t.Fatal(err)
		}
		// The test's own buffer holds what was written so far.
		if held := int64(probe.heap) - int64(base.HeapAlloc) - int64(probe.buffered); held > 1<<20 {
			t.Errorf("json %v: %d bytes more on the heap halfway through the output", o.json, held)
		}
		if o.json {
			var sum replaySummary
			if err := json.Unmarshal(out.Bytes(), &sum); err != nil || len(sum.Positions) != 20001 || sum.Positions[20000].Move != 20000 {
				t.Fatalf("--json: %d positions, %v", len(sum.Positions), err)
			}
		} else if rows, err := csv.NewReader(&out).ReadAll(); err != nil || len(rows) != 20002 {
			t.Fatalf("--csv: %d rows, %v", len(rows), err)
		}
	}
}

// TestReplayTableStoppedStaysWhole: a stop while the table is written
// leaves stdout one JSON document, marked stopped, with the positions
// written so far (as a stopped eval's report), or a CSV of whole rows.
func TestReplayTableStoppedStaysWhole(t *testing.T) {
	path := randomRecord(t, env.Options{Suits: 1, MaxSteps: -1}, 3, 20000)
	for _, o := range []outputFlags{{json: true}, {csv: true}} {
		ctx, cancel := context.WithCancel(context.Background())
		var out bytes.Buffer
		stopper := &stopAt{at: 64 << 10, stop: cancel}
		err := runReplay(ctx, replayOptions{every: 1, out: o}, path, io.MultiWriter(&out, stopper), io.Discard)
		cancel()
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("json %v: %v; want the stop", o.json, err)
		}
		if o.json {
			var sum struct {
				replaySummary
				Stopped *bool `json:"stopped"`
			}
			if err := json.Unmarshal(out.Bytes(), &sum); err != nil || sum.Stopped == nil || !*sum.Stopped {
				t.Fatalf("--json stopped: %v, stopped %v", err, sum.Stopped)
			}
			n := len(sum.Positions)
			if n < 2 || n >= 20001 || sum.Positions[n-1].Move != n-1 {
				t.Fatalf("--json stopped: %d positions, the last move %d", n, sum.Positions[n-1].Move)
			}
		} else if rows, err := csv.NewReader(&out).ReadAll(); err != nil || len(rows) < 3 || len(rows) >= 20002 {
			t.Fatalf("--csv stopped: %d rows, %v", len(rows), err)
		}
	}
	// A table written whole says nothing of a stop.
	var out bytes.Buffer
	if err := runReplay(context.Background(), replayOptions{every: 1000, out: outputFlags{json: true}}, path, &out, io.Discard); err != nil || bytes.Contains(out.Bytes(), []byte(`"stopped"`)) {
		t.Fatalf("a whole table: %v\n%s", err, out.Bytes())
	}
}

// stopAt is a writer that calls stop once at bytes written.
type stopAt struct {
	at, n int
	stop  func()
}

func (s *stopAt) Write(b []byte) (int, error) {
	s.n += len(b)
	if s.n >= s.at {
		s.stop()
	}
	return len(b), nil
}

// heapProbe is a writer that reads the heap once at bytes written; out is
// the buffer written beside it, whose capacity then is buffered.
type heapProbe struct {
	at, n    int
	out      *bytes.Buffer
	heap     uint64
	buffered int
	done     bool
}

func (p *heapProbe) Write(b []byte) (int, error) {
	p.n += len(b)
	if !p.done && p.n >= p.at {
		p.done = true
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		p.heap = m.HeapAlloc
		p.buffered = p.out.Cap()
	}
	return len(b), nil
}

// TestReplayPicturesAreBounded: --frames writes at most maxFrames files,
// and both are refused before anything is drawn.
func TestReplayPicturesAreBounded(t *testing.T) {
	o := replayOptions{frames: filepath.Join(t.TempDir(), "f"), delay: time.Second}
	if _, err := newPictures(o, maxFrames, io.Discard); !isUsage(err) || !strings.Contains(err.Error(), "at most 100000 pictures") {
		t.Fatalf("%d positions into --frames: %v", maxFrames+1, err)
	}
	if _, err := os.Stat(o.frames); !os.IsNotExist(err) {
		t.Fatal("a refused --frames made its folder")
	}
	if p, err := newPictures(o, maxFrames-1, io.Discard); err != nil || p.total != maxFrames {
		t.Fatalf("%d positions: %v", maxFrames, err)
	}
	// A record of too many positions is refused before it is checked by
	// replaying it, which takes seconds for the longest one: here the
	// check would have refused it otherwise (its moves are not legal).
	path := filepath.Join(t.TempDir(), "long.spider")
	long := record.Game{Version: record.Version, Game: env.MustRules(env.Options{Suits: 1, MaxSteps: -1}).Options(), Player: "x", Actions: make([]uint16, maxFrames)}
	if err := record.Save(path, long); err != nil {
		t.Fatal(err)
	}
	err := runReplay(context.Background(), o, path, io.Discard, io.Discard)
	if !isUsage(err) || !strings.Contains(err.Error(), "at most 100000 pictures") {
		t.Fatalf("%d positions into --frames: %v", maxFrames+1, err)
	}
}

// brokenWriter fails every write, as stdout on a full disk or a closed
// pipe does.
type brokenWriter struct{}

func (brokenWriter) Write([]byte) (int, error) { return 0, errors.New("no space left on device") }

// TestTextOutputThatCannotBeWrittenFails: demo and replay write their text
// a line at a time; one that cannot be written exits 1 saying so, as
// --json and --csv did, where before it exited 0 with the answer lost.
func TestTextOutputThatCannotBeWrittenFails(t *testing.T) {
	dir := t.TempDir()
	var stderr bytes.Buffer
	if code := Main([]string{"eval", "--policies", "greedy", "--seeds", "3", "--max-steps", "50", "--record", dir}, strings.NewReader(""), io.Discard, &stderr); code != 0 {
		t.Fatalf("eval: exit %d: %s", code, stderr.String())
	}
	for _, args := range [][]string{
		{"demo", "--max-steps", "20"},
		{"replay", filepath.Join(dir, "greedy-max-steps50-3.spider")},
		{"replay", filepath.Join(dir, "greedy-max-steps50-3.spider"), "--every", "0"},
	} {
		stderr.Reset()
		if code := Main(args, strings.NewReader(""), brokenWriter{}, &stderr); code != 1 || !strings.Contains(stderr.String(), "writing the output: no space left on device") {
			t.Errorf("%v: exit %d, %q", args, code, stderr.String())
		}
	}
}

// TestTurningPointIsTheLastWinnablePosition: the oracle's search is
// bounded, so it can lose from a position and win from a later one; the
// turning point is the move after the last position it wins from. An
// oracle that wins from positions 0-5 and 8-9 of a 12-move game stands in
// (a bisection named move 6, after which it still won; s76 found this in
// 4 of 7 lost deals of docs/results.md).
func TestTurningPointIsTheLastWinnablePosition(t *testing.T) {
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	if code := Main([]string{"eval", "--policies", "greedy", "--seeds", "3", "--max-steps", "12", "--record", dir}, strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatalf("eval: exit %d: %s", code, stderr.String())
	}
	g, err := record.Load(filepath.Join(dir, "greedy-max-steps12-3.spider"))
	if err != nil || len(g.Actions) != 12 {
		t.Fatalf("%d actions, %v", len(g.Actions), err)
	}
	real := playOracle
	t.Cleanup(func() { playOracle = real })
	var played []int
	playOracle = func(_ context.Context, s env.State, _ uint64, _ int) agents.Result {
		i := s.Steps()
		played = append(played, i)
		return agents.Result{Won: i <= 5 || i == 8 || i == 9, Moves: 100 - i}
	}
	tp, err := findTurningPoint(context.Background(), g, 10, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if tp.Move != 10 || tp.Action != env.Action(g.Actions[9]).String() || tp.OracleMoves != 91 || tp.Before.Move != 9 {
		t.Fatalf("turning point %+v; want move 10, after position 9", tp)
	}
	// Every position after it was played, the last first, and none before
	// it but the deal; the last position, at the step limit, is a dead
	// end (the stock is not dealt: no other is).
	if want := []int{0, 11, 10, 9}; !slices.Equal(played, want) || tp.Games != len(want) || tp.DeadEnds != 1 {
		t.Fatalf("oracle games from %v (%d counted, %d dead ends), want %v", played, tp.Games, tp.DeadEnds, want)
	}
}

// TestDeadEnd: a position from which no card can ever be turned is a dead
// end, however its cards move; one move more room, and it is not.
func TestDeadEnd(t *testing.T) {
	r := env.MustRules(env.Options{Suits: 1})
	var kings strings.Builder
	for c := 1; c <= 9; c++ {
		fmt.Fprintf(&kings, "%d: 5s | Ks\n", c)
	}
	for _, tc := range []struct {
		last string
		dead bool
	}{
		{"10: | Ks Qs", true}, // the queen moves between the kings, nothing more
		{"10: | Qs", false},   // the queen moved leaves a column for a king: a card turns
		{"10: | Qs\nstock: 2s 2s 2s 2s 2s 2s 2s 2s 2s 2s", false},
	} {
		s, err := env.ParseState(r, kings.String()+tc.last)
		if err != nil {
			t.Fatal(err)
		}
		known := map[uint64]bool{}
		if got := deadEnd(&s, known); got != tc.dead {
			t.Errorf("%q: dead end %v, want %v", tc.last, got, tc.dead)
		}
		if tc.dead && (len(known) != 10 || !known[s.Key()]) {
			t.Errorf("%q: %d positions known dead, want the queen on each of the 10 kings", tc.last, len(known))
		}
	}
}

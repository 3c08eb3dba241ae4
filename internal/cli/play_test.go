package cli

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/spiderenv/spider/agents"
	"github.com/spiderenv/spider/env"
	"github.com/spiderenv/spider/record"
)

// TestPlayHintsWithSearch: without --hint, play's hints come from search,
// which plans as it does in eval, not from greedy.
func TestPlayHintsWithSearch(t *testing.T) {
	const seed = 3
	r := env.MustRules(env.Options{Suits: 1, MaxSteps: -1})
	s := env.NewGame(r, seed)
	v := agents.NewView(&s, s.AppendLegal(nil), 0, false)
	m, err := agents.New("search")
	if err != nil {
		t.Fatal(err)
	}
	a := m()
	a.Begin(seed)
	want := a.Act(v).Action
	if g := (&agents.Greedy{}).Act(v).Action; g == want {
		t.Fatalf("greedy and search both hint %v on seed %d: pick a deal where they differ", g, seed)
	}
	for _, extra := range [][]string{nil, {"--hint", ""}} { // empty is the default too
		fs := pflag.NewFlagSet("play", pflag.ContinueOnError)
		run := playCommand(fs)
		if err := fs.Parse(append([]string{"--suits", "1", "--seed", "3"}, extra...)); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := run(context.Background(), nil, strings.NewReader("hint\nq\n"), &out, io.Discard); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), "hint: "+want.String()+" (") {
			t.Fatalf("play %v: the hint is not search's %v:\n%s", extra, want, out.String())
		}
	}
}

// TestPlaySession drives a whole terminal session through stdin and reads
// what a player would see.
func TestPlaySession(t *testing.T) {
	r := env.MustRules(env.Options{Suits: 1, MaxSteps: -1})
	s := env.NewGame(r, 3)
	hint := (&agents.Greedy{}).Act(agents.NewView(&s, s.AppendLegal(nil), 0, false))
	short := strings.Split(hint.Action.String(), "x")[0] // "4>6", one count fits
	rec := filepath.Join(t.TempDir(), "me.spider")
	input := strings.Join([]string{"?", "hint", "moves", "1>1", "zap", short, "undo", "undo", hint.Action.String(), "deal", "q"}, "\n") + "\n"
	var out bytes.Buffer
	o := playOptions{game: env.Options{Suits: 1, MaxSteps: -1}, seed: 3, record: rec, hint: "greedy"}
	if err := runPlay(context.Background(), o, strings.NewReader(input), &out); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{
		"deal 3. Type ? for help.",
		s.Render(),                             // the first board as a player sees it
		"u, undo",                              // help
		"hint: " + hint.Action.String() + " (", // hint with a reason
		"legal: ",                              // moves
		"columns are 1 to 10 and must differ",  // 1>1
		"\"zap\" is not a command or a move",   // garbage
		"nothing to undo",                      // the second undo
		"deal: -1",
		"the game is saved in " + rec, // at quit
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the session lacks %q:\n%s", want, text)
		}
	}
	if strings.Count(text, hint.Action.String()+": -1") != 2 {
		t.Errorf("the move %v (typed short and in full) should show twice:\n%s", hint.Action, text)
	}
	if _, err := os.Stat(rec); err != nil {
		t.Fatalf("no record saved: %v", err)
	}
	var rp bytes.Buffer
	if err := runReplay(context.Background(), replayOptions{every: 1}, rec, &rp, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rp.String(), "replayed exactly") || !strings.Contains(rp.String(), "2. deal") {
		t.Fatalf("replay:\n%s", rp.String())
	}
}

func TestEvalRecordsReplay(t *testing.T) {
	dir := t.TempDir()
	o := smallEval()
	o.seeds, o.record = "4-5", dir
	if err := runEval(context.Background(), o, &bytes.Buffer{}, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.spider"))
	if len(files) != 4 {
		t.Fatalf("records %v, want 2 policies x 2 deals", files)
	}
	for _, f := range files {
		var out bytes.Buffer
		if err := runReplay(context.Background(), replayOptions{every: 0}, f, &out, io.Discard); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
	bad := filepath.Join(dir, "bad.spider")
	os.WriteFile(bad, []byte{1, 2, 3}, 0o644)
	if err := runReplay(context.Background(), replayOptions{}, bad, &bytes.Buffer{}, io.Discard); err == nil || !strings.Contains(err.Error(), "bad.spider") {
		t.Fatalf("a corrupt record: %v", err)
	}
}

// TestResolveExplainsTheCount checks that a move with a bad count is told
// what is wrong with the count, not that its columns are.
func TestResolveExplainsTheCount(t *testing.T) {
	s := env.NewGame(env.MustRules(env.Options{Suits: 1}), 3)
	mask := make([]uint8, env.NumActions)
	s.Mask(mask)
	for line, want := range map[string]string{
		"3>7x13": "card count 13: at most 12 cards move at once",
		"3>7x0":  "card count 0: a move takes at least one card",
		"3>7x":   `the card count after "x" is missing`,
		"3>7xz":  `card count "z" is not a number from 1 to 12`,
		"3>3x2":  "source and destination are the same column",
		"1>1":    "columns are 1 to 10 and must differ",
		"0>4":    "columns are 1 to 10 and must differ",
		// Quoted as typed, not lowercased (which also turned bytes that
		// are not UTF-8 into U+FFFD).
		"FOO":      `"FOO" is not a command or a move`,
		"\xff\xfe": `"\xff\xfe" is not a command or a move`,
		"DEAL!":    `"DEAL!" is not a command or a move`,
	} {
		_, err := resolve(line, mask)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.HasSuffix(err.Error(), "(type ? for help)") {
			t.Errorf("resolve(%q): %v; want an error saying %q", line, err, want)
		}
	}
}

// TestPlayQuotesWhatWasTyped: a refused line is quoted as typed, not
// lowercased (which also turned bytes that are not UTF-8 into U+FFFD).
func TestPlayQuotesWhatWasTyped(t *testing.T) {
	var out bytes.Buffer
	in := strings.NewReader("FOO\n\xff\xfe\n11>3\nq\n")
	if err := runPlay(context.Background(), playOptions{game: env.Options{Suits: 1}, seed: 3}, in, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"FOO" is not a command`, `"\xff\xfe" is not a command`, `"11>3": columns are 1 to 10`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %s in:\n%s", want, out.String())
		}
	}
}

// TestPlaySkipsOverlongLines: a line longer than a command can be is
// skipped with a word, and the moves after it are still read and saved.
func TestPlaySkipsOverlongLines(t *testing.T) {
	rec := filepath.Join(t.TempDir(), "me.spider")
	input := "deal\n" + strings.Repeat("a", 70000) + "\ndeal\nq"
	var out bytes.Buffer
	o := playOptions{game: env.Options{Suits: 1}, seed: 3, record: rec}
	if err := runPlay(context.Background(), o, strings.NewReader(input), &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "a line of more than 4096 bytes is not a command") || strings.Count(out.String(), "deal: -1") != 2 {
		t.Fatalf("session:\n%.2000s", out.String())
	}
	g, err := record.Load(rec)
	if err != nil || len(g.Actions) != 2 {
		t.Fatalf("the record holds %d actions (%v), want both deals", len(g.Actions), err)
	}
}

// TestReadLineAtItsLimit: a line of maxLine bytes is a line (its
// command's own error says what is wrong with it) whatever its end, one
// byte more is skipped whole; a last line without its newline is held to
// the same limit.
func TestReadLineAtItsLimit(t *testing.T) {
	for _, tc := range []struct {
		input   string
		tooLong bool
	}{
		{strings.Repeat("x", maxLine) + "\nq\n", false},
		{strings.Repeat("x", maxLine+1) + "\nq\n", true},
		{strings.Repeat("x", maxLine), false},
		{strings.Repeat("x", maxLine) + "\r\nq\n", false},
		{strings.Repeat("x", maxLine+1) + "\r\nq\n", true},
		{strings.Repeat("x", maxLine+1), true},
	} {
		in := readLine(bufio.NewReader(strings.NewReader(tc.input)))
		if in.err != nil || in.tooLong != tc.tooLong || !tc.tooLong && len(in.text) != maxLine {
			t.Errorf("input of %d bytes: %d bytes read, too long %v, %v; want too long %v", len(tc.input), len(in.text), in.tooLong, in.err, tc.tooLong)
		}
	}
}

// TestPlayKeepsTheLastGameWithAMove: a new deal left without a move does
// not replace the record of the game before it.
func TestPlayKeepsTheLastGameWithAMove(t *testing.T) {
	rec := filepath.Join(t.TempDir(), "me.spider")
	o := playOptions{game: env.Options{Suits: 1}, seed: 3, record: rec}
	if err := runPlay(context.Background(), o, strings.NewReader("deal\nn\nq\n"), &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	g, err := record.Load(rec)
	if err != nil || g.Seed != 3 || len(g.Actions) != 1 {
		t.Fatalf("the record holds deal %d with %d actions (%v); want deal 3 with its one deal", g.Seed, len(g.Actions), err)
	}
}

// TestPlayRecordIsNotTheHintsNetwork: --record naming the network that
// --hint plays is refused before the game: the record replaced the
// network.
func TestPlayRecordIsNotTheHintsNetwork(t *testing.T) {
	net := filepath.Join(t.TempDir(), "m.spider")
	b, err := os.ReadFile(filepath.Join("..", "..", "models", "classic-1suit.spider"))
	if err != nil || os.WriteFile(net, b, 0o644) != nil {
		t.Fatal(err)
	}
	o := playOptions{game: env.Options{Suits: 1}, seed: 3, hint: "nn:" + net, record: net}
	err = runPlay(context.Background(), o, strings.NewReader("deal\nq\n"), &bytes.Buffer{})
	if !isUsage(err) || !strings.Contains(err.Error(), "is the network --hint plays") {
		t.Fatalf("--record over the hint's network: %v", err)
	}
	if after, err := os.ReadFile(net); err != nil || !bytes.Equal(after, b) {
		t.Fatalf("the network changed: %v", err)
	}
}

// TestPlayRecordReplacesOnlyARecord: --record naming a file that holds
// something else (a network, notes) is refused before the game; an
// earlier record or an empty file is replaced by the game.
func TestPlayRecordReplacesOnlyARecord(t *testing.T) {
	dir := t.TempDir()
	net, notes := filepath.Join(dir, "m.spider"), filepath.Join(dir, "notes.txt")
	b, err := os.ReadFile(filepath.Join("..", "..", "models", "classic-1suit.spider"))
	if err != nil || os.WriteFile(net, b, 0o644) != nil || os.WriteFile(notes, []byte("notes\n"), 0o644) != nil {
		t.Fatal(err)
	}
	for _, path := range []string{net, notes} {
		o := playOptions{game: env.Options{Suits: 1}, seed: 3, hint: "greedy", record: path}
		err := runPlay(context.Background(), o, strings.NewReader("deal\nq\n"), &bytes.Buffer{})
		if !isUsage(err) || !strings.Contains(err.Error(), "exists and is not a readable game record: not replaced") {
			t.Errorf("--record over %s: %v", path, err)
		}
	}
	if after, err := os.ReadFile(net); err != nil || !bytes.Equal(after, b) {
		t.Fatalf("the network changed: %v", err)
	}
	if after, err := os.ReadFile(notes); err != nil || string(after) != "notes\n" {
		t.Fatalf("the notes changed: %v", err)
	}
	empty := filepath.Join(dir, "empty.spider")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for seed, moves := range map[uint64]string{3: "deal\nq\n", 4: "deal\ndeal\nq\n"} { // the second over the first's record
		o := playOptions{game: env.Options{Suits: 1}, seed: seed, hint: "greedy", record: empty}
		if err := runPlay(context.Background(), o, strings.NewReader(moves), &bytes.Buffer{}); err != nil {
			t.Fatal(err)
		}
		if g, err := record.Load(empty); err != nil || g.Seed != seed {
			t.Fatalf("the record holds deal %d (%v); want %d", g.Seed, err, seed)
		}
	}
}

// playDeal types "deal" into a play reading from pw and waits until out
// shows it played.
func playDeal(t *testing.T, pw io.Writer, out *lockedBuffer) {
	t.Helper()
	if _, err := pw.Write([]byte("deal\n")); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(out.String(), "deal: -1"); {
		if time.Now().After(deadline) {
			t.Fatalf("the deal was not played:\n%s", out.String())
		}
		time.Sleep(time.Millisecond)
	}
}

// TestPlayStopsWhileWaiting: a Ctrl-C while the player thinks ends the
// game at once, and the game so far is saved.
func TestPlayStopsWhileWaiting(t *testing.T) {
	rec := filepath.Join(t.TempDir(), "me.spider")
	pr, pw := io.Pipe()
	defer pw.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var out lockedBuffer
	go func() {
		done <- runPlay(ctx, playOptions{game: env.Options{Suits: 1}, seed: 3, record: rec}, pr, &out)
	}()
	playDeal(t, pw, &out)
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "saved in") {
			t.Fatalf("stopped play returned %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("play did not stop while waiting for a line")
	}
	g, err := record.Load(rec)
	if err != nil || len(g.Actions) != 1 {
		t.Fatalf("the record holds %d actions (%v), want the deal", len(g.Actions), err)
	}
}

// TestPlaySaveErrorIsEscaped: a game that cannot be saved at "new" says
// why on stdout, naming the file: escapes in its name must not reach the
// terminal there either.
func TestPlaySaveErrorIsEscaped(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "gone")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	rec := filepath.Join(dir, "\x1b]0;title\a\x1b[31mred.spider")
	pr, pw := io.Pipe()
	var out lockedBuffer
	done := make(chan error, 1)
	go func() {
		done <- runPlay(context.Background(), playOptions{game: env.Options{Suits: 1}, seed: 3, record: rec}, pr, &out)
	}()
	playDeal(t, pw, &out)
	if err := os.RemoveAll(dir); err != nil { // the save now fails
		t.Fatal(err)
	}
	if _, err := pw.Write([]byte("n\nq\n")); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("play did not end")
	}
	if got := out.String(); !strings.Contains(got, `\x1b]0;title\a\x1b[31mred.spider`) || strings.ContainsRune(got, 0x1b) {
		t.Fatalf("the failed save's message is missing or unescaped:\n%q", got)
	}
}

// TestPathChecksNameAFileInTheWay: a file where a folder should be is
// named as such, not as a folder that does not exist or a raw stat error.
func TestPathChecksNameAFileInTheWay(t *testing.T) {
	file := filepath.Join(t.TempDir(), "afile")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	want := file + " is not a folder"
	if err := checkFilePath(filepath.Join(file, "x.gif"), "x.gif"); err == nil || err.Error() != want {
		t.Errorf("checkFilePath: %v, want %q", err, want)
	}
	if err := checkCreatable(filepath.Join(file, "sub", "deeper")); err == nil || err.Error() != want {
		t.Errorf("checkCreatable: %v, want %q", err, want)
	}
}

// TestPlayAfterTheGameEnds: a move, a deal or moves after the game ended
// say so in play's words; they showed env's to a program ("call Reset").
func TestPlayAfterTheGameEnds(t *testing.T) {
	var out bytes.Buffer
	o := playOptions{game: env.Options{Suits: 1, MaxSteps: 2}, seed: 3}
	if err := runPlay(context.Background(), o, strings.NewReader("d\nd\nd\nm\n1>2\nq\n"), &out); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(out.String(), gameOver); got != 3 || strings.Contains(out.String(), "call Reset") || strings.Contains(out.String(), "0 legal") {
		t.Errorf("after the step limit, %d game-over lines:\n%s", got, out.String())
	}
}

// TestPlayRecordThroughALinkAndItsFailures: --record through a link
// writes the link's target (the rename replaced the link with a plain
// file), and a save that fails names the record.
func TestPlayRecordThroughALinkAndItsFailures(t *testing.T) {
	dir := t.TempDir()
	target, link := filepath.Join(dir, "real.spider"), filepath.Join(dir, "link.spider")
	if err := os.Symlink("real.spider", link); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	o := playOptions{game: env.Options{Suits: 1}, seed: 3, record: link}
	if err := runPlay(context.Background(), o, strings.NewReader("d\nq\n"), &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link was replaced: %v", err)
	}
	if g, err := record.Load(target); err != nil || len(g.Actions) != 1 {
		t.Fatalf("the link's target holds %v (%v)", g.Actions, err)
	}
	// The record's folder goes away mid-game: q says which save failed.
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	o.record = filepath.Join(sub, "g.spider")
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- runPlay(context.Background(), o, pr, io.Discard) }()
	pw.Write([]byte("d\n"))
	if err := os.RemoveAll(sub); err != nil {
		t.Fatal(err)
	}
	pw.Write([]byte("q\n"))
	pw.Close()
	if err := <-done; err == nil || !strings.Contains(err.Error(), "saving the game of deal 3 to --record "+o.record) {
		t.Errorf("a save into a folder gone: %v", err)
	}
}

// failingWriter fails every write after the first n bytes.
type failingWriter struct{ n int }

func (w *failingWriter) Write(p []byte) (int, error) {
	if w.n -= len(p); w.n < 0 {
		return 0, errors.New("no space left on device")
	}
	return len(p), nil
}

// TestPlayStopsWhenItsOutputFails: play on output that cannot be written
// (a full disk) ends with that error; it read moves until its input ended.
func TestPlayStopsWhenItsOutputFails(t *testing.T) {
	fs := pflag.NewFlagSet("play", pflag.ContinueOnError)
	run := playCommand(fs)
	if err := fs.Parse([]string{"--suits", "1"}); err != nil {
		t.Fatal(err)
	}
	endless := strings.NewReader(strings.Repeat("m\n", 1_000_000))
	err := run(context.Background(), nil, endless, &failingWriter{n: 3000}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "writing the output: no space left on device") {
		t.Fatalf("play on a full disk: %v", err)
	}
	if endless.Len() == 0 {
		t.Error("it read every line before it stopped")
	}
	// With a record, the error says the game is kept.
	rec := filepath.Join(t.TempDir(), "g.spider")
	if err := fs.Parse([]string{"--record", rec}); err != nil {
		t.Fatal(err)
	}
	err = run(context.Background(), nil, strings.NewReader("d\n"+strings.Repeat("m\n", 10_000)), &failingWriter{n: 3000}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "no space left on device; the game is saved in "+rec) {
		t.Fatalf("play with --record on a full disk: %v", err)
	}
	if g, err := record.Load(rec); err != nil || len(g.Actions) != 1 {
		t.Fatalf("the record holds %v (%v), want the deal", g.Actions, err)
	}
}

// TestPlayOnAClosedPipeSavesTheGame runs play in a child process whose
// standard output is a pipe closed by its reader: the write fails, the
// game is saved, and play says so (Go's default for a closed pipe on
// standard output is to end the program at once, the game unsaved).
func TestPlayOnAClosedPipeSavesTheGame(t *testing.T) {
	if rec := os.Getenv("SPIDER_PLAY_PIPE_CHILD"); rec != "" {
		os.Exit(Main([]string{"play", "--suits", "1", "--hint", "greedy", "--record", rec}, os.Stdin, os.Stdout, os.Stderr))
	}
	if runtime.GOOS == "windows" {
		t.Skip("no SIGPIPE")
	}
	rec := filepath.Join(t.TempDir(), "g.spider")
	child := exec.Command(os.Args[0], "-test.run=^TestPlayOnAClosedPipeSavesTheGame$", "-test.count=1")
	child.Env = append(os.Environ(), "SPIDER_PLAY_PIPE_CHILD="+rec)
	in, err := child.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	child.Stderr = &stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer child.Process.Kill()
	if _, err := in.Write([]byte("d\n")); err != nil {
		t.Fatal(err)
	}
	// Read until the deal is shown, then close the pipe.
	br := bufio.NewReader(out)
	for seen := ""; !strings.Contains(seen, "deal: "); {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("the child's output ended: %v\n%s", err, stderr.String())
		}
		seen = line
	}
	out.Close()
	for range 100 {
		if _, err := in.Write([]byte("m\n")); err != nil {
			break // the child has ended
		}
	}
	in.Close()
	done := make(chan error, 1)
	go func() { done <- child.Wait() }()
	select {
	case err = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("play did not end on a closed pipe")
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(stderr.String(), "broken pipe; the game is saved in "+rec) {
		t.Fatalf("play on a closed pipe: %v\n%s", err, stderr.String())
	}
	if g, err := record.Load(rec); err != nil || len(g.Actions) != 1 {
		t.Fatalf("the record holds %v (%v), want the deal", g.Actions, err)
	}
}

// TestPlayRecordThroughLinkChains: --record follows a chain of links to
// a file not yet written (it replaced the second link with the record),
// takes a relative target from its link's real folder, and refuses a
// loop.
func TestPlayRecordThroughLinkChains(t *testing.T) {
	dir := t.TempDir()
	at := func(p string) string { return filepath.Join(dir, p) }
	if err := os.Symlink("l2", at("l1")); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	mustLink := func(target, link string) {
		t.Helper()
		if err := os.Symlink(target, at(link)); err != nil {
			t.Fatal(err)
		}
	}
	mustLink("real.spider", "l2")
	if err := os.MkdirAll(at("x/y/z"), 0o755); err != nil {
		t.Fatal(err)
	}
	mustLink("x/y/z", "a")
	mustLink("../g.spider", "x/y/z/l3")
	mustLink("loop2", "loop1")
	mustLink("loop1", "loop2")
	play := func(rec string) error {
		o := playOptions{game: env.Options{Suits: 1}, seed: 3, hint: "greedy", record: at(rec)}
		return runPlay(context.Background(), o, strings.NewReader("d\nq\n"), io.Discard)
	}
	if err := play("l1"); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(at("l2")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the second link was replaced: %v", err)
	}
	if _, err := record.Load(at("real.spider")); err != nil {
		t.Errorf("the chain's end: %v", err)
	}
	if err := play("a/l3"); err != nil {
		t.Fatal(err)
	}
	if _, err := record.Load(at("x/y/g.spider")); err != nil {
		t.Errorf("the file the link leads to: %v", err)
	}
	if _, err := os.Stat(at("g.spider")); err == nil {
		t.Error("the record went beside the linked folder, not where its link leads")
	}
	var u usageError
	if err := play("loop1"); !errors.As(err, &u) || !strings.Contains(err.Error(), "a loop") {
		t.Errorf("a loop of links: %v", err)
	}
	// 40 links, as many as the kernel follows, end at the file.
	for i := 1; i <= maxLinks; i++ {
		mustLink(fmt.Sprintf("c%d", i+1), fmt.Sprintf("c%d", i))
	}
	if got, err := linkTarget(at("c1")); err != nil || got != at(fmt.Sprintf("c%d", maxLinks+1)) {
		t.Errorf("a chain of %d links: %q, %v", maxLinks, got, err)
	}
	// A link the kernel resolves itself, to a pipe ("pipe:[N]"), is the
	// pipe: named as such, not as a file in /proc that is not there.
	if runtime.GOOS == "linux" {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		defer w.Close()
		fd := fmt.Sprintf("/proc/self/fd/%d", w.Fd())
		if got, err := linkTarget(fd); err != nil || got != fd {
			t.Errorf("a pipe's /proc link: %q, %v", got, err)
		}
		if err := checkFilePath(fd, "g.spider"); err == nil || !strings.Contains(err.Error(), "is a named pipe") {
			t.Errorf("checking a pipe's /proc link: %v", err)
		}
	}
}

// TestPlayRecordIsNotItsInput: --record through /dev/stdin's kind of link
// to the file play reads its moves from is refused, the moves unchanged.
func TestPlayRecordIsNotItsInput(t *testing.T) {
	dir := t.TempDir()
	moves, link := filepath.Join(dir, "moves.txt"), filepath.Join(dir, "in")
	if err := os.WriteFile(moves, []byte("d\nq\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(moves, link); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	f, err := os.Open(moves)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	o := playOptions{game: env.Options{Suits: 1}, seed: 3, hint: "greedy", record: link}
	var u usageError
	if err := runPlay(context.Background(), o, f, io.Discard); !errors.As(err, &u) || !strings.Contains(err.Error(), "a file play reads or writes") {
		t.Fatalf("--record naming play's input: %v", err)
	}
	if b, err := os.ReadFile(moves); err != nil || string(b) != "d\nq\n" {
		t.Errorf("the moves now hold %q (%v)", b, err)
	}
}

// TestPlayStoppedAndLostGames: a Ctrl-C without a record to save says
// "stopped", not the context's "context canceled"; a game a new deal could
// not save is the command's error at the end, though the later one saved.
func TestPlayStoppedAndLostGames(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	o := playOptions{game: env.Options{Suits: 1}, seed: 3, hint: "greedy"}
	if err := runPlay(ctx, o, strings.NewReader(""), io.Discard); err == nil || err.Error() != "stopped" || !errors.Is(err, context.Canceled) {
		t.Errorf("stopped: %v", err)
	}
	sub := filepath.Join(t.TempDir(), "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	o.record = filepath.Join(sub, "g.spider")
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	var out lockedBuffer
	go func() { done <- runPlay(context.Background(), o, pr, &out) }()
	pw.Write([]byte("d\n"))
	if err := os.RemoveAll(sub); err != nil {
		t.Fatal(err)
	}
	pw.Write([]byte("n\n?\n")) // the help is written after n is done
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(out.String(), "commands:"); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("n was not played:\n%s", out.String())
		}
	}
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	pw.Write([]byte("d\nq\n"))
	pw.Close()
	err := <-done
	if err == nil || !strings.Contains(err.Error(), "an earlier game was not kept: saving the game of deal 3") {
		t.Errorf("a game lost at n: %v", err)
	}
	if !strings.Contains(out.String(), "saving the game of deal 3") {
		t.Errorf("n did not say the game was lost:\n%s", out.String())
	}
	if g, err := record.Load(o.record); err != nil || g.Seed != 4 {
		t.Errorf("the later game: %v", err)
	}
}

// TestDemoHelpSaysItNeedsAStepLimit: demo refuses a negative --max-steps,
// and its help says so (it said "negative: no limit").
func TestDemoHelpSaysItNeedsAStepLimit(t *testing.T) {
	code, out, errs := runMain("demo", "--help")
	if help := out + errs; code != 0 || !strings.Contains(help, "negative, no limit, is refused by demo") {
		t.Errorf("demo --help (exit %d):\n%s", code, help)
	}
}

// TestSignedReward: a shaped reward prints as a player reads it, not as
// the float64 of a float32.
func TestSignedReward(t *testing.T) {
	for r, want := range map[float64]string{float64(float32(4.4)): "+4.4", -1: "-1", 0: "+0", 149: "+149", float64(float32(-0.1)): "-0.1"} {
		if got := signedReward(r); got != want {
			t.Errorf("signedReward(%v) = %q, want %q", r, got, want)
		}
	}
}

// TestPlayHelpListsTheGamesCommands: play --help says how to move, deal,
// undo and quit, which only ? inside a game said before.
func TestPlayHelpListsTheGamesCommands(t *testing.T) {
	var out, errb bytes.Buffer
	if code := Main([]string{"play", "--help"}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{"3>7x4", "d, deal", "u, undo", "h, hint", "q, quit", "--seed"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("play --help lacks %q:\n%s", want, out.String())
		}
	}
}

// TestPlayQuitEndsItsLine: from a pipe the typed quit is not echoed after
// the prompt, so play ends the line itself, as it does at the end of the
// input (the output ended in "> ").
func TestPlayQuitEndsItsLine(t *testing.T) {
	for _, in := range []string{"deal\nquit\n", "deal\n"} {
		var out, errb bytes.Buffer
		if code := Main([]string{"play", "--seed", "3"}, strings.NewReader(in), &out, &errb); code != 0 {
			t.Fatalf("%q: exit %d: %s", in, code, errb.String())
		}
		if !strings.HasSuffix(out.String(), "> \n") {
			t.Errorf("%q: the output ends %q, not with the prompt's line ended", in, out.String()[max(0, out.Len()-20):])
		}
	}
}

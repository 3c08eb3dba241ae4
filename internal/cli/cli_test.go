package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/spiderenv/spider/agents/nn"
	"github.com/spiderenv/spider/env"
)

func TestMainUsage(t *testing.T) {
	var out, errb bytes.Buffer
	if code := Main(nil, nil, &out, &errb); code != 2 || out.Len() != 0 || !strings.Contains(errb.String(), "demo") {
		t.Fatalf("no arguments: code %d, stdout %q, usage on stderr %q", code, out.String(), errb.String())
	}
	errb.Reset()
	if code := Main([]string{"replay", "a", "b"}, nil, &out, &errb); code != 2 || errb.String() != "spider replay: want FILE, got 2 arguments [\"a\" \"b\"]\n" {
		t.Fatalf("replay a b: code %d, %q", code, errb.String())
	}
	out.Reset()
	if code := Main([]string{"help"}, nil, &out, &errb); code != 0 || !strings.Contains(out.String(), "commands:") {
		t.Fatalf("help: code %d", code)
	}
	errb.Reset()
	if code := Main([]string{"fly"}, nil, &out, &errb); code != 2 || !strings.Contains(errb.String(), `unknown command "fly"`) {
		t.Fatalf("unknown command: code %d, %q", code, errb.String())
	}
	for _, args := range [][]string{
		{"demo", "--suits", "3"},
		{"demo", "--rules", "freecell"},
		{"demo", "--bogus"},
		{"demo", "extra"},
		{"replay"},
		{"replay", "a", "b"},
		{"eval", "--json", "--csv"},
	} {
		errb.Reset()
		if code := Main(args, nil, &out, &errb); code != 2 || errb.Len() == 0 {
			t.Errorf("%v: code %d, stderr %q; want 2 and a message", args, code, errb.String())
		}
	}
}

// TestHelpThatCannotBeWrittenFails: help written to output that fails (a
// full disk) exits 1 and says so, as every other output does; it exited 0
// without a word.
func TestHelpThatCannotBeWrittenFails(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"--help"}, {"-h"}, {"help", "demo"}, {"eval", "--help"}} {
		var errb bytes.Buffer
		if code := Main(args, nil, &failingWriter{n: 100}, &errb); code != 1 || !strings.Contains(errb.String(), "writing the help: no space left on device") {
			t.Errorf("%v on a full disk: code %d, stderr %q; want 1 and the error", args, code, errb.String())
		}
		var out bytes.Buffer
		if code := Main(args, nil, &out, &errb); code != 0 || !strings.Contains(out.String(), "usage: spider") {
			t.Errorf("%v: code %d, stdout %q", args, code, out.String())
		}
	}
}

// TestErrorsEscapeControlCharacters: an error naming a file or an
// argument with escape sequences shows them escaped; they reached the
// terminal raw.
func TestErrorsEscapeControlCharacters(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "\x1b[31mRED\x1b[0m\a.spider")
	for _, args := range [][]string{{"replay", bad}, {"results", bad}, {"demo", "--\x1b[31mfoo"}} {
		var out, errb bytes.Buffer
		code := Main(args, nil, &out, &errb)
		if code != 2 || strings.ContainsAny(errb.String(), "\x1b\a") || !strings.Contains(errb.String(), `\x1b[31m`) {
			t.Errorf("%q: code %d, stderr %q; want 2 and the escapes written out", args, code, errb.String())
		}
	}
}

// TestDemoShowsProgress: a game that plays on past the boards shown says
// how far it is on stderr (a game of millions of moves ran 40 s with
// nothing said), in plain lines where stderr is not a terminal.
func TestDemoShowsProgress(t *testing.T) {
	real := progressEvery
	progressEvery = 0
	t.Cleanup(func() { progressEvery = real })
	o := demoOptions{game: env.DefaultOptions(), seed: 1, policy: 1, show: 0}
	o.game.MaxSteps = 3 * demoProgressEvery
	var out, errb bytes.Buffer
	if err := runDemo(context.Background(), o, &out, &errb); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("demo: %d moves of at most %d, ", demoProgressEvery, o.game.MaxSteps)
	if !strings.Contains(out.String(), "truncated at the step limit") || !strings.HasPrefix(errb.String(), want) || strings.Contains(errb.String(), "\r") || strings.Count(errb.String(), "\n") != 3 {
		t.Fatalf("stderr %q; want three plain lines, the first starting %q", errb.String(), want)
	}
}

// TestFileErrorsExitTwo checks the one rule for files a command line
// names: missing or not what it should be (or, for one it writes, a place
// that cannot take it), the command refuses with exit code 2 and names
// the file, whether a flag or an argument names it.
func TestFileErrorsExitTwo(t *testing.T) {
	dir := t.TempDir()
	missing, junk := filepath.Join(dir, "missing.spider"), filepath.Join(dir, "junk.spider")
	if err := os.WriteFile(junk, []byte("not a file of this program"), 0o644); err != nil {
		t.Fatal(err)
	}
	resume := filepath.Join(dir, "run")
	if err := os.Mkdir(resume, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(resume, "checkpoint.spider"), []byte("junk"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.spider")
	for _, tc := range []struct {
		args []string
		name string // the file the message must name
	}{
		{[]string{"replay", missing}, missing},
		{[]string{"replay", junk}, junk},
		{[]string{"results", missing}, missing},
		{[]string{"results", junk}, junk},
		{[]string{"results", "--pair", junk, missing}, junk},
		{[]string{"train", "--export", out, "--from", missing}, missing},
		{[]string{"train", "--export", out, "--from", junk}, junk},
		{[]string{"train", "--resume", "--out", resume, "--iterations", "1"}, filepath.Join(resume, "checkpoint.spider")},
		{[]string{"eval", "--policies", "nn:" + missing, "--games", "1"}, missing},
		{[]string{"eval", "--policies", "nn:" + junk, "--games", "1"}, junk},
		{[]string{"play", "--hint", "nn:" + junk}, "--hint nn:" + junk + ": "},
		{[]string{"play", "--hint", "nn:" + missing}, "--hint nn:" + missing + ": "},
		{[]string{"serve", "--hint", "nn:" + missing, "--unix", filepath.Join(dir, "s.sock")}, missing},
		// Where a command writes is checked before it reads: a folder that
		// is not there, or a folder given for a file.
		{[]string{"train", "--export", filepath.Join(dir, "nodir", "x.spider"), "--from", junk}, "--export " + filepath.Join(dir, "nodir", "x.spider") + ": its folder"},
		{[]string{"train", "--export", dir, "--from", junk}, "--export " + dir + ": is a folder"},
		{[]string{"serve", "--unix", junk}, "not a socket"},
	} {
		var stdout, stderr bytes.Buffer
		if code := Main(tc.args, strings.NewReader(""), &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), tc.name) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and a message naming %s", tc.args, code, stderr.String(), tc.name)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 { // junk.spider and run
		t.Errorf("the refused commands left files behind: %d entries in %s", len(ents), dir)
	}
}

func TestDemoPlaysAGameToItsEnd(t *testing.T) {
	var out bytes.Buffer
	o := demoOptions{game: env.Options{RuleSet: env.Cardems, Suits: 2, MaxSteps: 50}, seed: 9, policy: 3, show: 4}
	if err := runDemo(context.Background(), o, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	if n := strings.Count(text, "\n> "); n != 5 {
		t.Errorf("showed %d moves, want the first 4 and the last", n)
	}
	if !strings.Contains(text, "(45 moves not shown)") || !strings.Contains(text, "truncated at the step limit after 50 moves") {
		t.Errorf("missing the gap or the end line:\n%s", text)
	}
	// The first board is the deal of seed 9 as a player sees it.
	s := env.NewGame(env.MustRules(env.Options{RuleSet: env.Cardems, Suits: 2, MaxSteps: 50}), 9)
	if !strings.Contains(text, s.Render()) {
		t.Error("the first board is not the deal of the seed")
	}
	var again bytes.Buffer
	if err := runDemo(context.Background(), o, &again, io.Discard); err != nil || again.String() != text {
		t.Error("the same seeds gave a different demo")
	}
}

func TestDemoStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out bytes.Buffer
	o := demoOptions{game: env.Options{Suits: 1, MaxSteps: 100}, seed: 1, policy: 1}
	if err := runDemo(ctx, o, &out, io.Discard); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled demo returned %v, want context.Canceled", err)
	}
}

// TestDemoNeedsAStepLimit: random play without a step limit may never end,
// so the demo refuses it as a usage error.
func TestDemoNeedsAStepLimit(t *testing.T) {
	o := demoOptions{game: env.Options{Suits: 1, MaxSteps: -1}, seed: 1, policy: 1}
	var out bytes.Buffer
	err := runDemo(context.Background(), o, &out, io.Discard)
	if _, ok := err.(usageError); !ok || !strings.Contains(err.Error(), "needs a step limit") || out.Len() != 0 {
		t.Fatalf("demo without a step limit: %v (printed %d bytes); want a usage error before anything", err, out.Len())
	}
}

// Every game option is a flag of every command that makes games, and a bad
// value is a usage error (exit 2) before anything runs.
func TestGameFlagsComeFromOptions(t *testing.T) {
	for _, cmd := range []string{"demo", "bench", "eval", "play", "train"} {
		var stdout, stderr bytes.Buffer
		if code := Main([]string{cmd, "--help"}, strings.NewReader(""), &stdout, &stderr); code != 0 {
			t.Fatalf("%s --help: exit %d", cmd, code)
		}
		for _, f := range env.OptionFields() {
			if !strings.Contains(stdout.String(), "--"+f.Flag) {
				t.Errorf("spider %s has no --%s flag", cmd, f.Flag)
			}
		}
	}
	for _, args := range [][]string{
		{"demo", "--obs", "png"}, {"demo", "--suits", "two"}, {"demo", "--suits", "3"},
		{"demo", "--rules", "cardems", "--time-per-action-ms", "100"},
	} {
		var stdout, stderr bytes.Buffer
		if code := Main(args, strings.NewReader(""), &stdout, &stderr); code != 2 {
			t.Errorf("%v: exit %d, want 2 (stderr %q)", args, code, stderr.String())
		}
		if stdout.Len() != 0 {
			t.Errorf("%v printed a game: %q", args, stdout.String())
		}
	}
	var stdout, stderr bytes.Buffer
	if code := Main([]string{"demo", "--rules", "cardems", "--suits", "2", "--max-steps", "3", "--show", "0"}, strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatalf("demo with game flags: exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "cardems 2-suit, max-steps 3") || !strings.Contains(stdout.String(), "after 3 moves") {
		t.Fatalf("the flags did not reach the game:\n%s", stdout.String())
	}
}

// TestVersion runs both spellings and reads the line from made-up build
// information: a version set at build time, a module version, a commit.
func TestVersion(t *testing.T) {
	blas := ", blas " + nn.BLAS()
	if k := nn.BLASKernel(); k != "" {
		blas += " (" + k + " kernel)"
	}
	for _, args := range [][]string{{"--version"}, {"version"}} {
		var out, errb bytes.Buffer
		if code := Main(args, nil, &out, &errb); code != 0 || !strings.HasPrefix(out.String(), "spider "+Version+" (go") || !strings.HasSuffix(out.String(), blas+")\n") {
			t.Errorf("%v: exit %d, %q (stderr %q)", args, code, out.String(), errb.String())
		}
	}
	info := &debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "4e264e3a0b1c2d3e4f5a"}, {Key: "vcs.modified", Value: "true"},
	}}
	for _, tc := range []struct{ version, want string }{
		{"dev", "spider v1.4.0 (commit 4e264e3a0b1c with uncommitted changes, go"},
		{"v2.0.0-rc1", "spider v2.0.0-rc1 (commit 4e264e3a0b1c with uncommitted changes, go"},
	} {
		if got := versionLine(tc.version, info); !strings.HasPrefix(got, tc.want) {
			t.Errorf("versionLine(%q) = %q, want it to start %q", tc.version, got, tc.want)
		}
	}
	if got := versionLine("dev", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}); !strings.HasPrefix(got, "spider dev (go") {
		t.Errorf("a build without VCS information: %q", got)
	}
}

// TestCommandHelpNamesArguments checks each command's usage line: replay's
// names the FILE it needs.
func TestCommandHelpNamesArguments(t *testing.T) {
	for cmd, want := range map[string]string{
		"replay": "usage: spider replay FILE [flags]\n",
		"demo":   "usage: spider demo [flags]\n",
	} {
		var out, errb bytes.Buffer
		if code := Main([]string{cmd, "--help"}, nil, &out, &errb); code != 0 || !strings.HasPrefix(out.String(), want) || !strings.Contains(out.String(), commands[cmd].summary) || errb.Len() != 0 {
			t.Errorf("%s --help: exit %d, %q (stderr %q); want it on stdout, starting %q and giving the summary", cmd, code, out.String(), errb.String(), want)
		}
		var help bytes.Buffer
		if code := Main([]string{"help", cmd}, nil, &help, &errb); code != 0 || help.String() != out.String() {
			t.Errorf("spider help %s: exit %d, %q; want what %s --help prints", cmd, code, help.String(), cmd)
		}
	}
}

// TestEvalTextNamesTheGame: eval's text summary names every option away
// from its default, so a run of another game does not read as the
// default's, nor one that showed a remote agent another observation.
func TestEvalTextNamesTheGame(t *testing.T) {
	code, out, errs := runMain("eval", "--seeds", "1", "--policies", "first", "--time-per-action-ms", "1500", "--workers", "1")
	if code != 0 || !strings.Contains(out, "1 deals (seeds 1), step limit 1000, time-per-action-ms 1500, 1 worker(s)\n") {
		t.Fatalf("exit %d: %s%s", code, out, errs)
	}
	code, out, errs = runMain("eval", "--seeds", "1", "--policies", "first", "--obs", "float32", "--workers", "1")
	if code != 0 || !strings.Contains(out, "1 deals (seeds 1), step limit 1000, obs float32, 1 worker(s)\n") {
		t.Fatalf("exit %d: %s%s", code, out, errs)
	}
	code, out, errs = runMain("eval", "--seeds", "1", "--policies", "first", "--workers", "1")
	if code != 0 || !strings.Contains(out, "1 deals (seeds 1), step limit 1000, 1 worker(s)\n") {
		t.Fatalf("exit %d: %s%s", code, out, errs)
	}
}

// TestDemoPolicySeedChoosesTheMoves: --policy-seed, not the deal's seed,
// draws the random moves: two policy seeds on one deal play other games,
// the same two seeds the same one.
func TestDemoPolicySeedChoosesTheMoves(t *testing.T) {
	moves := func(policy uint64) string {
		var out bytes.Buffer
		o := demoOptions{game: env.Options{Suits: 1, MaxSteps: 30}, seed: 5, policy: policy, show: 30}
		if err := runDemo(context.Background(), o, &out, io.Discard); err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, line := range strings.Split(out.String(), "\n") {
			if strings.HasPrefix(line, "> ") {
				b.WriteString(line + "\n")
			}
		}
		return b.String()
	}
	a, b := moves(1), moves(2)
	if a == b {
		t.Fatalf("--policy-seed 1 and 2 on deal 5 played the same moves:\n%s", a)
	}
	if again := moves(1); again != a {
		t.Fatalf("--policy-seed 1 played other moves the second time:\n%s\nthen\n%s", a, again)
	}
}

// TestGameFlagHelpNamesOnlyRealDefaults: a numeric game flag's help names
// the game's default for 0 only where that default is not 0 itself:
// --time-per-action-ms says what 0 means once, not "(0: the game's
// default, 0)" after it.
func TestGameFlagHelpNamesOnlyRealDefaults(t *testing.T) {
	fs := pflag.NewFlagSet("demo", pflag.ContinueOnError)
	o := env.DefaultOptions()
	registerGameFlags(fs, &o)
	if u := fs.Lookup("suits").Usage; !strings.HasSuffix(u, "(0: the game's default, 1)") {
		t.Errorf("--suits help %q: want it to end naming the default, 1", u)
	}
	if u := fs.Lookup("time-per-action-ms").Usage; strings.Contains(u, "the game's default") {
		t.Errorf("--time-per-action-ms help %q: want no \"the game's default\" for a default of 0", u)
	}
	// The help names each flag's kind of value: a number, a fraction or a word.
	for name, kind := range map[string]string{"suits": "int", "shaping-gamma": "float", "rules": "string"} {
		if got := fs.Lookup(name).Value.Type(); got != kind {
			t.Errorf("--%s takes a %s; want %s", name, got, kind)
		}
	}
}

//go:build unix

// The tests that need a Unix system: a umask, a signal sent by kill, a
// FIFO, a socket file.

package cli

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spiderenv/spider/env"
	"github.com/spiderenv/spider/record"
)

// TestServeUnixSocketIsOwnerOnly serves on a Unix socket under umask 000:
// the socket must still be mode 0600, and no private directory is left.
// Its name holds an escape, which the "listening" line writes escaped.
func TestServeUnixSocketIsOwnerOnly(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "spider\x1b.sock")
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	o := serveOpts()
	o.unix = path
	var stderr bytes.Buffer
	ready, done, cancel := serveInBackground(o, &stderr)
	select {
	case a := <-ready:
		if a.String() != path {
			t.Errorf("listening on %v, want %s", a, path)
		}
	case err := <-done:
		t.Fatalf("serve failed: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not start")
	}
	syscall.Umask(old)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Errorf("the socket is %v; want a socket of mode 0600", fi.Mode())
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the socket's folder holds %d entries, want the socket alone: %v", len(entries), entries)
	}
	helloUnix(t, path)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr.String(), "listening on unix "+strings.ReplaceAll(path, "\x1b", `\x1b`)) || strings.Contains(stderr.String(), "\x1b") {
		t.Errorf("stderr: %q", stderr.String())
	}
}

// TestServeRemovesOnlyItsOwnSocket: a server whose socket file was
// removed while it ran (by a cleaner of /tmp, say), and another started on
// the same path since, must leave the other's socket when it stops.
func TestServeRemovesOnlyItsOwnSocket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "spider.sock")
	start := func() (<-chan error, func()) {
		t.Helper()
		o := serveOpts()
		o.unix = path
		ready, done, cancel := serveInBackground(o, &bytes.Buffer{})
		select {
		case <-ready:
		case err := <-done:
			t.Fatalf("serve failed: %v", err)
		case <-time.After(10 * time.Second):
			t.Fatal("serve did not start")
		}
		return done, cancel
	}
	firstDone, stopFirst := start()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	secondDone, stopSecond := start()
	stopFirst()
	if err := <-firstDone; err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(path); err != nil {
		t.Fatalf("the first server to stop removed the second's socket: %v", err)
	}
	helloUnix(t, path)
	stopSecond()
	if err := <-secondDone; err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Errorf("the second server left its socket: %v", err)
	}
}

// TestTrainStopsOnSIGINT sends the test process a real SIGINT while Main
// trains: it must say at once that it is stopping and return with the
// last checkpoint kept, well before its one-hour budget.
func TestTrainStopsOnSIGINT(t *testing.T) {
	out := t.TempDir()
	var stderr lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- Main([]string{"train", "--games", "4", "--rollout", "16", "--minibatch", "32", "--hidden", "8", "--face-up-slots", "2",
			"--max-steps", "40", "--val-every", "0", "--time", "1h", "--checkpoint-every", "1", "--out", out}, nil, &bytes.Buffer{}, &stderr)
	}()
	// Main listens for the signal before it trains: once an iteration is
	// reported, the signal reaches it and not the default handler.
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(stderr.String(), "train: iter 1 ") {
		if time.Now().After(deadline) {
			t.Fatalf("no iteration after 20 s: %q", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-done:
		if code != 1 || !strings.Contains(stderr.String(), "spider train: stopping (interrupt)") || !strings.Contains(stderr.String(), "interrupted") {
			t.Fatalf("exit %d, stderr %q", code, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("still training 10 s after SIGINT: %q", stderr.String())
	}
	if _, err := os.Stat(out + "/checkpoint.spider"); err != nil {
		t.Errorf("no checkpoint kept: %v", err)
	}
}

// TestPlaySavesOnSIGHUP sends the test process a real SIGHUP, what a
// closed terminal sends, while Main plays: it must stop as on Ctrl-C and
// save the game, where the default action killed it unsaved.
func TestPlaySavesOnSIGHUP(t *testing.T) {
	if signal.Ignored(syscall.SIGHUP) {
		t.Skip("SIGHUP is ignored here (nohup), and stays so for spider")
	}
	rec := filepath.Join(t.TempDir(), "me.spider")
	pr, pw := io.Pipe()
	defer pw.Close()
	var stdout, stderr lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- Main([]string{"play", "--suits", "1", "--seed", "3", "--record", rec}, pr, &stdout, &stderr)
	}()
	playDeal(t, pw, &stdout)
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-done:
		if code != 1 || !strings.Contains(stderr.String(), "spider play: stopping (hangup)") {
			t.Fatalf("exit %d, stderr %q", code, stderr.String())
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("still playing 5 s after SIGHUP: %q", stderr.String())
	}
	if g, err := record.Load(rec); err != nil || len(g.Actions) != 1 {
		t.Fatalf("the record: %v, %v; want the deal saved", g, err)
	}
}

// TestReplayPicturesReplaceNothingOfTheirs: a GIF that names the record
// replayed (which it replaced: the game was lost), a frame of --frames,
// a FIFO or a link to one is refused before anything is drawn, and the
// record stays whole.
func TestReplayPicturesReplaceNothingOfTheirs(t *testing.T) {
	dir := t.TempDir()
	path, _ := saveRandomGame(t, dir, env.Options{Suits: 1, MaxSteps: 10}, 2)
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "to-fifo")
	if err := os.Symlink(fifo, link); err != nil {
		t.Fatal(err)
	}
	frames := filepath.Join(dir, "frames")
	if err := os.Mkdir(frames, 0o755); err != nil {
		t.Fatal(err)
	}
	for gif, want := range map[string]string{
		path: "is the record replayed",
		filepath.Join(dir, ".", filepath.Base(path)): "is the record replayed",
		filepath.Join(frames, "0003.png"):            "is a frame's name in --frames",
		fifo:                                         "is a named pipe, not a regular file",
		link:                                         "is a named pipe, not a regular file",
	} {
		o := replayOptions{gif: gif, frames: frames, delay: time.Second}
		err := runReplay(context.Background(), o, path, &bytes.Buffer{}, io.Discard)
		if _, ok := err.(usageError); !ok || !strings.Contains(err.Error(), want) {
			t.Errorf("--gif %s: %v; want a usage error saying %q", gif, err, want)
		}
	}
	if after, err := os.ReadFile(path); err != nil || !bytes.Equal(after, before) {
		t.Fatalf("the record changed: %v", err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link was replaced: %v", err)
	}
	if entries, _ := os.ReadDir(frames); len(entries) != 0 {
		t.Fatalf("frames were drawn: %v", entries)
	}
	// A frame's name outside --frames, or another name inside it, is a
	// GIF; run again, it replaces the GIF it wrote.
	o := replayOptions{gif: filepath.Join(dir, "0003.png"), frames: frames, delay: time.Second}
	if err := runReplay(context.Background(), o, path, &bytes.Buffer{}, io.Discard); err != nil {
		t.Fatal(err)
	}
	o.frames = ""
	if err := runReplay(context.Background(), o, path, &bytes.Buffer{}, io.Discard); err != nil {
		t.Fatalf("a GIF over the GIF it wrote: %v", err)
	}
	// Nor does a GIF replace a file that holds something else: another
	// record here (a network or a checkpoint alike).
	other := filepath.Join(dir, "other.spider")
	if err := os.WriteFile(other, before, 0o644); err != nil {
		t.Fatal(err)
	}
	o = replayOptions{gif: other, delay: time.Second}
	if err := runReplay(context.Background(), o, path, &bytes.Buffer{}, io.Discard); !isUsage(err) || !strings.Contains(err.Error(), "exists and is not a GIF picture: not replaced") {
		t.Errorf("--gif over another record: %v", err)
	}
	if after, err := os.ReadFile(other); err != nil || !bytes.Equal(after, before) {
		t.Fatalf("the other record changed: %v", err)
	}
}

// TestListenUnixRemovesStalePrivateFolders: a server killed while it
// started leaves its private folder (with its socket); the next one beside
// it removes those over a minute old, and leaves one being used now, and
// anything else of such a name: a user's folder, or one holding more.
func TestListenUnixRemovesStalePrivateFolders(t *testing.T) {
	dir := t.TempDir()
	stale := filepath.Join(dir, privatePrefix+"123")
	fresh := filepath.Join(dir, privatePrefix+"456")
	more := filepath.Join(dir, privatePrefix+"789")
	user := filepath.Join(dir, ".spider-saves")
	for _, d := range []string{stale, fresh, more, user} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("unix", filepath.Join(d, "s"))
		if err != nil {
			t.Fatal(err)
		}
		ln.(*net.UnixListener).SetUnlinkOnClose(false)
		ln.Close()
	}
	for _, f := range []string{filepath.Join(more, "other"), filepath.Join(user, "best.txt")} {
		if err := os.WriteFile(f, []byte("keep"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-2 * staleAfter)
	for _, d := range []string{stale, more, user} {
		if err := os.Chtimes(d, old, old); err != nil {
			t.Fatal(err)
		}
	}
	ln, remove, err := listenUnix(filepath.Join(dir, "spider.sock"))
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	remove()
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("a stale private folder was kept: %v", err)
	}
	for _, d := range []string{fresh, more, user} {
		if _, err := os.Stat(filepath.Join(d, "s")); err != nil {
			t.Errorf("%s was removed: %v", d, err)
		}
	}
}

// TestEvalRefusesANetworkThatIsNotAFile: an nn: policy must name a
// regular file. Before, nn:/dev/zero was hashed for ever (the first
// Ctrl-C did not stop it) and a named pipe with no writer blocked eval in
// its open.
func TestEvalRefusesANetworkThatIsNotAFile(t *testing.T) {
	cases := map[string]string{t.TempDir(): "a folder, not a file"}
	if _, err := os.Stat("/dev/zero"); err == nil {
		cases["/dev/zero"] = "/dev/zero: not a regular file (a device or socket)"
	}
	if pipe := filepath.Join(t.TempDir(), "pipe"); syscall.Mkfifo(pipe, 0o600) == nil {
		cases[pipe] = pipe + ": a named pipe, not a regular file"
	}
	for path, want := range cases {
		done := make(chan struct{})
		var code int
		var errs string
		go func() {
			defer close(done)
			code, _, errs = runMain("eval", "--policies", "nn:"+path, "--games", "1")
		}()
		select {
		case <-done:
			if code != 2 || !strings.Contains(errs, want) {
				t.Errorf("eval nn:%s: exit %d, %q; want 2 and %q", path, code, errs, want)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("eval nn:%s still runs after 20 s", path)
		}
	}
}

// makeFifo makes a named pipe at path.
func makeFifo(path string) error { return syscall.Mkfifo(path, 0o600) }

// TestServeKeepsABusyServersSocket: a live server whose queue of waiting
// connections is full answers a connection "try again", not "refused";
// serve took that for a dead server's socket, removed it, and cut the
// live server off from every later client. It must refuse and leave the
// socket. (Linux: a listen backlog of 0 holds one waiting connection,
// and the next is refused with EAGAIN.)
func TestServeKeepsABusyServersSocket(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("a full backlog answers EAGAIN on Linux")
	}
	path := filepath.Join(t.TempDir(), "spider.sock")
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	if err := syscall.Bind(fd, &syscall.SockaddrUnix{Name: path}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	waiting, err := net.Dial("unix", path) // fills the queue
	if err != nil {
		t.Fatal(err)
	}
	defer waiting.Close()
	o := serveOpts()
	o.unix = path
	err = runServe(refusing(t), o, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "a socket that may be another server's") || !strings.Contains(err.Error(), "resource temporarily unavailable") {
		t.Fatalf("serve over a busy server's socket: %v; want a refusal that says why", err)
	}
	if fi, err := os.Lstat(path); err != nil || fi.Mode()&os.ModeSocket == 0 {
		t.Fatalf("the busy server's socket is gone: %v", err)
	}
}

// TestResultsUpdateChecksItsFolder: --update replaces its file through a
// new one beside it, so a folder that takes no new file is refused
// before anything is written, as a usage error naming the file (it was
// exit 1, naming a hidden temporary). As root, whom no folder refuses,
// the test runs its own binary again as nobody.
func TestResultsUpdateChecksItsFolder(t *testing.T) {
	const child = "SPIDER_TEST_RESULTS_UPDATE"
	if args := os.Getenv(child); args != "" {
		os.Exit(Main(strings.Split(args, "\n"), nil, os.Stdout, os.Stderr))
	}
	dir, err := os.MkdirTemp("", "update-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(filepath.Join(dir, "ro"), 0o755); os.RemoveAll(dir) })
	doc, report := filepath.Join(dir, "ro", "doc.md"), filepath.Join(dir, "report.json")
	src, err := os.ReadFile(filepath.Join("..", "..", "docs", "results", "classic-1suit-test-search.json"))
	if err != nil {
		t.Fatal(err)
	}
	text := []byte("# doc\n" + resultsBegin + "\nold\n" + resultsEnd + "\n")
	if err := os.Mkdir(filepath.Join(dir, "ro"), 0o755); err != nil {
		t.Fatal(err)
	}
	for path, data := range map[string][]byte{doc: text, report: src} {
		if err := os.WriteFile(path, data, 0o666); err != nil {
			t.Fatal(err)
		}
		os.Chmod(path, 0o666)
	}
	if err := os.Chmod(filepath.Join(dir, "ro"), 0o555); err != nil {
		t.Fatal(err)
	}
	args := []string{"results", "--update", doc, report}
	var code int
	var stderr string
	if os.Geteuid() != 0 {
		var errb bytes.Buffer
		code = Main(args, nil, io.Discard, &errb)
		stderr = errb.String()
	} else {
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		code, stderr = runTestAsNobody(t, dir, "TestResultsUpdateChecksItsFolder", child+"="+strings.Join(args, "\n"))
	}
	if want := "--update " + doc + ": its folder " + filepath.Join(dir, "ro") + ": cannot write there: permission denied\n"; code != 2 || !strings.HasSuffix(stderr, want) {
		t.Fatalf("exit %d, stderr %q; want 2 and %q", code, stderr, want)
	}
	if got, err := os.ReadFile(doc); err != nil || !bytes.Equal(got, text) {
		t.Fatalf("the file changed: %q, %v", got, err)
	}
}

// TestRecordRefusesAnotherUsersFileInAStickyFolder: in a folder with the
// sticky bit (as /tmp) a rename over another user's file fails, so play
// must refuse such a --record before the game (it lost the game at the
// save, exit 1). The test makes root's file and plays as nobody.
func TestRecordRefusesAnotherUsersFileInAStickyFolder(t *testing.T) {
	const child = "SPIDER_TEST_STICKY_RECORD"
	if path := os.Getenv(child); path != "" {
		os.Exit(Main([]string{"play", "--suits", "1", "--record", path}, strings.NewReader("q\n"), os.Stdout, os.Stderr))
	}
	if os.Geteuid() != 0 {
		t.Skip("making another user's file takes root")
	}
	dir, err := os.MkdirTemp("", "sticky-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	rec := filepath.Join(dir, "root.spider")
	saved, _ := saveRandomGame(t, dir, env.Options{Suits: 1, MaxSteps: 10}, 2) // a record, root's
	if err := os.Rename(saved, rec); err != nil {
		t.Fatal(err)
	}
	os.Chmod(rec, 0o666) // writable by all: only the sticky bit stops a rename
	before, _ := os.ReadFile(rec)
	if code, stderr := runTestAsNobody(t, dir, "TestRecordRefusesAnotherUsersFileInAStickyFolder", child+"="+rec); code != 2 || !strings.Contains(stderr, "is another user's file in a folder with the sticky bit") {
		t.Fatalf("play as nobody: exit %d, stderr %q; want 2 refusing the file", code, stderr)
	}
	if after, _ := os.ReadFile(rec); !bytes.Equal(after, before) {
		t.Fatal("the file changed")
	}
	// Its owner may replace it.
	if err := checkFilePath(rec, "game.spider"); err != nil {
		t.Fatalf("root's own file: %v", err)
	}
}

// runTestAsNobody runs this test binary's test name again as the user
// nobody, from a copy in dir (which nobody must be able to enter), with env
// added to its environment, where the test does the work as nobody; it
// returns the exit code and stderr of a run that exited with an error.
func runTestAsNobody(t *testing.T, dir, name string, env ...string) (int, string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	self := filepath.Join(dir, "cli.test")
	if err := os.WriteFile(self, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "-test.run=^"+name+"$")
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	var errb bytes.Buffer
	cmd.Stderr = &errb
	err = cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("the test run as nobody: %v, stderr %q", err, errb.String())
	}
	return exit.ExitCode(), errb.String()
}

// TestLockFolderWithoutAccess: a folder that cannot be opened to lock
// (one its user may write in but not list, or none at all) is used
// without a lock rather than refused: the lock guards against a second
// run, and must not stop the first.
func TestLockFolderWithoutAccess(t *testing.T) {
	unlock, held := lockFolder(filepath.Join(t.TempDir(), "missing"))
	if held || unlock == nil {
		t.Fatalf("lockFolder of a folder it cannot open: held %v, unlock %v; want free and an unlock to call", held, unlock != nil)
	}
	unlock()
}

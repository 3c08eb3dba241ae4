package atomicfile

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// helperEnv names the file a helper process writes and then hangs in,
// between its temporary and the rename, until it is killed.
const helperEnv = "ATOMICFILE_HANG_WRITING"

// TestHelperHangsWhileWriting is not a test: run as a child process by
// startHangingWriter, it writes a temporary, says its name and waits.
func TestHelperHangsWhileWriting(t *testing.T) {
	path := os.Getenv(helperEnv)
	if path == "" {
		t.Skip("a helper for TestKilledWritersLeaveNoTemporaries")
	}
	// Like a program before this fix, it does not clean the folder, so
	// the killed writers' temporaries add up.
	cleaned.Store(filepath.Dir(path), true)
	beforeRename = func(tmp string) {
		fmt.Println("writing", tmp)
		select {} // until killed
	}
	Write(path, make([]byte, 2<<20))
}

// startHangingWriter starts a process writing path that stops before the
// rename, and returns it with its temporary's name.
func startHangingWriter(t *testing.T, path string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperHangsWhileWriting$")
	cmd.Env = append(os.Environ(), helperEnv+"="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if tmp, ok := strings.CutPrefix(sc.Text(), "writing "); ok {
			return cmd, tmp
		}
	}
	t.Fatalf("the helper did not start writing: %v", sc.Err())
	return nil, ""
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// TestKilledWritersLeaveNoTemporaries kills ten processes while they
// write a checkpoint, as the issue did: each leaves its temporary (2 MB).
// The next Write into the folder, from a new process, removes them all,
// while a live process's temporary stays until that process is gone.
func TestKilledWritersLeaveNoTemporaries(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("processes are checked on unix only")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "checkpoint.spider")
	for range 10 {
		cmd, tmp := startHangingWriter(t, path)
		cmd.Process.Kill()
		cmd.Wait()
		if _, err := os.Stat(tmp); err != nil {
			t.Fatalf("the killed writer's temporary: %v", err)
		}
	}
	if got := names(t, dir); len(got) != 10 {
		t.Fatalf("after 10 kills: %v; want 10 temporaries", got)
	}
	live, liveTmp := startHangingWriter(t, path)
	cleaned.Delete(dir) // as in a new process
	if err := Write(path, []byte("new")); err != nil {
		t.Fatal(err)
	}
	if got, want := names(t, dir), []string{filepath.Base(liveTmp), "checkpoint.spider"}; !slices.Equal(got, want) {
		t.Fatalf("after a Write: %v; want only the live writer's temporary and the file", got)
	}
	live.Process.Kill()
	live.Wait()
	cleaned.Delete(dir)
	if err := Write(path, []byte("newer")); err != nil {
		t.Fatal(err)
	}
	if got := names(t, dir); !slices.Equal(got, []string{"checkpoint.spider"}) {
		t.Fatalf("after its writer was killed: %v", got)
	}
}

// TestStaleRules covers what removeStale cannot check by process:
// another host's temporaries go once an hour old; this process's own,
// and names of an earlier version's form (".NAME.tmp-DIGITS", which a
// user's own files may have), stay.
func TestStaleRules(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	old := now.Add(-2 * StaleAge)
	files := map[string]time.Time{
		".checkpoint.spider.tmp-123456789":                                     old, // an earlier version's form, old: kept (a user's file may have it)
		".zshrc.tmp-20240101":                                                  old, // a user's own file of that form: kept
		".checkpoint.spider.tmp-987654321":                                     now, // an earlier version's, fresh: kept
		".checkpoint.spider.tmp-0badf00d-42-17":                                old, // another host's, old: removed
		".checkpoint.spider.tmp-0badf00d-43-18":                                now, // another host's, fresh: kept
		fmt.Sprintf(".best.spider.tmp-%s-%d-19", hostTag, os.Getpid()):         old, // this process's: kept
		fmt.Sprintf(".best.spider.tmp-%s-%d-20", hostTag, 1<<31-2):             now, // a dead process's: removed
		fmt.Sprintf(".best.spider.tmp-%s-%d-21", hostTag, int64(1)<<40):        now, // no process id: kept while fresh
		".notes.tmp-draft":                                                     old, // not this pattern: kept
		"checkpoint.spider.tmp-123":                                            old, // no leading dot: kept
		".tmp-123":                                                             old, // no name: kept
		fmt.Sprintf(".a.tmp-b.tmp-%s-%d-22", hostTag, 1<<31-2):                 now, // a name holding .tmp-: removed
		fmt.Sprintf(".x.tmp-%s-%d-23", strings.ToUpper(hostTag), 1<<31-2):      now, // not hex as written: kept
		fmt.Sprintf(".x.tmp-%s-%d-24-25", hostTag, 1<<31-2):                    now, // four parts: kept
		fmt.Sprintf(".x.tmp-%s-0-26", hostTag):                                 now, // process 0 (the group): kept while fresh
		fmt.Sprintf(".x.tmp-%s-%d-27", hostTag, os.Getppid()):                  old, // a live process's, old: kept
		fmt.Sprintf(".x.tmp-%s-%d-28", strings.Repeat("f", 8), os.Getppid()+1): now, // another host: kept while fresh
	}
	for name, mod := range files {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mod, mod); err != nil {
			t.Fatal(err)
		}
	}
	removeStale(dir, now)
	var want []string
	for name := range files {
		switch {
		case name == ".checkpoint.spider.tmp-0badf00d-42-17",
			strings.HasSuffix(name, "-20"), strings.HasSuffix(name, "-22"):
		case hostTag == "ffffffff" && strings.HasSuffix(name, "-28"): // the same host after all
		default:
			want = append(want, name)
		}
	}
	slices.Sort(want)
	if got := names(t, dir); !slices.Equal(got, want) {
		t.Fatalf("after removeStale:\n%v\nwant\n%v", got, want)
	}
	if runtime.GOOS == "windows" {
		return
	}
	if alive, known := processAlive(os.Getpid()); !alive || !known {
		t.Fatal("this process is not alive")
	}
}

// TestStaleRulesEdges covers the edges of removeStale's rules: a process
// id of 0 or past 2^31-1 names no process, so its temporary goes by age;
// a temporary exactly StaleAge old, or 59 minutes old, stays; and names
// that only look like temporaries (no name before .tmp-, a host part that
// is not eight lowercase hex digits, a random part that is not digits, an
// empty suffix) stay however old, as does a folder of the pattern.
func TestStaleRulesEdges(t *testing.T) {
	dir := t.TempDir()
	now := time.Now().Truncate(time.Second) // a file time any file system keeps
	old := now.Add(-2 * StaleAge)
	dead := 1<<31 - 2
	cases := []struct {
		name    string
		mod     time.Time
		removed bool
	}{
		{fmt.Sprintf(".x.tmp-%s-0-30", hostTag), old, true},
		{fmt.Sprintf(".x.tmp-%s-%d-31", hostTag, int64(1)<<40), old, true},
		{".x.tmp-123", now.Add(-StaleAge), false},
		{".x.tmp-0badf00d-42-32", now.Add(-59 * time.Minute), false},
		{"..tmp-123", old, false},
		{".x.tmp-abc-42-33", old, false},
		{".x.tmp-0BADF00D-42-34", old, false},
		{".x.tmp-ghijklmn-42-35", old, false},
		{fmt.Sprintf(".x.tmp-%s-%d-abc", hostTag, dead), now, false},
		{".x.tmp-", old, false},
		{".folder.tmp-123", old, false}, // made a folder below
	}
	for _, tc := range cases {
		p := filepath.Join(dir, tc.name)
		var err error
		if strings.HasPrefix(tc.name, ".folder") {
			err = os.Mkdir(p, 0o755)
		} else {
			err = os.WriteFile(p, nil, 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, tc.mod, tc.mod); err != nil {
			t.Fatal(err)
		}
	}
	removeStale(dir, now)
	for _, tc := range cases {
		_, err := os.Stat(filepath.Join(dir, tc.name))
		if gone := os.IsNotExist(err); gone != tc.removed {
			t.Errorf("%s, %v old: removed %v, want %v", tc.name, now.Sub(tc.mod), gone, tc.removed)
		}
	}
	if runtime.GOOS == "windows" {
		return
	}
	// Process 1 is always there; another user's process (as it is when not
	// run by root) is alive too, though signalling it is not permitted.
	if alive, known := processAlive(1); !alive || !known {
		t.Errorf("process 1: alive %v, known %v", alive, known)
	}
}

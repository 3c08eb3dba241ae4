package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"testing"

	"github.com/spiderenv/spider/server"
	"github.com/spiderenv/spider/train"
)

// TestTrainRSS runs spider train in a child process with a --max-memory
// just above what its batch, rollout and learner need: the child's peak
// RSS must stay within the limit plus server.Overhead, as the flag's help
// promises. Without the Go memory limit the collector let the heap grow
// to about twice what the run holds (317 MiB where the limit was 150MiB).
func TestTrainRSS(t *testing.T) {
	if out := os.Getenv("SPIDER_TRAIN_RSS_CHILD"); out != "" {
		args := []string{"train", "--games", "256", "--rollout", "64", "--max-memory", fmt.Sprint(rssLimit()), "--iterations", "1",
			"--val-every", "0", "--out", out}
		var stderr bytes.Buffer
		if code := Main(args, nil, io.Discard, &stderr); code != 0 {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
		// The child's own peak: the rusage its parent gets would count
		// the parent's memory too, which the child shares until its exec.
		status, err := os.ReadFile("/proc/self/status")
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(status), "\n") {
			if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
				fmt.Printf("peak %s\n", strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			}
		}
		return
	}
	if testing.Short() {
		t.Skip("trains for a few seconds")
	}
	if runtime.GOOS != "linux" || raceEnabled {
		t.Skip("reads the child's rusage; the race detector's memory would be measured too")
	}
	child := exec.Command(os.Args[0], "-test.run=^TestTrainRSS$", "-test.count=1")
	child.Env = append(os.Environ(), "SPIDER_TRAIN_RSS_CHILD="+filepath.Join(t.TempDir(), "run"))
	out, err := child.CombinedOutput()
	if err != nil {
		t.Fatalf("the child: %v\n%s", err, out)
	}
	var kib int64
	at := bytes.Index(out, []byte("peak "))
	if at < 0 {
		t.Fatalf("no peak RSS from the child:\n%s", out)
	}
	if _, err := fmt.Sscanf(string(out[at:]), "peak %d", &kib); err != nil || kib == 0 {
		t.Fatalf("no peak RSS from the child (%v):\n%s", err, out)
	}
	peak := kib << 10
	if limit := rssLimit() + server.Overhead; peak > limit {
		t.Fatalf("peak RSS %d MiB, over --max-memory %d MiB plus %d MiB", peak>>20, rssLimit()>>20, server.Overhead>>20)
	}
	t.Logf("peak RSS %d MiB", peak>>20)
}

// rssLimit is TestTrainRSS's --max-memory: 180 MiB, just above what the
// run's batch, rollout and learner hold in Go's heap, and what the
// OpenBLAS build's multiplies hold outside it (train.BLASBytes, 0 in the
// pure-Go build), so that a build's limit is as tight as the other's.
func rssLimit() int64 {
	c := train.DefaultConfig()
	c.Games, c.Rollout = 256, 64
	return 180<<20 + train.BLASBytes(c)
}

// limitSpy records the Go memory limit in force as each stderr line of a
// run is written.
type limitSpy struct {
	mu     sync.Mutex
	limits map[string][]int64
}

func (s *limitSpy) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	limit := debug.SetMemoryLimit(-1)
	for _, what := range []string{"warm start", "iter "} {
		if bytes.Contains(p, []byte(what)) {
			s.limits[what] = append(s.limits[what], limit)
		}
	}
	return len(p), nil
}

// TestTrainMemoryLimitAfterImitation: --max-memory sets the Go memory
// limit only once the imitation phases are over (their labelled positions
// are not in its estimate, and a limit below them would keep the collector
// running), and the old limit is back when the run ends.
func TestTrainMemoryLimitAfterImitation(t *testing.T) {
	o := tinyTrain(filepath.Join(t.TempDir(), "run"), 2)
	o.maxMemory = 64 << 20
	before := debug.SetMemoryLimit(-1)
	spy := &limitSpy{limits: map[string][]int64{}}
	if err := runTrain(context.Background(), o, io.Discard, spy); err != nil {
		t.Fatal(err)
	}
	c := o.cfg
	c.Hidden = o.hidden
	want := int64(o.maxMemory) + server.Overhead/4 - train.BLASBytes(c) // OpenBLAS's buffers are outside the heap
	warm, iters := spy.limits["warm start"], spy.limits["iter "]
	if len(warm) < 2 || len(iters) != 2 {
		t.Fatalf("%d warm-start lines and %d iteration lines", len(warm), len(iters))
	}
	for _, l := range warm[:len(warm)-1] { // the last is printed after the phase
		if l != before {
			t.Errorf("limit %d during the warm start, want the process's %d", l, before)
		}
	}
	for _, l := range iters {
		if l != want {
			t.Errorf("limit %d during PPO, want %d", l, want)
		}
	}
	if after := debug.SetMemoryLimit(-1); after != before {
		t.Errorf("limit %d after the run, want %d back", after, before)
	}
}

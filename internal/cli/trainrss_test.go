package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/spiderenv/spider/server"
)

// TestTrainRSS runs spider train in a child process with a --max-memory
// just above what its batch, rollout and learner need: the child's peak
// RSS must stay within the limit plus server.Overhead, as the flag's help
// promises. Without the Go memory limit the collector let the heap grow
// to about twice what the run holds (317 MiB at --max-memory 150MiB).
func TestTrainRSS(t *testing.T) {
	if out := os.Getenv("SPIDER_TRAIN_RSS_CHILD"); out != "" {
		args := []string{"train", "--games", "256", "--rollout", "64", "--max-memory", "150MiB", "--iterations", "1",
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
	if limit := int64(150<<20) + server.Overhead; peak > limit {
		t.Fatalf("peak RSS %d MiB, over --max-memory 150MiB plus %d MiB", peak>>20, server.Overhead>>20)
	}
	t.Logf("peak RSS %d MiB", peak>>20)
}

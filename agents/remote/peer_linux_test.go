package remote

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spiderenv/spider/env"
)

// TestDialRefusesAnotherUsersAgent: an agent listening on a Unix socket as
// another user (one who made the socket reachable, or took a shared path
// such as /tmp/agent.sock first) is refused before the hello, which would
// tell it the game, rather than played as this user's. It needs root, to
// listen as another user, and python3, which does.
func TestDialRefusesAnotherUsersAgent(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, to listen as another user")
	}
	// The system's: a python3 under root's home (pyenv) is not the other user's to run.
	python := "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		t.Skip("needs /usr/bin/python3:", err)
	}
	dir, err := os.MkdirTemp("", "agent-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "agent.sock")
	cmd := exec.Command(python, "-c", `import os, socket, sys, time
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); os.chmod(sys.argv[1], 0o777); s.listen(1)
print("ready", flush=True); time.sleep(20)`, path)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Skip("cannot run python3 as user 65534:", err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("the other user's listener: %q, %v", line, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a, err := Dial(ctx, "unix:"+path, Options{Rules: env.MustRules(env.Options{}), Timeout: 3 * time.Second})
	if err == nil {
		a.Close()
		t.Fatal("an agent of user 65534 was dialled")
	}
	if !strings.Contains(err.Error(), "runs as user 65534") {
		t.Fatalf("dialling another user's agent: %v", err)
	}
}

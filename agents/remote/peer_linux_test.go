package remote

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spiderenv/spider/env"
	"github.com/spiderenv/spider/internal/otheruser"
)

// TestDialRefusesAnotherUsersAgent: an agent listening on a Unix socket as
// another user (one who made the socket reachable, or took a shared path
// such as /tmp/agent.sock first) is refused before the hello, which would
// tell it the game, rather than played as this user's. It needs root, to
// listen as another user, and python3, which does.
func TestDialRefusesAnotherUsersAgent(t *testing.T) {
	dir, err := os.MkdirTemp("", "agent-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "agent.sock")
	_, out := otheruser.Python(t, `import os, socket, sys, time
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); os.chmod(sys.argv[1], 0o777); s.listen(1)
print("ready", flush=True); time.sleep(20)`, path)
	otheruser.ReadLine(t, out)
	dialRefused(t, "unix:"+path)
}

// TestDialRefusesAnotherUsersTCPAgent: over loopback TCP, where any local
// user can listen at a free port (the one an agent was to take), an agent
// whose port another user listens at is refused before the hello too. The
// listener never accepts, as one need not before a connection is made.
func TestDialRefusesAnotherUsersTCPAgent(t *testing.T) {
	for _, host := range []string{"127.0.0.1", "::1"} {
		t.Run(host, func(t *testing.T) {
			family := "AF_INET"
			if host == "::1" {
				family = "AF_INET6"
			}
			_, out := otheruser.Python(t, `import socket, sys, time
s = socket.socket(socket.`+family+`); s.bind((sys.argv[1], 0)); s.listen(1)
print(s.getsockname()[1], flush=True); time.sleep(20)`, host)
			port := otheruser.ReadLine(t, out)
			dialRefused(t, net.JoinHostPort(host, port))
		})
	}
}

// dialRefused dials the agent at addr and wants it refused as another
// user's.
func dialRefused(t *testing.T, addr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a, err := Dial(ctx, addr, Options{Rules: env.MustRules(env.Options{}), Timeout: 3 * time.Second})
	if err == nil {
		a.Close()
		t.Fatal("an agent of user 65534 was dialled")
	}
	if !strings.Contains(err.Error(), "runs as user 65534") {
		t.Fatalf("dialling another user's agent: %v", err)
	}
}

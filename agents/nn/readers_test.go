package nn_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spiderenv/spider/agents"
	"github.com/spiderenv/spider/agents/nn"
)

// TestEveryPolicyReaderRefusesHostileCheckpoints goes through agents.New
// with "nn:PATH", the one way eval --policies, play --hint and serve
// --hint read a checkpoint (train --resume goes through nn.Load too; the
// train package tests it): each crafted file is refused, naming it.
func TestEveryPolicyReaderRefusesHostileCheckpoints(t *testing.T) {
	dir := t.TempDir()
	for name, b := range nn.HostileCheckpoints() {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := agents.New("nn:" + p); err == nil || !strings.HasPrefix(err.Error(), p+": ") {
			t.Errorf("nn:%s: %v; want a refusal naming the file", name, err)
		}
	}
}

package record

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spiderenv/spider/agents"
	"github.com/spiderenv/spider/env"
)

func TestSaveLoadReplay(t *testing.T) {
	r := env.MustRules(env.Options{RuleSet: env.Cardems, Suits: 2, MaxSteps: 300})
	res := agents.Play(r, 17, &agents.Greedy{})
	final := env.NewGame(r, 17)
	for _, a := range res.Actions {
		final.Step(a)
	}
	g := New(r, 17, "greedy", res.Actions, &final)
	path := filepath.Join(t.TempDir(), "game.spider")
	if err := Save(path, g); err != nil {
		t.Fatal(err)
	}
	back, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	steps := 0
	s, err := Replay(back, func(i int, a env.Action, s *env.State) { steps++ })
	if err != nil {
		t.Fatal(err)
	}
	if s != final || steps != len(res.Actions) || s.Score() != res.Score {
		t.Fatalf("replay differs: score %d vs %d, %d steps", s.Score(), res.Score, steps)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Fatalf("temporary files left: %v", entries)
	}
}

func TestLoadRefusesCorruptFiles(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.spider")
	os.WriteFile(bad, []byte("not msgpack at all"), 0o644)
	if _, err := Load(bad); err == nil || !strings.Contains(err.Error(), "bad.spider") {
		t.Fatalf("corrupt file: %v", err)
	}
	g := Game{Version: 99, Rules: "classic", Suits: 1}
	p := filepath.Join(dir, "v99.spider")
	Save(p, g)
	if _, err := Load(p); err == nil || !strings.Contains(err.Error(), "version 99") {
		t.Fatalf("future version: %v", err)
	}
	// A tampered action or result is caught by the replay.
	r := env.MustRules(env.Options{Suits: 1, MaxSteps: 50})
	res := agents.Play(r, 2, &agents.Greedy{})
	final := env.NewGame(r, 2)
	for _, a := range res.Actions {
		final.Step(a)
	}
	tampered := New(r, 2, "greedy", res.Actions, &final)
	tampered.Score++
	if _, err := Replay(tampered, nil); err == nil || !strings.Contains(err.Error(), "the record says") {
		t.Fatalf("tampered result: %v", err)
	}
	tampered = New(r, 2, "greedy", res.Actions, &final)
	tampered.Actions[0] = 2000 // outside the action space
	if _, err := Replay(tampered, nil); err == nil {
		t.Fatal("a tampered action replayed")
	}
}

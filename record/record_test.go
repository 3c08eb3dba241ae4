package record

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/spiderenv/spider/agents"
	"github.com/spiderenv/spider/env"
	"github.com/spiderenv/spider/internal/msgpackcheck"
)

// writeSealed writes g as Save would, checksum included, but without
// Save's checks: a record another program could write.
func writeSealed(t *testing.T, path string, g any) {
	t.Helper()
	b, err := msgpack.Marshal(g)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, msgpackcheck.Seal(b), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestSaveLoadReplay(t *testing.T) {
	r := env.MustRules(env.Options{RuleSet: env.Cardems, Suits: 2, MaxSteps: 300, FaceUpSlots: 20})
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
	if !reflect.DeepEqual(back, g) || back.Game != r.Options() || back.Version != Version {
		t.Fatalf("loaded %+v, saved %+v", back, g)
	}
	if br, err := back.RulesOf(); err != nil || br != r {
		t.Fatalf("RulesOf = %v, %v; want %v", br, err, r)
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

	// Save refuses what Load would: a Game literal without New's version
	// is not written.
	other := filepath.Join(t.TempDir(), "literal.spider")
	literal := Game{Game: r.Options(), Seed: 1, Score: 500}
	if err := Save(other, literal); err == nil || !strings.Contains(err.Error(), "record version 0, this program writes version 3") {
		t.Fatalf("Save of a version-0 game: %v", err)
	}
	if _, err := os.Stat(other); !os.IsNotExist(err) {
		t.Fatalf("a refused game was written: %v", err)
	}
}

func TestLoadRefusesCorruptFiles(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.spider")
	os.WriteFile(bad, []byte("not msgpack at all"), 0o644)
	if _, err := Load(bad); err == nil || !strings.HasPrefix(err.Error(), bad+": not a spider game record") {
		t.Fatalf("corrupt file: %v", err)
	}
	g := Game{Version: 99}
	p := filepath.Join(dir, "v99.spider")
	writeSealed(t, p, g) // Save refuses it
	if _, err := Load(p); err == nil || err.Error() != fmt.Sprintf("%s: record version 99, this program reads version %d", p, Version) {
		t.Fatalf("future version: %v", err)
	}
	g = Game{Version: Version, Game: env.Options{Suits: 3}}
	p = filepath.Join(dir, "suits.spider")
	if err := Save(p, g); err == nil || err.Error() != p+": env: suits must be 1, 2 or 4, not 3" {
		t.Fatalf("saving a 3-suit record: %v", err)
	}
	writeSealed(t, p, g) // as another program could
	if _, err := Load(p); err == nil || err.Error() != p+": env: suits must be 1, 2 or 4, not 3" {
		t.Fatalf("a 3-suit record: %v", err)
	}
	// Ten bytes claiming 2^32-1 actions are refused before msgpack
	// allocates them.
	p = filepath.Join(dir, "huge.spider")
	os.WriteFile(p, []byte{0x81, 0xa7, 'a', 'c', 't', 'i', 'o', 'n', 's', 0xdd, 0xff, 0xff, 0xff, 0xff}, 0o644)
	if _, err := Load(p); err == nil || err.Error() != p+": not a spider game record: the value at byte 9 declares more than the 0 bytes left" {
		t.Fatalf("a record declaring 2^32-1 actions: %v", err)
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
	if _, err := Replay(tampered, nil); err == nil || !strings.HasPrefix(err.Error(), "action 1: ") {
		t.Fatalf("a tampered action: %v", err)
	}
}

// TestLoadRefusesVersion1 writes a record in version 1's layout, whose
// game was its own rules, suits, max_steps and time_per_action_ms keys:
// Load must refuse it by its version number.
func TestLoadRefusesVersion1(t *testing.T) {
	type gameV1 struct {
		Version         int      `msgpack:"version"`
		Rules           string   `msgpack:"rules"`
		Suits           int      `msgpack:"suits"`
		MaxSteps        int      `msgpack:"max_steps"`
		TimePerActionMs int64    `msgpack:"time_per_action_ms"`
		Seed            uint64   `msgpack:"seed"`
		Player          string   `msgpack:"player"`
		Actions         []uint16 `msgpack:"actions"`
		Score           int      `msgpack:"score"`
		Runs            int      `msgpack:"runs"`
		Won             bool     `msgpack:"won"`
	}
	b, err := msgpack.Marshal(gameV1{Version: 1, Rules: "classic", Suits: 1, MaxSteps: 1000, Seed: 3, Player: "greedy",
		Actions: []uint16{1080}, Score: 499})
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "v1.spider")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("%s: record version 1, this program reads version %d", p, Version)
	if _, err := Load(p); err == nil || err.Error() != want {
		t.Fatalf("a version-1 record: %v; want %q", err, want)
	}
}

package record

import (
	"bytes"
	"fmt"
	"math"
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
	// A record cut short is called damaged, not a file of another kind:
	// its first entry (the version) still says what it is. Cut before
	// that entry ends, it is not known to be a record.
	whole := filepath.Join(dir, "whole.spider")
	if err := Save(whole, validRecord(t)); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(whole)
	if err != nil {
		t.Fatal(err)
	}
	for cut, want := range map[int]string{len(b) / 2: ": damaged game record (cut short?): ", len(b) - 6: ": damaged game record (cut short?): ", 5: ": not a spider game record: "} {
		p = filepath.Join(dir, "cut.spider")
		os.WriteFile(p, b[:cut], 0o644)
		if _, err := Load(p); err == nil || !strings.HasPrefix(err.Error(), p+want) {
			t.Errorf("the record cut at byte %d of %d: %v; want %q", cut, len(b), err, want)
		}
	}
	// A tampered action or result is caught by the replay.
	for name, tamper := range map[string]func(g *Game){
		"score": func(g *Game) { g.Score++ },
		"runs":  func(g *Game) { g.Runs++ },
		"won":   func(g *Game) { g.Won = !g.Won },
	} {
		tampered := validRecord(t)
		tamper(&tampered)
		if _, err := Replay(tampered, nil); err == nil || !strings.Contains(err.Error(), "the record says") {
			t.Fatalf("tampered %s: %v", name, err)
		}
	}
	tampered := validRecord(t)
	tampered.Actions[0] = 2000 // outside the action space
	if _, err := Replay(tampered, nil); err == nil || !strings.HasPrefix(err.Error(), "action 1: ") {
		t.Fatalf("a tampered action: %v", err)
	}
}

// TestLoadRefusesOutOfRangeIntegers: an action past 65535 or below 0, a
// negative seed, or a game option past int's range, which decoding into a
// Game would change (a uint16 keeps an action's low bits, a uint64 wraps a
// seed, an int a uint64) rather than refuse, is refused.
func TestLoadRefusesOutOfRangeIntegers(t *testing.T) {
	dir := t.TempDir()
	g := validRecord(t)
	ok := filepath.Join(dir, "ok.spider")
	if err := Save(ok, g); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(ok); err != nil {
		t.Fatalf("the record itself: %v", err)
	}
	// The same record as a map, with one field changed.
	base := func() rawRecord { return rawOf(g) }
	last := len(g.Actions)
	for _, tc := range []struct {
		name, want string
		edit       func(*rawRecord)
	}{
		{"action+65536", "not a spider game record: actions[0] is " + fmt.Sprint(int(g.Actions[0])+65536) + ", outside uint16's range (0 to 65535)", func(x *rawRecord) { x.Actions[0] = uint64(g.Actions[0]) + 65536 }},
		{"action65536", "not a spider game record: actions[1] is 65536, outside uint16's range (0 to 65535)", func(x *rawRecord) { x.Actions[1] = uint64(65536) }}, // one past the bound: read as 0 if let through
		{"action-1", "not a spider game record: actions[1] is -1, outside uint16's range (0 to 65535)", func(x *rawRecord) { x.Actions[1] = int64(-1) }},
		{"action2^64-1", "not a spider game record: actions[2] is 18446744073709551615, outside uint16's range (0 to 65535)", func(x *rawRecord) { x.Actions[2] = uint64(math.MaxUint64) }},
		{"action-2^63", "not a spider game record: actions[0] is -9223372036854775808, outside uint16's range (0 to 65535)", func(x *rawRecord) { x.Actions[0] = int64(math.MinInt64) }},
		{"seed-1", "not a spider game record: seed is -1, outside uint64's range (0 to 18446744073709551615)", func(x *rawRecord) { x.Seed = int64(-1) }},
		// Integers in every encoding, the last action too: a negative
		// fixint or int8 is negative.
		{"fixint-seed", "not a spider game record: seed is -1, outside uint64's range (0 to 18446744073709551615)", func(x *rawRecord) { x.Seed = msgpack.RawMessage{0xff} }},
		{"fixint-action", fmt.Sprintf("not a spider game record: actions[%d] is -32, outside uint16's range (0 to 65535)", last-1), func(x *rawRecord) { x.Actions[last-1] = msgpack.RawMessage{0xe0} }},
		{"int8-action", "not a spider game record: actions[0] is -1, outside uint16's range (0 to 65535)", func(x *rawRecord) { x.Actions[0] = msgpack.RawMessage{0xd0, 0xff} }},
		{"last-action", fmt.Sprintf("not a spider game record: actions[%d] is 65536, outside uint16's range (0 to 65535)", last-1), func(x *rawRecord) { x.Actions[last-1] = uint64(65536) }},
	} {
		x := base()
		tc.edit(&x)
		p := filepath.Join(dir, tc.name+".spider")
		writeSealed(t, p, x)
		if _, err := Load(p); err == nil || err.Error() != p+": "+tc.want {
			t.Errorf("%s: %v; want %q", tc.name, err, tc.want)
		}
	}
	// The same with the keys written as bins, which msgpack takes as field
	// names too.
	for _, tc := range []struct{ name, key, want string }{
		{"bin-actions", "actions", "actions[0] is "},
		{"bin-seed", "seed", "seed is -1, outside"},
	} {
		x := base()
		if tc.key == "actions" {
			x.Actions[0] = uint64(g.Actions[0]) + 65536
		} else {
			x.Seed = int64(-1)
		}
		b, err := msgpack.Marshal(x)
		if err != nil {
			t.Fatal(err)
		}
		str := append([]byte{0xa0 | byte(len(tc.key))}, tc.key...)
		bin := append([]byte{0xc4, byte(len(tc.key))}, tc.key...)
		b = bytes.Replace(b, str, bin, 1)
		p := filepath.Join(dir, tc.name+".spider")
		if err := os.WriteFile(p, msgpackcheck.Seal(b), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(p); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want %q", tc.name, err, tc.want)
		}
	}
	// A game option msgpack would cut: a step limit of 2^64-1 would read
	// as -1, no limit at all, which the options' own check allows.
	{
		x := base()
		m := map[string]any{"version": x.Version, "game": map[string]any{"rules": "classic", "suits": 1, "max_steps": uint64(math.MaxUint64)},
			"seed": x.Seed, "player": x.Player, "actions": x.Actions, "score": x.Score, "runs": x.Runs, "won": x.Won}
		p := filepath.Join(dir, "max-steps.spider")
		writeSealed(t, p, m)
		want := fmt.Sprintf(`%s: not a spider game record: env: game option "max_steps": 18446744073709551615 is outside int's range (%d to %d)`, p, math.MinInt, math.MaxInt)
		if _, err := Load(p); err == nil || err.Error() != want {
			t.Errorf("max_steps 2^64-1: %v; want %q", err, want)
		}
	}
	// In range, whatever the encoding: a seed as an int 64 and an action as
	// an int 16 load.
	x := base()
	a := g.Actions[0]
	x.Seed = msgpack.RawMessage{0xd3, 0, 0, 0, 0, 0, 0, 0, 2}
	x.Actions[0] = msgpack.RawMessage{0xd1, byte(a >> 8), byte(a)}
	p := filepath.Join(dir, "signed.spider")
	writeSealed(t, p, x)
	if got, err := Load(p); err != nil || got.Seed != 2 || got.Actions[0] != g.Actions[0] {
		t.Fatalf("signed encodings in range: %v", err)
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

// TestLoadRefusesUnknownGameOption: a record written by a newer build with
// a game option this build does not know is refused, naming the option,
// rather than replayed as another game.
func TestLoadRefusesUnknownGameOption(t *testing.T) {
	dir := t.TempDir()
	g := validRecord(t)
	m := savedAsMap(t, filepath.Join(dir, "ok.spider"), g)
	m["game"].(map[string]any)["from_a_newer_build"] = 7
	p := filepath.Join(dir, "newer.spider")
	writeSealed(t, p, m)
	if _, err := Load(p); err == nil || !strings.HasPrefix(err.Error(), p+": ") || !strings.Contains(err.Error(), `unknown game option "from_a_newer_build"`) {
		t.Fatalf("a record with an unknown game option: %v", err)
	}
	delete(m["game"].(map[string]any), "from_a_newer_build")
	writeSealed(t, p, m)
	if got, err := Load(p); err != nil || got.Game != g.Game {
		t.Fatalf("the record itself: %+v, %v", got.Game, err)
	}
}

// TestLoadRefusesMissingOrUnknownKeys checks that a sealed record map
// that lacks one of a record's keys, or holds one more, is refused by
// name: msgpack zeroes a missing field and skips an unknown one, so a map
// of a version alone loaded as a game of seed 0 and no moves.
func TestLoadRefusesMissingOrUnknownKeys(t *testing.T) {
	dir := t.TempDir()
	m := savedAsMap(t, filepath.Join(dir, "ok.spider"), validRecord(t))
	p := filepath.Join(dir, "odd.spider")
	for _, k := range recordKeys[1:] {
		v := m[k]
		delete(m, k)
		writeSealed(t, p, m)
		if _, err := Load(p); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("not a spider game record: no %q", k)) {
			t.Errorf("a record without %q: %v", k, err)
		}
		m[k] = v
	}
	m["extra"] = 1
	writeSealed(t, p, m)
	if _, err := Load(p); err == nil || !strings.Contains(err.Error(), "9 entries, where a record has the 8 keys") {
		t.Errorf("a record with a key more: %v", err)
	}
	delete(m, "extra")
	writeSealed(t, p, m)
	if _, err := Load(p); err != nil {
		t.Fatalf("the record itself: %v", err)
	}
	// A map of more than 255 entries has a two-byte count (map16), read
	// whole: the 8 keys and 256 more.
	for i := range 256 {
		m[fmt.Sprintf("extra%03d", i)] = i
	}
	writeSealed(t, p, m)
	if _, err := Load(p); err == nil || !strings.Contains(err.Error(), "264 entries, where a record has the 8 keys") {
		t.Errorf("a record with 256 keys more: %v", err)
	}
	writeSealed(t, p, map[string]any{"version": Version, "extra": 1})
	if _, err := Load(p); err == nil || !strings.Contains(err.Error(), "no \"game\"") {
		t.Errorf("a version alone: %v", err)
	}
}

// savedAsMap saves g at path and returns the file's map (its checksum
// left off), to edit and write again with writeSealed.
func savedAsMap(t *testing.T, path string, g Game) map[string]any {
	t.Helper()
	if err := Save(path, g); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n, err := msgpackcheck.Size(b)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := msgpack.Unmarshal(b[:n], &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// rawRecord is a record's map with the seed and actions of any msgpack
// type, so that a test can write what Save never would.
type rawRecord struct {
	Version int         `msgpack:"version"`
	Game    env.Options `msgpack:"game"`
	Seed    any         `msgpack:"seed"`
	Player  string      `msgpack:"player"`
	Actions []any       `msgpack:"actions"`
	Score   int         `msgpack:"score"`
	Runs    int         `msgpack:"runs"`
	Won     bool        `msgpack:"won"`
}

// rawOf is g as a rawRecord.
func rawOf(g Game) rawRecord {
	x := rawRecord{Version: g.Version, Game: g.Game, Seed: g.Seed, Player: g.Player, Score: g.Score, Runs: g.Runs, Won: g.Won}
	for _, a := range g.Actions {
		x.Actions = append(x.Actions, uint64(a))
	}
	return x
}

package train

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/spiderenv/spider/agents/nn"
	"github.com/spiderenv/spider/env"
	"github.com/spiderenv/spider/internal/alloccount"
)

// savedState saves a fresh tiny run into dir and returns its network and
// its training state as a generic map, to change and save with saveState.
func savedState(t *testing.T, dir string) (*nn.Net, map[string]any) {
	t.Helper()
	return savedStateOf(t, dir, tinyConfig())
}

// savedStateOf is savedState for a trainer of configuration c.
func savedStateOf(t *testing.T, dir string, c Config) (*nn.Net, map[string]any) {
	t.Helper()
	tr, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	p := filepath.Join(dir, "fresh.spider")
	if err := tr.Save(p); err != nil {
		t.Fatal(err)
	}
	net, raw, err := nn.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	var st map[string]any
	if err := msgpack.Unmarshal(raw, &st); err != nil {
		t.Fatal(err)
	}
	return net, st
}

// saveState writes net and st as a checkpoint named name in dir (with
// its checksum, as a trainer would) and returns its path.
func saveState(t *testing.T, dir, name string, net *nn.Net, st any) string {
	t.Helper()
	raw, err := msgpack.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := nn.Save(p, net, raw); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestResumeRefusesHostileCheckpoints: train --resume reads through
// nn.Load, so the 35-byte checkpoint (a weight array declared
// with 2^32-1 items) is refused quickly, naming the file.
func TestResumeRefusesHostileCheckpoints(t *testing.T) {
	b := []byte{0x83, 0xa4, 'k', 'i', 'n', 'd', 0xad}
	b = append(b, "spider-policy"...)
	b = append(b, 0xa6)
	b = append(b, "format"...)
	b = append(b, byte(nn.Format), 0xa1, 'w', 0xdd)
	b = binary.BigEndian.AppendUint32(b, 1<<32-1)
	if len(b) != 35 {
		t.Fatalf("%d bytes, not the issue's 35", len(b))
	}
	p := filepath.Join(t.TempDir(), "checkpoint.spider")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	var err error
	start := time.Now()
	got := alloccount.Bytes(func() { _, err = Resume(p, nil) })
	if err == nil || !strings.HasPrefix(err.Error(), p+": damaged checkpoint (cut short?): ") {
		t.Fatalf("the 35-byte checkpoint: %v", err)
	}
	if got > 64<<10 || time.Since(start) > time.Second {
		t.Fatalf("refusing it took %d bytes and %v", got, time.Since(start))
	}
}

// TestResumeIfAsksBeforeAllocating: a checkpoint of a few kilobytes whose
// configuration asked for 16384 games of 64 rollout steps made Resume
// allocate some 2.5 GB of buffers before its batch of 4 games was found
// not to match. The saved games are now counted first, and ResumeIf
// hands admit the configuration before any buffer is made: 4 games of
// 262144 steps, which the 4 saved games match, ask for gigabytes too.
func TestResumeIfAsksBeforeAllocating(t *testing.T) {
	dir := t.TempDir()
	net, st := savedState(t, dir)
	c := st["config"].(map[string]any)
	c["games"], c["rollout"] = 1<<14, 64
	p := saveState(t, dir, "huge.spider", net, st)
	admitted := false
	var err error
	got := alloccount.Bytes(func() {
		_, err = ResumeIf(p, nil, func(Config) error { admitted = true; return nil })
	})
	if err == nil || admitted || !strings.Contains(err.Error(), "a snapshot of 4 games for a run of 16384") || got > 16<<20 {
		t.Fatalf("16384 games, 4 saved: %v (admit called: %v), %d bytes allocated", err, admitted, got)
	}
	c["games"], c["rollout"] = 4, 1<<18
	p = saveState(t, dir, "long.spider", net, st)
	refused := errors.New("over the limit")
	var seen Config
	got = alloccount.Bytes(func() {
		_, err = ResumeIf(p, nil, func(c Config) error { seen = c; return refused })
	})
	if err != refused || seen.Games != 4 || seen.Rollout != 1<<18 {
		t.Fatalf("ResumeIf: %v, admit saw %d games x %d steps", err, seen.Games, seen.Rollout)
	}
	if got > 16<<20 {
		t.Fatalf("refusing it allocated %d bytes", got)
	}
	if need, err := seen.BufferBytes(); err != nil || need < 1<<30 {
		t.Fatalf("the buffers it asks for: %d bytes, %v; want over 1 GiB", need, err)
	}
	// An admit that accepts resumes the run as Resume does.
	fresh := filepath.Join(dir, "fresh.spider")
	tr, err := ResumeIf(fresh, nil, func(Config) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	tr.Close()
}

// TestResumeRefusesNilHistory: a training state whose history declares a
// quarter of a million nil lines backs each with one byte of the file, but
// each would cost a whole Metrics (some 300 bytes), twice: the state is
// refused before decoding. Before, Resume allocated some 150 MB for it.
func TestResumeRefusesNilHistory(t *testing.T) {
	dir := t.TempDir()
	net, st := savedState(t, dir)
	st["history"] = make([]any, 1<<18)
	p := saveState(t, dir, "nil-history.spider", net, st)
	var err error
	got := alloccount.Bytes(func() { _, err = Resume(p, nil) })
	if err == nil || !strings.HasPrefix(err.Error(), p+": unreadable training state: decoding would allocate more than") {
		t.Fatalf("a history of nil lines: %v", err)
	}
	if got > 16<<20 {
		t.Fatalf("refusing it allocated %d bytes", got)
	}
}

// TestResumeRefusesBadCountersAndText: counters that cannot be negative
// are refused (Resume already checked them: this pins it), and so is text
// that would be printed or written to the metrics if it is not theirs.
func TestResumeRefusesBadCountersAndText(t *testing.T) {
	dir := t.TempDir()
	net, st := savedState(t, dir)
	good := saveState(t, dir, "good.spider", net, st)
	if tr, err := Resume(good, nil); err != nil {
		t.Fatalf("the state as saved: %v", err)
	} else {
		tr.Close()
	}
	for name, tc := range map[string]struct {
		key  string
		val  any
		want string
	}{
		"iter":     {"iter", -1, "negative counters in the training state (iter -1,"},
		"steps":    {"env_steps", -5, "negative counters in the training state (iter 0, env steps -5,"},
		"episodes": {"episodes", -2, "episodes -2,"},
		"adam":     {"adam_t", -3, "adam steps -3,"},
		// Past 2^53 the bias corrections lose the count, and T+1 could
		// wrap: every weight became NaN at the first update.
		"adam huge": {"adam_t", int64(1) << 62, "the optimiser's step count 4611686018427387904 is outside 0-9007199254740992"},
		"elapsed":   {"elapsed_s", -1.5, "elapsed -1.5)"},
		"rounds":    {"dagger_rounds_done", -1, "-1 DAgger rounds done of 0"},
		"teacher":   {"config.teacher", "greedy\x1b[2J", `the teacher's name "greedy\x1b[2J" is not printable text`},
		"invalid":   {"config.teacher", "gr\xffedy", `the teacher's name "gr\xffedy" is not printable text`},
		"phase":     {"history", []any{map[string]any{"phase": "ppo\x1b]0;x\a"}}, `line 1 of the history has the unknown phase "ppo\x1b]0;x\a"`},
	} {
		changed := map[string]any{}
		for k, v := range st {
			changed[k] = v
		}
		if sub, ok := strings.CutPrefix(tc.key, "config."); ok {
			c := map[string]any{}
			for k, v := range st["config"].(map[string]any) {
				c[k] = v
			}
			c[sub] = tc.val
			// Without a warm start, as New allows any teacher's name
			// then, the name is checked only as text.
			c["clone_games"] = 0
			changed["config"] = c
		} else {
			changed[tc.key] = tc.val
		}
		if name == "adam huge" && strconv.IntSize == 32 {
			continue // no int holds it there: refused as a number that does not fit
		}
		p := saveState(t, dir, name+".spider", net, changed)
		if _, err := Resume(p, nil); err == nil || !strings.HasPrefix(err.Error(), p+": ") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want an error naming the file and saying %q", name, err, tc.want)
		}
	}
}

// TestResumeRefusesBadAdamState: optimiser moments no run produces are
// refused, naming the file. Before, a NaN first moment or a negative
// second one made every weight NaN at the first update (blamed on the
// training), and an infinite second moment froze every weight for good
// and was saved again.
func TestResumeRefusesBadAdamState(t *testing.T) {
	dir := t.TempDir()
	net, st := savedState(t, dir)
	for name, tc := range map[string]struct {
		key  string
		val  float32
		want string
	}{
		"m NaN":      {"adam_m", float32(math.NaN()), "the optimiser's first moment of tensor 1 holds a value that is not finite"},
		"m infinite": {"adam_m", float32(math.Inf(-1)), "the optimiser's first moment of tensor 1 holds a value that is not finite"},
		"v negative": {"adam_v", -1, "the optimiser's second moment of tensor 1 holds a value that is negative or not finite"},
		"v infinite": {"adam_v", float32(math.Inf(1)), "the optimiser's second moment of tensor 1 holds a value that is negative or not finite"},
		"v NaN":      {"adam_v", float32(math.NaN()), "the optimiser's second moment of tensor 1 holds a value that is negative or not finite"},
	} {
		changed := maps.Clone(st)
		tensors := slices.Clone(st[tc.key].([]any))
		b := slices.Clone(tensors[1].([]byte))
		binary.LittleEndian.PutUint32(b[4:], math.Float32bits(tc.val)) // nn.Floats: little-endian float32s
		tensors[1], changed[tc.key] = b, tensors
		p := saveState(t, dir, strings.ReplaceAll(name, " ", "-")+".spider", net, changed)
		if tr, err := Resume(p, nil); err == nil || !strings.HasPrefix(err.Error(), p+": ") || !strings.Contains(err.Error(), tc.want) {
			if tr != nil {
				tr.Close()
			}
			t.Errorf("%s: %v; want an error naming the file and saying %q", name, err, tc.want)
		}
	}
}

// TestResumeRefusesDamagedState: a flipped bit in the trainer's part of
// the file (Adam's moments) is refused by the checkpoint's checksum.
func TestResumeRefusesDamagedState(t *testing.T) {
	dir := t.TempDir()
	net, st := savedState(t, dir)
	p := saveState(t, dir, "good.spider", net, st)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(b, []byte("adam_m"))
	if i < 0 {
		t.Fatal("no Adam state in the file")
	}
	b[i+40] ^= 0x10
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Resume(p, nil); err == nil || !strings.HasPrefix(err.Error(), p+": damaged checkpoint: checksum mismatch") {
		t.Fatalf("a flipped bit in Adam's moments: %v", err)
	}
}

// TestResumeRefusesBadHistoryAndImitation: numbers no run writes (a NaN
// in the history, which the curve cannot plot) and imitation games that
// do not fit the run or do not replay are refused when the checkpoint is
// read, not when a save or the next DAgger round trips on them.
func TestResumeRefusesBadHistoryAndImitation(t *testing.T) {
	dir := t.TempDir()
	net, st := savedState(t, dir)
	r, err := tinyConfig().Rules()
	if err != nil {
		t.Fatal(err)
	}
	deal := env.NewGame(r, 1)
	illegal := env.Action(0)
	for deal.Legal(illegal) {
		illegal++
	}
	game := func(played, labels []env.Action) map[string]any {
		return map[string]any{"seed": 1, "played": played, "labels": labels}
	}
	long := make([]env.Action, r.MaxSteps()+1)
	for i := range long {
		long[i] = env.Deal
	}
	d := []env.Action{env.Deal}
	for name, tc := range map[string]struct {
		key  string
		val  any
		want string
	}{
		"nan": {"history", []any{map[string]any{"phase": "ppo", "mean_runs": math.NaN()}}, "line 1 of the history holds a number no run produces"},
		"inf": {"history", []any{map[string]any{"phase": "clone"}, map[string]any{"phase": "ppo", "val_runs": math.Inf(1)}}, "line 2 of the history"},
		// Finite, but past what a run produces: -9e307 and 9e307 on one
		// axis had the curve's plot hang at the first save.
		"val runs":     {"history", []any{map[string]any{"phase": "ppo", "val_games": 4, "val_runs": 9e307}}, "line 1 of the history holds a number no run produces"},
		"win rate":     {"history", []any{map[string]any{"phase": "ppo", "win_rate": 1.5}}, "line 1 of the history"},
		"finished":     {"history", []any{map[string]any{"phase": "clone"}, map[string]any{"phase": "ppo", "finished": -2}}, "line 2 of the history"},
		"mean return":  {"history", []any{map[string]any{"phase": "ppo", "mean_return": -1e300}}, "line 1 of the history"},
		"elapsed time": {"history", []any{map[string]any{"phase": "ppo", "elapsed_s": -1.0}}, "line 1 of the history"},
		"games":        {"imitation", []any{game(d, d), game(d, d), game(d, d)}, "3 imitation games, more than the 2 of the warm start and 0 DAgger rounds of 0"},
		"labels":       {"imitation", []any{game([]env.Action{env.Deal, env.Deal}, d)}, "imitation game 1 has 1 labels for 2 moves"},
		"label":        {"imitation", []any{game(d, []env.Action{illegal})}, "imitation game 1: the label of move 1 is illegal"},
		"move":         {"imitation", []any{game(d, d), game([]env.Action{illegal}, d)}, "imitation game 2, move 1: "},
		"too long":     {"imitation", []any{game(long, long)}, fmt.Sprintf("imitation game 1 has %d moves, over the step limit of %d", len(long), r.MaxSteps())},
	} {
		changed := map[string]any{}
		for k, v := range st {
			changed[k] = v
		}
		changed[tc.key] = tc.val
		p := saveState(t, dir, name+".spider", net, changed)
		if _, err := Resume(p, nil); err == nil || !strings.HasPrefix(err.Error(), p+": ") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want an error naming the file and saying %q", name, err, tc.want)
		}
	}
}

// TestResumeRefusesUnknownGameOption: a checkpoint saved by a newer build
// with a game option this build does not know is refused, naming the
// option, rather than trained on (and saved again) without it.
func TestResumeRefusesUnknownGameOption(t *testing.T) {
	dir := t.TempDir()
	net, st := savedState(t, dir)
	st["config"].(map[string]any)["game"].(map[string]any)["from_a_newer_build"] = 7
	p := saveState(t, dir, "newer.spider", net, st)
	if _, err := Resume(p, nil); err == nil || !strings.HasPrefix(err.Error(), p+": ") || !strings.Contains(err.Error(), `unknown game option "from_a_newer_build"`) {
		t.Fatalf("a checkpoint with an unknown game option: %v", err)
	}
	delete(st["config"].(map[string]any)["game"].(map[string]any), "from_a_newer_build")
	p = saveState(t, dir, "same.spider", net, st)
	tr, err := Resume(p, nil)
	if err != nil {
		t.Fatalf("the checkpoint itself: %v", err)
	}
	tr.Close()
}

// TestResumeFillsInDefaults: a checkpoint from before an option was added
// holds no key for it, so its network's game reads the option as zero,
// the default, while the configuration read back spells the default out.
// The two are one game, and the run resumes. (Shown with shaping_gamma,
// whose zero is the default 1.)
func TestResumeFillsInDefaults(t *testing.T) {
	dir := t.TempDir()
	net, st := savedState(t, dir)
	if net.Spec.Game.ShapingGamma != 1 {
		t.Fatalf("the saved network's game has shaping_gamma %v, not the default spelled out", net.Spec.Game.ShapingGamma)
	}
	net.Spec.Game.ShapingGamma = 0
	p := saveState(t, dir, "older.spider", net, st)
	tr, err := Resume(p, nil)
	if err != nil {
		t.Fatalf("a checkpoint whose network leaves a default unsaid: %v", err)
	}
	tr.Close()
	net.Spec.Game.ShapingGamma = 0.5
	p = saveState(t, dir, "other.spider", net, st)
	if _, err := Resume(p, nil); err == nil || !strings.Contains(err.Error(), "does not match its training configuration") {
		t.Fatalf("a network of another game: %v", err)
	}
}

// TestResumeRefusesGameInsideAnExtension: a training state whose game
// options are a map wrapped in an msgpack extension, followed inside it by
// 50 million hidden widths declared in 5 bytes (800 MB, read out of the
// extension unchecked). Keys are written in order, so the widths come
// where "hidden" follows "game".
func TestResumeRefusesGameInsideAnExtension(t *testing.T) {
	dir := t.TempDir()
	net, st := savedState(t, dir)
	payload := append([]byte{0x80, 0xa6}, "hidden"...)
	payload = append(payload, 0xdd, 0x02, 0xfa, 0xf0, 0x80)
	st["config"].(map[string]any)["game"] = msgpack.RawMessage(append([]byte{0xc7, byte(len(payload)), 1}, payload...))
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	enc.SetSortMapKeys(true)
	if err := enc.Encode(st); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "ext.spider")
	if err := nn.Save(p, net, buf.Bytes()); err != nil {
		t.Fatal(err)
	}
	var err error
	got := alloccount.Bytes(func() { _, err = Resume(p, nil) })
	if err == nil || !strings.HasPrefix(err.Error(), p+": ") || !strings.Contains(err.Error(), "not a map") {
		t.Fatalf("a state whose game is inside an extension: %v", err)
	}
	if got > 1<<20 {
		t.Fatalf("refusing it allocated %d bytes", got)
	}
}

// withKey returns a copy of the training state st with key set to val;
// a key "config.K" sets K in a copy of the configuration.
func withKey(st map[string]any, key string, val any) map[string]any {
	changed := map[string]any{}
	for k, v := range st {
		changed[k] = v
	}
	if sub, ok := strings.CutPrefix(key, "config."); ok {
		c := map[string]any{}
		for k, v := range st["config"].(map[string]any) {
			c[k] = v
		}
		c[sub] = val
		changed["config"] = c
	} else {
		changed[key] = val
	}
	return changed
}

// TestResumeRefusesInconsistentState: a training state no run writes is
// refused, naming the file, before the run starts: another state version
// (a newer one too), a configuration New refuses, a NaN elapsed time,
// more DAgger rounds done than configured, an imitation game with more
// labels than moves, Adam moments for another number of tensors or of
// another size, and a same-step batch holding an ended game.
func TestResumeRefusesInconsistentState(t *testing.T) {
	dir := t.TempDir()
	net, st := savedState(t, dir)
	d := []env.Action{env.Deal}
	game := map[string]any{"seed": 1, "played": d, "labels": []env.Action{env.Deal, env.Deal}}
	tensors := func(key string, edit func([]any) []any) []any {
		return edit(append([]any(nil), st[key].([]any)...))
	}
	shorter := func(ts []any) []any { return ts[:len(ts)-1] }
	cut := func(ts []any) []any { ts[0] = ts[0].([]byte)[4:]; return ts }
	batch := map[string]any{}
	for k, v := range st["batch"].(map[string]any) {
		batch[k] = v
	}
	ended := append([]any(nil), batch["ended"].([]any)...)
	ended[0] = true
	batch["ended"] = ended
	for name, tc := range map[string]struct {
		key  string
		val  any
		want string
	}{
		"version 3":     {"version", 3, "training state version 3, this program reads version 2"},
		"gamma":         {"config.gamma", 2.0, "train: gamma 2 outside (0, 1]"},
		"elapsed NaN":   {"elapsed_s", math.NaN(), "negative counters in the training state (iter 0, env steps 0, episodes 0, adam steps 0, elapsed NaN)"},
		"rounds":        {"dagger_rounds_done", 1, "1 DAgger rounds done of 0"},
		"labels":        {"imitation", []any{game}, "imitation game 1 has 2 labels for 1 moves"},
		"adam_m count":  {"adam_m", tensors("adam_m", shorter), "optimiser state for"},
		"adam_v count":  {"adam_v", tensors("adam_v", shorter), "optimiser state for"},
		"adam_m size":   {"adam_m", tensors("adam_m", cut), "optimiser state of tensor 0 has the wrong size"},
		"adam_v size":   {"adam_v", tensors("adam_v", cut), "optimiser state of tensor 0 has the wrong size"},
		"ended in play": {"batch", batch, "snapshot game 0: it is ended for good, which a batch of autoreset same-step never is"},
	} {
		p := saveState(t, dir, strings.ReplaceAll(name, " ", "-")+".spider", net, withKey(st, tc.key, tc.val))
		tr, err := Resume(p, nil)
		if err == nil {
			tr.Close()
		}
		if err == nil || !strings.HasPrefix(err.Error(), p+": ") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want an error naming the file and saying %q", name, err, tc.want)
		}
	}
}

// TestResumeFillsInTheConfigGame: a configuration saved without a game
// option's key (from before it was added) resumes with the default
// spelled out, as New's configuration has it.
func TestResumeFillsInTheConfigGame(t *testing.T) {
	dir := t.TempDir()
	net, st := savedState(t, dir)
	g := map[string]any{}
	for k, v := range st["config"].(map[string]any)["game"].(map[string]any) {
		g[k] = v
	}
	delete(g, "shaping_gamma")
	p := saveState(t, dir, "older.spider", net, withKey(st, "config.game", g))
	tr, err := Resume(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if tr.Config.Game != tr.Config.Game.Filled() || tr.Config.Game.ShapingGamma != 1 {
		t.Fatalf("the resumed configuration's game %+v; want the defaults filled in", tr.Config.Game)
	}
}

// TestResumeTakesAnMLPByEitherName: "mlp" and the empty name (files from
// before the architecture was recorded) are one architecture, whichever
// side holds which: the network, the configuration, or the run asked for.
func TestResumeTakesAnMLPByEitherName(t *testing.T) {
	dir := t.TempDir()
	net, st := savedState(t, dir)
	if net.Spec.Arch != "" {
		t.Fatalf("the saved network's arch is %q, not empty", net.Spec.Arch)
	}
	net.Spec.Arch = nn.MLP
	p := saveState(t, dir, "named.spider", net, st)
	want := tinyConfig()
	want.Arch = nn.MLP
	tr, err := Resume(p, &want)
	if err != nil {
		t.Fatalf("a network named %q, a configuration and a run of arch %q: %v", nn.MLP, want.Arch, err)
	}
	tr.Close()
}

// TestResumeRefusesAnotherPairWidth: the columns network's pair width is
// part of its specification: a configuration that names another one than
// the network's is refused.
func TestResumeRefusesAnotherPairWidth(t *testing.T) {
	dir := t.TempDir()
	c := tinyConfig()
	c.Arch, c.Hidden, c.Column, c.Pair = nn.Columns, []int{8}, 4, 2
	net, st := savedStateOf(t, dir, c)
	if tr, err := Resume(saveState(t, dir, "same.spider", net, st), nil); err != nil {
		t.Fatalf("the checkpoint itself: %v", err)
	} else {
		tr.Close()
	}
	p := saveState(t, dir, "pair.spider", net, withKey(st, "config.pair", 3))
	if tr, err := Resume(p, nil); err == nil || err.Error() != p+": the network's specification does not match its training configuration" {
		if err == nil {
			tr.Close()
		}
		t.Fatalf("a configuration of pair width 3 for a network of 2: %v", err)
	}
}

// TestResumeImitationWithoutAStepLimit: DAgger rounds may run without a
// step limit when no warm start or validation plays whole games; their
// imitation games then have no move limit to check, and resume.
func TestResumeImitationWithoutAStepLimit(t *testing.T) {
	dir := t.TempDir()
	c := tinyConfig()
	c.Game.MaxSteps, c.CloneGames, c.ValEvery = -1, 0, 0
	c.DaggerRounds, c.DaggerGames, c.CloneEpochs = 1, 1, 1
	net, st := savedStateOf(t, dir, c)
	d := []env.Action{env.Deal}
	st = withKey(st, "dagger_rounds_done", 1)
	st = withKey(st, "imitation", []any{map[string]any{"seed": 1, "played": d, "labels": d}})
	tr, err := Resume(saveState(t, dir, "round.spider", net, st), nil)
	if err != nil {
		t.Fatalf("a DAgger game of one move without a step limit: %v", err)
	}
	tr.Close()
}

// TestResumeKeepsARunsShaping: New refuses shaping for another discount
// than the learner's, but a run saved before it did (spider train's
// --shaping-gamma had defaulted to 1 beside --gamma 0.99) resumes as it
// began: its flags must match its checkpoint, so it could not be mended.
func TestResumeKeepsARunsShaping(t *testing.T) {
	dir := t.TempDir()
	c := tinyConfig()
	c.Game.Shaping, c.Game.ShapingGamma = env.Progress, c.Gamma
	net, st := savedStateOf(t, dir, c)
	p := saveState(t, dir, "older.spider", net, withKey(st, "config.gamma", 0.95))
	tr, err := Resume(p, nil)
	if err != nil {
		t.Fatalf("a run saved with shaping for another discount: %v", err)
	}
	defer tr.Close()
	if tr.Config.Gamma != 0.95 || tr.Config.Game.ShapingGamma != c.Gamma {
		t.Fatalf("resumed with gamma %v and shaping gamma %v", tr.Config.Gamma, tr.Config.Game.ShapingGamma)
	}
	c.Gamma = 0.95
	if _, err := New(c); err == nil || !strings.Contains(err.Error(), "changes which policy is best") {
		t.Fatalf("New with the same configuration: %v", err)
	}
}

package env_test

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/spiderenv/spider/env"
)

func TestZeroOptionsAreTheDefaults(t *testing.T) {
	r, err := env.NewRules(env.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.RuleSet() != env.Classic || r.Suits() != 1 || r.MaxSteps() != env.DefaultMaxSteps ||
		r.FaceUpSlots() != env.DefaultFaceUpSlots || r.Encoding() != env.Compact || r.TimePerAction() != 0 {
		t.Fatalf("Options{} gave %v", r)
	}
	want := env.Options{RuleSet: env.Classic, Suits: 1, MaxSteps: 1000, FaceUpSlots: 78, ShapingGamma: 1}
	if d := env.DefaultOptions(); d != want {
		t.Fatalf("DefaultOptions() = %+v, want %+v", d, want)
	}
}

// A full Options value travels through msgpack and JSON unchanged, with
// the enums as their names, under the keys the protocol documents.
func TestOptionsMarshalling(t *testing.T) {
	o := env.Options{RuleSet: env.Cardems, Suits: 4, MaxSteps: -1, FaceUpSlots: 12, Encoding: env.Float32}
	c := env.Options{RuleSet: env.Classic, Suits: 2, MaxSteps: 77, TimePerActionMs: 1500, Shaping: env.Progress, ShapingGamma: 0.97}
	for _, in := range []env.Options{o, c} {
		j, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		var back env.Options
		if err := json.Unmarshal(j, &back); err != nil || back != in {
			t.Fatalf("JSON %s came back as %+v (%v)", j, back, err)
		}
		m, err := msgpack.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		back = env.Options{}
		if err := msgpack.Unmarshal(m, &back); err != nil || back != in {
			t.Fatalf("msgpack came back as %+v (%v)", back, err)
		}
		var asMap map[string]any
		if err := msgpack.Unmarshal(m, &asMap); err != nil {
			t.Fatal(err)
		}
		if asMap["rules"] != in.RuleSet.String() || asMap["obs"] != in.Encoding.String() {
			t.Fatalf("enums not written as names: %v", asMap)
		}
	}
	j, _ := json.Marshal(o)
	if got := string(j); got != `{"rules":"cardems","suits":4,"max_steps":-1,"time_per_action_ms":0,"face_up_slots":12,"obs":"float32","shaping":"none","shaping_gamma":0}` {
		t.Fatalf("JSON form %s", got)
	}
	var bad env.Options
	if err := json.Unmarshal([]byte(`{"rules":"freecell"}`), &bad); err == nil || !strings.Contains(err.Error(), "freecell") {
		t.Fatalf("unknown rule set name decoded: %v", err)
	}
	if err := msgpack.Unmarshal(mustMsgpack(t, map[string]any{"obs": "png"}), &bad); err == nil || !strings.Contains(err.Error(), `unknown observation encoding "png"`) {
		t.Fatalf("unknown encoding name decoded from msgpack: %v", err)
	}
	if bad != (env.Options{}) {
		t.Fatalf("a refused value changed the options: %+v", bad)
	}
}

// TestOptionsDecodeRefusesIntsThatDoNotFit: a numeric option past int's
// range is refused, not cut to its low bits (a step limit of 2^64-1 read
// as -1, no limit; where int has 32 bits, 2^32+2 suits read as 2), and
// every integer encoding within it decodes.
func TestOptionsDecodeRefusesIntsThatDoNotFit(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want string // "" decodes
	}{
		{uint64(math.MaxUint64), "18446744073709551615 is outside int's range"},
		{uint64(math.MaxInt64) + 1, "9223372036854775808 is outside int's range"},
		{int64(math.MaxInt), ""},
		{int64(math.MinInt), ""},
		{uint8(200), ""},
		{int8(-3), ""},
		{"300", `game option "max_steps"`},
	} {
		got := env.Options{Suits: 4}
		err := msgpack.Unmarshal(mustMsgpack(t, map[string]any{"max_steps": tc.v}), &got)
		if tc.want == "" && (err != nil || int64(got.MaxSteps) != reflect.ValueOf(tc.v).Convert(reflect.TypeFor[int64]()).Int()) ||
			tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || got != env.Options{Suits: 4}) {
			t.Errorf("max_steps %v: %+v, %v; want %q", tc.v, got, err, tc.want)
		}
	}
	if math.MaxInt == math.MaxInt32 { // make test-ports
		var got env.Options
		err := msgpack.Unmarshal(mustMsgpack(t, map[string]any{"suits": int64(1<<32 + 2)}), &got)
		if err == nil || !strings.Contains(err.Error(), "4294967298 is outside int's range (-2147483648 to 2147483647)") {
			t.Errorf("2^32+2 suits in a 32-bit build: %+v, %v", got, err)
		}
	}
}

// A file's game options are read strictly: a key this build does not know
// (an option a newer build added) or a key given twice is refused, not
// skipped, and a refused map changes nothing; nil is the zero Options.
func TestOptionsDecodeRefusesUnknownKeys(t *testing.T) {
	in := env.Options{RuleSet: env.Cardems, Suits: 2, MaxSteps: 300}
	var asMap map[string]any
	if err := msgpack.Unmarshal(mustMsgpack(t, in), &asMap); err != nil {
		t.Fatal(err)
	}
	// A key no option will ever have, so that this test stands when
	// options are added.
	if _, ok := env.LookupOption("from_a_newer_build"); ok {
		t.Fatal("from_a_newer_build is an option now: pick another unknown key")
	}
	asMap["from_a_newer_build"] = 7
	keep := env.Options{Suits: 4}
	got := keep
	err := msgpack.Unmarshal(mustMsgpack(t, asMap), &got)
	if err == nil || !strings.Contains(err.Error(), `unknown game option "from_a_newer_build"`) || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("an unknown option was read: %v", err)
	}
	if got != keep {
		t.Fatalf("a refused map changed the options: %+v", got)
	}
	// Inside a file's struct, as records and checkpoints hold it.
	type file struct {
		Version int         `msgpack:"version"`
		Game    env.Options `msgpack:"game"`
	}
	var f file
	if err := msgpack.Unmarshal(mustMsgpack(t, map[string]any{"version": 3, "game": asMap}), &f); err == nil || !strings.Contains(err.Error(), "from_a_newer_build") {
		t.Fatalf("an unknown option inside a file was read: %v", err)
	}
	delete(asMap, "from_a_newer_build")
	if err := msgpack.Unmarshal(mustMsgpack(t, map[string]any{"version": 3, "game": asMap}), &f); err != nil || f.Game != in {
		t.Fatalf("the known options came back as %+v (%v)", f.Game, err)
	}
	// A duplicate key: two maps' bytes spliced by hand.
	twice := append([]byte{0x82}, mustMsgpack(t, "suits")...)
	twice = append(twice, mustMsgpack(t, 2)...)
	twice = append(twice, mustMsgpack(t, "suits")...)
	twice = append(twice, mustMsgpack(t, 4)...)
	if err := msgpack.Unmarshal(twice, &got); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Fatalf("a key given twice was read: %v", err)
	}
	if err := msgpack.Unmarshal(mustMsgpack(t, map[string]any{"suits": "two"}), &got); err == nil || !strings.Contains(err.Error(), `"suits"`) {
		t.Fatalf("a value of the wrong type was read: %v", err)
	}
	got = env.Options{Suits: 4}
	if err := msgpack.Unmarshal([]byte{0xc0}, &got); err != nil || got != (env.Options{}) {
		t.Fatalf("nil came back as %+v (%v)", got, err)
	}
	// Every field, at its example, comes back.
	for _, fl := range env.OptionFields() {
		var o, back env.Options
		if err := fl.Set(&o, fl.Example); err != nil {
			t.Fatal(err)
		}
		if err := msgpack.Unmarshal(mustMsgpack(t, o), &back); err != nil || back != o {
			t.Errorf("%s: %+v came back as %+v (%v)", fl.Key, o, back, err)
		}
	}
}

// SameGame compares the fields of kind game, with defaults filled in, and
// nothing else; Copy moves one field.
func TestSameGame(t *testing.T) {
	if !(env.Options{}).SameGame(env.Options{Suits: 1, MaxSteps: env.DefaultMaxSteps}) {
		t.Fatal("the default options and the same filled in are not one game")
	}
	if !(env.Options{MaxSteps: -5}).SameGame(env.Options{MaxSteps: -1}) {
		t.Fatal("two ways to say no step limit are not one game")
	}
	if got := (env.Options{}).Filled(); got != env.DefaultOptions() {
		t.Fatalf("Options{} filled in: %+v", got)
	}
	if bad := (env.Options{Suits: 3}); bad.Filled() != bad {
		t.Fatalf("options no game can have were changed: %+v", bad.Filled())
	}
	games := 0
	for _, f := range env.OptionFields() {
		var o env.Options
		if err := f.Set(&o, f.Example); err != nil {
			t.Fatal(err)
		}
		if got := (env.Options{}).SameGame(o); got == f.Game {
			t.Errorf("%s at %s: SameGame %v, but the field's Game is %v", f.Key, f.Example, got, f.Game)
		}
		games += map[bool]int{true: 1}[f.Game]
		var c env.Options
		f.Copy(&c, o)
		if c != o {
			t.Errorf("%s: Copy gave %+v, want %+v", f.Key, c, o)
		}
	}
	// The fields that decide the games: the deal, the moves, the score and
	// the step limit. The observation and the reward's shaping do not.
	if games != 4 {
		t.Fatalf("%d fields of kind game, want rules, suits, max_steps and time_per_action_ms", games)
	}
}

// TestReframes checks which options a game may be watched across
// (State.Reframe): every option of kind view, and of kind game only the
// step limit and the clock. Any other game option, one added later
// included, must match, so a policy never reads a game under rules it does
// not follow.
func TestReframes(t *testing.T) {
	free := map[string]bool{"max_steps": true, "time_per_action_ms": true}
	for _, f := range env.OptionFields() {
		var o env.Options
		if err := f.Set(&o, f.Example); err != nil {
			t.Fatal(err)
		}
		from, to := env.MustRules(env.Options{}), env.MustRules(o)
		err := from.Reframes(to)
		if want := !f.Game || free[f.Key]; (err == nil) != want {
			t.Errorf("%s at %s: Reframes says %v; want it accepted: %v", f.Key, f.Example, err, want)
		}
		s, err2 := env.NewGame(from, 3).Reframe(to)
		if (err == nil) != (err2 == nil) || (err2 == nil && s.Rules() != to) {
			t.Errorf("%s: Reframe (%v) disagrees with Reframes (%v), or kept the old rules", f.Key, err2, err)
		}
	}
	if err := env.MustRules(env.Options{Suits: 2}).Reframes(env.MustRules(env.Options{Suits: 2, FaceUpSlots: 6, MaxSteps: -1})); err != nil {
		t.Fatal(err)
	}
}

func mustMsgpack(t *testing.T, v any) []byte {
	t.Helper()
	b, err := msgpack.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The field table is read from the struct: one entry per field, in order,
// with the key the JSON form uses.
func TestOptionFieldsFollowTheStruct(t *testing.T) {
	fields := env.OptionFields()
	st := reflect.TypeFor[env.Options]()
	if len(fields) != st.NumField() {
		t.Fatalf("%d option fields for %d struct fields", len(fields), st.NumField())
	}
	o := env.Options{RuleSet: env.Cardems, Suits: 2, MaxSteps: 9, FaceUpSlots: 3, Encoding: env.Float32}
	var asJSON map[string]any
	j, _ := json.Marshal(o)
	json.Unmarshal(j, &asJSON)
	for i, f := range fields {
		if f.Key != st.Field(i).Tag.Get("json") || f.Flag != strings.ReplaceAll(f.Key, "_", "-") || f.Help == "" {
			t.Errorf("field %d: %+v", i, f)
		}
		if got, want := f.Text(o), strings.Trim(string(mustJSON(t, asJSON[f.Key])), `"`); got != want {
			t.Errorf("%s: Text %q, JSON %q", f.Key, got, want)
		}
		// Setting each field from its own text in a zero value rebuilds o
		// field by field.
		if g, ok := env.LookupOption(f.Key); !ok || g != f {
			t.Errorf("LookupOption(%q) = %+v, %v", f.Key, g, ok)
		}
	}
	for _, f := range fields {
		// Each example is valid on its own and differs from the default.
		var e env.Options
		if err := f.Set(&e, f.Example); err != nil {
			t.Errorf("%s: example %q: %v", f.Key, f.Example, err)
			continue
		}
		r, err := env.NewRules(e)
		if err != nil {
			t.Errorf("%s: example %q: %v", f.Key, f.Example, err)
			continue
		}
		if got, def := f.Text(r.Options()), f.Text(env.DefaultOptions()); got != f.Example || got == def {
			t.Errorf("%s: example %q became %q (default %q)", f.Key, f.Example, got, def)
		}
	}
	var rebuilt env.Options
	for _, f := range fields {
		if err := f.Set(&rebuilt, f.Text(o)); err != nil {
			t.Fatal(err)
		}
	}
	if rebuilt != o {
		t.Fatalf("rebuilt %+v from text, want %+v", rebuilt, o)
	}
	if _, ok := env.LookupOption("seed"); ok {
		t.Fatal("LookupOption found a key that is not an option")
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestOptionFieldSetRefusesBadText(t *testing.T) {
	o := env.Options{Suits: 2, RuleSet: env.Cardems}
	before := o
	suits, _ := env.LookupOption("suits")
	rules, _ := env.LookupOption("rules")
	for _, tc := range []struct {
		f    env.OptionField
		text string
		want string
	}{
		{suits, "two", "suits wants an integer"},
		{suits, "", "suits wants an integer"},
		{rules, "freecell", `unknown rule set "freecell"`},
		{rules, "3", `unknown rule set "3"`},
	} {
		err := tc.f.Set(&o, tc.text)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Set(%s, %q) = %v, want an error containing %q", tc.f.Key, tc.text, err, tc.want)
		}
		if o != before {
			t.Fatalf("a refused Set changed the options to %+v", o)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("SetInt on a name field did not panic")
		}
	}()
	rules.SetInt(&o, 1)
}

func TestOptionsValidateNamesTheField(t *testing.T) {
	for _, tc := range []struct {
		o    env.Options
		want string
	}{
		{env.Options{Suits: 3}, "suits must be 1, 2 or 4, not 3"},
		{env.Options{FaceUpSlots: 105}, "face_up_slots must be 1 to 104 (0: the default), not 105"},
		{env.Options{MaxSteps: 1<<30 + 1}, "max_steps 1073741825 is over the limit"},
		{env.Options{TimePerActionMs: -5}, "time_per_action_ms -5 is outside 0 to 1000000000"},
		{env.Options{RuleSet: env.Cardems, TimePerActionMs: 5}, "applies only to classic"},
		{env.Options{RuleSet: 7}, "unknown rule set 7"},
		{env.Options{Encoding: 9}, "unknown observation encoding 9"},
		{env.Options{Shaping: 5}, "unknown reward shaping 5"},
		{env.Options{ShapingGamma: 1.5}, "shaping_gamma 1.5 is outside 0 to 1"},
		{env.Options{ShapingGamma: math.NaN()}, "shaping_gamma NaN is outside 0 to 1"},
	} {
		err := tc.o.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate(%+v) = %v, want %q", tc.o, err, tc.want)
		}
		if _, err2 := env.NewRules(tc.o); err2 == nil || err2.Error() != err.Error() {
			t.Errorf("NewRules disagrees with Validate: %v vs %v", err2, err)
		}
	}
}

// Rules.String names every option that is not at its default in a way the
// programs print: a shaped game does not read as an unshaped one.
func TestRulesString(t *testing.T) {
	plain := env.MustRules(env.Options{}).String()
	if plain != "classic 1-suit, max-steps 1000, slots 78, compact" {
		t.Fatalf("default rules read %q", plain)
	}
	shaped := env.MustRules(env.Options{Shaping: env.Progress, ShapingGamma: 0.99}).String()
	if shaped != plain+", progress shaping, shaping-gamma 0.99" {
		t.Fatalf("shaped rules read %q", shaped)
	}
	// Every option away from its default shows, those added later too.
	for _, f := range env.OptionFields() {
		var o env.Options
		if err := f.Set(&o, f.Example); err != nil {
			t.Fatal(err)
		}
		if got := env.MustRules(o).String(); got == plain {
			t.Errorf("%s at %s reads as the default: %q", f.Key, f.Example, got)
		}
	}
	if got := env.MustRules(env.Options{TimePerActionMs: 1500}).String(); got != plain+", 1.5s per action" {
		t.Fatalf("a clocked game reads %q", got)
	}
}

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

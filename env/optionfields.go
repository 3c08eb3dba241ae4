package env

import (
	"encoding"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"

	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"

	"github.com/spiderenv/spider/internal/printable"
)

// MarshalText returns the rule set's name, so files, JSON and the socket
// carry "classic" or "cardems" rather than a number.
func (r RuleSet) MarshalText() ([]byte, error) { return ruleSetNames.text(r) }

// UnmarshalText sets r to the rule set named by text (case-insensitive).
func (r *RuleSet) UnmarshalText(text []byte) error { return ruleSetNames.setText(r, text) }

// MarshalText returns the encoding's name: "compact" or "float32".
func (e Encoding) MarshalText() ([]byte, error) { return encodingNames.text(e) }

// UnmarshalText sets e to the encoding named by text (case-insensitive).
func (e *Encoding) UnmarshalText(text []byte) error { return encodingNames.setText(e, text) }

// EncodeMsgpack writes the rule set's name as a msgpack string (msgpack
// would write a TextMarshaler as bin, which other languages read as bytes).
func (r RuleSet) EncodeMsgpack(e *msgpack.Encoder) error { return encodeName(e, r) }

// DecodeMsgpack reads a rule set's name.
func (r *RuleSet) DecodeMsgpack(d *msgpack.Decoder) error { return decodeName(d, r) }

// EncodeMsgpack writes the encoding's name as a msgpack string.
func (e Encoding) EncodeMsgpack(enc *msgpack.Encoder) error { return encodeName(enc, e) }

// DecodeMsgpack reads an encoding's name.
func (e *Encoding) DecodeMsgpack(d *msgpack.Decoder) error { return decodeName(d, e) }

func encodeName(e *msgpack.Encoder, v encoding.TextMarshaler) error {
	b, err := v.MarshalText()
	if err != nil {
		return err
	}
	return e.EncodeString(string(b))
}

func decodeName(d *msgpack.Decoder, v encoding.TextUnmarshaler) error {
	s, err := d.DecodeString()
	if err != nil {
		return err
	}
	if len(s) > maxName {
		return fmt.Errorf("env: a name of %d bytes: no name is longer than %d", len(s), maxName)
	}
	return v.UnmarshalText([]byte(s))
}

// maxName is the longest name a file may give an enumerated option, as
// PROTOCOL.md's make takes: the longest real one is a few bytes.
const maxName = 256

// OptionField describes one field of Options as every outside form of it
// sees it: files and JSON (through the struct tags), the server's make
// request and reply, and the command-line flags. The table is read from the
// struct tags once, so it cannot drift from the struct.
type OptionField struct {
	// Key is the field's name in files, JSON and socket requests:
	// "max_steps".
	Key string
	// Flag is the command-line flag's name: the key with '-' for '_'.
	Flag string
	// Help describes the field for flag usage.
	Help string
	// Numeric reports an integer field and Float a float64 one; the others
	// are names (enums) that travel as strings.
	Numeric bool
	Float   bool
	// Game reports a field that changes the games themselves: the deal,
	// the legal moves, the score or where a game ends. The others change
	// only what a player is shown or rewarded, so two runs that differ
	// in them played the same games (SameGame).
	Game bool
	// Example is a valid value other than the default, as text: what tests
	// that cover every option set it to.
	Example string

	index int
}

var optionFields = func() []OptionField {
	t := reflect.TypeFor[Options]()
	textType := reflect.TypeFor[encoding.TextUnmarshaler]()
	if t.NumField() > 64 {
		panic("env: Options has more than 64 fields: DecodeMsgpack's set of keys seen is a uint64")
	}
	fields := make([]OptionField, t.NumField())
	for i := range fields {
		sf := t.Field(i)
		key := sf.Tag.Get("msgpack")
		kind := sf.Tag.Get("kind")
		if key == "" || key != sf.Tag.Get("json") || sf.Tag.Get("help") == "" || sf.Tag.Get("example") == "" || (kind != "game" && kind != "view") {
			panic("env: Options." + sf.Name + " needs equal msgpack and json keys, a kind tag (game or view), a help tag and an example tag")
		}
		numeric, float := sf.Type.Kind() == reflect.Int, sf.Type.Kind() == reflect.Float64
		if !numeric && !float && !reflect.PointerTo(sf.Type).Implements(textType) {
			panic("env: Options." + sf.Name + " must be an int, a float64 or implement encoding.TextUnmarshaler")
		}
		fields[i] = OptionField{
			Key: key, Flag: strings.ReplaceAll(key, "_", "-"), Help: sf.Tag.Get("help"),
			Numeric: numeric, Float: float, Game: kind == "game", Example: sf.Tag.Get("example"), index: i,
		}
	}
	return fields
}()

// OptionFields returns the fields of Options in declaration order.
func OptionFields() []OptionField { return append([]OptionField(nil), optionFields...) }

// LookupOption returns the field whose key is key.
func LookupOption(key string) (OptionField, bool) {
	for _, f := range optionFields {
		if f.Key == key {
			return f, true
		}
	}
	return OptionField{}, false
}

// Value returns the field's value in o: an int64 for a numeric field, a
// float64 for a float one, the name for the others.
func (f OptionField) Value(o Options) any {
	v := reflect.ValueOf(o).Field(f.index)
	switch {
	case f.Numeric:
		return v.Int()
	case f.Float:
		return v.Float()
	}
	b, err := v.Interface().(encoding.TextMarshaler).MarshalText()
	if err != nil {
		return fmt.Sprint(v.Interface())
	}
	return string(b)
}

// Text returns the field's value in o as text: "1000", "0.99", "classic".
func (f OptionField) Text(o Options) string {
	if f.Float {
		return strconv.FormatFloat(f.Value(o).(float64), 'g', -1, 64)
	}
	return fmt.Sprint(f.Value(o))
}

// Set parses text into the field of o; a bad value changes nothing. Set
// checks the form only: Validate checks the value.
func (f OptionField) Set(o *Options, text string) error {
	v := reflect.ValueOf(o).Elem().Field(f.index)
	switch {
	case f.Numeric:
		n, err := strconv.ParseInt(strings.TrimSpace(text), 10, 0)
		if err != nil {
			return fmt.Errorf("env: %s wants an integer, not %q", f.Key, text)
		}
		v.SetInt(n)
		return nil
	case f.Float:
		x, err := strconv.ParseFloat(strings.TrimSpace(text), 64)
		if err != nil {
			return fmt.Errorf("env: %s wants a number, not %q", f.Key, text)
		}
		v.SetFloat(x)
		return nil
	}
	return v.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(text))
}

// Copy sets the field of dst to its value in src.
func (f OptionField) Copy(dst *Options, src Options) {
	reflect.ValueOf(dst).Elem().Field(f.index).Set(reflect.ValueOf(src).Field(f.index))
}

// SameGame reports whether o and p play the same games: whether every
// field of kind game (OptionField.Game) agrees once defaults are filled
// in, so that Suits 0 and 1 are one game. Fields that change only what a
// player is shown or rewarded are not compared.
func (o Options) SameGame(p Options) bool {
	o, p = o.Filled(), p.Filled()
	for _, f := range optionFields {
		if f.Game && f.Text(o) != f.Text(p) {
			return false
		}
	}
	return true
}

// Filled returns o with its defaults filled in (what NewRules makes of
// it), or o as it is if no game can have it, so that two Options that
// describe one configuration compare equal: Suits 0 and 1, or a file's
// Options without an option added since and the same with its default.
func (o Options) Filled() Options {
	if r, err := NewRules(o); err == nil {
		return r.Options()
	}
	return o
}

// DecodeMsgpack reads Options from a msgpack map (or nil, the zero
// Options) and refuses a key that no field has, or one given twice: a
// file written by a newer build with an option this build does not know
// would otherwise be read as a game it is not, and written back without
// the option. The values decode as the struct's would.
func (o *Options) DecodeMsgpack(d *msgpack.Decoder) error {
	// A map or nil, nothing else: DecodeMapLen would also read a map from
	// inside an extension, whose bytes internal/msgpackcheck counted as
	// this value's alone, so the values after it would be decoded
	// unchecked.
	switch c, err := d.PeekCode(); {
	case err != nil:
		return fmt.Errorf("env: game options: %w", err)
	case c != msgpcode.Nil && !msgpcode.IsFixedMap(c) && c != msgpcode.Map16 && c != msgpcode.Map32:
		return fmt.Errorf("env: game options: not a map (code 0x%02x)", c)
	}
	n, err := d.DecodeMapLen()
	if err != nil {
		return fmt.Errorf("env: game options: %w", err)
	}
	var out Options
	var seen uint64
	v := reflect.ValueOf(&out).Elem()
	for range max(n, 0) {
		key, err := d.DecodeString()
		if err != nil {
			return fmt.Errorf("env: game options: a key: %w", err)
		}
		f, ok := LookupOption(key)
		switch {
		case !ok:
			return fmt.Errorf("env: unknown game option %q (this build knows %s; was it written by a newer one?)", printable.Cut(key, 40), optionKeys)
		case seen&(1<<f.index) != 0:
			return fmt.Errorf("env: game option %q given twice", key)
		}
		seen |= 1 << f.index
		if f.Numeric {
			// As the struct's would, but refusing what msgpack would cut
			// to an int's low bits: a step limit of 2^64-1 read as -1
			// (none), or where int has 32 bits 2^32+5 as 5.
			x, err := decodeInt(d)
			if err == nil {
				err = f.SetInt(&out, x)
			}
			if err != nil {
				return fmt.Errorf("env: game option %q: %w", key, err)
			}
			continue
		}
		if err := d.DecodeValue(v.Field(f.index)); err != nil {
			return fmt.Errorf("env: game option %q: %w", key, err)
		}
	}
	*o = out
	return nil
}

// decodeInt reads an integer of any msgpack encoding, refusing a uint64
// over the largest int64, which DecodeInt64 would read as negative.
func decodeInt(d *msgpack.Decoder) (int64, error) {
	c, err := d.PeekCode()
	if err != nil {
		return 0, err
	}
	if c == msgpcode.Uint64 {
		u, err := d.DecodeUint64()
		if err == nil && u > math.MaxInt64 {
			err = outsideInt(u)
		}
		return int64(u), err
	}
	return d.DecodeInt64()
}

// optionKeys lists the keys of Options for messages.
var optionKeys = func() string {
	keys := make([]string, len(optionFields))
	for i, f := range optionFields {
		keys[i] = f.Key
	}
	return strings.Join(keys, ", ")
}()

// SetFloat sets a float field of o to x.
//
// It panics if the field is not a float.
func (f OptionField) SetFloat(o *Options, x float64) {
	if !f.Float {
		panic("env: SetFloat on the non-float option " + f.Key)
	}
	reflect.ValueOf(o).Elem().Field(f.index).SetFloat(x)
}

// SetInt sets a numeric field of o to n, or returns an error and changes
// nothing if n does not fit an int (where int has 32 bits, reflect would
// keep its low bits). Validate checks the value.
//
// It panics if the field is not numeric.
func (f OptionField) SetInt(o *Options, n int64) error {
	if !f.Numeric {
		panic("env: SetInt on the non-numeric option " + f.Key)
	}
	v := reflect.ValueOf(o).Elem().Field(f.index)
	if v.OverflowInt(n) {
		return outsideInt(n)
	}
	v.SetInt(n)
	return nil
}

// outsideInt is the error of a number an int cannot hold.
func outsideInt[T int64 | uint64](n T) error {
	return fmt.Errorf("%d is outside int's range (%d to %d)", n, math.MinInt, math.MaxInt)
}

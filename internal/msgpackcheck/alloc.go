package msgpackcheck

import (
	"encoding"
	"encoding/binary"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vmihailenco/msgpack/v5"
)

// Decode decodes b, which must hold exactly one msgpack value, into v (a
// pointer to a zero value). It first checks the value as Size does, then
// that decoding it into v's type cannot allocate more than Budget(len(b))
// bytes (Alloc's estimate): msgpack allocates a slice's declared length
// at once, so without this a file of nil items decoding into a slice of
// large structs would take a few hundred times its size. It also refuses
// a number that does not fit the integer field it decodes into, which
// msgpack would cut to its low bits (Alloc).
func Decode(b []byte, v any) error {
	n, err := Size(b)
	if err != nil {
		return err
	}
	if n != len(b) {
		return fmt.Errorf("%d bytes follow the value", len(b)-n)
	}
	t := reflect.TypeOf(v)
	if t == nil || t.Kind() != reflect.Pointer {
		return fmt.Errorf("msgpackcheck: Decode needs a pointer, not %v", t)
	}
	if _, err := Alloc(b, t.Elem(), Budget(len(b))); err != nil {
		return err
	}
	return msgpack.Unmarshal(b, v)
}

// Budget is the most memory Decode lets n bytes of msgpack allocate: eight
// bytes per byte plus 1 MiB. This project's files decode into at most about
// five bytes per byte by Alloc's estimate (actions of one byte each into
// uint16 slices, which msgpack allocates twice; a float32 bin or a raw
// message, three) plus small fixed parts, such as a batch's per-game
// counters, that fit in the megabyte. A hostile file is refused before it
// can take more than a few times what a valid file of its size takes.
func Budget(n int) int64 { return 8*int64(n) + 1<<20 }

// sliceCost is what msgpack allocates for a slice of n items of size
// bytes: twice the slice (it makes one of n items, then appends it to the
// nil slice being decoded, which copies it), each rounded up to the
// allocator's size classes (at most a quarter more, plus a little).
func sliceCost(n int, size uintptr) int64 {
	if n == 0 {
		return 0
	}
	b := int64(n) * int64(size)
	return 2 * (b + b/4 + 64)
}

// Alloc estimates, from above, the bytes msgpack v5 allocates decoding the
// value b holds (checked by Size first) into a new value of type t, and
// refuses it as soon as the estimate passes limit. A slice costs its
// declared items times the size of one, twice (sliceCost); a string or bin, its bytes; a
// struct, map or pointer, what its parts cost. A type that decodes itself
// (msgpack.CustomDecoder, Unmarshaler, or the binary and text unmarshalers
// msgpack calls) is opaque: it is charged three bytes per byte of its value,
// plus 32, which holds for the ones in this project (a float32 array, an
// enumeration's name, msgpack.RawMessage, a game's env.Options, which
// reads only a map of its few keys and refuses a name over 256 bytes),
// and must not read inside an extension as msgpack's DecodeMapLen does. A
// field of type any is charged what a generic decode allocates. An
// extension where any other type is decoded is refused (msgpack would
// read a map out of one unchecked); one that msgpack skips, as an unknown
// field's value, is charged its bytes. A number decoded into an integer
// field must fit it, in any of msgpack's integer encodings, or Alloc
// refuses it and names where it is: msgpack would keep its low bits, and
// read the file as another. Two kinds of value are not looked into, as
// for their cost: a type that decodes itself, which checks its own numbers
// (env.Options does), and a struct with an embedded field. No file type
// here has an integer in either.
func Alloc(b []byte, t reflect.Type, limit int64) (int64, error) {
	n, err := Size(b)
	if err != nil {
		return 0, err
	}
	w := walker{b: b[:n], limit: limit}
	if err := w.value(t); err != nil {
		return w.cost, err
	}
	return w.cost, nil
}

// walker reads a checked msgpack value alongside the Go type it decodes
// into, adding up what decoding allocates.
type walker struct {
	b     []byte
	pos   int
	cost  int64
	limit int64
}

// errOverBudget is returned when the estimate passes the limit.
type errOverBudget struct{ cost, limit int64 }

func (e errOverBudget) Error() string {
	return fmt.Sprintf("decoding would allocate more than %d bytes (the limit for its size is %d)", e.cost, e.limit)
}

func (w *walker) charge(n int64) error {
	w.cost += n
	if w.cost > w.limit {
		return errOverBudget{w.cost, w.limit}
	}
	return nil
}

var (
	customDecoderType     = reflect.TypeFor[msgpack.CustomDecoder]()
	unmarshalerType       = reflect.TypeFor[msgpack.Unmarshaler]()
	binaryUnmarshalerType = reflect.TypeFor[encoding.BinaryUnmarshaler]()
	textUnmarshalerType   = reflect.TypeFor[encoding.TextUnmarshaler]()
	timeType              = reflect.TypeFor[time.Time]()
)

// decodesItself reports whether msgpack hands values of t to t's own code.
func decodesItself(t reflect.Type) bool {
	if t == timeType {
		return true // an extension type msgpack registers itself
	}
	for _, i := range []reflect.Type{customDecoderType, unmarshalerType, binaryUnmarshalerType, textUnmarshalerType} {
		if t.Implements(i) || (t.Kind() != reflect.Pointer && reflect.PointerTo(t).Implements(i)) {
			return true
		}
	}
	return false
}

// header reads the value at w.pos without moving: its code, its length
// (bytes for strings, bins and extensions, items for arrays, pairs for
// maps), and the size of its header. Size has checked every length.
func (w *walker) header() (c byte, n, hdr int) {
	c = w.b[w.pos]
	be := func(k int) int { return int(beUint(w.b[w.pos+1:], k)) }
	switch {
	case c >= 0x80 && c <= 0x8f:
		return c, int(c & 0x0f), 1
	case c >= 0x90 && c <= 0x9f:
		return c, int(c & 0x0f), 1
	case c >= 0xa0 && c <= 0xbf:
		return c, int(c & 0x1f), 1
	case c == 0xc4 || c == 0xd9:
		return c, be(1), 2
	case c == 0xc5 || c == 0xda:
		return c, be(2), 3
	case c == 0xc6 || c == 0xdb:
		return c, be(4), 5
	case c == 0xdc || c == 0xde:
		return c, be(2), 3
	case c == 0xdd || c == 0xdf:
		return c, be(4), 5
	}
	return c, 0, 1
}

func isArray(c byte) bool  { return (c >= 0x90 && c <= 0x9f) || c == 0xdc || c == 0xdd }
func isMap(c byte) bool    { return (c >= 0x80 && c <= 0x8f) || c == 0xde || c == 0xdf }
func isString(c byte) bool { return (c >= 0xa0 && c <= 0xbf) || c == 0xd9 || c == 0xda || c == 0xdb }
func isBin(c byte) bool    { return c >= 0xc4 && c <= 0xc6 }
func isExt(c byte) bool    { return (c >= 0xc7 && c <= 0xc9) || (c >= 0xd4 && c <= 0xd8) }

// skip moves past the value at w.pos and returns its size.
func (w *walker) skip() int64 {
	n, _ := Size(w.b[w.pos:]) // checked whole by Alloc
	w.pos += n
	return int64(n)
}

// skipCharged skips a value msgpack reads without keeping (an unknown
// field, or one it refuses): skipping copies a string or bin into the
// decoder's buffer, so the value's size is charged.
func (w *walker) skipCharged() error { return w.charge(w.skip()) }

// value walks one value decoded into type t.
func (w *walker) value(t reflect.Type) error {
	c := w.b[w.pos]
	if c == 0xc0 { // nil: a zero value, nothing allocated
		w.pos++
		return nil
	}
	if t.Kind() == reflect.Pointer {
		if err := w.charge(int64(t.Elem().Size())); err != nil {
			return err
		}
		return w.value(t.Elem())
	}
	if decodesItself(t) || (isExt(c) && t.Kind() == reflect.Interface) {
		return w.charge(3*w.skip() + 32)
	}
	if isExt(c) {
		// msgpack refuses an extension for most types, but for a map it
		// skips the extension's header and reads a map from inside it,
		// whose lengths this walk would never see.
		return fmt.Errorf("an msgpack extension where a %v goes", t)
	}
	switch t.Kind() {
	case reflect.Interface:
		return w.generic()
	case reflect.Struct:
		return w.structValue(t)
	case reflect.String:
		return w.skipCharged()
	case reflect.Slice:
		_, n, hdr := w.header()
		if t.Elem().Kind() == reflect.Uint8 || !isArray(c) {
			// Bytes, or something msgpack refuses for a slice.
			return w.skipCharged()
		}
		w.pos += hdr
		if err := w.charge(sliceCost(n, t.Elem().Size())); err != nil {
			return err
		}
		for i := range n {
			if err := w.value(t.Elem()); err != nil {
				return within(err, "["+strconv.Itoa(i)+"]")
			}
		}
		return nil
	case reflect.Array:
		_, n, hdr := w.header()
		if !isArray(c) || n > t.Len() {
			return w.skipCharged()
		}
		w.pos += hdr
		for i := range n {
			if err := w.value(t.Elem()); err != nil {
				return within(err, "["+strconv.Itoa(i)+"]")
			}
		}
		return nil
	case reflect.Map:
		_, n, hdr := w.header()
		if !isMap(c) {
			return w.skipCharged()
		}
		w.pos += hdr
		// A Go map holds a pair in a slot with some slack, and even a map
		// of one pair has a header and a whole group of eight slots (a
		// map of one string-int pair takes about 300 bytes).
		pair := int64(t.Key().Size() + t.Elem().Size() + 8)
		if err := w.charge(int64(n)*2*pair + 2*(64+8*pair)); err != nil {
			return err
		}
		for range n {
			if err := w.value(t.Key()); err != nil {
				return within(err, " key")
			}
			if err := w.value(t.Elem()); err != nil {
				return within(err, "[key]")
			}
		}
		return nil
	}
	// Numbers and booleans allocate nothing.
	if err := w.fits(t); err != nil {
		return err
	}
	w.skip()
	return nil
}

// within adds step to the path of an errRange (a field, an index, a
// map's key or value), and returns other errors as they are.
func within(err error, step string) error {
	if re, ok := err.(errRange); ok {
		re.path = step + re.path
		return re
	}
	return err
}

// errRange is a number that decoding into its field would change: an
// integer outside the field's range, or one msgpack reads into a float
// with the wrong sign.
type errRange struct {
	path string // where, as ".field" and "[index]" from the value decoded
	text string // the number as the file has it
	t    reflect.Type
	why  string // instead of t's range, when t is not an integer
}

func (e errRange) Error() string {
	what := "a number"
	if e.path != "" {
		what = strings.TrimPrefix(e.path, ".")
	}
	if e.why != "" {
		return fmt.Sprintf("%s is %s, %s", what, e.text, e.why)
	}
	lo, hi := rangeOf(e.t)
	return fmt.Sprintf("%s is %s, outside %v's range (%d to %d)", what, e.text, e.t, lo, hi)
}

// rangeOf is the range of an integer kind, as int64 and uint64 bounds
// (the uint64 one holds 2^64-1).
func rangeOf(t reflect.Type) (lo int64, hi uint64) {
	bits := t.Bits()
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return -1 << (bits - 1), 1<<(bits-1) - 1
	}
	return 0, 1<<bits - 1 // bits is at most 64: 1<<64 - 1 wraps to the maximum
}

// fits refuses a number at w.pos that decoding into t, an integer kind,
// would change: msgpack keeps the low bits of an integer that does not
// fit (an action of 65536 becomes 0 in a uint16, a max_steps of 2^64-1
// becomes -1 in an int, and where int has 32 bits 2^32+5 becomes 5), so
// such a file would be read as another instead of refused. Other kinds,
// and codes msgpack refuses for t (a float among them), pass. A float
// field refuses the one integer msgpack would read into it with the wrong
// sign, a uint64 of 2^63 or more.
func (w *walker) fits(t reflect.Type) error {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
	case reflect.Float32, reflect.Float64:
		// msgpack reads an integer into a float through an int64: a
		// uint64 of 2^63 or more would come out negative.
		if c := w.b[w.pos]; c == 0xcf {
			if u := beUint(w.b[w.pos+1:], 8); u > math.MaxInt64 {
				return errRange{text: strconv.FormatUint(u, 10), t: t, why: fmt.Sprintf("which msgpack would read into a %v as negative", t)}
			}
		}
		return nil
	default:
		return nil
	}
	lo, hi := rangeOf(t)
	c, b := w.b[w.pos], w.b[w.pos+1:]
	var neg bool
	var mag uint64 // the magnitude
	switch {
	case c <= 0x7f:
		mag = uint64(c)
	case c >= 0xe0:
		neg, mag = true, uint64(-int64(int8(c)))
	case c >= 0xcc && c <= 0xcf: // uint 8 to 64
		mag = beUint(b, 1<<(c-0xcc))
	case c >= 0xd0 && c <= 0xd3: // int 8 to 64
		size := 1 << (c - 0xd0)
		v := int64(beUint(b, size)) << (64 - 8*size) >> (64 - 8*size) // sign-extended
		if v < 0 {
			neg, mag = true, uint64(-(v+1))+1
		} else {
			mag = uint64(v)
		}
	default:
		return nil
	}
	if neg && (lo == 0 || mag > uint64(-(lo+1))+1) || !neg && mag > hi {
		text := strconv.FormatUint(mag, 10)
		if neg {
			text = "-" + text
		}
		return errRange{text: text, t: t}
	}
	return nil
}

func beUint(b []byte, size int) uint64 {
	switch size {
	case 1:
		return uint64(b[0])
	case 2:
		return uint64(binary.BigEndian.Uint16(b))
	case 4:
		return uint64(binary.BigEndian.Uint32(b))
	}
	return binary.BigEndian.Uint64(b)
}

// structValue walks a struct, which msgpack reads from a map of field
// names or an array of all its fields in order.
func (w *walker) structValue(t reflect.Type) error {
	f := fieldsOf(t)
	c, n, hdr := w.header()
	switch {
	case f.opaque:
		return w.charge(3*w.skip() + 32)
	case isMap(c):
		w.pos += hdr
		for range n {
			kc, kn, _ := w.header()
			if !isString(kc) && !isBin(kc) {
				// msgpack refuses the key; charge the rest as if skipped.
				if err := w.skipCharged(); err != nil {
					return err
				}
				if err := w.skipCharged(); err != nil {
					return err
				}
				continue
			}
			start := w.pos + w.skipLen()
			ft, ok := f.byName[string(w.b[start:start+kn])] // a lookup that copies nothing
			if err := w.skipCharged(); err != nil {
				return err
			}
			if !ok {
				if err := w.skipCharged(); err != nil {
					return err
				}
				continue
			}
			if err := w.value(ft); err != nil {
				return within(err, "."+string(w.b[start:start+kn]))
			}
		}
		return nil
	case isArray(c) && n == len(f.list):
		w.pos += hdr
		for i, ft := range f.list {
			if err := w.value(ft); err != nil {
				return within(err, "."+f.names[i])
			}
		}
		return nil
	}
	return w.skipCharged() // msgpack refuses it
}

// skipLen returns the header size of the string or bin at w.pos.
func (w *walker) skipLen() int {
	_, _, hdr := w.header()
	return hdr
}

// generic walks a value decoded into an interface: maps become
// map[string]any, arrays []any, and every scalar is boxed.
func (w *walker) generic() error {
	c, n, hdr := w.header()
	switch {
	case isArray(c):
		w.pos += hdr
		// An []any's header and its items, each an interface (an empty
		// one takes about 40 bytes).
		if err := w.charge(16*int64(n) + 64); err != nil {
			return err
		}
		for range n {
			if err := w.generic(); err != nil {
				return err
			}
		}
		return nil
	case isMap(c):
		w.pos += hdr
		// A map[string]any's pairs, and its header (an empty one takes
		// about 64 bytes).
		if err := w.charge(2*40*int64(n) + 128); err != nil {
			return err
		}
		for range 2 * n {
			if err := w.generic(); err != nil {
				return err
			}
		}
		return nil
	case isExt(c):
		// A time.Time, boxed: about 96 bytes from an extension of 6.
		return w.charge(3*w.skip() + 128)
	}
	return w.charge(w.skip() + 16)
}

// fields is what msgpack knows of a struct type.
type fields struct {
	byName map[string]reflect.Type
	list   []reflect.Type // in order, for the array form
	names  []string       // list's names, for messages
	// opaque marks a struct with embedded fields, whose inlining rules
	// are not mirrored here: it is charged as a type that decodes itself.
	opaque bool
}

var fieldCache sync.Map // reflect.Type -> *fields

// fieldsOf mirrors msgpack v5's reading of struct tags: a field is named by
// its "msgpack" tag or its Go name, "-" leaves it out, an unexported field
// is left out, and an "alias" option gives it a second name.
func fieldsOf(t reflect.Type) *fields {
	if f, ok := fieldCache.Load(t); ok {
		return f.(*fields)
	}
	f := &fields{byName: map[string]reflect.Type{}}
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := sf.Tag.Get("msgpack")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if sf.Anonymous {
			f.opaque = true
			continue
		}
		if !sf.IsExported() {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		f.byName[name] = sf.Type
		f.list = append(f.list, sf.Type)
		f.names = append(f.names, name)
		for opts != "" {
			var o string
			o, opts, _ = strings.Cut(opts, ",")
			if alias, ok := strings.CutPrefix(o, "alias:"); ok {
				f.byName[alias] = sf.Type
			}
		}
	}
	fieldCache.Store(t, f)
	return f
}

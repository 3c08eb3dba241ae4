package msgpackcheck

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/spiderenv/spider/internal/alloccount"
)

// TestSizeRefusesDeepNesting: msgpack decodes nested values recursively,
// so a file of nothing but array openings must be refused before it
// reaches the decoder (10 million levels would overflow the stack, a
// fatal error).
func TestSizeRefusesDeepNesting(t *testing.T) {
	deep := append(bytes.Repeat([]byte{0x91}, MaxDepth), 0xc0)
	if n, err := Size(deep); err != nil || n != len(deep) {
		t.Fatalf("%d levels: %d, %v; want accepted", MaxDepth, n, err)
	}
	deeper := append(bytes.Repeat([]byte{0x91}, MaxDepth+1), 0xc0)
	if _, err := Size(deeper); err == nil || err.Error() != "the value at byte 64 nests more than 64 deep" {
		t.Fatalf("%d levels: %v; want a refusal", MaxDepth+1, err)
	}
	huge := append(bytes.Repeat([]byte{0x91}, 10_000_000), 0xc0)
	var v any
	if err := Decode(huge, &v); err == nil || !strings.Contains(err.Error(), "nests more than") {
		t.Fatalf("10 million levels: %v", err)
	}
	// Containers that close bring the depth back down.
	wide := []byte{0x92}
	for range 2 * MaxDepth {
		wide = append(wide, 0x91)
	}
	wide = append(wide, 0xc0)
	if _, err := Size(wide); err == nil {
		t.Fatal("a second branch deeper than the limit was accepted")
	}
	siblings := []byte{0x92, 0x91, 0x91, 0xc0, 0x91, 0x91, 0xc0, 0xc0}
	if n, err := Size(siblings); err != nil || n != len(siblings)-1 {
		t.Fatalf("two shallow branches: %d, %v; want %d bytes", n, err, len(siblings)-1)
	}
}

type small struct {
	A int    `msgpack:"a"`
	S string `msgpack:"s"`
}

type big struct {
	Name   string    `msgpack:"name"`
	Values [20]int64 `msgpack:"values"`
	More   []int     `msgpack:"more"`
}

type named struct {
	N int `msgpack:"n,alias:number"`
	S int `msgpack:"-"`
	//lint:ignore U1000 read only by reflection: fieldsOf must skip it
	x int
}

type everything struct {
	Ints    []int              `msgpack:"ints"`
	Strings []string           `msgpack:"strings"`
	Bytes   []byte             `msgpack:"bytes"`
	Smalls  []small            `msgpack:"smalls"`
	Ptrs    []*small           `msgpack:"ptrs"`
	Bigs    []big              `msgpack:"bigs"`
	Nested  [][]uint16         `msgpack:"nested"`
	Map     map[string]int     `msgpack:"map"`
	Any     any                `msgpack:"any"`
	Raw     msgpack.RawMessage `msgpack:"raw"`
	When    time.Time          `msgpack:"when"`
	Arr     [4]int             `msgpack:"arr"`
	Named   named              `msgpack:"named"`
	Ptr     *big               `msgpack:"ptr"`
}

// TestAllocBoundsMsgpack decodes values of every kind the walker knows,
// well formed and hostile, and checks that Alloc's estimate is at least
// what msgpack really allocates.
func TestAllocBoundsMsgpack(t *testing.T) {
	raw, _ := msgpack.Marshal(map[string]any{"x": []int{1, 2, 3}, "y": strings.Repeat("r", 3000)})
	full := everything{
		Ints: make([]int, 5000), Strings: []string{"a", strings.Repeat("b", 1000)}, Bytes: make([]byte, 4000),
		Smalls: make([]small, 300), Ptrs: []*small{{1, "x"}, nil}, Bigs: make([]big, 50),
		Nested: [][]uint16{make([]uint16, 300), {}, nil}, Map: map[string]int{"a": 1, "bb": 2},
		Any: map[string]any{"list": []any{1, "two", 3.0, []byte("four")}}, Raw: raw, When: time.Unix(1e9, 5),
		Arr: [4]int{1, 2, 3, 4}, Named: named{N: 3}, Ptr: &big{Name: "p"},
	}
	good, err := msgpack.Marshal(&full)
	if err != nil {
		t.Fatal(err)
	}
	nils := func(key string, n int) []byte {
		b := []byte{0x81, 0xa0 | byte(len(key))}
		b = append(b, key...)
		b = append(b, 0xdd, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
		return append(b, bytes.Repeat([]byte{0xc0}, n)...)
	}
	asArray, _ := msgpack.Marshal([]any{[]any{1, "s"}})
	// A first decode fills msgpack's caches of the types, once a process:
	// without it, whichever case the map's order put first would pay for
	// them.
	if err := msgpack.Unmarshal(good, new(everything)); err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{
		"full":         good,
		"nil bigs":     nils("bigs", 20000),
		"nil smalls":   nils("smalls", 20000),
		"nil ints":     nils("ints", 20000),
		"nil strings":  nils("strings", 20000),
		"nil nested":   nils("nested", 20000),
		"nil any":      nils("any", 20000),
		"nil ptrs":     nils("ptrs", 20000),
		"struct array": append([]byte{0x81, 0xa6, 's', 'm', 'a', 'l', 'l', 's'}, asArray...),
	} {
		est, err := Alloc(b, reflect.TypeFor[everything](), 1<<40)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		// The fewest bytes of three decodes: the count is the whole
		// process's, and another goroutine of the runtime or the test
		// binary may allocate during one of them (once, 6 KB in a CI run).
		var derr error
		got := uint64(math.MaxUint64)
		for range 3 {
			var v everything
			got = min(got, alloccount.Bytes(func() { derr = msgpack.Unmarshal(b, &v) }))
		}
		// 4 KiB of slack: the decoder's own state and small buffers.
		if int64(got) > est+4096 {
			t.Errorf("%s: msgpack allocated %d bytes, the estimate is %d (decode error %v)", name, got, est, derr)
		}
	}
	// A renamed, aliased field is found under both names; "-" and
	// unexported fields are not fields.
	f := fieldsOf(reflect.TypeFor[named]())
	if len(f.list) != 1 || f.byName["n"] == nil || f.byName["number"] == nil || f.byName["S"] != nil || f.byName["x"] != nil {
		t.Fatalf("fields of named: %+v", f)
	}
}

// TestDecodeRefusesNilItemsOfLargeStructs: after Lengths, a slice holds at
// most one item per byte, but a nil item of a large struct costs its whole
// size. A file of such items must be refused before decoding.
func TestDecodeRefusesNilItemsOfLargeStructs(t *testing.T) {
	n := 1 << 18
	b := append([]byte{0x81, 0xa4, 'b', 'i', 'g', 's', 0xdd, 0, 4, 0, 0}, bytes.Repeat([]byte{0xc0}, n)...)
	var v everything
	var err error
	got := alloccount.Bytes(func() { err = Decode(b, &v) })
	var over errOverBudget
	if !errors.As(err, &over) || !strings.HasPrefix(err.Error(), "decoding would allocate more than") {
		t.Fatalf("%d nil items of a %d-byte struct: %v; want a refusal", n, reflect.TypeFor[big]().Size(), err)
	}
	if got > 1<<20 {
		t.Fatalf("refusing took %d bytes", got)
	}
	// The same count of small items is within the budget.
	type actions struct {
		A []uint16 `msgpack:"a"`
	}
	b = append([]byte{0x81, 0xa1, 'a', 0xdd, 0, 4, 0, 0}, bytes.Repeat([]byte{0x01}, n)...)
	var a actions
	if err := Decode(b, &a); err != nil || len(a.A) != n {
		t.Fatalf("%d one-byte uint16s: %d decoded, %v", n, len(a.A), err)
	}
}

// TestDecodeRefusesMapsInsideExtensions: msgpack reads a map out of an
// extension, whose bytes Size and Alloc see as opaque, so the lengths
// inside it would go unchecked (here 50 million uint16s declared in 5
// bytes: 100 MB).
func TestDecodeRefusesMapsInsideExtensions(t *testing.T) {
	type withMap struct {
		M map[string][]uint16 `msgpack:"m"`
	}
	inner := []byte{0x81, 0xa1, 'a', 0xdd, 0x02, 0xfa, 0xf0, 0x80}
	var v withMap
	// In an ext8, an ext16 and an ext32: the length takes 1, 2 or 4 bytes.
	for _, ext := range [][]byte{{0xc7, byte(len(inner))}, {0xc8, 0, byte(len(inner))}, {0xc9, 0, 0, 0, byte(len(inner))}} {
		b := append(append(append([]byte{0x81, 0xa1, 'm'}, ext...), 1), inner...)
		var err error
		got := alloccount.Bytes(func() { err = Decode(b, &v) })
		if err == nil || !strings.Contains(err.Error(), "an msgpack extension where a map[string][]uint16 goes") {
			t.Fatalf("a map inside an extension (code %#x): %v", ext[0], err)
		}
		if got > 64<<10 {
			t.Fatalf("refusing it (code %#x) allocated %d bytes", ext[0], got)
		}
	}
	// The same map, not wrapped, decodes (as far as its bytes go).
	ok := []byte{0x81, 0xa1, 'm', 0x81, 0xa1, 'a', 0x92, 1, 2}
	if err := Decode(ok, &v); err != nil || len(v.M["a"]) != 2 {
		t.Fatalf("the map itself: %+v, %v", v, err)
	}
}

func TestDecodeRefusesTrailingBytes(t *testing.T) {
	b, _ := msgpack.Marshal(small{A: 1, S: "x"})
	var v small
	if err := Decode(b, &v); err != nil || v.A != 1 {
		t.Fatalf("a valid value: %+v, %v", v, err)
	}
	if err := Decode(append(b, 0xc0, 0xc0), &v); err == nil || err.Error() != "2 bytes follow the value" {
		t.Fatalf("two bytes after the value: %v", err)
	}
	if err := Decode(b, v); err == nil {
		t.Fatal("decoding into a non-pointer was accepted")
	}
	if err := Decode(b, nil); err == nil {
		t.Fatal("decoding into nil was accepted")
	}
}

// TestUnsealRefusesEveryFlippedBit flips each bit of a sealed value in
// turn: every one must be refused, and the intact one accepted.
func TestUnsealRefusesEveryFlippedBit(t *testing.T) {
	b, _ := msgpack.Marshal(map[string]any{"w": []byte{1, 2, 3, 4, 5, 6, 7, 8}, "n": 300, "s": "text"})
	sealed := Seal(b)
	if len(sealed) != len(b)+TrailerSize {
		t.Fatalf("sealed %d bytes into %d", len(b), len(sealed))
	}
	got, err := Unseal(sealed)
	if err != nil || !bytes.Equal(got, b) {
		t.Fatalf("the intact value: %v", err)
	}
	for i := range 8 * len(sealed) {
		bad := bytes.Clone(sealed)
		bad[i/8] ^= 1 << (i % 8)
		if _, err := Unseal(bad); err == nil {
			t.Fatalf("bit %d of byte %d flipped: accepted", i%8, i/8)
		}
	}
	for name, tc := range map[string]struct {
		b    []byte
		want string
	}{
		"garbage after": {append(bytes.Clone(sealed), "junk"...), "4 unexpected bytes after the checksum"},
		"no checksum":   {b, "no checksum after the data"},
		"cut checksum":  {sealed[:len(sealed)-1], "the 4 bytes after the data are not a checksum"},
		"other value":   {append(bytes.Clone(b), 0xc0), "the 1 bytes after the data are not a checksum"},
		// A uint32 alone is a value, not a checksum of nothing.
		"a uint32 alone": {[]byte{0xce, 0, 0, 0, 7}, "no checksum after the data"},
	} {
		if _, err := Unseal(tc.b); err == nil || err.Error() != tc.want {
			t.Errorf("%s: %v; want %q", name, err, tc.want)
		}
	}
	bad := bytes.Clone(sealed)
	bad[len(b)-1] ^= 0x01 // a byte of the string "text"
	if _, err := Unseal(bad); err == nil || !strings.HasPrefix(err.Error(), "checksum mismatch (CRC-32C ") {
		t.Fatalf("a changed byte: %v", err)
	}
	// A flipped bit in a length moves where the value seems to end: the
	// checksum at the end still says the file is damaged.
	short := Seal([]byte{0x92, 0x01, 0x02})
	short[0] = 0x91
	if _, err := Unseal(short); err == nil || !strings.HasPrefix(err.Error(), "checksum mismatch (CRC-32C ") {
		t.Fatalf("a changed length: %v", err)
	}
}

// TestReadFileRefusesLargeFilesUnread: a sparse file of a gigabyte takes
// no disk, and ReadFile must refuse it from its size, reading nothing.
func TestReadFileRefusesLargeFilesUnread(t *testing.T) {
	p := filepath.Join(t.TempDir(), "big")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(1 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	var rerr error
	got := alloccount.Bytes(func() { _, rerr = ReadFile(p, 1<<20) })
	if rerr == nil || rerr.Error() != p+": 1073741824 bytes, more than any valid file can have (1048576)" {
		t.Fatalf("a 1 GiB file: %v", rerr)
	}
	if got > 64<<10 {
		t.Fatalf("refusing it allocated %d bytes", got)
	}
	if err := os.Truncate(p, 1<<20); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadFile(p, 1<<20); err != nil || len(b) != 1<<20 {
		t.Fatalf("a file of exactly the limit: %d bytes, %v", len(b), err)
	}
	// A device reads for ever: refused unread, where it filled the buffer
	// to the limit first (733 MiB allocated under a limit of 128 MiB).
	if _, err := os.Stat("/dev/zero"); err == nil {
		var err error
		got := alloccount.Bytes(func() { _, err = ReadFile("/dev/zero", 128<<20) })
		if err == nil || err.Error() != "/dev/zero: not a regular file (a device or socket)" || got > 64<<10 {
			t.Fatalf("/dev/zero: %v, allocating %d bytes", err, got)
		}
	}
	if _, err := ReadFile(t.TempDir(), 10); err == nil || !strings.HasSuffix(err.Error(), ": a folder, not a file") {
		t.Fatalf("a folder: %v", err)
	}
	// Where int has 32 bits (make test-ports) no slice holds 2 GiB: a file
	// of 2^31-1 bytes under a limit of 2 GiB is refused, not a panic in
	// make.
	if strconv.IntSize == 32 {
		if err := os.Truncate(p, math.MaxInt32); err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("%s: 2147483647 bytes, more than any valid file can have (%d)", p, math.MaxInt-1)
		if _, err := ReadFile(p, 2<<30); err == nil || err.Error() != want {
			t.Fatalf("2^31-1 bytes under a 2 GiB limit: %v; want %q", err, want)
		}
	}
	if _, err := ReadFile(filepath.Join(t.TempDir(), "missing"), 10); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a missing file: %v", err)
	}
}

// nilItems is a map of one entry: the key as encoded (any string or bin
// code) and an array32 of n nils.
func nilItems(key []byte, n int) []byte {
	b := append([]byte{0x81}, key...)
	b = append(b, 0xdd, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	return append(b, bytes.Repeat([]byte{0xc0}, n)...)
}

// TestAllocBoundsEachCharge gives each of Alloc's charges a value large
// enough that leaving it out, or making it smaller, would bring the
// estimate below what msgpack allocates (by more than the 4 KiB of the
// decoder's own state): long strings, pointers, the items, scalars, maps and
// extensions of a generic decode, an array of slices, typed maps that fill
// their groups, and field names as bins, as a str32 or in a map32.
func TestAllocBoundsEachCharge(t *testing.T) {
	enc := func(v any) []byte {
		b, err := msgpack.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	strs := make([]string, 100)
	for i := range strs {
		strs[i] = strings.Repeat("x", 1024)
	}
	ptrs := make([]*small, 2000)
	for i := range ptrs {
		ptrs[i] = &small{}
	}
	scalars := make([]any, 5000)
	for i := range scalars {
		scalars[i] = "s"
	}
	generic := map[string]any{}
	for i := range 2000 {
		generic[fmt.Sprint(i)] = 1000 + i
	}
	times := make([]any, 2000)
	for i := range times {
		times[i] = time.Unix(int64(i), 5)
	}
	type groups struct {
		M []map[string]int `msgpack:"m"`
	}
	full := make([]map[string]int, 1000)
	for i := range full {
		full[i] = map[string]int{}
		for j := range 8 { // one full group of a Go map
			full[i][strings.Repeat("k", j)] = j
		}
	}
	type arrays struct {
		A [2][]big `msgpack:"a"`
	}
	// Maps of one pair (a whole group of slots each), and empty maps and
	// arrays in an any: their headers cost more than their pairs.
	single := make([]map[string]int, 1000)
	for i := range single {
		single[i] = map[string]int{"k": i}
	}
	emptyMaps, emptyArrays := make([]any, 5000), make([]any, 5000)
	for i := range emptyMaps {
		emptyMaps[i], emptyArrays[i] = map[string]any{}, []any{}
	}
	str32 := binary.BigEndian.AppendUint32([]byte{0xdb}, 4)
	map32 := append([]byte{0xdf, 0, 0, 0, 1}, nilItems([]byte("\xa4bigs"), 2000)[1:]...)
	for _, tc := range []struct {
		name string
		typ  reflect.Type
		b    []byte
	}{
		{"long strings", reflect.TypeFor[everything](), enc(map[string]any{"strings": strs})},
		{"pointers", reflect.TypeFor[everything](), enc(map[string]any{"ptrs": ptrs})},
		{"generic scalars", reflect.TypeFor[everything](), enc(map[string]any{"any": scalars})},
		{"generic map", reflect.TypeFor[everything](), enc(map[string]any{"any": generic})},
		{"generic extensions", reflect.TypeFor[everything](), enc(map[string]any{"any": times})},
		{"an extension as any", reflect.TypeFor[everything](), enc(map[string]any{"any": time.Unix(5, 5)})},
		{"full map groups", reflect.TypeFor[groups](), enc(map[string]any{"m": full})},
		{"maps of one pair", reflect.TypeFor[groups](), enc(map[string]any{"m": single})},
		{"empty generic maps", reflect.TypeFor[everything](), enc(map[string]any{"any": emptyMaps})},
		{"empty generic arrays", reflect.TypeFor[everything](), enc(map[string]any{"any": emptyArrays})},
		{"array of slices", reflect.TypeFor[arrays](), enc(map[string]any{"a": []any{make([]any, 3000), nil}})},
		{"bin8 field name", reflect.TypeFor[everything](), nilItems([]byte("\xc4\x04bigs"), 2000)},
		{"bin32 field name", reflect.TypeFor[everything](), nilItems([]byte("\xc6\x00\x00\x00\x04bigs"), 2000)},
		{"str32 field name", reflect.TypeFor[everything](), nilItems(append(str32, "bigs"...), 2000)},
		{"map32 struct", reflect.TypeFor[everything](), map32},
	} {
		est, err := Alloc(tc.b, tc.typ, 1<<40)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		// A first decode fills msgpack's caches of the type.
		if err := msgpack.Unmarshal(tc.b, reflect.New(tc.typ).Interface()); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		// The fewest bytes of three, as in TestAllocBoundsMsgpack.
		got := uint64(math.MaxUint64)
		for range 3 {
			v := reflect.New(tc.typ).Interface()
			got = min(got, alloccount.Bytes(func() { err = msgpack.Unmarshal(tc.b, v) }))
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if int64(got) > est+4096 {
			t.Errorf("%s: msgpack allocated %d bytes, the estimate is %d", tc.name, got, est)
		}
	}
}

// TestAllocSkipsValuesOfTheWrongKind: a string where a slice or an array
// goes, or an array where a map goes, is a value msgpack refuses, and
// Alloc must charge it as skipped bytes rather than walk its bytes as
// items (past the end of the input). An unknown field is skipped too.
// Each value comes last, where walking too far would read past the end.
func TestAllocSkipsValuesOfTheWrongKind(t *testing.T) {
	for _, tc := range []struct {
		name    string
		b       []byte
		refused bool
	}{
		{"a string for a slice", []byte("\x81\xa4ints\xa3\x92\x01\x01"), true},
		{"a string for an array", []byte("\x81\xa3arr\xa3\x92\x01\x01"), true},
		{"an array for a map", []byte("\x81\xa3map\x92\x01\x01"), true},
		{"an unknown field", []byte("\x81\xa7unknown\x92\x01\x01"), false},
	} {
		est, err := Alloc(tc.b, reflect.TypeFor[everything](), 1<<20)
		if err != nil || est < 3 {
			t.Errorf("%s: Alloc %d, %v; want the value's bytes charged", tc.name, est, err)
		}
		var v everything
		if err := Decode(tc.b, &v); (err != nil) != tc.refused {
			t.Errorf("%s: Decode: %v", tc.name, err)
		}
	}
}

// TestAllocChargesAsDocumented checks the charges Alloc's comment states
// exactly: nil and an empty slice cost nothing, a string its bytes, and a
// value that decodes itself, or a struct with an embedded field (whose
// inlining the walk does not mirror), three bytes per byte plus 32.
func TestAllocChargesAsDocumented(t *testing.T) {
	type embeds struct {
		small
		N int `msgpack:"n"`
	}
	raw, _ := msgpack.Marshal(map[string]any{"x": []int{1, 2, 3}, "y": "text"})
	withEmbedded, _ := msgpack.Marshal(embeds{small{1, "s"}, 2})
	for _, tc := range []struct {
		name string
		b    []byte
		typ  reflect.Type
		want int64
	}{
		{"nil for a pointer", []byte{0xc0}, reflect.TypeFor[*big](), 0},
		{"an empty slice", []byte{0x90}, reflect.TypeFor[[]int64](), 0},
		{"a string", []byte("\xa3abc"), reflect.TypeFor[string](), 4},
		{"a raw message", raw, reflect.TypeFor[msgpack.RawMessage](), 3*int64(len(raw)) + 32},
		{"an embedded field", withEmbedded, reflect.TypeFor[embeds](), 3*int64(len(withEmbedded)) + 32},
	} {
		if got, err := Alloc(tc.b, tc.typ, 1<<20); err != nil || got != tc.want {
			t.Errorf("%s: Alloc %d, %v; want %d", tc.name, got, err, tc.want)
		}
	}
}

// TestAllocLimitIsTheMostAllowed: an estimate equal to the limit passes;
// one byte less of limit refuses it.
func TestAllocLimitIsTheMostAllowed(t *testing.T) {
	b, _ := msgpack.Marshal(everything{Ints: make([]int, 100), Strings: []string{"abc"}})
	est, err := Alloc(b, reflect.TypeFor[everything](), 1<<40)
	if err != nil || est == 0 {
		t.Fatalf("Alloc: %d, %v", est, err)
	}
	if got, err := Alloc(b, reflect.TypeFor[everything](), est); err != nil || got != est {
		t.Fatalf("a limit equal to the estimate: %d, %v; want accepted", got, err)
	}
	var over errOverBudget
	if _, err := Alloc(b, reflect.TypeFor[everything](), est-1); !errors.As(err, &over) {
		t.Fatalf("a limit one byte under the estimate: %v; want a refusal", err)
	}
}

// TestBudget is Decode's budget as documented: eight bytes per byte plus
// 1 MiB.
func TestBudget(t *testing.T) {
	for n, want := range map[int]int64{0: 1 << 20, 1000: 8000 + 1<<20, 1 << 30: 8<<30 + 1<<20} {
		if got := Budget(n); got != want {
			t.Errorf("Budget(%d) = %d, want %d", n, got, want)
		}
	}
}

// TestReadFileClosesAndSizesOnce: ReadFile closes the file, whether it
// reads it or refuses it (no descriptor is left open; the garbage
// collector, which would close a lost one, is held off), and reads into
// one buffer of the file's size.
func TestReadFileClosesAndSizesOnce(t *testing.T) {
	fds := func() int {
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Skip("no /proc/self/fd to count open files by")
		}
		return len(ents)
	}
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	before := fds()
	for range 20 {
		if _, err := ReadFile(p, 1<<20); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadFile(p, 1000); err == nil {
			t.Fatal("a file over the limit was read")
		}
	}
	if after := fds(); after > before {
		t.Fatalf("%d files open after 40 reads, %d before", after, before)
	}
	if got := alloccount.Bytes(func() { ReadFile(p, 1<<30) }); got > 1<<20+64<<10 {
		t.Fatalf("reading 1 MiB allocated %d bytes", got)
	}
}

// TestDecodeRefusesNumbersThatDoNotFit: an integer msgpack would cut to
// its low bits to fit an integer field is refused with where it is, in
// every encoding, and the bounds themselves decode.
func TestDecodeRefusesNumbersThatDoNotFit(t *testing.T) {
	type inner struct {
		N int `msgpack:"n"`
	}
	type file struct {
		U8  uint8            `msgpack:"u8"`
		I16 int16            `msgpack:"i16"`
		U16 []uint16         `msgpack:"u16"`
		I64 int64            `msgpack:"i64"`
		U64 uint64           `msgpack:"u64"`
		In  inner            `msgpack:"in"`
		Arr [2]inner         `msgpack:"arr"`
		M   map[string]uint8 `msgpack:"m"`
		K   map[int8]bool    `msgpack:"k"`
		F   float64          `msgpack:"f"`
	}
	raw := func(v any) []byte {
		b, err := msgpack.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	maxInt, minInt := fmt.Sprint(math.MaxInt), fmt.Sprint(math.MinInt)
	for _, tc := range []struct {
		name string
		v    map[string]any
		want string // "" decodes
	}{
		{"bounds", map[string]any{"u8": 255, "i16": -32768, "u16": []any{0, 65535}, "i64": int64(math.MinInt64), "u64": uint64(math.MaxUint64), "in": map[string]any{"n": math.MaxInt}}, ""},
		{"int bounds", map[string]any{"in": map[string]any{"n": math.MinInt}}, ""},
		{"u8 256", map[string]any{"u8": 256}, "u8 is 256, outside uint8's range (0 to 255)"},
		{"u8 -1", map[string]any{"u8": -1}, "u8 is -1, outside uint8's range (0 to 255)"},
		{"i16 as int64", map[string]any{"i16": int64(-32769)}, "i16 is -32769, outside int16's range (-32768 to 32767)"},
		{"u16 item", map[string]any{"u16": []any{1, 2, 65536}}, "u16[2] is 65536, outside uint16's range (0 to 65535)"},
		{"negative fixint into uint", map[string]any{"u64": msgpack.RawMessage{0xff}}, "u64 is -1, outside uint64's range (0 to 18446744073709551615)"},
		{"uint64 into int64", map[string]any{"i64": uint64(1 << 63)}, "i64 is 9223372036854775808, outside int64's range (-9223372036854775808 to 9223372036854775807)"},
		{"array item", map[string]any{"arr": []any{map[string]any{"n": 1}, map[string]any{"n": uint64(math.MaxUint64)}}}, "arr[1].n is 18446744073709551615, outside int's range (" + minInt + " to " + maxInt + ")"},
		{"array-form struct", map[string]any{"in": []any{uint64(math.MaxUint64)}}, "in.n is 18446744073709551615, outside int's range (" + minInt + " to " + maxInt + ")"},
		{"map value", map[string]any{"m": map[string]any{"x": 300}}, "m[key] is 300, outside uint8's range (0 to 255)"},
		{"float from int64", map[string]any{"f": int64(math.MinInt64)}, ""},
		{"float from uint64", map[string]any{"f": uint64(math.MaxInt64)}, ""},
		{"float from 2^63", map[string]any{"f": uint64(1 << 63)}, "f is 9223372036854775808, which msgpack would read into a float64 as negative"},
		{"map key", map[string]any{"k": map[int]bool{-200: true}}, "k key is -200, outside int8's range (-128 to 127)"},
		{"uint64 max into int", map[string]any{"in": map[string]any{"n": uint64(math.MaxUint64)}}, "in.n is 18446744073709551615, outside int's range (" + minInt + " to " + maxInt + ")"},
	} {
		var f file
		err := Decode(raw(tc.v), &f)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || err.Error() != tc.want) {
			t.Errorf("%s: %v; want %q", tc.name, err, tc.want)
		}
	}
	// A float msgpack refuses for an integer itself.
	var f file
	if err := Decode(raw(map[string]any{"u8": 2.0}), &f); err == nil {
		t.Error("a float for a uint8 decoded")
	}
	// Where int has 32 bits (make test-ports), 2^32+5 would decode as 5.
	if strconv.IntSize == 32 {
		var f file
		err := Decode(raw(map[string]any{"in": map[string]any{"n": int64(1<<32 + 5)}}), &f)
		if err == nil || err.Error() != "in.n is 4294967301, outside int's range (-2147483648 to 2147483647)" {
			t.Errorf("2^32+5 into a 32-bit int: %v", err)
		}
	}
}

package server

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// TestReaderReadsEveryForm reads integers, floats, strings and bins in
// every width msgpack writes them.
func TestReaderReadsEveryForm(t *testing.T) {
	var buf bytes.Buffer
	e := msgpack.NewEncoder(&buf)
	reset := func() *reader { return &reader{b: buf.Bytes()} }
	ints := []struct {
		enc  func() error
		want int64
	}{
		{func() error { return e.EncodeUint8(200) }, 200},
		{func() error { return e.EncodeUint16(60000) }, 60000},
		{func() error { return e.EncodeUint32(4e9) }, 4e9},
		{func() error { return e.EncodeUint64(1 << 62) }, 1 << 62},
		{func() error { return e.EncodeInt8(-100) }, -100},
		{func() error { return e.EncodeInt16(-30000) }, -30000},
		{func() error { return e.EncodeInt32(-2e9) }, -2e9},
		{func() error { return e.EncodeInt64(math.MinInt64) }, math.MinInt64},
		{func() error { return e.EncodeInt(-7) }, -7},
	}
	for _, tc := range ints {
		buf.Reset()
		if err := tc.enc(); err != nil {
			t.Fatal(err)
		}
		if got, err := reset().int(); err != nil || got != tc.want {
			t.Errorf("% x read as %d, %v; want %d", buf.Bytes(), got, err, tc.want)
		}
		if got, err := reset().float(); err != nil || got != float64(tc.want) {
			t.Errorf("% x read as float %v, %v", buf.Bytes(), got, err)
		}
	}
	buf.Reset()
	e.EncodeUint64(math.MaxUint64)
	if _, err := reset().int(); err == nil || err.Error() != "integer too large" {
		t.Errorf("2^64-1 as an int64: %v", err)
	}
	var q request
	if err := reset().seed(&q); err != nil || q.seed != math.MaxUint64 {
		t.Errorf("2^64-1 as a seed: %d, %v", q.seed, err)
	}
	for _, f := range []func() error{func() error { return e.EncodeFloat32(0.25) }, func() error { return e.EncodeFloat64(0.25) }} {
		buf.Reset()
		f()
		if got, err := reset().float(); err != nil || got != 0.25 {
			t.Errorf("% x read as %v, %v", buf.Bytes(), got, err)
		}
	}
	for _, n := range []int{0, 31, 32, 255, 256} {
		s := strings.Repeat("k", n)
		buf.Reset()
		e.EncodeString(s)
		if got, err := reset().text(); err != nil || got != s {
			t.Errorf("a string of %d bytes: %v", n, err)
		}
		buf.Reset()
		e.EncodeBytes([]byte(s))
		if got, err := reset().bin(); err != nil || string(got) != s {
			t.Errorf("a bin of %d bytes: %v", n, err)
		}
	}
	buf.Reset()
	e.EncodeString(strings.Repeat("k", maxString+1))
	if _, err := reset().text(); err == nil || err.Error() != "a string of 257 bytes is over the limit of 256" {
		t.Errorf("a string over the limit: %v", err)
	}
	for _, n := range []int{0, 15, 16, 70000} {
		buf.Reset()
		e.EncodeArrayLen(n)
		if got, err := reset().arrayLen(); err != nil || got != n {
			t.Errorf("array header of %d read as %d, %v", n, got, err)
		}
		buf.Reset()
		e.EncodeMapLen(n)
		if got, err := reset().mapLen(); err != nil || got != n {
			t.Errorf("map header of %d read as %d, %v", n, got, err)
		}
	}
}

// TestDeclaredLengthsPastTheEnd gives an unknown field each header whose
// declared length runs past the frame, and a fixed-size value cut short.
func TestDeclaredLengthsPastTheEnd(t *testing.T) {
	const tooLong = "a declared length runs past the end of the frame"
	const short = "the frame ends inside a value"
	for _, tc := range []struct {
		value []byte
		want  string
	}{
		{[]byte{0xbf, 'a'}, tooLong},                          // fixstr
		{[]byte{0xd9, 0xff}, tooLong},                         // str8
		{[]byte{0xda, 0xff, 0xff}, tooLong},                   // str16
		{[]byte{0xdb, 0x00, 0x00, 0x10, 0x00}, tooLong},       // str32
		{[]byte{0xc4, 0x09}, tooLong},                         // bin8
		{[]byte{0xc5, 0xff, 0xff}, tooLong},                   // bin16
		{[]byte{0xc6, 0xff, 0xff, 0xff, 0xff}, tooLong},       // bin32
		{[]byte{0x9f}, tooLong},                               // fixarray
		{[]byte{0xdc, 0xff, 0xff}, tooLong},                   // array16
		{[]byte{0xdd, 0xff, 0xff, 0xff, 0xff}, tooLong},       // array32
		{[]byte{0x8f}, tooLong},                               // fixmap
		{[]byte{0xde, 0x00, 0x09}, tooLong},                   // map16
		{[]byte{0xdf, 0xff, 0xff, 0xff, 0xff}, tooLong},       // map32
		{[]byte{0xc7, 0xff, 0x01}, tooLong},                   // ext8
		{[]byte{0xc8, 0xff, 0xff, 0x01}, tooLong},             // ext16
		{[]byte{0xc9, 0xff, 0xff, 0xff, 0xff, 0x01}, tooLong}, // ext32
		{[]byte{0xd8, 0x01, 0x00}, short},                     // fixext16
		{[]byte{0xcb, 0x00}, short},                           // float64
		{[]byte{0xd3, 0x00}, short},                           // int64
		{[]byte{0xda, 0xff}, short},                           // str16's length itself
	} {
		// The field comes last, so only its own bytes are left.
		p := append([]byte{0x82, 0xa2, 'o', 'p', 0xa5, 'h', 'e', 'l', 'l', 'o', 0xa1, 'x'}, tc.value...)
		var q request
		re := decodeRequest(p, &q)
		if want := `field "x" has the wrong type or value: ` + tc.want; re == nil || re.code != codeBadRequest || re.msg != want {
			t.Errorf("% x: %v; want bad_request %q", tc.value, re, want)
		}
	}
}

// TestSkipPassesEveryType sends an unknown field holding every msgpack
// type before the op, and requires the op to be read after it.
func TestSkipPassesEveryType(t *testing.T) {
	var buf bytes.Buffer
	e := msgpack.NewEncoder(&buf)
	e.EncodeMapLen(2)
	e.EncodeString("x")
	e.EncodeArrayLen(19)
	e.EncodeNil()
	e.EncodeBool(true)
	e.EncodeBool(false)
	e.EncodeInt(-3)
	e.EncodeUint8(1)
	e.EncodeInt16(-300)
	e.EncodeUint32(1 << 20)
	e.EncodeInt64(-1 << 40)
	e.EncodeFloat32(1.5)
	e.EncodeFloat64(2.5)
	e.EncodeString(strings.Repeat("s", 300))
	e.EncodeBytes(make([]byte, 300))
	e.Encode(map[string]any{"a": []any{1, map[string]any{"b": nil}}})
	buf.Write([]byte{0xd4, 1, 0xaa})             // fixext1
	buf.Write([]byte{0xd8, 1})                   // fixext16
	buf.Write(make([]byte, 16))                  //
	buf.Write([]byte{0xc7, 3, 1, 'e', 'x', 't'}) // ext8
	buf.Write([]byte{0xc8, 0, 1, 1, 0})          // ext16
	buf.Write([]byte{0xc9, 0, 0, 0, 1, 1, 0})    // ext32
	e.EncodeArrayLen(0)
	e.EncodeString("op")
	e.EncodeString("render")
	var q request
	if re := decodeRequest(buf.Bytes(), &q); re != nil || q.op != "render" {
		t.Fatalf("decoded %+v, %v", q, re)
	}
}

// TestRequestFieldsDecode decodes a request with every field the server
// reads and a game option of each kind.
func TestRequestFieldsDecode(t *testing.T) {
	p := must(msgpack.Marshal(map[string]any{
		"op": "make", "id": 3, "version": 1, "n": 5, "workers": 2, "autoreset": "same-step", "illegal": "noop",
		"illegal_penalty": 0.5, "mask": "bits", "game": 4, "seed": 11, "reset_mask": []byte{1, 0},
		"actions": []byte{1, 0}, "mode": "rgb_array", "seeds": []any{uint64(1) << 63, nil, 5}, "suits": 2, "rules": "cardems", "future": []any{1},
		"shm": true, "seq": 9, "env_ids": []byte{2, 0, 0, 0}, "legal": true,
	}))
	var q request
	if re := decodeRequest(p, &q); re != nil {
		t.Fatal(re)
	}
	got := fmt.Sprintln(q.op, q.id, q.version, q.n, q.workers, q.autoreset, q.illegal, q.penalty, q.mask, q.game, q.seed, q.resetMask, q.actions, q.actionArray, q.mode)
	if want := "make 3 1 5 2 same-step noop 0.5 bits 4 11 [1 0] [1 0] false rgb_array\n"; got != want {
		t.Fatalf("decoded %s\nwant    %s", got, want)
	}
	if !q.shm || q.seq != 9 || !bytes.Equal(q.envIDs, []byte{2, 0, 0, 0}) || !q.legal {
		t.Fatalf("shm %v seq %d env_ids %v legal %v", q.shm, q.seq, q.envIDs, q.legal)
	}
	if q.seedCount != 3 {
		t.Fatalf("%d seeds, want 3", q.seedCount)
	}
	if q.seen != 1<<numFields-1 {
		t.Fatalf("fields seen %b", q.seen)
	}
	opts := map[string]string{}
	for _, o := range q.options {
		opts[o.field.Key] = fmt.Sprintf("%d %q", o.num, o.text)
	}
	if fmt.Sprint(opts) != `map[rules:0 "cardems" suits:2 ""]` || len(q.ignored) != 1 || string(q.ignored[0]) != "future" {
		t.Fatalf("options %v, ignored %q", opts, q.ignored)
	}
	// A field whose value is refused counts as not sent: a failed reply
	// must not echo an id the peer did not give.
	for _, id := range []any{"abc", uint64(1) << 63} {
		re := decodeRequest(must(msgpack.Marshal(map[string]any{"op": "hello", "version": 1, "id": id})), &q)
		if re == nil || re.code != codeBadRequest || !strings.HasPrefix(re.msg, `field "id" has the wrong type or value`) || q.has(fieldID) {
			t.Fatalf("id %v: %v, id seen %v", id, re, q.has(fieldID))
		}
	}
	// A nil seed is no seed.
	if re := decodeRequest(must(msgpack.Marshal(map[string]any{"op": "reset", "seed": nil})), &q); re != nil || q.has(fieldSeed) {
		t.Fatalf("a nil seed: %v, seen %b", re, q.seen)
	}
}

// TestMapShorterThanItsHeader: a map header declaring more fields than
// the frame has bytes for (every key and value takes one at least) is a
// bad frame, refused before any field is read, not a field cut short.
func TestMapShorterThanItsHeader(t *testing.T) {
	for _, p := range [][]byte{
		{0x82, 0xa2, 'o', 'p'},            // two fields in 3 bytes
		{0x83, 0xa2, 'o', 'p', 0xa1, 'x'}, // three fields in 5 bytes
	} {
		var q request
		re := decodeRequest(p, &q)
		want := fmt.Sprintf("a request map of %d fields: a declared length runs past the end of the frame", p[0]&0x0f)
		if re == nil || re.code != codeBadFrame || re.msg != want {
			t.Errorf("% x: %v; want bad_frame %q", p, re, want)
		}
	}
}

// TestOneByteAfterTheMap: a frame holds one msgpack value, so even a
// single byte after the request map is a bad frame.
func TestOneByteAfterTheMap(t *testing.T) {
	p := append(must(msgpack.Marshal(map[string]any{"op": "hello", "version": 1})), 0xc0)
	var q request
	re := decodeRequest(p, &q)
	if want := "1 bytes after the request map: a frame holds one msgpack value"; re == nil || re.code != codeBadFrame || re.msg != want {
		t.Fatalf("a request with one byte after it: %v; want bad_frame %q", re, want)
	}
}

// TestDeclaredLengthOneBytePastTheEnd gives fields whose declared length
// is one byte more than the frame has left: each is refused as a length
// running past the end, checked before the bytes are read, not as a value
// cut short. A negative length, which an int of 32 bits makes of a 32-bit
// length past 2^31-1, is refused too.
func TestDeclaredLengthOneBytePastTheEnd(t *testing.T) {
	const tooLong = "a declared length runs past the end of the frame"
	for _, tc := range []struct {
		key   string
		value []byte
	}{
		{"x", []byte{0xa2, 'a'}},               // fixstr of 2, 1 byte left
		{"x", []byte{0xd9, 0x03, 'a', 'b'}},    // str8 of 3, 2 left
		{"x", []byte{0xc4, 0x02, 0x00}},        // bin8 of 2, 1 left
		{"x", []byte{0x92, 0xc0}},              // fixarray of 2 items, 1 byte left
		{"reset_mask", []byte{0xc4, 0x02, 1}},  // bin8 of 2, 1 left
		{"seeds", []byte{0x92, 0xc0}},          // two seeds, 1 byte left
		{"seeds", []byte{0xdc, 0x00, 0x03, 1}}, // array16 of 3 seeds, 1 byte left
		{"actions", []byte{0x93, 1, 2}},        // three actions, 2 bytes left
	} {
		p := append([]byte{0x82, 0xa2, 'o', 'p', 0xa5, 'r', 'e', 's', 'e', 't', 0xa0 | byte(len(tc.key))}, tc.key...)
		p = append(p, tc.value...)
		var q request
		re := decodeRequest(p, &q)
		if want := fmt.Sprintf("field %q has the wrong type or value: %s", tc.key, tooLong); re == nil || re.code != codeBadRequest || re.msg != want {
			t.Errorf("%s % x: %v; want bad_request %q", tc.key, tc.value, re, want)
		}
	}
	if err := (&reader{b: make([]byte, 8)}).fits(-1); err != errTooLong {
		t.Errorf("a negative length: %v; want %v", err, errTooLong)
	}
}

// TestIntegersAreNotLengths: a map and an array have no 8-bit header, so
// the integer 0 where a request map, a seeds array or an actions array
// belongs is refused as the wrong type, not read as a header whose length
// is the next byte.
func TestIntegersAreNotLengths(t *testing.T) {
	var q request
	if re := decodeRequest([]byte{0x00, 0x00}, &q); re == nil || re.code != codeBadFrame || !strings.HasSuffix(re.msg, "want a map") {
		t.Errorf("the integer 0 for the request map: %v; want bad_frame, want a map", re)
	}
	for key, want := range map[string]string{
		"seeds":   "want an array of seeds (integers from 0 to 2^64-1, or nil)",
		"actions": "want a bin of uint16 or an array of integers",
	} {
		p := append([]byte{0x83, 0xa1, 'x', 0x00, 0xa0 | byte(len(key))}, key...)
		p = append(p, 0x00, 0xa2, 'o', 'p', 0xa4, 's', 't', 'e', 'p')
		re := decodeRequest(p, &q)
		if want := fmt.Sprintf("field %q has the wrong type or value: %s", key, want); re == nil || re.code != codeBadRequest || re.msg != want {
			t.Errorf("%s: 0: %v; want bad_request %q", key, re, want)
		}
	}
}

// TestExtensionIsNotABin: an ext 8 (code 0xc7, next to the bins' 0xc4 to
// 0xc6) where a bin belongs is refused as the wrong type.
func TestExtensionIsNotABin(t *testing.T) {
	for _, key := range []string{"reset_mask", "env_ids"} {
		p := append([]byte{0x82, 0xa2, 'o', 'p', 0xa4, 's', 't', 'e', 'p', 0xa0 | byte(len(key))}, key...)
		p = append(p, 0xc7, 0x08, 0x01, 0, 0, 0, 0, 0, 0, 0, 0) // ext 8 of 8 zero bytes, type 1
		var q request
		re := decodeRequest(p, &q)
		if want := fmt.Sprintf("field %q has the wrong type or value: want a bin", key); re == nil || re.code != codeBadRequest || re.msg != want {
			t.Errorf("%s as an ext 8: %v; want bad_request %q", key, re, want)
		}
	}
}

// TestFloatReadsLargeUint64: a uint64 past 2^63-1 where a number belongs
// (illegal_penalty, a float game option) reads as its value, not as the
// negative int64 of its bits.
func TestFloatReadsLargeUint64(t *testing.T) {
	for _, u := range []uint64{math.MaxUint64, 1 << 63} {
		b := binary.BigEndian.AppendUint64([]byte{0xcf}, u)
		if got, err := (&reader{b: b}).float(); err != nil || got != float64(u) {
			t.Errorf("uint64 %d as a float: %v, %v; want %v", u, got, err, float64(u))
		}
	}
	p := must(msgpack.Marshal(map[string]any{"op": "make", "illegal_penalty": uint64(math.MaxUint64)}))
	var q request
	if re := decodeRequest(p, &q); re != nil || q.penalty != math.MaxUint64 {
		t.Fatalf("illegal_penalty 2^64-1: %v, %v", q.penalty, re)
	}
}

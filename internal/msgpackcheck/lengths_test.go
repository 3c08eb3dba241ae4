package msgpackcheck

import (
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"
)

// TestLengths accepts every kind of msgpack value and refuses every
// strict prefix of one, which always lacks bytes.
func TestLengths(t *testing.T) {
	v := map[string]any{
		"ints":   []any{0, 1, -1, -33, 200, -200, 70000, -70000, int64(1 << 40), int64(-(1 << 40)), uint64(1) << 63},
		"floats": []any{float32(1.5), 2.5},
		"bools":  []any{true, false, nil},
		"str":    []string{"", "x", strings.Repeat("s", 40), strings.Repeat("m", 300), strings.Repeat("l", 70000)},
		"bin":    [][]byte{{}, {1}, make([]byte, 300), make([]byte, 70000)},
		"time":   []time.Time{time.Unix(1, 0), time.Unix(1, 5), time.Unix(1<<40, 5)}, // ext -1 of 4, 8 and 12 bytes
		"nested": map[string]any{"a": []any{[]any{}, map[string]any{}}, "big": make([]int, 20), "bigger": make([]int, 70000)},
	}
	b, err := msgpack.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := Lengths(b); err != nil {
		t.Fatalf("a valid encoding: %v", err)
	}
	for _, n := range []int{0, 1, len(b) / 3, len(b) / 2, len(b) - 1} {
		if err := Lengths(b[:n]); err == nil || !strings.Contains(err.Error(), "at byte") {
			t.Errorf("a prefix of %d of %d bytes: %v; want a refusal", n, len(b), err)
		}
	}
	if err := Lengths([]byte{0xc1}); err == nil || err.Error() != "invalid msgpack code 0xc1 at byte 0" {
		t.Errorf("the unused code 0xc1: %v", err)
	}
	huge := binary.BigEndian.AppendUint32([]byte{0xdb}, 1<<31)
	if err := Lengths(huge); err == nil || err.Error() != "the value at byte 0 declares more than the 0 bytes left" {
		t.Errorf("a str32 of 2^31 bytes: %v", err)
	}
}

// TestSizeRefusesEveryPrefix: a value short of even its last byte, alone,
// last in an array or last in a map, is refused, and Size never claims
// more bytes than it was given (Pick and Unseal slice by it).
func TestSizeRefusesEveryPrefix(t *testing.T) {
	var values []any
	for _, n := range []int{0, 1, 31, 32, 255, 256, 300} {
		values = append(values, strings.Repeat("s", n), make([]byte, n))
	}
	values = append(values, time.Unix(1, 0), time.Unix(1, 5), time.Unix(1<<40, 5), 70000, -70000, 2.5, float32(1.5))
	// A map16 (more than 15 pairs), and a map32 and an array32 of one item
	// each, written out: msgpack itself uses those only past 65535 items.
	big := map[string]int{}
	for i := range 20 {
		big[strings.Repeat("k", i)] = i
	}
	values = append(values, big,
		msgpack.RawMessage{0xdf, 0, 0, 0, 1, 0xa1, 'k', 0x07},
		msgpack.RawMessage{0xdd, 0, 0, 0, 1, 0xa1, 'k'})
	for _, v := range values {
		for _, wrapped := range []any{v, []any{1, v}, map[string]any{"k": v}} {
			b, err := msgpack.Marshal(wrapped)
			if err != nil {
				t.Fatal(err)
			}
			if n, err := Size(b); err != nil || n != len(b) {
				t.Fatalf("%T of %d bytes: Size %d, %v", v, len(b), n, err)
			}
			for k := range len(b) {
				if n, err := Size(b[:k]); err == nil || n > k {
					t.Fatalf("%T, %d of its %d bytes: Size %d, %v; want a refusal", v, k, len(b), n, err)
				}
			}
		}
	}
}

// A 32-bit length of 2^31 or more is refused on every platform (as an int
// it would be negative on a 32-bit one and pass the comparison).
func TestLengthsRefusesHuge32BitLengths(t *testing.T) {
	b := []byte{0x92, 0xc0, 0xdb, 0xff, 0xff, 0xff, 0xf0, 0xc0, 0xc0}
	if err := Lengths(b); err == nil || err.Error() != "the value at byte 2 declares more than the 2 bytes left" {
		t.Fatalf("a str32 of 2^32-16 bytes: %v", err)
	}
}

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

// TestEncoderCountsFields writes a reply with every kind of field and
// checks the frame's length, the map's count and every value.
func TestEncoderCountsFields(t *testing.T) {
	var en encoder
	for _, withID := range []bool{false, true} {
		q := &request{id: -70000}
		if withID {
			q.seen = 1 << fieldID
		}
		en.begin(true, q)
		en.str("s", "text")
		en.str("long", string(bytes.Repeat([]byte{'x'}, 300)))
		en.int("i", math.MinInt64)
		en.bin("b", []byte{1, 2, 3})
		en.bin("big", make([]byte, 70000))
		en.ints("shape", 4, 806)
		en.strs("names", []string{"a", "bc"})
		en.bool("no", false)
		en.float("f", -0.25)
		f := en.frame()
		if n := binary.BigEndian.Uint32(f); int(n) != len(f)-frameHeader {
			t.Fatalf("frame length %d for a %d-byte payload", n, len(f)-frameHeader)
		}
		m := decodeReply(t, f[frameHeader:])
		want := fmt.Sprint(map[string]any{
			"ok": true, "s": "text", "long": string(bytes.Repeat([]byte{'x'}, 300)), "i": int64(math.MinInt64),
			"b": []byte{1, 2, 3}, "big": make([]byte, 70000), "shape": []any{4, 806}, "names": []any{"a", "bc"},
			"no": false, "f": -0.25,
		})
		id, hasID := m["id"]
		delete(m, "id")
		if got := fmt.Sprint(m); got != want {
			t.Fatalf("reply decoded as\n%.300s\nwant\n%.300s", got, want)
		}
		if hasID != withID || withID && fmt.Sprint(id) != "-70000" {
			t.Fatalf("id %v (%v), want it %v", id, hasID, withID)
		}
	}
}

// TestFailureReply checks the one form of a failed reply.
func TestFailureReply(t *testing.T) {
	var en encoder
	en.failure(nil, fail(codeLimit, "at most %d %s", 3, "games"))
	m := decodeReply(t, en.payload())
	if fmt.Sprint(m) != "map[code:limit error:at most 3 games ok:false]" {
		t.Fatalf("failed reply %v", m)
	}
}

// TestAppendIntMatchesMsgpack compares appendInt with the msgpack
// package's shortest encoding at every boundary.
// TestAppendHeadersMatchMsgpack: the reply's strings, arrays and bins
// are written as msgpack's own encoder writes them, at every boundary
// between their forms (a 32-byte string is a str8, not a fixstr).
func TestAppendHeadersMatchMsgpack(t *testing.T) {
	sizes := []int{0, 1, 15, 16, 17, 31, 32, 33, 255, 256, 65535, 65536, 65537}
	for _, n := range sizes {
		s := strings.Repeat("x", n)
		var want bytes.Buffer
		enc := msgpack.NewEncoder(&want)
		if err := enc.EncodeString(s); err != nil {
			t.Fatal(err)
		}
		if got := appendStr(nil, s); !bytes.Equal(got, want.Bytes()) {
			t.Errorf("a string of %d bytes: % x..., want % x...", n, got[:min(len(got), 6)], want.Bytes()[:min(want.Len(), 6)])
		}
		want.Reset()
		if err := enc.EncodeArrayLen(n); err != nil {
			t.Fatal(err)
		}
		if got := appendArrayLen(nil, n); !bytes.Equal(got, want.Bytes()) {
			t.Errorf("an array of %d: % x, want % x", n, got, want.Bytes())
		}
		want.Reset()
		if err := enc.EncodeString("k"); err != nil {
			t.Fatal(err)
		}
		if err := enc.EncodeBytesLen(n); err != nil {
			t.Fatal(err)
		}
		var en encoder
		en.binHeader("k", n)
		if !bytes.Equal(en.buf, want.Bytes()) {
			t.Errorf("a bin of %d bytes: % x, want % x", n, en.buf, want.Bytes())
		}
	}
}

func TestAppendIntMatchesMsgpack(t *testing.T) {
	for _, v := range []int64{0, 1, 127, 128, 255, 256, 65535, 65536, math.MaxUint32, math.MaxUint32 + 1, math.MaxInt64,
		-1, -32, -33, -128, -129, -32768, -32769, math.MinInt32, math.MinInt32 - 1, math.MinInt64} {
		var want bytes.Buffer
		if err := msgpack.NewEncoder(&want).EncodeInt(v); err != nil {
			t.Fatal(err)
		}
		if got := appendInt(nil, v); !bytes.Equal(got, want.Bytes()) {
			t.Errorf("%d: % x, want % x", v, got, want.Bytes())
		}
		r := reader{b: appendInt(nil, v)}
		if got, err := r.int(); err != nil || got != v || r.left() != 0 {
			t.Errorf("%d read back as %d, %v", v, got, err)
		}
	}
}

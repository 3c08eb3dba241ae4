package msgpackcheck

import (
	"bytes"
	"runtime"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

func TestPick(t *testing.T) {
	type header struct {
		Kind   string `msgpack:"kind"`
		Format int    `msgpack:"format"`
	}
	big := bytes.Repeat([]byte{7}, 1<<20)
	b, err := msgpack.Marshal(map[string]any{"format": 3, "w": big, "kind": "spider-policy", "x": []int{1, 2}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := Pick(b, "kind", "format", "absent")
	if err != nil {
		t.Fatal(err)
	}
	if len(p) > 64 {
		t.Fatalf("Pick kept %d bytes, want only the two small fields", len(p))
	}
	var h header
	if err := Decode(p, &h); err != nil {
		t.Fatal(err)
	}
	if h != (header{"spider-policy", 3}) {
		t.Fatalf("got %+v", h)
	}
	// The last of a repeated key wins, as when msgpack decodes the whole.
	rep := []byte{0x82, 0xa1, 'a', 0x01, 0xa1, 'a', 0x02}
	p, err = Pick(rep, "a")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]int
	if err := msgpack.Unmarshal(p, &m); err != nil || len(m) != 1 || m["a"] != 2 {
		t.Fatalf("repeated key: %v %v", m, err)
	}
	// A bin key names a field for msgpack's struct decoding as a string key
	// does, so Pick takes it too: the last of either kind wins, as there.
	type ab struct {
		A int `msgpack:"a"`
	}
	mixed := []byte{0x82, 0xa1, 'a', 0x01, 0xc4, 0x01, 'a', 0x02}
	var whole, picked ab
	if err := msgpack.Unmarshal(mixed, &whole); err != nil || whole.A != 2 {
		t.Fatalf("msgpack itself: %+v %v; the test expects the bin key's 2", whole, err)
	}
	if p, err = Pick(mixed, "a"); err != nil || msgpack.Unmarshal(p, &picked) != nil || picked != whole {
		t.Fatalf("a bin key: picked %+v (%v), msgpack decodes %+v", picked, err, whole)
	}
	// Not a map, and a map that declares more than it holds, are refused.
	if _, err := Pick([]byte{0x93, 1, 2, 3}, "a"); err == nil {
		t.Fatal("an array was picked from")
	}
	if _, err := Pick([]byte{0x82, 0xa1, 'a', 0x01}, "a"); err == nil {
		t.Fatal("a truncated map was picked from")
	}
	// A key asked for twice is picked once.
	if p, err := Pick(rep, "a", "a"); err != nil || !bytes.Equal(p, []byte{0x81, 0xa1, 'a', 0x02}) {
		t.Fatalf("a key asked for twice: % x, %v", p, err)
	}
	// Fifteen keys at most: the picked map's length is a fixmap's.
	keys := make([]string, 16)
	for i := range keys {
		keys[i] = string(rune('a' + i))
	}
	if p, err := Pick(rep, keys[:15]...); err != nil || len(p) != 4 {
		t.Fatalf("15 keys: % x, %v", p, err)
	}
	if _, err := Pick(rep, keys...); err == nil || err.Error() != "msgpackcheck: Pick takes at most 15 keys, not 16" {
		t.Fatalf("16 keys: %v", err)
	}
}

func TestPickAllocatesOnlyWhatItKeeps(t *testing.T) {
	b, err := msgpack.Marshal(map[string]any{"kind": "k", "w": bytes.Repeat([]byte{1}, 8<<20)})
	if err != nil {
		t.Fatal(err)
	}
	var h struct {
		Kind string `msgpack:"kind"`
	}
	var before, after runtimeMem
	before.read()
	p, err := Pick(b, "kind")
	if err != nil {
		t.Fatal(err)
	}
	if err := msgpack.Unmarshal(p, &h); err != nil || h.Kind != "k" {
		t.Fatalf("%+v %v", h, err)
	}
	after.read()
	if got := after.total - before.total; got > 1<<20 {
		t.Fatalf("decoding one field through Pick allocated %d bytes of a file with an 8 MiB field", got)
	}
	before.read()
	// A fresh decoder: msgpack's pooled ones keep the buffer of an earlier
	// skip, and would not allocate it again.
	_ = msgpack.NewDecoder(bytes.NewReader(b)).Decode(&h)
	after.read()
	if got := after.total - before.total; got < 8<<20 {
		t.Fatalf("decoding the whole allocated only %d bytes: msgpack no longer copies a skipped field, and Pick is not needed", got)
	}
}

// runtimeMem reads the bytes allocated so far.
type runtimeMem struct{ total uint64 }

func (m *runtimeMem) read() {
	var s runtime.MemStats
	runtime.ReadMemStats(&s)
	m.total = s.TotalAlloc
}

// TestLeading cuts a map short at every length and checks that Leading
// returns exactly the entries that lie whole before the cut, as Pick
// returns them from the whole map.
func TestLeading(t *testing.T) {
	type header struct {
		Kind   string `msgpack:"kind"`
		Format int    `msgpack:"format"`
	}
	b := []byte{0x84} // kind, format, a large bin, then x
	for _, kv := range [][2]any{{"kind", "spider-policy"}, {"format", 3}, {"w", bytes.Repeat([]byte{7}, 300)}, {"x", 1}} {
		b = append(b, must(msgpack.Marshal(kv[0]))...)
		b = append(b, must(msgpack.Marshal(kv[1]))...)
	}
	kindEnd := 1 + len(must(msgpack.Marshal("kind"))) + len(must(msgpack.Marshal("spider-policy")))
	formatEnd := kindEnd + len(must(msgpack.Marshal("format"))) + 1
	for cut := 1; cut <= len(b); cut++ {
		p, err := Leading(b[:cut], "kind", "format")
		if err != nil {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		var h header
		if err := Decode(p, &h); err != nil {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		want := header{}
		if cut >= kindEnd {
			want.Kind = "spider-policy"
		}
		if cut >= formatEnd {
			want.Format = 3
		}
		if h != want {
			t.Fatalf("cut at %d: %+v, want %+v", cut, h, want)
		}
	}
	// A map of 2^32-1 pairs in a few bytes costs what the bytes hold.
	huge := append([]byte{0xdf, 0xff, 0xff, 0xff, 0xff}, b[1:kindEnd]...)
	if p, err := Leading(huge, "kind"); err != nil || !bytes.Equal(p, append([]byte{0x81}, b[1:kindEnd]...)) {
		t.Fatalf("a huge map cut short: %x %v", p, err)
	}
	for _, bad := range [][]byte{nil, {0x93, 1, 2, 3}, {0xde, 0x00}} {
		if _, err := Leading(bad, "kind"); err == nil {
			t.Errorf("Leading(%x) took it for a map", bad)
		}
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// TestMapLen reads each map header's count, capped at the bytes there are.
func TestMapLen(t *testing.T) {
	for _, tc := range []struct {
		b           []byte
		pairs, hdr  int
		notAMapWant bool
	}{
		{[]byte{0x83, 0, 0, 0, 0, 0, 0}, 3, 1, false},
		{append([]byte{0xde, 0x01, 0x08}, make([]byte, 600)...), 264, 3, false},
		{[]byte{0xdf, 0xff, 0xff, 0xff, 0xff, 0, 0}, 7, 5, false},
		{[]byte{0xde, 0x01}, 0, 0, true},
		{[]byte{0x93, 1, 2, 3}, 0, 0, true},
		{nil, 0, 0, true},
	} {
		pairs, hdr, err := MapLen(tc.b)
		if (err != nil) != tc.notAMapWant || pairs != tc.pairs || hdr != tc.hdr {
			t.Errorf("MapLen(% x...) = %d, %d, %v; want %d, %d (error %v)", tc.b[:min(len(tc.b), 5)], pairs, hdr, err, tc.pairs, tc.hdr, tc.notAMapWant)
		}
	}
}

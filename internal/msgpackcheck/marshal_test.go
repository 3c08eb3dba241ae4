package msgpackcheck

import (
	"bytes"
	"runtime"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// TestMarshalIsMsgpacks: Marshal and MarshalSealed write the bytes
// msgpack.Marshal and Seal do, whatever the size guessed, and with a good
// guess allocate one buffer of about that size, not the doubling buffers
// (about twice the encoding) msgpack.Marshal leaves behind.
func TestMarshalIsMsgpacks(t *testing.T) {
	v := struct {
		Name string    `msgpack:"name"`
		W    []float32 `msgpack:"w"`
	}{"net", make([]float32, 1<<20)}
	want, err := msgpack.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{0, 100, len(want), 2 * len(want)} {
		got, err := Marshal(v, size)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("Marshal with size %d: %v; the bytes differ from msgpack.Marshal's", size, err)
		}
		sealed, err := MarshalSealed(v, size)
		if err != nil || !bytes.Equal(sealed, Seal(want)) {
			t.Fatalf("MarshalSealed with size %d: %v; the bytes differ from Seal's", size, err)
		}
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if _, err := MarshalSealed(v, len(want)); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > uint64(len(want))*11/10 {
		t.Errorf("MarshalSealed of %d bytes with their size allocated %d", len(want), got)
	}
}

package alloccount

import "testing"

var sink []byte

func TestBytesCountsAnAllocation(t *testing.T) {
	const n = 1 << 20
	for name, count := range map[string]func(func()) uint64{"Bytes": Bytes, "BytesFast": BytesFast} {
		got := count(func() { sink = make([]byte, n) })
		if got < n || got > 2*n {
			t.Errorf("%s: %d bytes for a 1 MiB allocation", name, got)
		}
		if got := count(func() {}); got > 64<<10 {
			t.Errorf("%s: %d bytes for nothing", name, got)
		}
	}
}

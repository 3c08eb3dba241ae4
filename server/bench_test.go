package server

import (
	"fmt"
	"testing"
)

// BenchmarkStepReply times a step reply for a batch of 4096 games, from
// the batch's buffers through the encoder to the connection's writer
// (whose socket discards), for compact observations with byte masks and
// with bit masks, and for float32 observations with bit masks. The
// arrays go to the writer by reference, so what it times is the encoding
// and, with bit masks, packing the masks.
func BenchmarkStepReply(b *testing.B) {
	for _, mk := range []map[string]any{
		{"op": "make", "n": 4096},
		{"op": "make", "n": 4096, "mask": "bits"},
		{"op": "make", "n": 4096, "obs": "float32", "mask": "bits"},
	} {
		obs, mask := "compact", "bytes"
		if v, ok := mk["obs"].(string); ok {
			obs = v
		}
		if v, ok := mk["mask"].(string); ok {
			mask = v
		}
		b.Run(fmt.Sprintf("obs=%s/mask=%s", obs, mask), func(b *testing.B) {
			cn := testConn(b, Config{}, mk)
			cn.call(b, map[string]any{"op": "reset", "seed": 1})
			q := &cn.req
			b.ReportAllocs()
			for b.Loop() {
				cn.stepReply(q)
				if err := cn.en.writeTo(cn.w); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

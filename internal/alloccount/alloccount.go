// Package alloccount measures how many bytes a function allocates, for the
// tests that pin a reader's memory on hostile input.
package alloccount

import (
	"runtime"
	"runtime/metrics"
)

// Bytes returns the bytes f allocates (TotalAlloc's growth: every
// allocation counts, freed or not).
func Bytes(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// BytesFast is Bytes for fuzz targets, which call it for every input: it
// reads the heap's cumulative allocations through runtime/metrics, which
// unlike ReadMemStats does not stop the world (it may miss what sits in
// per-processor caches, a few kilobytes).
func BytesFast(f func()) uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	before := s[0].Value.Uint64()
	f()
	metrics.Read(s)
	return s[0].Value.Uint64() - before
}

// Package alloccount measures what a function allocates: bytes, for the
// tests that pin a reader's memory on hostile input, and allocations, for
// the tests that pin the hot paths at none.
package alloccount

import (
	"runtime"
	"runtime/metrics"
)

// Bytes returns the bytes f allocates (TotalAlloc's growth: every
// allocation counts, freed or not).
func Bytes(f func()) uint64 {
	before, after := around(f)
	return after.TotalAlloc - before.TotalAlloc
}

// Mallocs returns the allocations the process made while f ran. It counts
// every one, where testing.AllocsPerRun averages them over its runs and
// rounds an allocation rarer than once a run down to 0.
func Mallocs(f func()) uint64 {
	before, after := around(f)
	return after.Mallocs - before.Mallocs
}

// around returns the memory statistics from just before and just after f.
func around(f func()) (before, after runtime.MemStats) {
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return before, after
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

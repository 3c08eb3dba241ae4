package env

// prefetch asks the CPU to bring the cache line at addr into cache without
// waiting for it. The batch stepper calls it for the games a few places
// ahead, so their cache misses overlap the current game's work. It never
// faults, whatever addr is.
//
//go:noescape
func prefetch(addr uintptr)

//go:build race

package env_test

// raceEnabled is set when the tests run under the race detector, which
// slows the allocation tests' long loops some tenfold; those run without it.
const raceEnabled = true

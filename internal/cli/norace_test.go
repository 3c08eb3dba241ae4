//go:build !race

package cli

// raceEnabled is set when the tests run under the race detector.
const raceEnabled = false

//go:build race

package cli

// raceEnabled is set when the tests run under the race detector, whose
// shadow memory makes a process's RSS say nothing about the program's.
const raceEnabled = true

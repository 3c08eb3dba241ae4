//go:build race

package server

// raceEnabled is set when the tests run under the race detector, whose
// shadow memory makes the process's RSS say nothing about the server's.
const raceEnabled = true

//go:build race

package train

// raceSlowdown is how much slower the race detector makes a search
// teacher's moves, for the bounds of the cancellation tests.
const raceSlowdown = 8

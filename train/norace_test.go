//go:build !race

package train

const raceSlowdown = 1

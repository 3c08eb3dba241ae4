//go:build !unix

package atomicfile

// processAlive cannot check a process here: temporaries are then removed
// by age alone (StaleAge).
func processAlive(pid int) (alive, known bool) { return false, false }

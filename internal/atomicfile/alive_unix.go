//go:build unix

package atomicfile

import (
	"errors"
	"syscall"
)

// processAlive asks the kernel whether process pid exists (signal 0 checks
// without sending anything): it does if the call succeeds or is not
// permitted (another user's process), and is gone on ESRCH. A zombie
// counts as alive, and a reused id keeps a dead writer's temporary: both
// err on the side of keeping.
func processAlive(pid int) (alive, known bool) {
	err := syscall.Kill(pid, 0)
	switch {
	case err == nil || errors.Is(err, syscall.EPERM):
		return true, true
	case errors.Is(err, syscall.ESRCH):
		return false, true
	}
	return false, false
}

//go:build unix

package otheruser

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// UID is the user the process runs as: nobody's, on Debian and most
// systems.
const UID = 65534

// Python runs script in the system's python3 as user UID, with args, and
// returns its standard input and output; it is killed when the test ends.
// It skips the test where the process cannot run as another user (not
// root, or no /usr/bin/python3: one under root's home, from pyenv, is not
// the other user's to run).
func Python(t testing.TB, script string, args ...string) (io.WriteCloser, *bufio.Reader) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root, to run as another user")
	}
	python := "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		t.Skip("needs /usr/bin/python3:", err)
	}
	cmd := exec.Command(python, append([]string{"-c", script}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: UID, Gid: UID}}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Skipf("cannot run python3 as user %d: %v", UID, err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return in, bufio.NewReader(out)
}

// ReadLine returns the next line r holds, without its newline, failing the
// test if there is none.
func ReadLine(t testing.TB, r *bufio.Reader) string {
	t.Helper()
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("the other user's process: %q, %v", line, err)
	}
	return strings.TrimSuffix(line, "\n")
}

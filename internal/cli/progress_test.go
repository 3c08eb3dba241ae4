package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestIsTerminal(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if isTerminal(f) || isTerminal(&bytes.Buffer{}) {
		t.Error("a file or a buffer taken for a terminal")
	}
	if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
		defer tty.Close()
		if !isTerminal(tty) {
			t.Error("/dev/tty not taken for a terminal")
		}
	}
}

// TestProgressLines checks both forms: a terminal's line redrawn with "\r"
// and finished by end, and plain lines elsewhere, the last always due.
func TestProgressLines(t *testing.T) {
	var b bytes.Buffer
	p := newProgress(&b)
	if p.due(1, 3) {
		t.Error("a report right after the start is due")
	}
	if !p.due(3, 3) {
		t.Error("the last report is not due")
	}
	p.write("job 3/3")
	p.end()
	if got := b.String(); !strings.HasPrefix(got, "job 3/3, ") || strings.Count(got, "\n") != 1 || strings.Contains(got, "\r") {
		t.Errorf("plain progress %q; want one line", got)
	}
	b.Reset()
	p = newProgress(&b)
	p.tty = true
	p.write("job 3/3")
	if got := b.String(); !strings.HasPrefix(got, "\rjob 3/3, ") || strings.Contains(got, "\n") {
		t.Errorf("terminal progress %q; want the line redrawn, not ended", got)
	}
	p.end()
	if !strings.HasSuffix(b.String(), "\n") {
		t.Errorf("end left the line open: %q", b.String())
	}
}

// TestProgressEndsALineOnce: a second end, with nothing redrawn since
// the first (a deferred end after an explicit one), adds no empty line.
func TestProgressEndsALineOnce(t *testing.T) {
	var b bytes.Buffer
	p := ttyProgress(&b, "job 1/2")
	p.end()
	p.end()
	if got := b.String(); strings.Count(got, "\n") != 1 || !strings.HasSuffix(got, "\n") {
		t.Fatalf("terminal progress %q after two ends; want its line ended once", got)
	}
	p.write("job 2/2")
	p.end()
	if got := b.String(); strings.Count(got, "\n") != 2 {
		t.Fatalf("terminal progress %q; want a line redrawn after an end ended again", got)
	}
}

// TestProgressCoversALongerLine: on a terminal a shorter line is padded
// over the longer one before it, so that no end of it stays on screen
// ("2m0ss" after "1m59s").
func TestProgressCoversALongerLine(t *testing.T) {
	var b bytes.Buffer
	p := ttyProgress(&b, "eval 1000/1000 deals")
	b.Reset()
	p.write("eval 9/9")
	long := len("\reval 1000/1000 deals, 0s")
	if got := b.String(); !strings.HasPrefix(got, "\reval 9/9, 0s") || len(got) != long || strings.TrimRight(got, " ") != "\reval 9/9, 0s" {
		t.Errorf("a shorter line after a longer one: %q; want it padded with spaces to %d bytes", got, long)
	}
}

// ttyProgress is progress on b taken for a terminal, with line drawn.
func ttyProgress(b *bytes.Buffer, line string) *progress {
	p := newProgress(b)
	p.tty = true
	p.write(line)
	return p
}

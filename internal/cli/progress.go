package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
	"unicode/utf8"
)

// isTerminal reports whether w is a terminal (a character device), where
// progress may redraw one line in place with "\r". A file or a pipe gets
// whole lines instead, so a log holds no carriage returns.
func isTerminal(w io.Writer) bool {
	if s, ok := w.(*stickyWriter); ok {
		w = s.w // the writer it keeps the errors of
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// progress reports a long job on w: on a terminal one line redrawn at most
// every 200 ms; elsewhere a plain line at most every 10 s, so a log of a
// long run stays short. The last report (done == total) is always due.
type progress struct {
	w     io.Writer
	tty   bool
	start time.Time
	last  time.Time
	drawn bool
	width int // runes of the line drawn last on a terminal
}

func newProgress(w io.Writer) *progress {
	now := time.Now()
	return &progress{w: w, tty: isTerminal(w), start: now, last: now}
}

// progressEvery is how often a plain progress line is written, where it
// is not redrawn on a terminal; a variable for the tests.
var progressEvery = 10 * time.Second

// due reports whether the report of done out of total should be written
// now, and if so counts it as written.
func (p *progress) due(done, total int) bool {
	now := time.Now()
	every := progressEvery
	if p.tty {
		every = 200 * time.Millisecond
	}
	if now.Sub(p.last) < every && done != total {
		return false
	}
	p.last = now
	return true
}

// write writes line, followed by the time since the start: redrawn in
// place on a terminal, a line of its own elsewhere.
func (p *progress) write(line string) {
	line += ", " + time.Since(p.start).Round(time.Second).String()
	if p.tty {
		// A shorter line is padded over the longer one before it, which
		// "\r" alone leaves the end of on screen ("2m0ss" after "1m59s").
		n := utf8.RuneCountInString(line)
		fmt.Fprint(p.w, "\r"+line+strings.Repeat(" ", max(0, p.width-n)))
		p.drawn, p.width = true, n
		return
	}
	fmt.Fprintln(p.w, line)
}

// end finishes the terminal's redrawn line.
func (p *progress) end() {
	if p.drawn {
		fmt.Fprintln(p.w)
		p.drawn, p.width = false, 0
	}
}

// heartbeat writes line() and the time since the call to w every
// progressEvery, in plain lines, until the stop it returns is called: a
// step of long work that reports nothing itself (an oracle game of a
// million-node budget ran over a minute) does not leave stderr silent.
// The stop returns once no line can be written any more, so the caller
// may write to w again.
func heartbeat(w io.Writer, line func() string) (stop func()) {
	start := time.Now()
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(max(progressEvery, time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				fmt.Fprintf(w, "%s, %s\n", line(), time.Since(start).Round(time.Second))
			}
		}
	}()
	return func() {
		close(quit)
		<-done
	}
}

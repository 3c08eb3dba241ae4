// Package printable makes text from outside the program (a record's player
// name, a remote agent's name or error, a checkpoint's teacher) safe to
// print: it cannot move a terminal's cursor or change its state.
package printable

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Is reports whether s is valid UTF-8 made of printable characters
// (strconv.IsPrint: letters, marks, numbers, punctuation, symbols and the
// ASCII space).
func Is(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !strconv.IsPrint(r) {
			return false
		}
	}
	return true
}

// Quote returns s itself if Is(s), else s quoted with Go's escapes, so
// that an escape sequence shows as \x1b[... instead of reaching the
// terminal.
func Quote(s string) string {
	if Is(s) {
		return s
	}
	return strconv.Quote(s)
}

// Escape returns s with every character that is not printable, but for
// newlines and tabs, written as Go escapes it (\x1b, \u200b), and every
// byte that is not UTF-8 as \xNN: for text made of parts from outside,
// such as an error naming a file, which Quote would put in quotes whole.
func Escape(s string) string {
	if Is(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n' || r == '\t' || strconv.IsPrint(r):
			b.WriteString(s[i : i+n])
		default:
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		}
		i += n
	}
	return b.String()
}

// Cut returns s cut to at most limit bytes, on a rune boundary, and
// ending in "..." when it was cut and limit leaves room for it (a limit of
// 0 to 2 cuts without it; a negative limit counts as 0).
func Cut(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	if limit < len("...") {
		return s[:runeStart(s, max(limit, 0))]
	}
	return s[:runeStart(s, limit-len("..."))] + "..."
}

// runeStart returns the largest n <= at at which s can be cut between
// runes.
func runeStart(s string, at int) int {
	for at > 0 && !utf8.RuneStart(s[at]) {
		at--
	}
	return at
}

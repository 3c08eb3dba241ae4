package printable

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestQuoteAndCut(t *testing.T) {
	for in, want := range map[string]string{
		"greedy":           "greedy",
		"évité 10":         "évité 10",
		"evil\x1b[2J\nrow": `"evil\x1b[2J\nrow"`,
		"bad \xff":         `"bad \xff"`,
		"tab\there":        `"tab\there"`,
		// Of the spaces only the ASCII one is printable; a letter stays a
		// letter inside the quotes.
		"no\u00a0break": `"no\u00a0break"`,
		"évité\n":       `"évité\n"`,
	} {
		if got := Quote(in); got != want {
			t.Errorf("Quote(%q) = %s, want %s", in, got, want)
		}
	}
	if got := Cut("short", 10); got != "short" {
		t.Errorf("Cut of a short text: %q", got)
	}
	if got := Cut("exact", 5); got != "exact" {
		t.Errorf("Cut of a text of exactly max bytes: %q", got)
	}
	// Too little room for "...": the text is cut without it, never
	// panics, and a negative limit keeps nothing.
	for limit, want := range map[int]string{2: "ab", 1: "a", 0: "", -4: ""} {
		if got := Cut("abcdef", limit); got != want {
			t.Errorf("Cut(abcdef, %d) = %q, want %q", limit, got, want)
		}
	}
	if got := Cut("éa", 1); got != "" {
		t.Errorf("Cut(éa, 1) = %q: half a character", got)
	}
	// No character starts before the cut: nothing of the text is kept.
	if got := Cut(strings.Repeat("\x80", 10), 5); got != "..." {
		t.Errorf("Cut of continuation bytes: %q", got)
	}
	long := strings.Repeat("é", 100) // 200 bytes
	got := Cut(long, 64)
	if len(got) > 64 || !strings.HasSuffix(got, "...") || !utf8.ValidString(got) {
		t.Errorf("Cut(%d bytes of é, 64) = %q (%d bytes)", len(long), got, len(got))
	}
}

func TestEscape(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain: no such file", "plain: no such file"},
		{"two\nlines\tand a tab", "two\nlines\tand a tab"},
		{"open /tmp/\x1b[31mRED\x1b[0m\a: no such file", `open /tmp/\x1b[31mRED\x1b[0m\a: no such file`},
		{"bad \xff byte, zero\u200bwidth", `bad \xff byte, zero\u200bwidth`},
		{"é ü 日本", "é ü 日本"},
	} {
		if got := Escape(tc.in); got != tc.want {
			t.Errorf("Escape(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

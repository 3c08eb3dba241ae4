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
	} {
		if got := Quote(in); got != want {
			t.Errorf("Quote(%q) = %s, want %s", in, got, want)
		}
	}
	if got := Cut("short", 10); got != "short" {
		t.Errorf("Cut of a short text: %q", got)
	}
	long := strings.Repeat("é", 100) // 200 bytes
	got := Cut(long, 64)
	if len(got) > 64 || !strings.HasSuffix(got, "...") || !utf8.ValidString(got) {
		t.Errorf("Cut(%d bytes of é, 64) = %q (%d bytes)", len(long), got, len(got))
	}
}

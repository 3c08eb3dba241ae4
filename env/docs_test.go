package env_test

import (
	"os"
	"strings"
	"testing"

	"github.com/spiderenv/spider/env"
)

// TestDocsNameEveryOption: the docs that list the game options (besides
// PROTOCOL.md's table, which the server's tests check) name each one, so
// that an option added to Options is not missing from them.
func TestDocsNameEveryOption(t *testing.T) {
	for _, doc := range []struct{ file, from, to string }{
		{"../docs/design.md", "## One configuration type", "\n\n`env.NewRules`"},
		{"../docs/results.md", "| `rules`, `suits`", "\n"},
		{"../python/README.md", "The game is a `SpiderConfig`", "\n\n"},
	} {
		b, err := os.ReadFile(doc.file)
		if err != nil {
			t.Skipf("%s: %v", doc.file, err)
		}
		text := string(b)
		i := strings.Index(text, doc.from)
		if i < 0 {
			t.Errorf("%s has no %q", doc.file, doc.from)
			continue
		}
		text = text[i:]
		if j := strings.Index(text[len(doc.from):], doc.to); j >= 0 {
			text = text[:len(doc.from)+j]
		}
		for _, f := range env.OptionFields() {
			if !strings.Contains(text, "`"+f.Key+"`") {
				t.Errorf("%s, from %q: no `%s`", doc.file, doc.from, f.Key)
			}
		}
	}
}

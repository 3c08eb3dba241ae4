package server

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/spiderenv/spider/env"
)

// TestProtocolDocumentsEveryOption reads PROTOCOL.md: every game option
// needs a row in make's game option table, every request field the server
// reads a mention, and every op a heading.
func TestProtocolDocumentsEveryOption(t *testing.T) {
	b, err := os.ReadFile("../PROTOCOL.md")
	if err != nil {
		t.Skipf("PROTOCOL.md: %v", err)
	}
	doc := string(b)
	i := strings.Index(doc, "| game option |")
	if i < 0 {
		t.Fatal("PROTOCOL.md has no game option table")
	}
	table := doc[i:]
	table = table[:strings.Index(table, "\n\n")]
	for _, f := range env.OptionFields() {
		if !strings.Contains(table, "| `"+f.Key+"` |") {
			t.Errorf("PROTOCOL.md's game option table has no row for %q", f.Key)
		}
	}
	// The examples that show every option (make's reply, a remote agent's
	// hello) show each one.
	for _, anchor := range []string{"<- {\"ok\": true, \"n\": 64,", "\"game\": {\"rules\":"} {
		i := strings.Index(doc, anchor)
		if i < 0 {
			t.Fatalf("PROTOCOL.md has no example starting %s", anchor)
		}
		example := doc[i:]
		example = example[:strings.Index(example, "```")]
		for _, f := range env.OptionFields() {
			if !strings.Contains(example, `"`+f.Key+`":`) {
				t.Errorf("PROTOCOL.md's example %s... does not show %q", anchor, f.Key)
			}
		}
	}
	// Nor a row for an option the server does not take.
	rows := regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\|").FindAllStringSubmatch(table, -1)
	if len(rows) != len(env.OptionFields()) {
		t.Errorf("PROTOCOL.md's game option table has %d rows for %d game options", len(rows), len(env.OptionFields()))
	}
	// In env.Options' order, the order hello lists them in.
	for i, f := range env.OptionFields() {
		if i < len(rows) && rows[i][1] != f.Key {
			t.Errorf("PROTOCOL.md's game option table has %q in row %d, where hello lists %q", rows[i][1], i+1, f.Key)
		}
	}
	for _, row := range rows {
		if _, ok := env.LookupOption(row[1]); !ok {
			t.Errorf("PROTOCOL.md's game option table has a row for %q, which is not a game option", row[1])
		}
	}
	for f := range numFields {
		if !strings.Contains(doc, "`"+requestFields[f].key+"`") && !strings.Contains(doc, `"`+requestFields[f].key+`"`) {
			t.Errorf("PROTOCOL.md never mentions the request field %q", requestFields[f].key)
		}
	}
	headings := strings.Join(regexp.MustCompile(`(?m)^### .*$`).FindAllString(doc, -1), "\n")
	for _, op := range operations {
		if !regexp.MustCompile(`\b` + op.name + `\b`).MatchString(headings) {
			t.Errorf("PROTOCOL.md has no heading for the op %q", op.name)
		}
	}
}

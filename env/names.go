package env

import (
	"fmt"
	"strings"

	"github.com/spiderenv/spider/internal/printable"
)

// names holds an enumerated type's names, value i named list[i]: the one
// place its String, Parse and text forms are written.
type names[T ~uint8] struct {
	typ  string // the Go type, for String of a value without a name
	what string // what errors call it: "rule set"
	list []string
}

// name returns v's name, or typ(v) for a value without one.
func (n names[T]) name(v T) string {
	if int(v) >= len(n.list) {
		return fmt.Sprintf("%s(%d)", n.typ, uint8(v))
	}
	return n.list[v]
}

// parse finds s among the names (case-insensitive).
func (n names[T]) parse(s string) (T, error) {
	for i, name := range n.list {
		if strings.EqualFold(s, name) {
			return T(i), nil
		}
	}
	// Cut, so that the message of a hostile name is no longer than a
	// line: %q alone could make it four times the name.
	return 0, fmt.Errorf("env: unknown %s %q (want %s)", n.what, printable.Cut(s, 40), strings.Join(n.list, " or "))
}

// text is v's MarshalText: its name, or an error for a value without one.
func (n names[T]) text(v T) ([]byte, error) {
	if int(v) >= len(n.list) {
		return nil, fmt.Errorf("env: unknown %s %d", n.what, uint8(v))
	}
	return []byte(n.list[v]), nil
}

// setText is UnmarshalText: *dst becomes the value named text, or stays.
func (n names[T]) setText(dst *T, text []byte) error {
	v, err := n.parse(string(text))
	if err == nil {
		*dst = v
	}
	return err
}

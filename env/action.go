package env

import (
	"fmt"
	"strconv"
	"strings"
)

// Action is one id in the fixed discrete action space. A move of count
// cards from column src to column dst (0-based, src != dst) has the id
// ((src*9 + d)*12 + count-1), where d is dst with src left out (dst if
// dst < src, else dst-1); the deal has the last id, Deal.
//
// Every legal move has exactly one id: the count names how many cards go,
// which matters only for an empty destination; onto a card, only the one
// count whose bottom card is one rank lower can be legal.
type Action uint16

// The size of the action space and its last id.
const (
	NumActions        = NumColumns*(NumColumns-1)*MaxMove + 1 // 1081
	Deal       Action = NumActions - 1
)

// MoveAction returns the id of moving count cards from column src to
// column dst (0-based). It panics if an argument is out of range, which is
// a programming error; ParseAction checks user input.
func MoveAction(src, dst, count int) Action {
	if src < 0 || src >= NumColumns || dst < 0 || dst >= NumColumns || src == dst || count < 1 || count > MaxMove {
		panic(fmt.Sprintf("env: MoveAction(%d, %d, %d) out of range", src, dst, count))
	}
	d := dst
	if dst > src {
		d--
	}
	return Action((src*(NumColumns-1)+d)*MaxMove + count - 1)
}

// Valid reports whether a is inside the action space.
func (a Action) Valid() bool { return a < NumActions }

// IsDeal reports whether a is the deal.
func (a Action) IsDeal() bool { return a == Deal }

// Move returns the source column, destination column (0-based) and card
// count of a move. It panics if a is the deal or out of range.
func (a Action) Move() (src, dst, count int) {
	if a >= Deal {
		panic(fmt.Sprintf("env: Action(%d).Move: not a move", uint16(a)))
	}
	count = int(a)%MaxMove + 1
	pair := int(a) / MaxMove
	src = pair / (NumColumns - 1)
	dst = pair % (NumColumns - 1)
	if dst >= src {
		dst++
	}
	return src, dst, count
}

// String returns the action in the project's notation: "3>7x4" moves four
// cards from column 3 to column 7 (columns 1-10 as a player counts them),
// and "deal" deals from the stock.
func (a Action) String() string {
	switch {
	case a == Deal:
		return "deal"
	case a > Deal:
		return fmt.Sprintf("Action(%d)", uint16(a))
	}
	src, dst, n := a.Move()
	return strconv.Itoa(src+1) + ">" + strconv.Itoa(dst+1) + "x" + strconv.Itoa(n)
}

// ParseAction reads an action in the notation of Action.String: "deal"
// (or "d", as a player types it) or "S>DxN" with columns 1-10 and 1 <= N
// <= 12, each a decimal number (strconv.Atoi's: a sign or leading zeros
// pass). Case and spaces around the parts are ignored; "S>D" alone is
// refused because the count must be said.
func ParseAction(s string) (Action, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	if t == "deal" || t == "d" {
		return Deal, nil
	}
	src, rest, ok := strings.Cut(t, ">")
	if !ok {
		return 0, fmt.Errorf("env: action %q: want \"deal\" or source>destination x count, like \"3>7x4\"", s)
	}
	dst, cnt, ok := strings.Cut(rest, "x")
	if !ok {
		return 0, fmt.Errorf("env: action %q: missing the card count, like \"3>7x4\"", s)
	}
	from, err := parseNumber(src, 1, NumColumns)
	if err != nil {
		return 0, fmt.Errorf("env: action %q: source column: %v", s, err)
	}
	to, err := parseNumber(dst, 1, NumColumns)
	if err != nil {
		return 0, fmt.Errorf("env: action %q: destination column: %v", s, err)
	}
	n, err := parseCount(cnt)
	if err != nil {
		return 0, fmt.Errorf("env: action %q: %v", s, err)
	}
	if from == to {
		return 0, fmt.Errorf("env: action %q: source and destination are the same column", s)
	}
	return MoveAction(from-1, to-1, n), nil
}

// parseCount reads the card count after the "x", saying which rule a bad
// one breaks: a player who types 13 or 0 learns the limit, not just that
// the text was wrong.
func parseCount(s string) (int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("the card count after \"x\" is missing, like \"3>7x4\"")
	}
	n, err := strconv.Atoi(s)
	switch {
	case err != nil:
		return 0, fmt.Errorf("card count %q is not a number from 1 to %d", s, MaxMove)
	case n < 1:
		return 0, fmt.Errorf("card count %d: a move takes at least one card", n)
	case n > MaxMove:
		return 0, fmt.Errorf("card count %d: at most %d cards move at once (13 in suit are a completed run, which leaves the tableau by itself)", n, MaxMove)
	}
	return n, nil
}

// parseNumber reads the decimal integer s, spaces around it allowed, and
// requires lo <= n <= hi.
func parseNumber(s string, lo, hi int) (int, error) {
	s = strings.TrimSpace(s)
	n, err := strconv.Atoi(s)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("%q is not a number from %d to %d", s, lo, hi)
	}
	return n, nil
}

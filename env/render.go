package env

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// Render returns the board as a player sees it: one line of status (the
// stock's cards and DealsLeft among it), the column numbers, then the
// columns top to bottom of the screen, face-down cards as "##" and face-up
// ones in two letters ("Ks", "Th"); an empty column shows "." in its first
// row. Every column is four characters wide, its number right-aligned over
// its cards. Hidden cards never appear.
func (s *State) Render() string {
	var b strings.Builder
	s.AppendRender(&b)
	return b.String()
}

// AppendRender writes the rendering of s to b.
func (s *State) AppendRender(b *strings.Builder) {
	deals, plural := s.DealsLeft(), "s"
	if deals == 1 {
		plural = ""
	}
	fmt.Fprintf(b, "%s %d-suit  score %d  moves %d  stock %d (%d deal%s)  runs %d/%d",
		s.rules.ruleSet, s.rules.suits, s.score, s.steps, s.StockLeft(), deals, plural, s.runs, NumRuns)
	switch {
	case s.status != Playing:
		fmt.Fprintf(b, "  %s", s.status)
	case s.Truncated():
		b.WriteString("  truncated")
	}
	b.WriteByte('\n')
	rows := 1
	for c := range NumColumns {
		// The same four characters as a card's cell below: two spaces,
		// then the number in the card's two.
		b.WriteString("  ")
		if c+1 < 10 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.Itoa(c + 1))
		rows = max(rows, int(s.height[c]))
	}
	b.WriteByte('\n')
	var line [4 * NumColumns]byte
	for i := range rows {
		n := 0
		for c := range NumColumns {
			cell := [2]byte{' ', ' '}
			switch h := int(s.height[c]); {
			case h == 0 && i == 0:
				cell[1] = '.'
			case i >= h:
			case i < int(s.down[c]):
				cell = [2]byte{'#', '#'}
			default:
				card := s.cols[c][i]
				cell = [2]byte{rankLetters[card.Rank()], card.Suit().Letter()}
			}
			line[n], line[n+1], line[n+2], line[n+3] = ' ', ' ', cell[0], cell[1]
			n += 4
		}
		b.Write(bytes.TrimRight(line[:n], " "))
		b.WriteByte('\n')
	}
}

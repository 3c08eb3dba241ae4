package env

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// MarshalText writes the whole position, hidden cards included, in the text
// form ParseState reads: one line per column ("3: 9h 2s | Ks Qs", face-down
// cards before the bar, bottom first), then the stock in deal order, the
// completed runs by suit letter, and the counters. It is for tests, bug
// reports and puzzles; it reveals what a player cannot see, so it never
// goes into an observation.
func (s State) MarshalText() ([]byte, error) {
	var b strings.Builder
	for c := range NumColumns {
		fmt.Fprintf(&b, "%d:", c+1)
		for i := range int(s.height[c]) {
			if i == int(s.down[c]) {
				b.WriteString(" |")
			}
			b.WriteString(" " + s.cols[c][i].String())
		}
		if s.height[c] == 0 {
			b.WriteString(" |")
		}
		b.WriteByte('\n')
	}
	b.WriteString("stock:")
	for _, card := range s.stock[s.dealt:] {
		b.WriteString(" " + card.String())
	}
	b.WriteString("\nruns:")
	for su := range NumSuits {
		for range s.suitRuns[su] {
			b.WriteString(" " + string(Suit(su).Letter()))
		}
	}
	fmt.Fprintf(&b, "\nscore: %d\nsteps: %d\nelapsed: %v\n", s.score, s.steps, s.elapsed)
	return []byte(b.String()), nil
}

// ParseState reads a position written by MarshalText, to be played under
// r. It checks the text, not the deck: a position may hold fewer cards than
// a whole deck, or more copies of one (rule tests use such positions), but
// never a card outside r's suits, a stock that does not fit, a face-down
// card on top, or a completed run left on the tableau. Every line is optional: a column not
// given is empty, no stock line means an empty stock, and score, steps and
// elapsed default to 500, 0 and 0. Blank lines and lines starting with #
// are ignored.
func ParseState(r Rules, text string) (State, error) {
	if r.suits == 0 {
		return State{}, fmt.Errorf("env: ParseState with zero Rules")
	}
	s := State{rules: r, score: StartScore, dealt: StockSize}
	seen := map[string]bool{}
	for n, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			return State{}, fmt.Errorf("env: position line %d: %q has no \"name:\"", n+1, line)
		}
		key = strings.TrimSpace(key)
		if c, err := strconv.Atoi(key); err == nil {
			key = strconv.Itoa(c) // "01:" is column 1's line too
		}
		if seen[key] {
			return State{}, fmt.Errorf("env: position line %d: %q given twice", n+1, key)
		}
		seen[key] = true
		if err := s.parseLine(key, strings.Fields(val)); err != nil {
			return State{}, fmt.Errorf("env: position line %d: %v", n+1, err)
		}
	}
	total := int(s.runs) * NumRanks
	for c := range NumColumns {
		total += int(s.height[c])
		s.refresh(c)
		if s.longestRun(c) >= NumRanks {
			return State{}, fmt.Errorf("env: position: column %d holds a completed run, which is removed at once, on top or under other cards", c+1)
		}
	}
	total += s.StockLeft()
	if total > NumCards {
		return State{}, fmt.Errorf("env: position: %d cards, more than the deck's %d", total, NumCards)
	}
	if s.runs == NumRuns {
		s.status = Won
	} else if !s.anyLegal() {
		s.status = Lost
	}
	return s, nil
}

// checkCopies reports a card that s holds more often than r's deck does
// (8 of each card with one suit, 4 with two, 2 with four): on the tableau,
// in the stock and in the completed runs, one of each rank a run.
func (s *State) checkCopies() error {
	var count [NumSuits*NumRanks + 1]int
	for c := range NumColumns {
		for _, card := range s.cols[c][:s.height[c]] {
			count[card]++
		}
	}
	for _, card := range s.stock[s.dealt:] {
		count[card]++
	}
	for su := range NumSuits {
		for r := Ace; r <= King; r++ {
			count[MakeCard(r, Suit(su))] += int(s.suitRuns[su])
		}
	}
	copies := NumCards / (int(s.rules.suits) * NumRanks)
	for card, n := range count {
		if card != int(NoCard) && n > copies {
			return fmt.Errorf("card %v appears %d times, more than the %d of a %d-suit deck", Card(card), n, copies, s.rules.suits)
		}
	}
	return nil
}

// parseLine reads one "key: fields" line of the text form into s: a
// column (1-10), the stock, the completed runs or a counter. ParseState
// checks what needs the whole position once every line is read.
func (s *State) parseLine(key string, fields []string) error {
	card := func(f string) (Card, error) {
		c, err := ParseCard(f)
		if err == nil && int(c.Suit()) >= int(s.rules.suits) {
			err = fmt.Errorf("card %v is not in a %d-suit deck", c, s.rules.suits)
		}
		return c, err
	}
	number := func(lo, hi int) (int, error) {
		if len(fields) != 1 {
			return 0, fmt.Errorf("%s: want one number", key)
		}
		v, err := strconv.Atoi(fields[0])
		if err != nil || v < lo || v > hi {
			return 0, fmt.Errorf("%s: %q is not a number from %d to %d", key, fields[0], lo, hi)
		}
		return v, nil
	}
	switch key {
	case "stock":
		if len(fields) > StockSize {
			return fmt.Errorf("stock: %d cards, at most %d", len(fields), StockSize)
		}
		s.dealt = uint8(StockSize - len(fields))
		for i, f := range fields {
			c, err := card(f)
			if err != nil {
				return fmt.Errorf("stock: %v", err)
			}
			s.stock[int(s.dealt)+i] = c
		}
	case "runs":
		if len(fields) > NumRuns {
			return fmt.Errorf("runs: %d, at most %d", len(fields), NumRuns)
		}
		for _, f := range fields {
			su := strings.IndexByte("shdc", lower(f[0]))
			if len(f) != 1 || su < 0 || su >= int(s.rules.suits) {
				return fmt.Errorf("runs: %q is not a suit letter of a %d-suit deck", f, s.rules.suits)
			}
			s.suitRuns[su]++
			s.runs++
		}
	case "score":
		v, err := number(0, 1<<30)
		s.score = int32(v)
		return err
	case "steps":
		v, err := number(0, 1<<30)
		s.steps = int32(v)
		return err
	case "elapsed":
		if len(fields) != 1 {
			return fmt.Errorf("elapsed: want one duration")
		}
		d, err := time.ParseDuration(fields[0])
		if err != nil || d < 0 {
			return fmt.Errorf("elapsed: %q is not a duration", fields[0])
		}
		s.elapsed = d
	default:
		c, err := strconv.Atoi(key)
		if err != nil || c < 1 || c > NumColumns {
			return fmt.Errorf("unknown line %q (want 1-10, stock, runs, score, steps or elapsed)", key)
		}
		c--
		down := -1
		for _, f := range fields {
			if f == "|" {
				if down >= 0 {
					return fmt.Errorf("column %d: two bars", c+1)
				}
				down = int(s.height[c])
				continue
			}
			if int(s.height[c]) == maxHeight {
				return fmt.Errorf("column %d: more than %d cards", c+1, maxHeight)
			}
			cd, err := card(f)
			if err != nil {
				return fmt.Errorf("column %d: %v", c+1, err)
			}
			s.cols[c][s.height[c]] = cd
			s.height[c]++
		}
		if down < 0 {
			down = 0
		}
		if down > maxFaceDown {
			return fmt.Errorf("column %d: %d face-down cards, at most %d", c+1, down, maxFaceDown)
		}
		if s.height[c] > 0 && down == int(s.height[c]) {
			return fmt.Errorf("column %d: the top card must be face up", c+1)
		}
		s.down[c] = uint8(down)
	}
	return nil
}

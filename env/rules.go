package env

import (
	"fmt"
	"strings"
	"time"
)

// RuleSet names one of the two supported rule sheets. RULES.md sets them side
// by side.
type RuleSet uint8

const (
	// Classic is the common rule sheet for 1, 2 and 4 suits: the stock deals
	// ten cards and only when no column is empty; scoring has a time penalty
	// and a win bonus.
	Classic RuleSet = iota
	// Cardems is the Cardems app's sheet: the stock deals one card onto each
	// non-empty column whenever it holds at least ten cards; scoring has no
	// time penalty and no win bonus.
	Cardems
	numRuleSets
)

var ruleSetNames = [numRuleSets]string{"classic", "cardems"}

// String returns the rule set's name: "classic" or "cardems".
func (r RuleSet) String() string {
	if r >= numRuleSets {
		return fmt.Sprintf("RuleSet(%d)", uint8(r))
	}
	return ruleSetNames[r]
}

// ParseRuleSet returns the rule set named s (case-insensitive).
func ParseRuleSet(s string) (RuleSet, error) {
	return parseName[RuleSet](ruleSetNames[:], s, "rule set")
}

// parseName finds s among names (case-insensitive) and returns its index.
func parseName[T ~uint8](names []string, s, what string) (T, error) {
	for i, n := range names {
		if strings.EqualFold(s, n) {
			return T(i), nil
		}
	}
	return 0, fmt.Errorf("env: unknown %s %q (want %s)", what, s, strings.Join(names, " or "))
}

// Encoding selects how an observation is written.
type Encoding uint8

const (
	// Compact writes one uint8 per field and one card code per slot.
	Compact Encoding = iota
	// Float32 writes the same fields as float32 in [0, 1], cards one-hot.
	Float32
	numEncodings
)

var encodingNames = [numEncodings]string{"compact", "float32"}

// String returns the encoding's name: "compact" or "float32".
func (e Encoding) String() string {
	if e >= numEncodings {
		return fmt.Sprintf("Encoding(%d)", uint8(e))
	}
	return encodingNames[e]
}

// ParseEncoding returns the encoding named s (case-insensitive).
func ParseEncoding(s string) (Encoding, error) {
	return parseName[Encoding](encodingNames[:], s, "observation encoding")
}

// Game constants shared by every rule set.
const (
	NumColumns   = 10  // tableau columns
	NumCards     = 104 // two 52-card decks
	NumRuns      = 8   // completed runs needed to win
	StockSize    = 50  // cards in the stock after the deal
	DealSize     = 10  // cards in one classic stock deal
	TableauCards = 54  // cards dealt to the tableau at the start
	StartScore   = 500 // both rule sets start here
	RunBonus     = 100 // both rule sets add this per completed run
	WinBonus     = 50  // classic only
	MaxMove      = 12  // longest group a move can carry: a 13-card run is removed at once
	maxFaceDown  = 5   // columns 1-4 start with five face-down cards; nothing adds more
	maxHeight    = NumCards
	timePerPoint = 2 * time.Second // classic: one point per two seconds of game time
)

// Defaults for Options fields left at zero.
const (
	DefaultMaxSteps    = 1000
	DefaultFaceUpSlots = 78
)

// Options are the choices a user makes for a configuration. The zero value
// of each field other than Suits selects its default; NewRules checks them
// and turns them into an immutable Rules.
type Options struct {
	RuleSet RuleSet
	// Suits is 1 (spades), 2 (spades and hearts) or 4. Cardems is one-suit
	// in its sheet; 2 and 4 suits under cardems rules are our extension.
	Suits int
	// MaxSteps truncates an episode after that many actions. 0 selects
	// DefaultMaxSteps; a negative value means no limit, for human play.
	MaxSteps int
	// TimePerAction is the simulated game time one action takes, for the
	// classic rule of one point per two seconds. 0 (the default) turns the
	// time penalty off. The wall clock is never used. Classic only.
	TimePerAction time.Duration
	// FaceUpSlots is how many face-up cards per column the observation
	// shows, counted from the top. 0 selects DefaultFaceUpSlots (78), the
	// most any classic game can reach (RULES.md proves it); a smaller value
	// shrinks the observation at the risk of hiding the deepest face-up
	// cards of very long columns, which the face-up count still reports.
	FaceUpSlots int
	// Encoding is the observation encoding the Env returns.
	Encoding Encoding
}

// Rules is an immutable configuration: the rule set, the number of suits,
// the limits and the observation layout. Every size a trainer needs (the
// number of actions, the observation length and bounds) is known from a
// Rules value alone, before any game exists. Copying a Rules is cheap.
type Rules struct {
	ruleSet  RuleSet
	suits    uint8
	slots    uint8
	encoding Encoding
	maxSteps int32
	tick     time.Duration
}

// NewRules checks o and returns the Rules it describes.
func NewRules(o Options) (Rules, error) {
	if o.RuleSet >= numRuleSets {
		return Rules{}, fmt.Errorf("env: unknown rule set %d", o.RuleSet)
	}
	if o.Suits != 1 && o.Suits != 2 && o.Suits != 4 {
		return Rules{}, fmt.Errorf("env: suits must be 1, 2 or 4, not %d", o.Suits)
	}
	if o.Encoding >= numEncodings {
		return Rules{}, fmt.Errorf("env: unknown observation encoding %d", o.Encoding)
	}
	steps := o.MaxSteps
	switch {
	case steps == 0:
		steps = DefaultMaxSteps
	case steps < 0:
		steps = -1
	case steps > 1<<30:
		return Rules{}, fmt.Errorf("env: max steps %d is over the limit %d (use a negative value for no limit)", steps, 1<<30)
	}
	if o.TimePerAction < 0 {
		return Rules{}, fmt.Errorf("env: time per action must not be negative, got %v", o.TimePerAction)
	}
	if o.TimePerAction > 0 && o.RuleSet != Classic {
		return Rules{}, fmt.Errorf("env: time per action applies only to classic scoring; %s has no time penalty", o.RuleSet)
	}
	slots := o.FaceUpSlots
	if slots == 0 {
		slots = DefaultFaceUpSlots
	}
	if slots < 1 || slots > 104 {
		return Rules{}, fmt.Errorf("env: face-up slots must be 1 to 104, not %d", slots)
	}
	return Rules{
		ruleSet:  o.RuleSet,
		suits:    uint8(o.Suits),
		slots:    uint8(slots),
		encoding: o.Encoding,
		maxSteps: int32(steps),
		tick:     o.TimePerAction,
	}, nil
}

// MustRules is NewRules for options known to be valid, such as literals in
// tests and examples. It panics on invalid options.
func MustRules(o Options) Rules {
	r, err := NewRules(o)
	if err != nil {
		panic(err)
	}
	return r
}

// Options returns the options that describe r, with defaults filled in.
func (r Rules) Options() Options {
	return Options{
		RuleSet:       r.ruleSet,
		Suits:         int(r.suits),
		MaxSteps:      int(r.maxSteps),
		TimePerAction: r.tick,
		FaceUpSlots:   int(r.slots),
		Encoding:      r.encoding,
	}
}

// RuleSet returns the rule set.
func (r Rules) RuleSet() RuleSet { return r.ruleSet }

// Suits returns the number of suits: 1, 2 or 4.
func (r Rules) Suits() int { return int(r.suits) }

// MaxSteps returns the truncation limit in actions, or -1 for none.
func (r Rules) MaxSteps() int { return int(r.maxSteps) }

// TimePerAction returns the simulated time one action takes (classic).
func (r Rules) TimePerAction() time.Duration { return r.tick }

// FaceUpSlots returns how many face-up cards per column observations show.
func (r Rules) FaceUpSlots() int { return int(r.slots) }

// Encoding returns the observation encoding the Env returns.
func (r Rules) Encoding() Encoding { return r.encoding }

// NumActions returns the size of the discrete action space. It is the same
// for every configuration; the method exists so code sizes networks from a
// Rules value.
func (r Rules) NumActions() int { return NumActions }

// String describes r in the words the command-line flags use.
func (r Rules) String() string {
	s := fmt.Sprintf("%s %d-suit, max-steps %d, slots %d, %s", r.ruleSet, r.suits, r.maxSteps, r.slots, r.encoding)
	if r.tick > 0 {
		s += fmt.Sprintf(", %v per action", r.tick)
	}
	return s
}

package env

import (
	"fmt"
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

var ruleSetNames = names[RuleSet]{"RuleSet", "rule set", []string{"classic", "cardems"}}

// String returns the rule set's name: "classic" or "cardems".
func (r RuleSet) String() string { return ruleSetNames.name(r) }

// ParseRuleSet returns the rule set named s (case-insensitive).
func ParseRuleSet(s string) (RuleSet, error) { return ruleSetNames.parse(s) }

// Encoding selects how an observation is written.
type Encoding uint8

const (
	// Compact writes one uint8 per field and one card code per slot.
	Compact Encoding = iota
	// Float32 writes the same fields as float32 in [0, 1], cards one-hot.
	Float32
	numEncodings
)

var encodingNames = names[Encoding]{"Encoding", "observation encoding", []string{"compact", "float32"}}

// String returns the encoding's name: "compact" or "float32".
func (e Encoding) String() string { return encodingNames.name(e) }

// ParseEncoding returns the encoding named s (case-insensitive).
func ParseEncoding(s string) (Encoding, error) { return encodingNames.parse(s) }

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

// Defaults for Options fields left at zero (Suits: 1).
const (
	DefaultMaxSteps    = 1000
	DefaultFaceUpSlots = 78
)

// Options is the one serializable description of a game: everything a
// record, a checkpoint, the server's make request, the command line and the
// Python client's SpiderConfig say about the game travels in this type. The
// zero value of every field selects its default, so Options{} is classic
// one-suit Spider with the default limits; NewRules checks the fields
// (Validate) and turns them into an immutable Rules.
//
// Every field carries its key (the msgpack and JSON name, also the socket's
// make field and, with '-' for '_', the command-line flag), its kind
// ("game" for a field that changes the games themselves, "view" for one
// that changes only what a player is shown or rewarded), a help text and
// an example (a valid value other than the default, which generic tests in
// every package use): OptionFields reads them, so adding a field here is
// all it takes for files, the server, the flags, benchmark suites and the
// pairing of eval reports to carry it.
type Options struct {
	RuleSet RuleSet `msgpack:"rules" json:"rules" kind:"game" help:"rule set: classic or cardems" example:"cardems"`
	// Suits is 1 (spades), 2 (spades and hearts) or 4; 0 selects 1.
	// Cardems is one-suit in its sheet; 2 and 4 suits under cardems rules
	// are our extension.
	Suits int `msgpack:"suits" json:"suits" kind:"game" help:"number of suits: 1, 2 or 4" example:"2"`
	// MaxSteps truncates an episode after that many actions. 0 selects
	// DefaultMaxSteps; a negative value means no limit, for human play
	// (such a game is still truncated at 2^30 actions, the largest limit,
	// so that its count never overflows and ParseState reads it back).
	MaxSteps int `msgpack:"max_steps" json:"max_steps" kind:"game" help:"truncate a game after this many actions (negative: no limit)" example:"300"`
	// TimePerActionMs is the simulated game time one action takes, in
	// milliseconds, for the classic rule of one point per two seconds. 0
	// (the default) turns the time penalty off. The wall clock is never
	// used. Classic only.
	TimePerActionMs int `msgpack:"time_per_action_ms" json:"time_per_action_ms" kind:"game" help:"classic's simulated clock: game time one action takes, in milliseconds (0: no time penalty)" example:"1500"`
	// FaceUpSlots is how many face-up cards per column the observation
	// shows, counted from the top. 0 selects DefaultFaceUpSlots (78), the
	// most any classic game can reach (RULES.md proves it); a smaller value
	// shrinks the observation at the risk of hiding the deepest face-up
	// cards of very long columns, which the face-up count still reports.
	FaceUpSlots int `msgpack:"face_up_slots" json:"face_up_slots" kind:"view" help:"face-up cards per column the observation shows, from the top" example:"12"`
	// Encoding is the observation encoding the Env returns.
	Encoding Encoding `msgpack:"obs" json:"obs" kind:"view" help:"observation encoding: compact or float32" example:"float32"`
	// Shaping adds potential-based shaping to the reward (Shaping's doc);
	// the default, NoShaping, leaves the reward the score's change.
	Shaping Shaping `msgpack:"shaping" json:"shaping" kind:"view" help:"reward shaping: none or progress (potential-based; the best policy is unchanged)" example:"progress"`
	// ShapingGamma is the discount of the learner the shaping is for,
	// in (0, 1]; 0 selects 1. It matters only with shaping.
	ShapingGamma float64 `msgpack:"shaping_gamma" json:"shaping_gamma" kind:"view" help:"the learner's discount, for reward shaping (0: 1)" example:"0.99"`
}

// MaxTimePerActionMs is the largest TimePerActionMs Validate accepts (about
// 11.6 days a move), far beyond any real clock. A game without a step
// limit can still run its clock to the end of time.Duration (292 years):
// the clock then stops, and actions cost their one point only.
const MaxTimePerActionMs = 1_000_000_000

// maxStepLimit is the largest positive MaxSteps.
const maxStepLimit = 1 << 30

// Validate reports the first field of o that no game can have, naming the
// field.
func (o Options) Validate() error {
	switch {
	case o.RuleSet >= numRuleSets:
		return fmt.Errorf("env: unknown rule set %d", o.RuleSet)
	case o.Suits != 0 && o.Suits != 1 && o.Suits != 2 && o.Suits != 4:
		return fmt.Errorf("env: suits must be 1, 2 or 4, not %d", o.Suits)
	case o.Encoding >= numEncodings:
		return fmt.Errorf("env: unknown observation encoding %d", o.Encoding)
	case o.MaxSteps > maxStepLimit:
		return fmt.Errorf("env: max_steps %d is over the limit %d (use a negative value for no limit)", o.MaxSteps, maxStepLimit)
	case o.TimePerActionMs < 0 || o.TimePerActionMs > MaxTimePerActionMs:
		return fmt.Errorf("env: time_per_action_ms %d is outside 0 to %d", o.TimePerActionMs, MaxTimePerActionMs)
	case o.TimePerActionMs > 0 && o.RuleSet != Classic:
		return fmt.Errorf("env: time_per_action_ms applies only to classic scoring; %s has no time penalty", o.RuleSet)
	case o.Shaping >= numShapings:
		return fmt.Errorf("env: unknown reward shaping %d", o.Shaping)
	case !(o.ShapingGamma >= 0 && o.ShapingGamma <= 1):
		return fmt.Errorf("env: shaping_gamma %v is outside 0 to 1", o.ShapingGamma)
	case o.FaceUpSlots < 0 || o.FaceUpSlots > NumCards:
		return fmt.Errorf("env: face_up_slots must be 1 to %d (0: the default), not %d", NumCards, o.FaceUpSlots)
	}
	return nil
}

// DefaultOptions returns the options of Options{} with every default filled
// in: what a field left at zero means.
func DefaultOptions() Options { return MustRules(Options{}).Options() }

// Rules is an immutable configuration: the rule set, the number of suits,
// the limits and the observation layout. Every size a trainer needs (the
// number of actions, the observation length and bounds) is known from a
// Rules value alone, before any game exists. Copying a Rules is cheap,
// and goroutines may share one: nothing changes it.
type Rules struct {
	ruleSet  RuleSet
	suits    uint8
	slots    uint8
	encoding Encoding
	maxSteps int32
	tick     time.Duration
	shaping  Shaping
	stepCap  int32 // where a game is truncated: maxSteps, or maxStepLimit without one (beside shaping, so Rules stays 32 bytes)
	gamma    float64
}

// NewRules checks o (Validate) and returns the Rules it describes, with
// zero fields replaced by their defaults.
func NewRules(o Options) (Rules, error) {
	if err := o.Validate(); err != nil {
		return Rules{}, err
	}
	r := Rules{
		ruleSet:  o.RuleSet,
		suits:    uint8(o.Suits),
		slots:    uint8(o.FaceUpSlots),
		encoding: o.Encoding,
		maxSteps: int32(o.MaxSteps),
		tick:     time.Duration(o.TimePerActionMs) * time.Millisecond,
		shaping:  o.Shaping,
		gamma:    o.ShapingGamma,
	}
	if r.gamma == 0 {
		r.gamma = 1
	}
	if r.suits == 0 {
		r.suits = 1
	}
	if r.slots == 0 {
		r.slots = DefaultFaceUpSlots
	}
	switch {
	case o.MaxSteps == 0:
		r.maxSteps = DefaultMaxSteps
	case o.MaxSteps < 0:
		r.maxSteps = -1
	}
	r.stepCap = r.maxSteps
	if r.stepCap < 0 { // no limit: the largest, so that the count never overflows
		r.stepCap = maxStepLimit
	}
	return r, nil
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
		RuleSet:         r.ruleSet,
		Suits:           int(r.suits),
		MaxSteps:        int(r.maxSteps),
		TimePerActionMs: int(r.tick / time.Millisecond),
		Shaping:         r.shaping,
		ShapingGamma:    r.gamma,
		FaceUpSlots:     int(r.slots),
		Encoding:        r.encoding,
	}
}

// Reframes reports why a game under r cannot be watched as a game under
// to (State.Reframe), or nil if it can: every option of to must match r's
// except what a player is shown or rewarded (the observation, shaping),
// the step limit and the clock, which change where a game ends and its
// score, never its positions or moves. An option added later must match
// until it is named here, so a game is never read under rules it does not
// follow.
func (r Rules) Reframes(to Rules) error {
	same := r
	same.slots, same.encoding, same.shaping, same.gamma = to.slots, to.encoding, to.shaping, to.gamma
	same.maxSteps, same.stepCap, same.tick = to.maxSteps, to.stepCap, to.tick
	if same != to {
		return fmt.Errorf("env: cannot reframe a %v game as %v: only the observation, shaping, step limit and clock may differ", r, to)
	}
	return nil
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

// Shaping returns the reward shaping.
func (r Rules) Shaping() Shaping { return r.shaping }

// ShapingGamma returns the discount the shaping is for.
func (r Rules) ShapingGamma() float64 { return r.gamma }

// Encoding returns the observation encoding the Env returns.
func (r Rules) Encoding() Encoding { return r.encoding }

// NumActions returns the size of the discrete action space. It is the same
// for every configuration; the method exists so code sizes networks from a
// Rules value.
func (r Rules) NumActions() int { return NumActions }

// stringNames are the options Rules.String names in its own words.
var stringNames = map[string]bool{"rules": true, "suits": true, "max_steps": true, "face_up_slots": true, "obs": true,
	"time_per_action_ms": true, "shaping": true}

// String describes r on one line, as the command-line programs print it.
func (r Rules) String() string {
	s := fmt.Sprintf("%s %d-suit, max-steps %d, slots %d, %s", r.ruleSet, r.suits, r.maxSteps, r.slots, r.encoding)
	if r.tick > 0 {
		s += fmt.Sprintf(", %v per action", r.tick)
	}
	if r.shaping != NoShaping {
		s += fmt.Sprintf(", %s shaping", r.shaping)
	}
	// Any other option (one added since this was written) away from its
	// default, by its flag, so that no two configurations read the same.
	o, def := r.Options(), DefaultOptions()
	for _, f := range optionFields {
		if !stringNames[f.Key] && f.Text(o) != f.Text(def) {
			s += fmt.Sprintf(", %s %s", f.Flag, f.Text(o))
		}
	}
	return s
}

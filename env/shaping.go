package env

import "github.com/vmihailenco/msgpack/v5"

// Shaping selects an optional potential-based reward shaping. The reward
// stays the score's change (the environment's contract) unless a game's
// options ask for shaping; then each action's reward also gets
// F = gamma*Phi(after) - Phi(before), with Phi(after) = 0 when the action
// ends the game (won or lost). Summed over an episode with the trainer's
// discount gamma, F adds gamma^T*Phi(last) - Phi(first), which no action
// changes, so the best policy stays the best (Ng, Harada and Russell,
// 1999), while the learner hears of progress long before a run completes.
type Shaping uint8

const (
	// NoShaping leaves the reward the score's change.
	NoShaping Shaping = iota
	// Progress shapes with Phi = 5 per face-down card turned since the
	// deal plus 1 per card lying in suit on the one below it at the top
	// of a column: what a player reads as progress. It uses only what
	// the player sees.
	Progress
	numShapings
)

var shapingNames = names[Shaping]{"Shaping", "reward shaping", []string{"none", "progress"}}

// String returns the shaping's name: "none" or "progress".
func (h Shaping) String() string { return shapingNames.name(h) }

// ParseShaping returns the shaping named s (case-insensitive).
func ParseShaping(s string) (Shaping, error) { return shapingNames.parse(s) }

// MarshalText returns the shaping's name.
func (h Shaping) MarshalText() ([]byte, error) { return shapingNames.text(h) }

// UnmarshalText sets h to the shaping named by text (case-insensitive).
func (h *Shaping) UnmarshalText(text []byte) error { return shapingNames.setText(h, text) }

// EncodeMsgpack writes the shaping's name as a msgpack string.
func (h Shaping) EncodeMsgpack(e *msgpack.Encoder) error { return encodeName(e, h) }

// DecodeMsgpack reads a shaping's name.
func (h *Shaping) DecodeMsgpack(d *msgpack.Decoder) error { return decodeName(d, h) }

// Weights of the progress potential, in score points.
const (
	turnedWeight  = 5 // a face-down card turned
	inOrderWeight = 1 // a card in suit on the one below it, at a column's top
	dealtFaceDown = 44
)

// potential returns Phi(s) under the progress shaping: 0 for an ended
// game, so an episode's shaping adds up to a constant.
func potential(s *State) float32 {
	if s.Terminated() {
		return 0
	}
	turned := dealtFaceDown - s.TotalFaceDown()
	inOrder := 0
	for _, n := range s.run {
		inOrder += max(int(n)-1, 0)
	}
	return float32(turnedWeight*turned + inOrderWeight*inOrder)
}

// Potential returns Phi(s) under r's shaping, in score points: 0 without
// shaping and for a game won or lost (a game cut at its step limit keeps
// its potential, as the Shaping doc says). A trainer that replays recorded games
// shapes their rewards with it as the environment would: a step from s to
// t earns ShapingGamma*Potential(t) - Potential(s) on top of the score's
// change.
func (r Rules) Potential(s *State) float32 {
	if r.shaping == NoShaping {
		return 0
	}
	return potential(s)
}

// shapingTerm returns the shaping term of a step that led from a position
// of potential before to s (forfeit: the step ended the game, as a batch's
// LoseIllegal does): gamma*Phi(s) - before, Phi of an ended game being 0.
// An illegal no-op is a step from s to s and gets (gamma-1)*Phi(s), so the
// terms still add up to a constant. Callers ask only when r.shaping is on,
// so the unshaped step pays one predictable branch.
func (r Rules) shapingTerm(before float32, s *State, forfeit bool) float32 {
	if forfeit {
		return -before
	}
	return float32(r.gamma)*potential(s) - before
}

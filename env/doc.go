// Package env is the Spider Solitaire rules engine and its Gymnasium-style
// environment.
//
// A Rules value (from NewRules) fixes the rule set (Classic or Cardems), the
// number of suits, the step limit and the observation layout; every size a
// trainer needs is known from it before any game exists. A State is one
// game made of fixed-size arrays, so copying it clones it; State.Step plays
// an Action and returns an Undo record. An Env wraps one game behind Reset
// and Step, with a legal-action mask, an observation in one of two
// encodings (compact uint8 or float32) and a reward that is the change of
// the score.
//
// The action space has NumActions (1081) ids: a move is a source column, a
// destination column and a card count; the last id is the deal. Every legal
// move has exactly one id, and the mask has a 1 exactly where Step accepts
// the id. Observations show what a player sees and nothing else: face-down
// cards and the stock are counted, never named. RULES.md in the repository
// sets out both rule sheets and every decision where they are silent.
//
// Step, Mask and the observation writers never allocate, with two
// exceptions: Env.Step keeps an undo record a step, and grows that history
// past the 16,384th step of one game (a step limit above that, or none);
// and a refused step builds the error that says why. Functions that
// take a destination buffer panic if it is too short, and methods that
// take a column (0 to NumColumns-1), a suit (0 to NumSuits-1) or a batch's
// game index (0 to N-1) panic when it is out of range, as indexing a slice
// does: programming errors. Everything a user or a peer can get wrong (an
// illegal action, a bad option, malformed text) returns an error instead.
package env

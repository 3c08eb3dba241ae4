// Package envtest is the conformance checker that every configuration, the
// batch stepper and every agent run through. It plays games through the
// public Env API and, after every step, checks the rules' invariants: the
// deck is whole, the mask is exactly the set of actions Step accepts, undo
// and clones are exact, observations reveal nothing hidden and agree with
// each other and the board, and rewards are the score's changes.
package envtest

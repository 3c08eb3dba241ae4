// Package envtest is the conformance checker that every configuration, the
// batch stepper and every agent run through. It plays games through the
// public Env API and, after every step, checks the rules' invariants: the
// deck is whole, the mask is exactly the set of actions Step accepts, undo
// and clones are exact, the observation is the board's and reveals nothing
// hidden (both encodings decoded in full and compared at every 8th step
// and the last), and rewards are the score's changes plus the shaping
// term. CheckBatch replays each game of a batch beside it.
package envtest

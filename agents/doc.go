// Package agents holds policies that play Spider through one small
// interface. An Agent sees a View: the game as its player sees it (face-up
// cards, counts of face-down and stock cards, the score and the legal
// actions), never the hidden cards. Agents are deterministic given their
// seed (search with a MoveTime excepted: it plans as far as the clock
// lets it), and each instance is used by one goroutine; make one per
// worker with a Maker.
package agents

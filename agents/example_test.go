package agents_test

import (
	"fmt"

	"github.com/spiderenv/spider/agents"
	"github.com/spiderenv/spider/env"
)

// Play one deal with the greedy agent and ask it for a hint on a fresh one.
func Example() {
	r := env.MustRules(env.Options{RuleSet: env.Classic, Suits: 1})
	res := agents.Play(r, 3, &agents.Greedy{})
	fmt.Println("won:", res.Won, "runs:", res.Runs, "moves:", res.Moves)

	s := env.NewGame(r, 3)
	d := (&agents.Greedy{}).Act(agents.NewView(&s, s.AppendLegal(nil), 0, false))
	fmt.Println("hint:", d.Action, "-", d.Reason)
	// Output:
	// won: false runs: 3 moves: 1000
	// hint: 4>6x1 - turns a face-down card
}

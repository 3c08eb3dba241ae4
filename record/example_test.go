package record_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spiderenv/spider/env"
	"github.com/spiderenv/spider/record"
)

// A game is recorded when it ends, saved, and replayed exactly from its
// deal: the replay checks every action and the recorded result.
func Example() {
	r := env.MustRules(env.Options{Suits: 1, MaxSteps: 40})
	s := env.NewGame(r, 7)
	var actions []env.Action
	for !s.Over() {
		a := s.AppendLegal(nil)[0] // the first legal action, for the example
		s.Step(a)
		actions = append(actions, a)
	}
	dir, err := os.MkdirTemp("", "record-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "game.spider")
	if err := record.Save(path, record.New(r, 7, "first", actions, &s)); err != nil {
		panic(err)
	}
	g, err := record.Load(path)
	if err != nil {
		panic(err)
	}
	final, err := record.Replay(g, nil)
	fmt.Println(len(g.Actions), g.Player, final.Score() == s.Score(), err)
	// Output: 40 first true <nil>
}

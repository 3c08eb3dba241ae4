package env_test

import (
	"fmt"

	"github.com/spiderenv/spider/env"
)

// A game played through the Env: reset from a seed, then step legal
// actions chosen from the mask until the episode ends.
func Example() {
	r, err := env.NewRules(env.Options{RuleSet: env.Classic, Suits: 1, MaxSteps: 30})
	if err != nil {
		panic(err)
	}
	fmt.Println("actions:", r.NumActions(), "compact observation:", r.CompactLen(), "float32 observation:", r.Float32Len())

	e := env.New(r)
	_, info := e.Reset(42)
	fmt.Println("start: score", info.Score, "legal", info.Legal, "face-down", info.FaceDown)
	total := 0.0
	for {
		// Always the highest legal id: the deal while it is legal.
		var a env.Action
		for id, ok := range e.Mask() {
			if ok == 1 {
				a = env.Action(id)
			}
		}
		_, reward, terminated, truncated, info, err := e.Step(a)
		if err != nil {
			panic(err)
		}
		total += reward
		if terminated || truncated {
			fmt.Println("end: moves", info.Moves, "score", info.Score, "return", total, "truncated", truncated)
			break
		}
	}
	// Output:
	// actions: 1081 compact observation: 806 float32 observation: 10166
	// start: score 500 legal 8 face-down 44
	// end: moves 30 score 470 return -30 truncated true
}

func ExampleParseAction() {
	a, err := env.ParseAction("3>7x4")
	if err != nil {
		panic(err)
	}
	src, dst, n := a.Move()
	fmt.Println(uint16(a), a, src, dst, n)
	fmt.Println(uint16(env.Deal), env.Deal)
	// Output:
	// 279 3>7x4 2 6 4
	// 1080 deal
}

func ExampleState_Undo() {
	s := env.NewGame(env.MustRules(env.Options{Suits: 4}), 7)
	before := s
	u, err := s.Step(env.Deal)
	if err != nil {
		panic(err)
	}
	fmt.Println("after the deal:", s.StockLeft(), "in stock, score", s.Score())
	s.Undo(u)
	fmt.Println("undone exactly:", s == before)
	// Output:
	// after the deal: 40 in stock, score 499
	// undone exactly: true
}

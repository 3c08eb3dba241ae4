package agents

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/spiderenv/spider/env"
)

// Evaluation is every game of every policy on the same deals, so that the
// comparisons between policies are paired: Results[p][i] is policy p's game
// on Seeds[i].
type Evaluation struct {
	Rules    env.Rules
	Policies []string
	Seeds    []uint64
	Results  [][]Result
}

// Evaluate plays every seed with every named policy (made with options o)
// on workers goroutines (0: GOMAXPROCS), each with its own agents, calling progress (if not nil)
// after each game with the number done and the total. It stops early, with
// ctx's error, when ctx ends.
func Evaluate(ctx context.Context, r env.Rules, policies []string, seeds []uint64, workers int, o Options, progress func(done, total int)) (*Evaluation, error) {
	makers := make([]Maker, len(policies))
	for i, p := range policies {
		m, err := NewWith(p, o)
		if err != nil {
			return nil, err
		}
		makers[i] = m
	}
	return EvaluateWith(ctx, r, policies, makers, seeds, workers, progress)
}

// EvaluateWith is Evaluate for agents the caller makes: makers[p] makes
// the agents of the policy named policies[p] (a trainer's network in
// training, say).
func EvaluateWith(ctx context.Context, r env.Rules, policies []string, makers []Maker, seeds []uint64, workers int, progress func(done, total int)) (*Evaluation, error) {
	if len(makers) != len(policies) {
		return nil, fmt.Errorf("agents: %d makers for %d policies", len(makers), len(policies))
	}
	for i, m := range makers {
		if err := CheckRules(m(), r); err != nil {
			return nil, fmt.Errorf("%s: %v", policies[i], err)
		}
	}
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	ev := &Evaluation{Rules: r, Policies: policies, Seeds: seeds, Results: make([][]Result, len(policies))}
	for i := range ev.Results {
		ev.Results[i] = make([]Result, len(seeds))
	}
	total := len(policies) * len(seeds)
	var next, done atomic.Int64
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			agents := make([]Agent, len(makers))
			for i, m := range makers {
				agents[i] = m()
			}
			for ctx.Err() == nil {
				j := int(next.Add(1) - 1)
				if j >= total {
					return
				}
				p, g := j%len(policies), j/len(policies)
				ev.Results[p][g] = Play(r, seeds[g], agents[p])
				n := int(done.Add(1))
				if progress != nil {
					mu.Lock()
					progress(n, total)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return ev, nil
}

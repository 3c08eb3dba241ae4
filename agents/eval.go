package agents

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/spiderenv/spider/env"
)

// Evaluation is every game of every policy on the same deals, so that the
// comparisons between policies are paired: Results[p][i] is policy p's game
// on Seeds[i].
type Evaluation struct {
	Rules    env.Rules  // the games' rules
	Policies []string   // the policies' names, in the order asked for
	Seeds    []uint64   // the deals played (stopped early: those every policy finished)
	Results  [][]Result // Results[p][i]: policy p's game on Seeds[i]
}

// Evaluate plays every seed with every named policy (made with options o)
// on workers goroutines (0: GOMAXPROCS), each with its own agents, calling
// progress (if not nil) each time every policy has finished another deal,
// with the number of deals so finished and the number of deals (the games
// of a deal are handed out together, but deals can finish out of order, so
// those finished need not be the first). It stops early when
// ctx ends, returning ctx's error and the deals every policy finished
// before it (an Evaluation of those alone, possibly of none), so that a
// stopped evaluation keeps what it played. A game whose agent fails
// (EvaluatePolicies) is a result with Failure set.
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
	ps := make([]Policy, len(policies))
	for i := range ps {
		ps[i] = Policy{Name: policies[i], Maker: makers[i]}
	}
	return EvaluatePolicies(ctx, r, ps, seeds, workers, progress)
}

// EvaluatePolicies is Evaluate for any mix of policies: those with a Maker
// share workers goroutines (0: GOMAXPROCS), each game on one of them, and
// each BatchAgent plays its games in a goroutine of its own, Width() at a
// time, on the same deals. A failed game is a result with Failure set, and
// the evaluation goes on: a batch agent's, and one whose agent chose an
// illegal action or panicked (which Play would pass on to its caller: on
// a worker goroutine a panic would end the process). Its Failure says
// what and where, and the worker makes a new agent for its next game.
func EvaluatePolicies(ctx context.Context, r env.Rules, ps []Policy, seeds []uint64, workers int, progress func(done, total int)) (*Evaluation, error) {
	return EvaluateEach(ctx, r, ps, seeds, workers, progress, nil)
}

// EvaluateEach is EvaluatePolicies that calls each (if not nil) with every
// game that ends by the rules (or fails) as it ends, in the goroutine that
// played it and before it is stored: policy p's game on seeds[g]. each
// may keep what it needs of the game's actions (hash them, save its
// record) and drop them (res.Actions = nil), so that an evaluation of
// millions of games does not hold every move list (about 2 KB a game at a
// step limit of 1000). Calls for different games may run at once.
//
// Before any game it calls each Maker twice, to check that its agent plays
// r (CheckRules) and that the Maker does not return one agent every call
// (a pointer it returned before; a panic in the second call is left to
// the workers, whose games it fails), and drops those agents; each worker
// then makes its own, and workers may call a Maker at the same time.
// Each policy needs a name of its own, since results, tables and records
// are told apart by it, and a batch agent may be listed once (it is
// called from one goroutine).
func EvaluateEach(ctx context.Context, r env.Rules, ps []Policy, seeds []uint64, workers int, progress func(done, total int), each func(p, g int, res *Result)) (*Evaluation, error) {
	if r.Suits() == 0 {
		return nil, errors.New("agents: an evaluation with zero Rules; make them with env.NewRules")
	}
	var local []int // the policies played by the worker pool
	named := make(map[string]bool, len(ps))
	for i, p := range ps {
		switch {
		case p.Name == "":
			return nil, fmt.Errorf("agents: policy %d has no name", i+1)
		case named[p.Name]:
			return nil, fmt.Errorf("agents: policy %s is listed twice (results are told apart by name)", p.Name)
		}
		named[p.Name] = true
		switch {
		case (p.Maker == nil) == (p.Batch == nil):
			return nil, fmt.Errorf("agents: policy %s needs a maker or a batch agent, one of them", p.Name)
		case p.Maker != nil:
			a := p.Maker()
			if a == nil {
				return nil, fmt.Errorf("agents: policy %s: its Maker made no agent (nil)", p.Name)
			}
			if err := CheckRules(a, r); err != nil {
				return nil, fmt.Errorf("%s: %v", p.Name, err)
			}
			// Workers play their games at once, so one agent handed to
			// two of them mixes their games' state without a word.
			// (A panic or nil in this call is left to the workers'
			// calls, which fail their games for it.)
			if b, _ := makeGuarded(p.Maker); samePointer(a, b) {
				return nil, fmt.Errorf("agents: policy %s: its Maker returns the same agent every call; each worker needs one of its own (make a new one in each call)", p.Name)
			}
			local = append(local, i)
		case p.Batch != nil:
			for _, q := range ps[:i] {
				if q.Batch != nil && samePointer(p.Batch, q.Batch) {
					return nil, fmt.Errorf("agents: policies %s and %s are one batch agent, which would be called from two goroutines at once; list it once", q.Name, p.Name)
				}
			}
		}
	}
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	ev := &Evaluation{Rules: r, Seeds: seeds, Results: make([][]Result, len(ps))}
	for i, p := range ps {
		ev.Policies = append(ev.Policies, p.Name)
		ev.Results[i] = make([]Result, len(seeds))
	}
	// finished[p][g] says policy p's game on seeds[g] ended by the rules
	// (or failed), not by ctx: only such games are kept when ctx ends.
	finished := make([][]bool, len(ps))
	for i := range finished {
		finished[i] = make([]bool, len(seeds))
	}
	// played[g] counts the policies that finished seeds[g]'s game; a deal
	// is done when all have.
	played := make([]atomic.Int32, len(seeds))
	var done int
	var mu sync.Mutex
	count := func(g int) {
		if int(played[g].Add(1)) == len(ps) && progress != nil {
			mu.Lock()
			done++
			progress(done, len(seeds))
			mu.Unlock()
		}
	}
	var wg sync.WaitGroup
	for i, p := range ps {
		if p.Batch != nil {
			var one func(g int, res *Result)
			if each != nil {
				one = func(g int, res *Result) { each(i, g, res) }
			}
			wg.Go(func() { playBatch(ctx, r, seeds, p.Batch, ev.Results[i], finished[i], count, one) })
		}
	}
	jobs := len(local) * len(seeds)
	var next atomic.Int64
	for range min(workers, jobs) {
		wg.Go(func() {
			agents := make([]Agent, len(ps)) // made at a policy's first game, and again after a panic
			for ctx.Err() == nil {
				j := int(next.Add(1) - 1)
				if j >= jobs {
					return
				}
				p, g := local[j%len(local)], j/len(local)
				var res Result
				var why string
				if agents[p] == nil {
					agents[p], why = makeGuarded(ps[p].Maker)
				}
				// The game looks at ctx as it goes: one game of search
				// can take a minute, too long to wait for on Ctrl-C.
				if agents[p] == nil {
					// The game failed at the deal, counted at the lowest
					// score it could have ended with (Result.Failure).
					s := env.NewGame(r, seeds[g])
					res = Result{Seed: seeds[g], Score: s.LowestScore(), Runs: s.Runs(), Failure: why}
				} else if playGuarded(ctx, env.NewGame(r, seeds[g]), seeds[g], agents[p], &res) {
					agents[p] = nil
				}
				ok := ctx.Err() == nil // a game cut short is no progress
				if ok && each != nil {
					each(p, g, &res)
				}
				ev.Results[p][g], finished[p][g] = res, ok
				if ok {
					count(g)
				}
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		// A stop after the last game ended cut nothing short: the
		// evaluation is whole.
		if part := ev.only(finished); len(part.Seeds) < len(seeds) {
			return part, err
		}
	}
	return ev, nil
}

// makeGuarded calls maker on a worker goroutine, where a panic would end
// the process. With no agent made (a panic, or nil) it says why, and the
// game fails with that reason; the next game tries again.
func makeGuarded(maker Maker) (a Agent, why string) {
	defer func() {
		if v := recover(); v != nil {
			a, why = nil, fmt.Sprintf("the policy's Maker panicked: %v (%s)", v, panicSite())
		}
	}()
	if a = maker(); a == nil {
		return nil, "the policy's Maker made no agent (nil)"
	}
	return a, ""
}

// only returns the evaluation of the deals whose games all finished.
func (ev *Evaluation) only(finished [][]bool) *Evaluation {
	out := &Evaluation{Rules: ev.Rules, Policies: ev.Policies, Seeds: []uint64{}, Results: make([][]Result, len(ev.Results))}
	for g, seed := range ev.Seeds {
		all := true
		for p := range finished {
			all = all && finished[p][g]
		}
		if !all {
			continue
		}
		out.Seeds = append(out.Seeds, seed)
		for p := range ev.Results {
			out.Results[p] = append(out.Results[p], ev.Results[p][g])
		}
	}
	return out
}

// samePointer reports whether a and b are one pointer to a value that
// can hold state: not one of zero size, since Go may give every such
// value the same address.
func samePointer(a, b any) bool {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	return va.Kind() == reflect.Pointer && vb.Kind() == reflect.Pointer && va.Type() == vb.Type() && va.Type().Elem().Size() > 0 && va.Pointer() == vb.Pointer()
}

package agents

import (
	"context"
	"fmt"
	"time"

	"github.com/spiderenv/spider/env"
)

// BatchGame is one game in a call to BatchAgent.ActBatch.
type BatchGame struct {
	// Slot is the game's place, 0 to Width()-1: calls name the same game
	// by the same slot until a call marks the slot New.
	Slot int
	// New is true on the first decision of a game in this slot, so an
	// agent that keeps per-game state (a recurrent network, the positions
	// seen) knows when to forget it.
	New bool
	// View is the game as its player sees it.
	View View
}

// BatchAgent chooses actions for many games at once: an agent in another
// process (agents/remote), or a network that evaluates a batch per call.
// Evaluations play its games Width() at a time, in one goroutine.
type BatchAgent interface {
	Name() string
	// Width returns the most games one call is given.
	Width() int
	// ActBatch writes a choice for games[i] into actions[i]. An error
	// fails every game of the call (the agent timed out or went away);
	// the evaluation checks each action and fails the games whose action
	// is not legal. ctx ends the call early.
	ActBatch(ctx context.Context, games []BatchGame, actions []env.Action) error
}

// Policy is one contestant of an evaluation: agents made by Maker, each
// playing one game at a time, or one BatchAgent playing many.
type Policy struct {
	Name  string     // the policy's name in the tables
	Maker Maker      // makes one Agent per worker; nil when Batch is set
	Batch BatchAgent // plays many games at once; nil when Maker is set
}

// slotGame is a game in progress of playBatch.
type slotGame struct {
	s       env.State
	deal    int
	res     Result
	legal   []env.Action
	last    env.Action
	hasLast bool
	isNew   bool
	start   time.Time
}

// playBatch plays every seed with a, Width() games at a time, into
// results, setting finished[i] and calling done(i) as game i ends. A game
// whose call fails or whose action is illegal ends there, with its
// Failure set; the others go on.
func playBatch(ctx context.Context, r env.Rules, seeds []uint64, a BatchAgent, results []Result, finished []bool, done func(deal int), each func(deal int, res *Result)) {
	width := max(1, min(a.Width(), len(seeds)))
	slots := make([]*slotGame, width)
	next := 0
	deal := func(i int) {
		if next >= len(seeds) {
			slots[i] = nil
			return
		}
		slots[i] = &slotGame{s: env.NewGame(r, seeds[next]), deal: next, res: Result{Seed: seeds[next]}, isNew: true, start: time.Now()}
		next++
	}
	finish := func(i int, failure string) {
		g := slots[i]
		g.res.Won = failure == "" && g.s.Status() == env.Won
		g.res.Score, g.res.Runs, g.res.Moves = g.s.Score(), g.s.Runs(), g.s.Steps()
		if failure != "" {
			g.res.Score = g.s.LowestScore() // failing must not pay
		}
		g.res.Elapsed = time.Since(g.start)
		g.res.Failure = failure
		if each != nil {
			each(g.deal, &g.res)
		}
		results[g.deal], finished[g.deal] = g.res, true
		done(g.deal)
		deal(i)
	}
	for i := range slots {
		deal(i)
	}
	games := make([]BatchGame, 0, width)
	actions := make([]env.Action, width)
	index := make([]int, 0, width)
	for ctx.Err() == nil {
		games, index = games[:0], index[:0]
		for i, g := range slots {
			if g == nil {
				continue
			}
			g.legal = g.s.AppendLegal(g.legal[:0])
			games = append(games, BatchGame{Slot: i, New: g.isNew, View: NewView(&g.s, g.legal, g.last, g.hasLast)})
			index = append(index, i)
			g.isNew = false
		}
		if len(games) == 0 {
			return
		}
		err := actGuarded(ctx, a, games, actions[:len(games)])
		if ctx.Err() != nil {
			return
		}
		for k, i := range index {
			g := slots[i]
			if err != nil {
				finish(i, err.Error())
				continue
			}
			act := actions[k]
			if _, serr := g.s.Step(act); serr != nil {
				finish(i, fmt.Sprintf("illegal action %d at move %d: %v", act, g.s.Steps()+1, serr))
				continue
			}
			g.res.Actions = append(g.res.Actions, act)
			g.last, g.hasLast = act, true
			if g.s.Over() {
				finish(i, "")
			}
		}
	}
}

// actGuarded calls a.ActBatch on playBatch's goroutine, where a panic (a
// bug in the batch agent) would end the process: it becomes the call's
// error instead, failing the call's games, and the next call goes on.
func actGuarded(ctx context.Context, a BatchAgent, games []BatchGame, actions []env.Action) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("panic: %v (%s)", v, panicSite())
		}
	}()
	return a.ActBatch(ctx, games, actions)
}

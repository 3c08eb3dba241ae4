package agents

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/spiderenv/spider/env"
)

// Result is one finished game.
type Result struct {
	Seed    uint64        // the deal
	Won     bool          // every run completed
	Score   int           // the final score
	Runs    int           // runs completed (8 wins)
	Moves   int           // actions played, deals included
	Elapsed time.Duration // wall-clock time the game took, the agent's thinking included
	Actions []env.Action  // every action, in order, for records and replays
	// Failure, when not empty, says why the game stopped before its end:
	// an agent outside the process answered an illegal action, too late,
	// or not at all; in an evaluation, an agent in the process chose an
	// illegal action or panicked; or the context ended ("stopped: ...").
	// Such a game is not won; Runs and Moves are the position's when it
	// stopped, and Score too when the context ended it, but a game whose
	// agent failed is counted at env.State.LowestScore, the lowest score
	// it could still have ended with: an agent that froze its score by
	// failing (every move costs a point) would otherwise score better
	// than one that played on.
	Failure string
}

// Play plays the game of seed under r with a to its end (won, lost or
// truncated) and returns the result. The agent is seeded with the deal's
// seed, so a result depends only on (r, seed, agent). It panics if a
// chooses an action that is not legal, which breaks the Agent contract:
// agents in this process are the program's own, and such a move is a bug
// (in an evaluation, and for an agent in another process, the game fails
// instead: Result.Failure); and, as NewGame does, if r is the zero Rules.
func Play(r env.Rules, seed uint64, a Agent) Result { return PlayVisit(r, seed, a, nil) }

// PlayVisit is Play that also calls visit (if not nil) with each decision
// before it is played: the position, its legal actions (in id order) and
// the agent's decision. The position and the slice are valid only during
// the call and must not be changed (copy the State to keep it). The
// position is the whole game, hidden cards included: visit is the
// caller's, never the agent's (a trainer reads what its teacher did). The
// result, and the panic on an illegal action, are Play's.
func PlayVisit(r env.Rules, seed uint64, a Agent, visit func(s *env.State, legal []env.Action, d Decision)) Result {
	return playFrom(context.Background(), env.NewGame(r, seed), seed, a, visit)
}

// PlayFrom plays on from s, a position of the game of seed (from NewGame,
// a record or a parsed position: the zero State is no game), with a until
// the game ends (won, lost or at its step limit, counted from the deal)
// and returns the result of the rest: Actions and Moves count only what a
// played, Score and Runs are the final position's. The agent is seeded
// with the deal's seed and sees no earlier move. It is how a game is
// picked up from a record to ask whether it could still be won. When ctx
// ends it stops within a few moves, the game unfinished and Failure
// saying so. It panics on an illegal action, as Play does, and on the
// zero State.
func PlayFrom(ctx context.Context, s env.State, seed uint64, a Agent) Result {
	if s.Rules() == (env.Rules{}) {
		// It would count as a game over at once, a loss of score 0.
		panic("agents: PlayFrom of the zero State, which is no game")
	}
	return playFrom(ctx, s, seed, a, nil)
}

// MoveBytes is the most memory a game holds while it is played for each
// move made so far: its move list (Result.Actions, 2 bytes a move, and the
// copy append makes as the list grows) and, for greedy and nn: players,
// the positions seen. Measured (heap at its peak over a game of 200,000
// moves or more, garbage included): 4.5 bytes a move for random, 40 for
// greedy and 45 for an nn: player; TestMoveBytes reads 39 held by each of
// the last two. A step limit of 2^30 is 64 GiB a game in play: a command
// that plays games of a step limit it did not choose counts it.
const MoveBytes = 64

// MoveListBytes is the part of MoveBytes a game's move list takes alone:
// what a game in play of a player that remembers nothing (random, first,
// search, or an agent in another process) holds a move. Measured: 4.5
// bytes a move for random.
const MoveListBytes = 5

// checkEvery is how many moves a game plays between looks at its
// context: at search's tens of milliseconds a move a stop is seen within
// a second, and the fastest agents do not pay for a look every move.
const checkEvery = 16

// stopper is an agent whose plans can be cut short when the game's context
// ends (Search).
type stopper interface{ stopOn(done <-chan struct{}) }

// playFrom plays a from s to the game's end; an illegal action panics
// (Play's contract).
func playFrom(ctx context.Context, s env.State, seed uint64, a Agent, visit func(s *env.State, legal []env.Action, d Decision)) Result {
	var res Result
	if err := playInto(ctx, &s, seed, a, visit, &res); err != nil {
		panic("agents: " + a.Name() + " chose an " + err.Error())
	}
	return res
}

// playInto plays a from *s to the game's end into res, move by move, so
// that what was played is there if the agent panics. An illegal action
// stops the game, unplayed, and is returned, with res as the position
// left it.
func playInto(ctx context.Context, s *env.State, seed uint64, a Agent, visit func(s *env.State, legal []env.Action, d Decision), res *Result) (err error) {
	start := time.Now()
	*res = Result{Seed: seed}
	defer func() {
		res.Won = res.Failure == "" && err == nil && s.Status() == env.Won
		res.Score, res.Runs, res.Moves = s.Score(), s.Runs(), len(res.Actions)
		res.Elapsed = time.Since(start)
	}()
	if st, ok := a.(stopper); ok {
		st.stopOn(ctx.Done())
		defer st.stopOn(nil)
	}
	a.Begin(seed)
	var legal []env.Action
	last, hasLast := env.Action(0), false
	for !s.Over() {
		if len(res.Actions)%checkEvery == 0 && ctx.Err() != nil {
			res.Failure = "stopped: " + ctx.Err().Error()
			break
		}
		legal = s.AppendLegal(legal[:0])
		d := a.Act(NewView(s, legal, last, hasLast))
		if visit != nil {
			visit(s, legal, d)
		}
		if _, err := s.Step(d.Action); err != nil {
			return fmt.Errorf("illegal action %d at move %d: %v", d.Action, len(res.Actions)+1, err)
		}
		res.Actions = append(res.Actions, d.Action)
		last, hasLast = d.Action, true
	}
	return nil
}

// playGuarded is playInto for an evaluation's worker goroutines, where a
// panic cannot be recovered by Evaluate's caller and would end the
// process: an illegal action or a panic of the agent (a bug, a nil agent
// from its Maker) fails that game instead (Result.Failure), as an agent
// in another process fails its own, and the evaluation goes on. It
// reports whether the agent panicked: its state is then unknown, and the
// worker makes a new one.
func playGuarded(ctx context.Context, s env.State, seed uint64, a Agent, res *Result) (panicked bool) {
	defer func() {
		if v := recover(); v != nil {
			res.Failure = fmt.Sprintf("panic: %v (%s)", v, panicSite())
			res.Won, panicked = false, true
			res.Score = s.LowestScore()
		}
	}()
	if err := playInto(ctx, &s, seed, a, nil, res); err != nil {
		res.Failure = err.Error()
		res.Score = s.LowestScore()
	}
	return false
}

// panicSite names the function and line a recovered panic came from: the
// first frame of the panicking goroutine's stack outside the runtime, so
// that a failed game's reason points at the agent's bug.
func panicSite() string {
	pc := make([]uintptr, 32)
	frames := runtime.CallersFrames(pc[:runtime.Callers(3, pc)])
	for {
		f, more := frames.Next()
		if !strings.HasPrefix(f.Function, "runtime.") {
			return fmt.Sprintf("%s at %s:%d", f.Function, filepath.Base(f.File), f.Line)
		}
		if !more {
			return "unknown"
		}
	}
}

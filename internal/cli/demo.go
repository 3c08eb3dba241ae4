package cli

import (
	"context"
	"fmt"
	"io"
	"unsafe"

	"github.com/spf13/pflag"

	"github.com/spiderenv/spider/env"
	"github.com/spiderenv/spider/internal/rng"
)

// demoOptions are the demo command's flags.
type demoOptions struct {
	game   env.Options
	seed   uint64
	policy uint64
	show   int
}

func demoCommand(fs *pflag.FlagSet) func(context.Context, []string, io.Reader, io.Writer, io.Writer) error {
	var o demoOptions
	o.game = env.DefaultOptions()
	registerGameFlags(fs, &o.game)
	stepLimitNeeded(fs, "by demo, whose random games must end")
	fs.Uint64Var(&o.seed, "seed", 1, "deal seed")
	fs.Uint64Var(&o.policy, "policy-seed", 1, "seed of the random policy")
	fs.IntVar(&o.show, "show", 20, "boards to show after the first (the rest of the game is played, then the final board)")
	return func(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
		if o.show < 0 {
			return usageError{fmt.Errorf("--show %d is negative", o.show)}
		}
		out := &stickyWriter{w: stdout}
		if err := runDemo(ctx, o, out, stderr); err != nil {
			return err
		}
		return out.failed()
	}
}

// runDemo deals the game of o.seed and plays uniformly random legal
// actions until it ends, showing the first o.show boards and the last; a
// game that runs on past them says how far it is on stderr.
func runDemo(ctx context.Context, o demoOptions, stdout, stderr io.Writer) error {
	r, err := gameRules(o.game)
	if err != nil {
		return err
	}
	if r.MaxSteps() < 0 {
		// Random play seldom ends a game by the rules: without a limit
		// it would run, and its undo history grow, until stopped.
		return usageError{fmt.Errorf("--max-steps %d: the demo's random policy needs a step limit to end a game", o.game.MaxSteps)}
	}
	// Env keeps the episode's undo history, a record a move: a step limit
	// of billions would grow it past the machine's memory before the game
	// ends. The history grows by copying (a quarter more each time, once
	// large), the old copies left as garbage until the collector runs:
	// measured, 476 MB at its peak for 4 million moves of 32-byte records,
	// 3.7 times the records.
	need := 4 * int64(r.MaxSteps()) * int64(unsafe.Sizeof(env.Undo{}))
	if err := checkAvailable(need, fmt.Sprintf("a demo of up to %d moves (a record of each, for undo)", r.MaxSteps()), "lower --max-steps"); err != nil {
		return err
	}
	defer limitToAvailable()() // the collector keeps to what was checked
	e := env.New(r)
	e.Reset(o.seed)
	g := rng.New(o.policy)
	fmt.Fprintf(stdout, "spider demo: %v, deal seed %d, random policy seed %d\n\n%s", r, o.seed, o.policy, e.Render())
	var legal []env.Action
	total := 0.0
	// A game of millions of moves (--max-steps 100000000 --show 0) ran 40 s
	// with nothing said.
	prog := newProgress(stderr)
	defer prog.end()
	for step := 1; ; step++ {
		if err := ctx.Err(); err != nil {
			return stopped{fmt.Sprintf("stopped after %d moves", step-1), err}
		}
		if step%demoProgressEvery == 0 && prog.due(step, r.MaxSteps()) {
			prog.write(fmt.Sprintf("demo: %d moves of at most %d", step, r.MaxSteps()))
		}
		legal = env.AppendMasked(legal[:0], e.Mask())
		a := legal[g.IntN(len(legal))]
		_, reward, term, trunc, info, err := e.Step(a)
		if err != nil {
			return err
		}
		total += reward
		if term || trunc {
			prog.end() // the progress line ends before the final board
		}
		if step <= o.show || term || trunc {
			if hidden := step - o.show - 1; hidden > 0 {
				fmt.Fprintf(stdout, "\n... (%d moves not shown)\n", hidden)
			}
			fmt.Fprintf(stdout, "\n> %v  reward %+g\n%s", a, reward, e.Render())
		}
		if term || trunc {
			end := "truncated at the step limit"
			if term {
				end = info.Status.String()
			}
			fmt.Fprintf(stdout, "\n%s after %d moves: score %d, return %+g, %d runs completed, %d face-down cards left\n",
				end, info.Moves, info.Score, total, info.Runs, info.FaceDown)
			return nil
		}
	}
}

// demoProgressEvery is how many moves pass between two looks at the
// clock for progress: a move takes a few hundred nanoseconds.
const demoProgressEvery = 1 << 14

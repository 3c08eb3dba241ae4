package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/spiderenv/spider/env"
	"github.com/spiderenv/spider/record"
)

// replayOptions are the replay command's flags.
type replayOptions struct {
	every int
}

func replayCommand(fs *pflag.FlagSet) func(context.Context, []string, io.Reader, io.Writer, io.Writer) error {
	var o replayOptions
	fs.IntVar(&o.every, "every", 1, "show the board every this many moves (0: only the first and last)")
	return func(ctx context.Context, args []string, _ io.Reader, stdout, _ io.Writer) error {
		return runReplay(ctx, o, args[0], stdout)
	}
}

// runReplay shows a recorded game move by move and checks it ends as
// recorded.
func runReplay(ctx context.Context, o replayOptions, path string, stdout io.Writer) error {
	g, err := record.Load(path)
	if err != nil {
		return err
	}
	r, _ := g.RulesOf()
	first := env.NewGame(r, g.Seed)
	fmt.Fprintf(stdout, "%s: %v, deal %d, played by %s, %d actions\n\n%s", path, r, g.Seed, g.Player, len(g.Actions), first.Render())
	final, err := record.Replay(g, func(i int, a env.Action, s *env.State) {
		if ctx.Err() != nil {
			return
		}
		if (o.every > 0 && (i+1)%o.every == 0) || i == len(g.Actions)-1 {
			fmt.Fprintf(stdout, "\n%d. %v\n%s", i+1, a, s.Render())
		}
	})
	if err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	fmt.Fprintf(stdout, "\nreplayed exactly: %v, score %d, %d runs in %d moves\n", final.Status(), final.Score(), final.Runs(), final.Steps())
	return ctx.Err()
}

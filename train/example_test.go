package train_test

import (
	"context"
	"fmt"

	"github.com/spiderenv/spider/train"
)

// Train a tiny network for two PPO iterations after a one-game warm start.
func Example() {
	c := train.DefaultConfig()
	c.Game.MaxSteps, c.Game.FaceUpSlots, c.Hidden = 50, 2, []int{8}
	c.Games, c.Rollout, c.Minibatch, c.Epochs = 4, 16, 32, 1
	c.CloneGames, c.CloneEpochs = 1, 1
	t, err := train.New(c)
	if err != nil {
		panic(err)
	}
	defer t.Close()
	stop := func(iter int, _ int64) bool { return iter >= 2 }
	if err := t.Run(context.Background(), stop, nil); err != nil {
		panic(err)
	}
	fmt.Println("iterations:", t.Iterations(), "env steps:", t.EnvSteps(), "phases:", t.History[0].Phase, t.History[1].Phase)
	// Output:
	// iterations: 2 env steps: 128 phases: clone ppo
}

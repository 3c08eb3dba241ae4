// Command fitvalue fits the learned one-suit value of search
// (agents/value.go): it plays search with its hand-set value alone
// (agents.Search.HandOnly) on one-suit tuning deals, takes every n-th
// position of each game with whether the game was won, and fits a
// logistic regression of the outcome on agents.ValueFeatures by iteratively
// reweighted least squares with an L2 penalty (not on the bias). It prints
// the weights as the Go literal of valueWeights. Progress goes to stderr.
//
//	go run ./agents/internal/fitvalue -seeds 2001-2398,3001-3405 -every 2
//
// Dev tool: the product does not run it.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/spiderenv/spider/agents"
	"github.com/spiderenv/spider/env"
)

func main() {
	seeds := flag.String("seeds", "2001-2398,3001-3405", "tuning seeds: comma-separated ranges")
	every := flag.Int("every", 2, "take every n-th position of a game")
	l2 := flag.Float64("l2", 1.0, "L2 penalty on the weights (not the bias)")
	workers := flag.Int("workers", runtime.NumCPU(), "games played at once")
	flag.Parse()
	list, err := parseSeeds(*seeds)
	if err == nil && (*every < 1 || *workers < 1 || *l2 < 0) {
		err = fmt.Errorf("-every and -workers must be positive, -l2 not negative")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "fitvalue:", err)
		os.Exit(2)
	}
	x, y := play(list, *every, *workers)
	w, err := fit(x, y, *l2)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fitvalue:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "fitvalue: %d positions of %d games, mean log-loss %.4f\n", len(y), len(list), logLoss(x, y, w))
	fmt.Println("var valueWeights = [NumValueFeatures]float64{")
	for i, v := range w {
		fmt.Printf("\t%.5f, // %s\n", v, agents.ValueFeatureNames[i])
	}
	fmt.Println("}")
}

// parseSeeds reads "a-b,c,d-e".
func parseSeeds(s string) ([]uint64, error) {
	var out []uint64
	for _, part := range strings.Split(s, ",") {
		lo, hi, ok := strings.Cut(part, "-")
		if !ok {
			hi = lo
		}
		a, err1 := strconv.ParseUint(lo, 10, 64)
		b, err2 := strconv.ParseUint(hi, 10, 64)
		if err1 != nil || err2 != nil || a == 0 || b < a || b-a > 1e6 {
			return nil, fmt.Errorf("bad seed range %q", part)
		}
		for v := a; v <= b; v++ {
			out = append(out, v)
		}
	}
	return out, nil
}

// play plays search (hand-set value) on every seed and returns the
// features of every n-th position and the games' outcomes, in seed order.
func play(seeds []uint64, every, workers int) ([][agents.NumValueFeatures]float64, []float64) {
	r, err := env.NewRules(env.Options{Suits: 1})
	if err != nil {
		panic(err)
	}
	type game struct {
		x [][agents.NumValueFeatures]float64
		y []float64
	}
	games := make([]game, len(seeds))
	var next, done int
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]env.Card, env.NumCards)
			for {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= len(seeds) {
					return
				}
				res := agents.Play(r, seeds[i], &agents.Search{HandOnly: true})
				won := 0.0
				if res.Won {
					won = 1
				}
				s := env.NewGame(r, seeds[i])
				g := &games[i]
				for j, act := range res.Actions {
					if j%every == 0 {
						var f [agents.NumValueFeatures]float64
						agents.ValueFeatures(&f, &s, -1, 0, buf)
						g.x = append(g.x, f)
						g.y = append(g.y, won)
					}
					s.Step(act)
				}
				mu.Lock()
				done++
				fmt.Fprintf(os.Stderr, "fitvalue: %d/%d games\n", done, len(seeds))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	var x [][agents.NumValueFeatures]float64
	var y []float64
	for _, g := range games {
		x = append(x, g.x...)
		y = append(y, g.y...)
	}
	return x, y
}

// Command fitvalue fits the learned value of search (agents/value.go):
// it plays search on classic tuning deals (one suit unless -suits; -nodes
// sets its budget), takes every
// n-th position of each game with whether the game was won, and fits a
// logistic regression of the outcome on agents.ValueFeatures by
// iteratively reweighted least squares with an L2 penalty (not on the
// bias). It prints the weights as a Go literal (valueWeights; on N > 1
// suits valueWeightsN: search has valueWeights2, used on classic two
// suits; four suits' fit was tried and not kept, docs/results.md, Tried).
// Progress goes to stderr.
//
// -player search-hand plays search with its hand-set value alone
// (agents.Search.HandOnly), the first fit's player; -player search plays
// it with the learned value it has, a round of policy iteration (tried,
// not kept: docs/results.md "A second round"). -csv also writes the
// positions (seed, move, won, features), and -from fits on such files
// instead of playing, to fit on the games of several players or rounds.
// -draw plays another draw of search's samples (agents.Search.Draw), so
// that the same deals played in several draws give games of one deal
// that part, won and lost (the within-deal fit of docs/results.md, Tried).
//
//	go run ./agents/internal/fitvalue -seeds 2001-2398,3001-3405 -every 2   # today's one-suit weights
//	go run ./agents/internal/fitvalue -suits 2 -seeds 2001-2400  # today's two-suit weights
//	go run ./agents/internal/fitvalue -suits 4 -nodes 5000 -seeds 2001-2400  # four suits: tried, not kept
//
// Dev tool: the product does not run it.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/spiderenv/spider/agents"
	"github.com/spiderenv/spider/env"
	"github.com/spiderenv/spider/internal/atomicfile"
)

func main() {
	seeds := flag.String("seeds", "2001-2398,3001-3405", "tuning seeds: comma-separated ranges")
	every := flag.Int("every", 2, "take every n-th position of a game")
	l2 := flag.Float64("l2", 1.0, "L2 penalty on the weights (not the bias)")
	workers := flag.Int("workers", runtime.NumCPU(), "games played at once")
	player := flag.String("player", "search-hand", "whose games to fit on: search-hand (the hand-set value) or search (the learned value, a round of policy iteration)")
	csvPath := flag.String("csv", "", "also write the positions to this CSV file: seed, move, won, then the features")
	from := flag.String("from", "", "fit on the positions of these comma-separated CSV files (written by -csv) instead of playing games")
	suits := flag.Int("suits", 1, "suits of the classic games played: 1, 2 or 4 (with -from it only names the printed weights)")
	nodes := flag.Int("nodes", 0, "search's positions a plan (0: its default)")
	draw := flag.Uint64("draw", 0, "the draw of search's samples (agents.Search.Draw; 0: the draw every eval reports)")
	flag.Parse()
	list, err := parseSeeds(*seeds)
	if err == nil && (*every < 1 || *workers < 1 || *l2 < 0 || *nodes < 0) {
		err = fmt.Errorf("-every and -workers must be positive, -l2 and -nodes not negative")
	}
	if err == nil && *suits != 1 && *suits != 2 && *suits != 4 {
		err = fmt.Errorf("-suits must be 1, 2 or 4, not %d", *suits)
	}
	if err == nil && *player != "search-hand" && *player != "search" {
		err = fmt.Errorf("-player must be search-hand or search, not %q", *player)
	}
	if err == nil && *player == "search" && *suits == 4 && *from == "" {
		// Search has no learned value on four suits: there it would play
		// search-hand's games under another name.
		err = fmt.Errorf("-player search plays the learned value, which search has on one and two suits only: use -player search-hand with -suits %d", *suits)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "fitvalue:", err)
		os.Exit(2)
	}
	var x [][agents.NumValueFeatures]float64
	var y []float64
	var at [][2]uint64
	if *from != "" {
		x, y, at, err = readCSVs(strings.Split(*from, ","))
		if err != nil {
			fmt.Fprintln(os.Stderr, "fitvalue:", err)
			os.Exit(1)
		}
	} else {
		x, y, at = play(list, *suits, *nodes, *draw, *every, *workers, *player == "search-hand")
	}
	if *csvPath != "" {
		if err := writeCSV(*csvPath, x, y, at); err != nil {
			fmt.Fprintln(os.Stderr, "fitvalue:", err)
			os.Exit(1)
		}
	}
	w, err := fit(x, y, *l2)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fitvalue:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "fitvalue: %d positions of %d games, mean log-loss %.4f\n", len(y), countGames(at), logLoss(x, y, w))
	name := "valueWeights"
	if *suits != 1 {
		name += strconv.Itoa(*suits)
	}
	fmt.Printf("var %s = [NumValueFeatures]float64{\n", name)
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

// play plays search (with the hand-set value alone when handOnly) on every
// seed and returns the features of every n-th position and the games'
// outcomes, in seed order, with each position's seed and move number.
func play(seeds []uint64, suits, nodes int, draw uint64, every, workers int, handOnly bool) ([][agents.NumValueFeatures]float64, []float64, [][2]uint64) {
	r, err := env.NewRules(env.Options{Suits: suits})
	if err != nil {
		panic(err)
	}
	type game struct {
		x  [][agents.NumValueFeatures]float64
		y  []float64
		at [][2]uint64
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
				res := agents.Play(r, seeds[i], &agents.Search{HandOnly: handOnly, Nodes: nodes, Draw: draw})
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
						g.at = append(g.at, [2]uint64{seeds[i], uint64(j)})
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
	var at [][2]uint64
	for _, g := range games {
		x = append(x, g.x...)
		y = append(y, g.y...)
		at = append(at, g.at...)
	}
	return x, y, at
}

// writeCSV writes one line a position to path, through a temporary file
// (atomicfile), so an interrupted run leaves no half file.
func writeCSV(path string, x [][agents.NumValueFeatures]float64, y []float64, at [][2]uint64) error {
	var w bytes.Buffer
	for i := range x {
		fmt.Fprintf(&w, "%d,%d,%g", at[i][0], at[i][1], y[i])
		for _, v := range x[i] {
			fmt.Fprintf(&w, ",%g", v)
		}
		w.WriteByte('\n')
	}
	return atomicfile.Write(path, w.Bytes())
}

// countGames counts the games among the positions, which come a game at a
// time with their moves in order: a new game starts where the seed changes
// or the move number does not grow. Counting distinct seeds would count
// once the games of two players (or rounds) on the same seed, which -from
// fits on together.
func countGames(at [][2]uint64) int {
	n := 0
	for i, a := range at {
		if i == 0 || a[0] != at[i-1][0] || a[1] <= at[i-1][1] {
			n++
		}
	}
	return n
}

// readCSVs reads positions written by writeCSV from every path in turn.
func readCSVs(paths []string) ([][agents.NumValueFeatures]float64, []float64, [][2]uint64, error) {
	var x [][agents.NumValueFeatures]float64
	var y []float64
	var at [][2]uint64
	for _, path := range paths {
		var err error
		if x, y, at, err = readCSV(path, x, y, at); err != nil {
			return nil, nil, nil, err
		}
	}
	if len(y) == 0 {
		return nil, nil, nil, fmt.Errorf("no positions in %s", strings.Join(paths, ", "))
	}
	return x, y, at, nil
}

// readCSV appends the positions of one file to x, y and at. A line that
// is not a seed, a move, an outcome of 0 or 1 and NumValueFeatures finite
// numbers is an error naming the file and line.
func readCSV(path string, x [][agents.NumValueFeatures]float64, y []float64, at [][2]uint64) ([][agents.NumValueFeatures]float64, []float64, [][2]uint64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		bad := func(why string) error { return fmt.Errorf("%s:%d: %s", path, line, why) }
		fields := strings.Split(sc.Text(), ",")
		if len(fields) != 3+agents.NumValueFeatures {
			return nil, nil, nil, bad(fmt.Sprintf("%d fields, want %d", len(fields), 3+agents.NumValueFeatures))
		}
		seed, err1 := strconv.ParseUint(fields[0], 10, 64)
		move, err2 := strconv.ParseUint(fields[1], 10, 64)
		if err1 != nil || err2 != nil || (fields[2] != "0" && fields[2] != "1") {
			return nil, nil, nil, bad("want a seed, a move and an outcome of 0 or 1 first")
		}
		var v [agents.NumValueFeatures]float64
		for i := range v {
			v[i], err = strconv.ParseFloat(fields[3+i], 64)
			if err != nil || math.IsNaN(v[i]) || math.IsInf(v[i], 0) {
				return nil, nil, nil, bad(fmt.Sprintf("feature %d is not a finite number", i))
			}
		}
		won := 0.0
		if fields[2] == "1" {
			won = 1
		}
		x, y, at = append(x, v), append(y, won), append(at, [2]uint64{seed, move})
	}
	if err := sc.Err(); err != nil {
		return nil, nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return x, y, at, nil
}

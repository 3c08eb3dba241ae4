package env_test

import (
	"fmt"
	"math"
	"runtime"
	"testing"

	"github.com/spiderenv/spider/env"
	"github.com/spiderenv/spider/internal/alloccount"
	"github.com/spiderenv/spider/internal/rng"
)

// fewestMallocs runs play three times and returns the fewest allocations
// one run made: a goroutine of the runtime may allocate during one run,
// but a path that allocates does so in each, since every run plays the
// same games.
func fewestMallocs(play func() uint64) uint64 {
	fewest := uint64(math.MaxUint64)
	for range 3 {
		fewest = min(fewest, play())
	}
	return fewest
}

// warmBatch steps b once with legal actions, outside any count: a worker
// goroutine allocates when it first waits for work, which on one thread
// (GOMAXPROCS=1) it would do inside the counted loop.
func warmBatch(t *testing.T, b *env.Batch) {
	t.Helper()
	runtime.Gosched()
	g := rng.New(1)
	actions := make([]env.Action, b.N())
	pickActions(&g, b, actions)
	if err := b.Step(actions); err != nil {
		t.Fatal(err)
	}
}

// TestEnvPathsDoNotAllocate plays whole games with Env.Step and Env.Undo
// under both rule sets, every suit count, both encodings, shaping and the
// clock, and counts every allocation: none, also on the paths random play
// reaches seldom (a completed run, an undone deal, the end of a game).
func TestEnvPathsDoNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector slows these loops tenfold; they run in the plain test pass")
	}
	for _, o := range []env.Options{
		{Suits: 1, MaxSteps: 1000},
		{Suits: 1, MaxSteps: 1000, Encoding: env.Float32, Shaping: env.Progress, ShapingGamma: 0.99, TimePerActionMs: 1500},
		{RuleSet: env.Cardems, Suits: 1, MaxSteps: 1000, Shaping: env.Progress},
		{RuleSet: env.Cardems, Suits: 2, MaxSteps: 300, Encoding: env.Float32},
		{Suits: 4, MaxSteps: 300},
	} {
		r := env.MustRules(o)
		var runs, deals, undos, ends int
		n := fewestMallocs(func() uint64 {
			e := env.New(r)
			g := rng.New(1)
			legal := make([]env.Action, 0, env.NumActions)
			runs, deals, undos, ends = 0, 0, 0, 0
			var bad error
			n := alloccount.Mallocs(func() {
				e.Reset(0)
				for step := range 20000 {
					legal = env.AppendMasked(legal[:0], e.Mask())
					a := legal[g.IntN(len(legal))]
					_, _, term, trunc, info, err := e.Step(a)
					if err != nil {
						bad = err
						return
					}
					if a == env.Deal {
						deals++
					}
					if step%5 == 4 || term || trunc {
						// Undo after a deal, a completed run or the end of
						// the game as well as after a move.
						if _, _, err := e.Undo(); err != nil {
							bad = err
							return
						}
						undos++
					}
					if term || trunc {
						runs += info.Runs
						ends++
						e.Reset(g.Uint64())
					}
				}
			})
			if bad != nil {
				t.Fatalf("%v: %v", r, bad)
			}
			return n
		})
		if n != 0 {
			t.Errorf("%v: %d allocations in 20,000 steps", r, n)
		}
		if deals == 0 || undos == 0 || ends == 0 || o.Suits == 1 && runs == 0 {
			t.Errorf("%v: %d deals, %d undos, %d game ends, %d runs completed: the games missed a path", r, deals, undos, ends, runs)
		}
	}
}

// One suit, one move from the end: in the first, 2>1x1 completes the
// eighth run (won); in the second, 1>2x1 puts the 5 on the 6, turns the
// King, and leaves no move and no deal (lost).
const (
	oneMoveToWin = `1: | Ks Qs Js Ts 9s 8s 7s 6s 5s 4s 3s 2s
2: | As
runs: s s s s s s s`
	oneMoveToLose = `1: Ks | 5s
2: | 6s
3: | As
4: | As
5: | 3s
6: | 3s
7: | 8s
8: | 8s
9: | Ts
10: | Ts`
)

// TestBatchPathsDoNotAllocate steps batches with Step and StepSome (the
// actions drawn by SampleLegal, presampled or not, or from the masks) under
// every autoreset mode and illegal-action policy (sending illegal actions
// to the policies that take them), both rule sets and encodings, shaping
// and legal lists, resetting ended games with ResetGames where autoreset
// is off, and counts every allocation. Games are also won and lost at a
// move, from positions put in by Restore.
func TestBatchPathsDoNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector slows these loops tenfold; they run in the plain test pass")
	}
	const n = 32
	for _, o := range []env.Options{
		// 600 steps a game: every game ends and starts again within the
		// 1,000 batch steps, and random play still completes runs.
		{Suits: 1, MaxSteps: 600},
		{RuleSet: env.Cardems, Suits: 4, MaxSteps: 100, Encoding: env.Float32, Shaping: env.Progress},
	} {
		r := env.MustRules(o)
		// Cardems steps on two workers whatever the machine: with one CPU
		// (go test -cpu 1) the default steps on the caller, and the hand-off
		// to the workers would never be counted.
		workers := 0
		if o.RuleSet == env.Cardems {
			workers = 2
		}
		for _, mode := range []env.Autoreset{env.NextStep, env.SameStep, env.Disabled} {
			for _, ill := range []env.IllegalPolicy{env.RefuseIllegal, env.NoopIllegal, env.LoseIllegal} {
				var runs, illegal, ends int
				allocs := fewestMallocs(func() uint64 {
					b := newBatch(t, r, env.BatchOptions{N: n, Workers: workers, Autoreset: mode, Illegal: ill, Legal: o.Encoding == env.Compact, Presample: o.RuleSet == env.Cardems})
					b.Reset(1)
					warmBatch(t, b)
					g := rng.New(7)
					actions := make([]env.Action, n)
					ids := make([]int32, 0, n)
					reset := make([]bool, n)
					lastRuns := make([]uint8, n)
					runs, illegal, ends = 0, 0, 0
					var bad error
					m := alloccount.Mallocs(func() {
						for step := range 1000 {
							if step%3 == 0 {
								b.SampleLegal(actions) // the batch's own sampler, presampled in the cardems batches
							} else {
								pickActions(&g, b, actions)
							}
							if ill != env.RefuseIllegal {
								for i := range actions {
									if (step+i)%7 == 0 && !b.Ended(i) {
										actions[i] = illegalAction(b, i)
									}
								}
							}
							var err error
							if step%2 == 0 {
								err = b.Step(actions)
							} else {
								ids = ids[:0]
								for i := step / 2 % 2; i < n; i += 2 { // the odd games, then the even ones
									ids = append(ids, int32(i))
								}
								err = b.StepSome(actions, ids)
							}
							if err != nil {
								bad = err
								return
							}
							for i := range n {
								if b.Illegal[i] {
									illegal++
								}
								if b.Runs[i] > lastRuns[i] {
									runs++
								}
								lastRuns[i] = b.Runs[i]
								if b.Terminated[i] || b.Truncated[i] {
									ends++
								}
								reset[i] = mode == env.Disabled && b.Ended(i)
							}
							if mode == env.Disabled {
								if err := b.ResetGames(reset); err != nil {
									bad = err
									return
								}
							}
						}
					})
					if bad != nil {
						t.Fatalf("%v %v %v: %v", r, mode, ill, bad)
					}
					return m
				})
				if allocs != 0 {
					t.Errorf("%v, autoreset %v, illegal %v: %d allocations in 1,000 batch steps", r, mode, ill, allocs)
				}
				t.Logf("%v, autoreset %v, illegal %v: %d game ends, %d illegal actions, %d runs completed", r, mode, ill, ends, illegal, runs)
				// Under LoseIllegal the illegal actions end games too soon
				// for random play to complete runs; the other policies do.
				if ends == 0 || (ill != env.RefuseIllegal) != (illegal > 0) || o.Suits == 1 && ill != env.LoseIllegal && runs == 0 {
					t.Errorf("%v, autoreset %v, illegal %v: %d game ends, %d illegal actions, %d runs completed: the games missed a path", r, mode, ill, ends, illegal, runs)
				}
			}
		}
	}

	// Won and lost at a move.
	r := env.MustRules(env.Options{Suits: 1, MaxSteps: 1000})
	won, err := env.ParseState(r, oneMoveToWin)
	if err != nil {
		t.Fatal(err)
	}
	lost, err := env.ParseState(r, oneMoveToLose)
	if err != nil {
		t.Fatal(err)
	}
	win, err := env.ParseAction("2>1x1")
	if err != nil {
		t.Fatal(err)
	}
	lose, err := env.ParseAction("1>2x1")
	if err != nil {
		t.Fatal(err)
	}
	wonText, _ := won.MarshalText()
	lostText, _ := lost.MarshalText()
	for _, mode := range []env.Autoreset{env.NextStep, env.SameStep, env.Disabled} {
		var wins, losses int
		allocs := fewestMallocs(func() uint64 {
			b := newBatch(t, r, env.BatchOptions{N: 4, Autoreset: mode, Legal: true})
			b.Reset(1)
			warmBatch(t, b)
			snap, err := b.Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			snap.States[1], snap.States[2] = string(wonText), string(lostText)
			actions := make([]env.Action, 4)
			reset := []bool{false, true, true, false}
			g := rng.New(5)
			wins, losses = 0, 0
			total := uint64(0)
			for range 20 {
				if err := b.Restore(snap); err != nil { // Restore allocates; it is not counted
					t.Fatal(err)
				}
				pickActions(&g, b, actions)
				actions[1], actions[2] = win, lose
				var bad error
				total += alloccount.Mallocs(func() {
					if bad = b.Step(actions); bad != nil {
						return
					}
					if b.EpisodeWon[1] && b.Terminated[1] {
						wins++
					}
					if b.Terminated[2] && !b.EpisodeWon[2] {
						losses++
					}
					// The next step starts the ended games again, or
					// ResetGames does when autoreset is off.
					if mode == env.Disabled {
						bad = b.ResetGames(reset)
						return
					}
					pickActions(&g, b, actions)
					bad = b.Step(actions)
				})
				if bad != nil {
					t.Fatalf("%v: %v", mode, bad)
				}
			}
			return total
		})
		if allocs != 0 {
			t.Errorf("autoreset %v: %d allocations in 20 games won and 20 lost at a move", mode, allocs)
		}
		if wins != 20 || losses != 20 {
			t.Errorf("autoreset %v: %d of 20 games won and %d of 20 lost at the move", mode, wins, losses)
		}
	}
}

// TestCardemsDealPastEmptyColumnDoesNotAllocate: a cardems deal passes
// an empty column, which random play seldom leaves at a deal, without
// allocating.
func TestCardemsDealPastEmptyColumnDoesNotAllocate(t *testing.T) {
	r := env.MustRules(env.Options{RuleSet: env.Cardems, Suits: 1, MaxSteps: 1000})
	text := "stock: 2s 3s 4s 5s 6s 7s 8s 9s Ts Js Qs Ks 2s 3s 4s 5s 6s 7s 8s 9s\n"
	for c := 1; c <= 9; c++ {
		// No card more often than a deck has it: Restore refuses that.
		text += fmt.Sprintf("%d: %s | %ds\n", c, []string{"Ks", "Qs"}[c%2], c%4+2)
	}
	s, err := env.ParseState(r, text)
	if err != nil {
		t.Fatal(err)
	}
	b := newBatch(t, r, env.BatchOptions{N: 2, Legal: true})
	b.Reset(1)
	warmBatch(t, b)
	snap, err := b.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	snapText, _ := s.MarshalText()
	snap.States[0], snap.States[1] = string(snapText), string(snapText)
	actions := []env.Action{env.Deal, env.Deal}
	allocs := fewestMallocs(func() uint64 {
		total := uint64(0)
		for range 20 {
			if err := b.Restore(snap); err != nil { // Restore allocates; it is not counted
				t.Fatal(err)
			}
			var bad error
			total += alloccount.Mallocs(func() { bad = b.Step(actions) })
			if bad != nil {
				t.Fatal(bad)
			}
			if st := b.State(0); st.StockLeft() != 11 || st.Height(9) != 0 {
				t.Fatalf("the deal left %d cards in the stock and %d on column 10; want 11 and 0", st.StockLeft(), st.Height(9))
			}
		}
		return total
	})
	if allocs != 0 {
		t.Errorf("%d allocations in 40 deals past an empty column", allocs)
	}
}

// illegalAction returns an action game i of b cannot play now.
func illegalAction(b *env.Batch, i int) env.Action {
	for a, ok := range b.Masks[i*env.NumActions : (i+1)*env.NumActions] {
		if ok == 0 {
			return env.Action(a)
		}
	}
	panic("every action is legal")
}

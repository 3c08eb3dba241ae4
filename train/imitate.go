package train

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/spiderenv/spider/agents"
	"github.com/spiderenv/spider/env"
	"github.com/spiderenv/spider/internal/rng"
)

// labelled is one game of the imitation data: the deal, the moves played
// from it, and the teacher's move at each position reached. In the warm
// start's games the teacher plays its own moves, so the two lists agree; in
// a DAgger round the network plays and the teacher only labels. The
// positions are not stored: they replay from the deal, so a checkpoint
// holds four bytes a position.
type labelled struct {
	Seed   uint64       `msgpack:"seed"`
	Played []env.Action `msgpack:"played"`
	Labels []env.Action `msgpack:"labels"`
	Won    bool         `msgpack:"won"`
	Runs   int          `msgpack:"runs"`
	Score  int          `msgpack:"score"` // at the end of Played
}

// daggerMoves caps the moves of a network's game in a DAgger round: a game
// still going after this many has usually stopped making progress, and its
// positions would crowd out the rest.
const daggerMoves = 500

// sample is one row of imitation data, replayed from a labelled game.
// Its value target is ret plus, for a game cut before its end (with
// CloneBootstrap), tail times the value of the position it was cut at,
// cuts[cut] of samples' answer: tail is Gamma^k, k moves from this
// position to the cut, and 0 for a game that ended.
type sample struct {
	s    env.State
	a    env.Action
	ret  float32
	tail float32
	cut  int32
}

// collect runs play(k) for k in [0, n) on one goroutine per core and
// returns the games in k order, so the data does not depend on the core
// count. Each goroutine gets its own agents from makers. A cancelled ctx
// stops it between games. done, if not nil, hears 0 first, then the count
// of games finished after each one, one call at a time; a game that ends
// once ctx has (cut short) is not counted.
func collect(ctx context.Context, n int, play func(k int, teacher, player agents.Agent) labelled, teacherMaker, playerMaker agents.Maker, done func(int)) ([]labelled, error) {
	out := make([]labelled, n)
	next := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	finished := 0
	if done != nil {
		done(0)
	}
	for range min(runtime.GOMAXPROCS(0), n) {
		var teacher, player agents.Agent
		if teacherMaker != nil {
			teacher = teacherMaker()
		}
		if playerMaker != nil {
			player = playerMaker()
		}
		wg.Go(func() {
			for k := range next {
				out[k] = play(k, teacher, player)
				if done != nil && ctx.Err() == nil {
					mu.Lock()
					finished++
					done(finished)
					mu.Unlock()
				}
			}
		})
	}
	var err error
	for k := range n {
		if err = ctx.Err(); err != nil {
			break
		}
		next <- k
	}
	close(next)
	wg.Wait()
	return out, err
}

// teacherGame is the teacher playing deal seed to its end, as
// agents.Play plays it, or until ctx ends: a search teacher's game can
// last seconds, and a stopped run must not wait for it (the phase is
// abandoned, so the cut game is never used). With CloneIdle it also ends
// after that many moves in a row without progress.
func (t *Trainer) teacherGame(ctx context.Context, seed uint64, teacher agents.Agent) labelled {
	g := labelled{Seed: seed}
	s := env.NewGame(t.rules, seed)
	teacher.Begin(seed)
	var legal []env.Action
	last, hasLast := env.Action(0), false
	idle := 0
	for !s.Over() && ctx.Err() == nil && !t.idleOut(idle) {
		legal = s.AppendLegal(legal[:0])
		a := teacher.Act(agents.NewView(&s, legal, last, hasLast)).Action
		before := s
		if _, err := s.Step(a); err != nil {
			panic("train: the teacher " + teacher.Name() + " chose an illegal action: " + err.Error())
		}
		idle = idleAfter(idle, &before, &s, a)
		g.Played = append(g.Played, a)
		last, hasLast = a, true
	}
	g.Labels = g.Played
	g.Won, g.Runs, g.Score = s.Status() == env.Won, s.Runs(), s.Score()
	return g
}

// daggerGame is the network playing deal seed (as agents.Neural plays, for
// at most daggerMoves moves, and with CloneIdle until that many moves in a
// row made no progress) while the teacher labels every position it
// reaches with the move it would play there. The teacher follows the game
// as if it were playing it (seeded once, from the deal): search keeps its
// plan while the network plays the planned moves and plans again where the
// network leaves it, which costs a fraction of planning afresh at every
// position. The teacher is search or greedy, never the oracle: it sees what
// a player sees.
func (t *Trainer) daggerGame(ctx context.Context, seed uint64, teacher, player agents.Agent) labelled {
	g := labelled{Seed: seed}
	s := env.NewGame(t.rules, seed)
	player.Begin(seed)
	teacher.Begin(seed)
	var legal []env.Action
	last, hasLast := env.Action(0), false
	idle := 0
	for i := 0; !s.Over() && i < daggerMoves && ctx.Err() == nil && !t.idleOut(idle); i++ {
		legal = s.AppendLegal(legal[:0])
		label := teacher.Act(agents.NewView(&s, legal, last, hasLast)).Action
		a := player.Act(agents.NewView(&s, legal, last, hasLast)).Action
		before := s
		if _, err := s.Step(a); err != nil {
			panic("train: the network chose an illegal action: " + err.Error())
		}
		idle = idleAfter(idle, &before, &s, a)
		g.Played = append(g.Played, a)
		g.Labels = append(g.Labels, label)
		last, hasLast = a, true
	}
	g.Won, g.Runs, g.Score = s.Status() == env.Won, s.Runs(), s.Score()
	return g
}

// equivalents appends to dst the legal actions that do what a does: a
// itself and, for a move, the same cards from the same column onto
// another column whose top card is the same card (rank and suit), or
// onto another empty column. Which of them a teacher picks is its own
// tie-breaking, which the network can neither see nor needs to copy.
func equivalents(dst []env.Action, s *env.State, a env.Action) []env.Action {
	dst = append(dst, a)
	if a.IsDeal() {
		return dst
	}
	src, to, n := a.Move()
	for d := range env.NumColumns {
		if d == src || d == to {
			continue
		}
		// Top is NoCard for an empty column, so this also pairs empty
		// destinations.
		if s.Top(d) == s.Top(to) {
			if b := env.MoveAction(src, d, n); s.Legal(b) {
				dst = append(dst, b)
			}
		}
	}
	return dst
}

// samples replays games into rows: each position with its label and the
// discounted return of the score changes that followed it in the game.
// With CloneBootstrap it also returns the positions the games that did not
// end were cut at, whose values end those games' returns (sample's tail).
func (t *Trainer) samples(games []labelled) ([]sample, []env.State, error) {
	c := t.Config
	n := 0
	for _, g := range games {
		n += len(g.Played)
	}
	out := make([]sample, 0, n)
	var cuts []env.State
	for _, g := range games {
		if len(g.Labels) != len(g.Played) {
			return nil, nil, fmt.Errorf("train: imitation game %d has %d labels for %d moves", g.Seed, len(g.Labels), len(g.Played))
		}
		first := len(out)
		s := env.NewGame(t.rules, g.Seed)
		for i, a := range g.Played {
			out = append(out, sample{s: s, a: g.Labels[i]})
			if !s.Legal(g.Labels[i]) {
				return nil, nil, fmt.Errorf("train: imitation game %d: label %d of move %d is illegal", g.Seed, g.Labels[i], i)
			}
			if _, err := s.Step(a); err != nil {
				return nil, nil, fmt.Errorf("train: imitation game %d, move %d: %v", g.Seed, i, err)
			}
		}
		// A game the rules did not end goes on past its last move, as PPO
		// takes a game the step limit cuts: its return continues with the
		// value of the position it stopped at.
		if c.CloneBootstrap && !s.Terminated() && len(out) > first {
			tail := float32(1)
			for i := len(out) - 1; i >= first; i-- {
				tail *= float32(c.Gamma)
				out[i].tail, out[i].cut = tail, int32(len(cuts))
			}
			cuts = append(cuts, s)
		}
		// Each move's reward is the score change it made (up to the next
		// position's score, and the game's last score after the last
		// move), shaped as the run's games shape it, so that the value head
		// PPO starts from already predicts the returns PPO will see, unless
		// CloneUnshapedValue asks for the score's changes alone.
		potential := t.rules.Potential
		if c.CloneUnshapedValue {
			potential = func(*env.State) float32 { return 0 }
		}
		var ret float32
		next, nextPhi := s.Score(), potential(&s)
		gs := float32(t.rules.ShapingGamma())
		for i := len(out) - 1; i >= first; i-- {
			phi := potential(&out[i].s)
			reward := (float32(next-out[i].s.Score()) + gs*nextPhi - phi) * float32(c.RewardScale)
			ret = reward + float32(c.Gamma)*ret
			out[i].ret = ret
			next, nextPhi = out[i].s.Score(), phi
		}
	}
	return out, cuts, nil
}

// target is the row's value target, cutV holding the values of the
// positions samples' games were cut at.
func (d *sample) target(cutV []float32) float32 {
	if d.tail == 0 {
		return d.ret
	}
	return d.ret + d.tail*cutV[d.cut]
}

// stateValues writes into dst the network's values of states, in batches
// of the rows PPO's buffers hold.
func (t *Trainer) stateValues(dst []float32, states []env.State) {
	D, rows := t.Net.Spec.ObsLen, t.sc.Rows
	for lo := 0; lo < len(states); lo += rows {
		k := min(rows, len(states)-lo)
		for i := range k {
			states[lo+i].ObserveFloat32(t.finalX[i*D : (i+1)*D])
		}
		t.Net.Forward(t.finalL, t.finalV, t.finalX, k, t.sc)
		copy(dst[lo:lo+k], t.finalV[:k])
	}
}

// imitate trains the network on all the imitation data so far: CloneEpochs
// passes with a fresh Adam at CloneLR, cross-entropy towards the labels
// and the value head towards the returns.
func (t *Trainer) imitate(ctx context.Context, m *Metrics) error {
	c := t.Config
	data, cuts, err := t.samples(t.imitation)
	if err != nil {
		return err
	}
	cutV := make([]float32, len(cuts))
	m.Labels = len(data)
	if len(data) == 0 {
		return nil
	}
	opt := newAdam(t.params(), c.CloneLR, c.MaxNorm)
	rows := min(c.Minibatch, len(data))
	l, err := newLearner(t.Net, opt, rows, CloneLoss, coefs{Value: c.ValueCoef}, c.Clip)
	if err != nil {
		return err
	}
	defer l.close()
	D, A := t.Net.Spec.ObsLen, env.NumActions
	obs, mask := make([]float32, D), make([]uint8, A)
	var same []env.Action
	start := time.Now()
	sum, updates, err := t.epochs(ctx, l, len(data), rows, c.CloneEpochs, passOptions{decay: c.CloneDecay, average: c.CloneAverage, progress: t.progress("learn", passUpdates(len(data), rows, c.CloneEpochs)),
		beforePass: func() { t.stateValues(cutV, cuts) }}, func(r, idx int) {
		d := &data[idx]
		d.s.ObserveFloat32(obs)
		d.s.Mask(mask)
		l.setRow(r, obs, mask, int(d.a))
		if c.CloneSets {
			same = equivalents(same[:0], &d.s, d.a)
			for _, a := range same {
				l.onehot[r*A+int(a)] = 1
			}
		}
		l.ret[r] = d.target(cutV)
	})
	if errors.Is(err, ErrNotFinite) {
		phase := "the warm start"
		if m.Phase == "dagger" {
			phase = fmt.Sprintf("DAgger round %d", m.Round)
		}
		return fmt.Errorf("%s: %w", phase, err)
	}
	if err != nil {
		return err
	}
	if updates > 0 {
		m.PolicyLoss, m.ValueLoss, m.Entropy = sum.Policy/float64(updates), sum.Value/float64(updates), sum.Entropy/float64(updates)
		m.LearnSeconds = time.Since(start).Seconds()
		m.UpdatesPerS = float64(updates) / m.LearnSeconds
	}
	return nil
}

// gameStats fills m's game means (score change, runs, wins) from games.
func gameStats(m *Metrics, games []labelled) {
	var sumRet, sumRuns float64
	wins := 0
	for _, g := range games {
		sumRet += float64(g.Score - env.StartScore)
		sumRuns += float64(g.Runs)
		if g.Won {
			wins++
		}
	}
	m.Finished = len(games)
	if n := float64(len(games)); n > 0 {
		m.MeanReturn, m.MeanRuns, m.WinRate = sumRet/n, sumRuns/n, float64(wins)/n
	}
}

// clone is the warm start (behaviour cloning): the teacher plays
// CloneGames games, on all cores, and the network imitates its moves (its
// value head learns their discounted returns).
func (t *Trainer) clone(ctx context.Context) (Metrics, error) {
	c := t.Config
	start := time.Now()
	teacher, err := agents.New(c.teacher())
	if err != nil {
		return Metrics{}, err
	}
	games, err := collect(ctx, c.CloneGames, func(k int, teacher, _ agents.Agent) labelled {
		return t.teacherGame(ctx, rng.Mix(c.Seed^0xc10e, uint64(k)), teacher)
	}, teacher, nil, t.progress("clone", c.CloneGames))
	if err != nil {
		return Metrics{}, err
	}
	m := Metrics{Phase: "clone"}
	gameStats(&m, games) // the teacher's games, all of them
	if c.CloneWonOnly {
		games = slices.DeleteFunc(games, func(g labelled) bool { return !g.Won })
		if len(games) == 0 {
			return Metrics{}, fmt.Errorf("train: the teacher won none of its %d games: nothing to imitate with only won games", c.CloneGames)
		}
	}
	t.trimAll(games)
	t.imitation = games
	m.LabelSeconds = time.Since(start).Seconds()
	if err := t.imitate(ctx, &m); err != nil {
		return Metrics{}, err
	}
	t.finishImitation(&m, start)
	return m, nil
}

// progressed reports whether action a, which led from before to after,
// made progress: it dealt, turned a card or completed a run.
func progressed(before, after *env.State, a env.Action) bool {
	return a == env.Deal || after.TotalFaceDown() < before.TotalFaceDown() || after.Runs() > before.Runs()
}

// idleAfter is the count of moves in a row without progress after action
// a led from before to after, idle being the count before it.
func idleAfter(idle int, before, after *env.State, a env.Action) int {
	if progressed(before, after, a) {
		return 0
	}
	return idle + 1
}

// idleOut reports whether a labelled game that has gone idle moves
// without progress ends there (CloneIdle; 0 never ends one).
func (t *Trainer) idleOut(idle int) bool {
	return t.Config.CloneIdle > 0 && idle >= t.Config.CloneIdle
}

// trimAll trims each of games in place with CloneTrim, and leaves them
// whole without it.
func (t *Trainer) trimAll(games []labelled) {
	if !t.Config.CloneTrim {
		return
	}
	for i := range games {
		games[i] = t.trim(games[i])
	}
}

// trim returns g cut after its last move that made progress: one that
// dealt, turned a card or completed a run. A game with none is left empty.
func (t *Trainer) trim(g labelled) labelled {
	s := env.NewGame(t.rules, g.Seed)
	cut, at := s, -1 // the position after the last progress, and its move
	for i, a := range g.Played {
		before := s
		if _, err := s.Step(a); err != nil {
			break // samples reports the illegal move
		}
		if progressed(&before, &s, a) {
			cut, at = s, i
		}
	}
	g.Played, g.Labels = g.Played[:at+1], g.Labels[:at+1]
	g.Won, g.Runs, g.Score = cut.Status() == env.Won, cut.Runs(), cut.Score()
	return g
}

// dagger is one DAgger round: the network plays DaggerGames new deals, the
// teacher labels every position it reached, the labelled games join the
// imitation data (with CloneTrim, each up to the network's last progress),
// and the network retrains on all of it. The round's game means are the
// network's own games, and Agreement is how often its move was the
// teacher's, both over every position it played, trimmed or not.
func (t *Trainer) dagger(ctx context.Context) (Metrics, error) {
	c := t.Config
	start := time.Now()
	teacher, err := agents.New(c.teacher())
	if err != nil {
		return Metrics{}, err
	}
	player, err := agents.NeuralMaker(t.Net)
	if err != nil {
		return Metrics{}, err
	}
	round := uint64(t.rounds)
	games, err := collect(ctx, c.DaggerGames, func(k int, teacher, player agents.Agent) labelled {
		return t.daggerGame(ctx, rng.Mix(c.Seed^0xda66e7, round<<32|uint64(k)), teacher, player)
	}, teacher, player, t.progress("dagger", c.DaggerGames))
	if err != nil {
		return Metrics{}, err
	}
	m := Metrics{Phase: "dagger", Round: t.rounds + 1}
	gameStats(&m, games)
	same, all := 0, 0
	var eq []env.Action
	for _, g := range games {
		s := env.NewGame(t.rules, g.Seed)
		for i, a := range g.Played {
			if c.CloneSets {
				eq = equivalents(eq[:0], &s, g.Labels[i])
			} else {
				eq = append(eq[:0], g.Labels[i])
			}
			if slices.Contains(eq, a) {
				same++
			}
			if _, err := s.Step(a); err != nil {
				return Metrics{}, fmt.Errorf("train: DAgger game %d, move %d: %v", g.Seed, i, err)
			}
		}
		all += len(g.Played)
	}
	if all > 0 {
		m.Agreement = float64(same) / float64(all)
	}
	m.LabelSeconds = time.Since(start).Seconds()
	t.trimAll(games)
	t.imitation = append(t.imitation, games...)
	if err := t.imitate(ctx, &m); err != nil {
		return Metrics{}, err
	}
	t.rounds++
	t.finishImitation(&m, start)
	return m, nil
}

// finishImitation closes an imitation phase's metrics, and drops the data
// once the last round is done: PPO does not need it, and checkpoints stay
// small.
func (t *Trainer) finishImitation(m *Metrics, start time.Time) {
	t.elapsed += time.Since(start).Seconds()
	m.ElapsedSecond = t.elapsed
	if t.rounds >= t.Config.DaggerRounds {
		t.imitation = nil
	}
}

// progress returns the report of phase's games (collect's) or updates
// (epochs') to t.Progress, or nil.
func (t *Trainer) progress(phase string, total int) func(int) {
	if t.Progress == nil {
		return nil
	}
	return func(done int) { t.Progress(phase, done, total) }
}

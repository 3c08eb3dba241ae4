package train

import (
	"fmt"
	"math"

	"github.com/spiderenv/spider/agents/nn"
	"github.com/spiderenv/spider/env"
)

// Config is a training run's configuration. Start from DefaultConfig and
// change what you need; New validates it. Game's zero fields take their
// defaults, but its Encoding must be env.Float32 (the network's input).
type Config struct {
	// Game is the game the run trains on, the same options every other
	// part of the project reads (files, the server, the flags). The
	// network reads float32 observations, so Game.Encoding must be
	// env.Float32; Game.FaceUpSlots is how many face-up cards per column
	// the network sees. New fills in the defaults of fields left at zero.
	Game   env.Options `msgpack:"game"`
	Hidden []int       `msgpack:"hidden"` // the hidden layers' widths
	// Arch is the network's architecture, nn.MLP (empty means MLP) or
	// nn.Columns; a columns network has one hidden (mixing) layer, a column
	// encoder Column wide and move vectors Pair wide (see nn.Spec).
	Arch   string `msgpack:"arch,omitempty"`
	Column int    `msgpack:"column,omitempty"`
	Pair   int    `msgpack:"pair,omitempty"`

	Games     int     `msgpack:"games"`         // games stepped together
	Rollout   int     `msgpack:"rollout"`       // steps per game per iteration
	Epochs    int     `msgpack:"epochs"`        // passes over each rollout
	Minibatch int     `msgpack:"minibatch"`     // rows per update
	LR        float64 `msgpack:"lr"`            // Adam's learning rate in PPO
	Gamma     float64 `msgpack:"gamma"`         // the discount of returns
	Lambda    float64 `msgpack:"lambda"`        // GAE's lambda
	Clip      float64 `msgpack:"clip"`          // PPO's clip range of the probability ratio
	ValueCoef float64 `msgpack:"value_coef"`    // the value loss's weight
	EntCoef   float64 `msgpack:"entropy_coef"`  // the entropy bonus's weight
	MaxNorm   float64 `msgpack:"max_grad_norm"` // gradients are scaled down to this global L2 norm
	// RewardScale multiplies the score change, so returns stay near 1.
	RewardScale float64 `msgpack:"reward_scale"`
	// AnnealLR, when positive, lowers PPO's learning rate linearly over
	// the first AnnealLR iterations: the iteration Metrics.Iter numbers k
	// learns at LR × (1 - (k-1)/AnnealLR), the AnnealLR-th at
	// LR/AnnealLR, and later ones stay there (CleanRL's anneal_lr, over a
	// run of AnnealLR iterations; a run resumed past them goes on
	// learning). A program from before this option ignores it in a
	// checkpoint, as it does TargetKL.
	AnnealLR int `msgpack:"anneal_lr,omitempty"`
	// TargetKL, when positive, ends an iteration's learning early: once a
	// minibatch's approximate KL divergence from the rollout's policy
	// (ApproxKL, measured before its update) exceeds 1.5 × TargetKL, that
	// minibatch's update and the rest of the iteration's are skipped
	// (Stable-Baselines3's target_kl). The first minibatch of an iteration
	// is always learnt from, its policy being the rollout's.
	TargetKL float64 `msgpack:"target_kl,omitempty"`

	// CloneGames is the number of the teacher's games whose moves the
	// network imitates before PPO starts (0: no warm start); CloneEpochs
	// passes. Teacher is an agent name: "greedy" (default), "search" or
	// "random".
	CloneGames  int     `msgpack:"clone_games"`
	Teacher     string  `msgpack:"teacher"`
	CloneEpochs int     `msgpack:"clone_epochs"` // passes over the imitation data
	CloneLR     float64 `msgpack:"clone_lr"`     // Adam's learning rate when imitating
	// CloneWonOnly keeps only the warm start's games the teacher won: a
	// lost game runs to the step limit, mostly moving cards about, so on
	// two suits, where search loses two games in three, lost games are
	// most of the positions.
	CloneWonOnly bool `msgpack:"clone_won_only,omitempty"`
	// CloneTrim imitates each of the warm start's games only up to its
	// last move that made progress (turned a card, completed a run or
	// dealt); the returns the value head learns end there too (with
	// CloneBootstrap, with the value of where it ends). After that
	// move a lost game wanders to the step limit, and on two suits, where
	// search loses most games, those moves are most of the positions
	// (81% of 300 search games) and teach the network to wander. DAgger
	// rounds trim the network's games the same way.
	CloneTrim bool `msgpack:"clone_trim,omitempty"`
	// CloneIdle, when positive, ends each of the warm start's teacher
	// games after that many moves in a row without progress (a turned
	// card, a completed run or a deal). With CloneTrim those moves would
	// be dropped anyway unless progress followed, and a search teacher
	// that sees no way forward spends its whole budget on each: in 560 of
	// search's two-suit games no such stretch followed by progress was
	// longer than 37 moves, and the moves after the last progress were
	// 81% of all (docs/training.md). DAgger rounds end the network's
	// games the same way, since the teacher labels every move of them.
	CloneIdle int `msgpack:"clone_idle,omitempty"`
	// CloneSets labels each imitated position with the teacher's move and
	// every legal move that does the same (the same cards onto another
	// column with the same top card, or onto another empty column), and
	// the network learns the set's probability: which of them the teacher
	// picks is its tie-breaking, noise to a network that cannot see it.
	// DAgger's agreement then counts a move of the set as the teacher's.
	CloneSets bool `msgpack:"clone_sets,omitempty"`
	// CloneDecay lowers the imitation phases' learning rate linearly from
	// CloneLR to zero over their passes, so the network they end with is
	// not one step of a noisy walk at the full rate.
	CloneDecay bool `msgpack:"clone_decay,omitempty"`
	// CloneAverage ends each imitation phase with the mean of the weights
	// after each update of its last pass (Polyak averaging), not the last
	// of them: the last weights are one step of a noisy walk, and which
	// step depends on the seed.
	CloneAverage bool `msgpack:"clone_average,omitempty"`
	// CloneUnshapedValue fits the imitation phases' value head to the
	// game's unshaped returns (the score's changes) even when Game shapes
	// the rewards PPO learns from. By default the value head learns the
	// shaped returns PPO will see; on the MLP recipe of docs/training.md,
	// PPO then lowered the network where after unshaped targets it lifted
	// it.
	CloneUnshapedValue bool `msgpack:"clone_unshaped_value,omitempty"`
	// CloneBootstrap ends the value targets of an imitated game cut
	// before its end (by the step limit, CloneIdle, CloneTrim or a DAgger
	// game's 500-move cap) with the discounted value the network gives the
	// position it was cut at, as PPO's returns end a game the step limit
	// cuts; the network's value at the start of each pass over the data.
	// Without it those targets end with 0 there, as if the game had ended:
	// the observation holds no move count, so the network cannot tell a
	// cut position from the same position uncut, and the zeros pull its
	// value towards 0 where the game would go on (22% of the rows of 40
	// greedy games on one suit lie within 230 moves of such a cut).
	// DefaultConfig sets it; a checkpoint of a program from before it
	// reads it as off, and resumes as it ran.
	CloneBootstrap bool `msgpack:"clone_bootstrap,omitempty"`
	// DaggerRounds rounds of DAgger follow the warm start: in each, the
	// network plays DaggerGames new deals, the teacher labels every
	// position the network reached, and the network retrains (CloneEpochs
	// passes, CloneLR) on all labels so far. The network then learns what
	// the teacher would do in the positions its own mistakes lead to.
	DaggerRounds int `msgpack:"dagger_rounds"`
	DaggerGames  int `msgpack:"dagger_games"` // the network's games a round

	// ValEvery is how often, in PPO iterations, the network playing
	// greedily (argmax, as agents.Neural plays) is validated on ValGames
	// fixed deals from seed ValStart; it is also validated right after
	// the warm start. 0 turns validation off.
	ValEvery int    `msgpack:"val_every"`
	ValGames int    `msgpack:"val_games"` // deals a validation plays
	ValStart uint64 `msgpack:"val_start"` // its first deal (DefaultValStart)

	Seed uint64 `msgpack:"seed"` // the weights' initialization, the deals and the sampled actions
}

// DefaultValStart is the first validation deal: inside the seeds agents
// are tuned on (1-50000), never in the reported ones (from 100001).
const DefaultValStart = 40001

// valSeeds returns the validation deals.
func (c Config) valSeeds() []uint64 {
	seeds := make([]uint64, c.ValGames)
	for i := range seeds {
		seeds[i] = c.ValStart + uint64(i)
	}
	return seeds
}

// DefaultConfig is a one-suit classic run sized for a 2-core machine: the
// default game (env.DefaultOptions) seen through 8 face-up slots per
// column as float32.
func DefaultConfig() Config {
	game := env.DefaultOptions()
	game.FaceUpSlots, game.Encoding = 8, env.Float32
	return Config{
		Game: game, Hidden: []int{256, 256},
		Games: 64, Rollout: 128, Epochs: 2, Minibatch: 512,
		LR: 2.5e-4, Gamma: 0.99, Lambda: 0.95, Clip: 0.2, ValueCoef: 0.5, EntCoef: 0.01, MaxNorm: 0.5,
		RewardScale: 0.01, CloneGames: 0, Teacher: "greedy", CloneEpochs: 3, CloneLR: 1e-3, CloneBootstrap: true,
		ValEvery: 20, ValGames: 100, ValStart: DefaultValStart, Seed: 1,
	}
}

// Validate reports why New would refuse c, or nil: a command checks it
// before it creates anything for the run.
func (c Config) Validate() error {
	if err := c.validate(); err != nil {
		return err
	}
	return c.checkShaping()
}

// Rules returns the game configuration the run trains on. It refuses an
// observation encoding other than float32.
func (c Config) Rules() (env.Rules, error) {
	if c.Game.Encoding != env.Float32 {
		return env.Rules{}, fmt.Errorf("train: obs %s: the network reads %s observations", c.Game.Encoding, env.Float32)
	}
	return env.NewRules(c.Game)
}

// Spec returns the specification of the network c trains, or why there is
// none.
func (c Config) Spec() (nn.Spec, error) {
	r, err := c.Rules()
	if err != nil {
		return nn.Spec{}, err
	}
	switch c.Arch {
	case "", nn.MLP:
		if c.Column != 0 || c.Pair != 0 {
			return nn.Spec{}, fmt.Errorf("train: column and pair widths are for arch %s, not %s", nn.Columns, nn.MLP)
		}
		// Validated here too (its layer count): a list of thousands of
		// layers was refused by the memory it would take, whose message
		// named every flag but --hidden.
		s := nn.SpecFor(r, c.Hidden)
		return s, s.Validate()
	case nn.Columns:
		if len(c.Hidden) != 1 {
			return nn.Spec{}, fmt.Errorf("train: arch %s has one hidden (mixing) layer, got hidden %v", nn.Columns, c.Hidden)
		}
		s := nn.ColumnSpecFor(r, c.Column, c.Hidden[0], c.Pair)
		return s, s.Validate()
	}
	return nn.Spec{}, fmt.Errorf("train: arch %q: want %s or %s", c.Arch, nn.MLP, nn.Columns)
}

// validate reports the first unusable setting.
func (c Config) validate() error {
	if _, err := c.Spec(); err != nil {
		return err
	}
	switch {
	case c.Games < 1 || c.Games > 1<<14:
		return fmt.Errorf("train: games %d outside 1 to 16384", c.Games)
	case c.Rollout < 1 || int64(c.Games)*int64(c.Rollout) > 1<<20: // int64: a 32-bit int wraps
		return fmt.Errorf("train: rollout %d steps x %d games is outside 1 to 1048576 samples", c.Rollout, c.Games)
	case c.Minibatch < 1 || c.Minibatch > c.Games*c.Rollout:
		return fmt.Errorf("train: minibatch %d must be 1 to games x rollout (%d)", c.Minibatch, c.Games*c.Rollout)
	case c.Epochs < 1 || c.Epochs > maxEpochs:
		// Bounded so that epochs x minibatches, the updates an iteration
		// makes (and the learning rate's schedule divides by), cannot wrap.
		return fmt.Errorf("train: epochs %d outside 1 to %d", c.Epochs, maxEpochs)
	case !(c.LR > 0 && c.LR <= 1):
		return fmt.Errorf("train: lr %g outside (0, 1]", c.LR)
	case !(c.CloneLR > 0 && c.CloneLR <= 1):
		return fmt.Errorf("train: clone lr %g outside (0, 1]", c.CloneLR)
	case !(c.Gamma > 0 && c.Gamma <= 1):
		return fmt.Errorf("train: gamma %g outside (0, 1]", c.Gamma)
	case !(c.Lambda >= 0 && c.Lambda <= 1):
		return fmt.Errorf("train: lambda %g outside [0, 1]", c.Lambda)
	case !(c.Clip > 0 && c.Clip < 1):
		return fmt.Errorf("train: clip %g outside (0, 1)", c.Clip)
	case !(c.RewardScale > 0 && c.RewardScale <= maxCoef):
		return fmt.Errorf("train: reward scale %g outside (0, %g]", c.RewardScale, float64(maxCoef))
	case !(c.ValueCoef >= 0 && c.ValueCoef <= maxCoef):
		// An infinite or huge coefficient only fails later, as a loss
		// that is not finite after the first update.
		return fmt.Errorf("train: value coef %g outside 0 to %g", c.ValueCoef, float64(maxCoef))
	case !(c.EntCoef >= 0 && c.EntCoef <= maxCoef):
		return fmt.Errorf("train: entropy %g outside 0 to %g", c.EntCoef, float64(maxCoef))
	case c.AnnealLR < 0 || c.AnnealLR > maxAnneal:
		return fmt.Errorf("train: anneal lr %d outside 0 to %d iterations", c.AnnealLR, maxAnneal)
	case !(c.TargetKL >= 0 && c.TargetKL <= maxCoef):
		return fmt.Errorf("train: the target KL must be 0 (none) to %g", float64(maxCoef))
	case !(c.MaxNorm >= 0) || math.IsInf(c.MaxNorm, 0):
		return fmt.Errorf("train: the gradient clip must be finite and not negative")
	case c.CloneGames < 0 || c.CloneIdle < 0:
		return fmt.Errorf("train: clone games %d and idle moves %d must not be negative", c.CloneGames, c.CloneIdle)
	case c.CloneEpochs < 0 || c.CloneEpochs > maxEpochs:
		return fmt.Errorf("train: clone epochs %d outside 0 to %d", c.CloneEpochs, maxEpochs)
	case c.DaggerRounds < 0 || c.DaggerGames < 0 || c.DaggerRounds > 1000 || c.DaggerGames > 1_000_000:
		return fmt.Errorf("train: DAgger rounds %d and games %d: want 0 to 1000 rounds of 0 to 1000000 games", c.DaggerRounds, c.DaggerGames)
	case c.DaggerRounds > 0 && c.DaggerGames == 0:
		return fmt.Errorf("train: %d DAgger rounds need at least one game each (dagger games)", c.DaggerRounds)
	case (c.CloneGames > 0 || c.DaggerRounds > 0) && c.CloneEpochs == 0:
		// The teacher's games would be played and labelled, then nothing
		// learnt from them.
		return fmt.Errorf("train: a warm start or DAgger round needs at least one pass over its labels (clone epochs)")
	case c.ValEvery < 0 || c.ValGames < 0 || c.ValGames > 100_000:
		return fmt.Errorf("train: validation every %d iterations on %d deals: want both at least 0, and at most 100000 deals", c.ValEvery, c.ValGames)
	case c.ValEvery > 0 && c.ValGames == 0:
		return fmt.Errorf("train: validation every %d iterations needs at least one deal (val games)", c.ValEvery)
	case c.ValStart > math.MaxUint64-uint64(c.ValGames):
		return fmt.Errorf("train: validation deals from seed %d overflow", c.ValStart)
	case c.Game.MaxSteps < 0 && (c.CloneGames > 0 || c.ValEvery > 0):
		// PPO's rollouts have a fixed length, but a teacher's or a
		// validation game is played to its end: a player that loops
		// (greedy, a network) would play one for ever.
		return fmt.Errorf("train: a warm start or validation plays whole games, which need a step limit (max steps %d)", c.Game.MaxSteps)
	}
	if c.CloneGames > 0 || c.DaggerRounds > 0 {
		switch name := c.teacher(); name {
		case "greedy", "search", "random":
		default:
			return fmt.Errorf("train: teacher %q: want greedy, search or random (the oracle sees hidden cards)", name)
		}
	}
	return nil
}

// checkShaping reports a shaping for another discount than the learner's:
// potential-based shaping leaves the best policy unchanged only for the
// learner's own discount, and at another it pays (1-gamma) times the
// potential every step, more than a run is worth, for staying put in a
// good position. New refuses such a run; Resume does not, so that a run
// started before New refused it goes on as it began.
func (c Config) checkShaping() error {
	if c.Game.Shaping == env.NoShaping {
		return nil
	}
	if r, err := env.NewRules(c.Game); err == nil && r.ShapingGamma() != c.Gamma {
		return fmt.Errorf("train: shaping for a discount of %g (shaping gamma) under a learner's discount of %g (gamma) changes which policy is best; make them equal", r.ShapingGamma(), c.Gamma)
	}
	return nil
}

// maxCoef bounds the reward scale and the loss coefficients: far above any
// use (the defaults are 0.01 to 0.5), and far below where float32 losses
// overflow.
const maxCoef = 1e6

// maxEpochs bounds Epochs and CloneEpochs: passes over the same samples,
// where a few to a few dozen are the use; more than this is a slip that
// would keep a run in one phase for days, and wrap the update counts.
const maxEpochs = 1 << 16

// maxAnneal bounds AnnealLR: a billion iterations are years of a run.
const maxAnneal = 1 << 30

// lrAt returns PPO's learning rate in iteration iter (counted from 0):
// LR, or under AnnealLR its linear schedule.
func (c Config) lrAt(iter int) float64 {
	if c.AnnealLR <= 0 {
		return c.LR
	}
	i := min(iter, c.AnnealLR-1)
	return c.LR * float64(c.AnnealLR-i) / float64(c.AnnealLR)
}

// TeacherName returns the name of the teacher of the warm start and the
// DAgger rounds: Teacher, or "greedy" when it is empty.
func (c Config) TeacherName() string { return c.teacher() }

// teacher returns the warm start's teacher's name, "greedy" if unset.
func (c Config) teacher() string {
	if c.Teacher == "" {
		return "greedy"
	}
	return c.Teacher
}

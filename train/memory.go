package train

import (
	"runtime"
	"unsafe"

	"github.com/spiderenv/spider/agents"
	"github.com/spiderenv/spider/agents/nn"
	"github.com/spiderenv/spider/env"
)

// BufferBytes returns the memory a run of c allocates beside the
// env.Batch of c.Games games it steps (same-step autoreset, float32
// observations): the rollout (Rollout x Games rows of observation, mask
// and the per-step numbers), the acting buffers, the network with Adam's
// moments, and the learner's minibatch buffers and gorgonia graphs,
// measured at about GraphRowBytes a row and GraphParamBytes a weight. The
// imitation data of the warm start and DAgger is not counted: it grows
// with the teacher's games, about 1.2 KB a position while a phase learns.
// A command checks it, with the batch's, against the memory there is
// before New allocates it all.
func (c Config) BufferBytes() (int64, error) {
	spec, err := c.Spec()
	if err != nil {
		return 0, err
	}
	n, T, D, A := int64(c.Games), int64(c.Rollout), int64(spec.ObsLen), int64(env.NumActions)
	hidden := int64(0)
	for _, h := range spec.Hidden {
		hidden += int64(h)
	}
	params := weightCount(spec)
	// A rollout row: the observation, the mask, the action (int32),
	// log-probability, value, reward, bootstrap value, advantage and
	// return (float32), the done flag, and its place in the shuffled
	// order of the learning passes (int).
	rollout := T * n * (4*D + A + 4 + 6*4 + 1 + 8)
	// Acting: logits, values, actions, the truncated games' final
	// observations, logits and values, and the forward pass's hidden rows.
	acting := n * (4*A + 4 + 2 + 4*D + 4*A + 4 + 4*hidden)
	// The network, Adam's two moments and the combined gradient.
	network := 4 * params * 4
	rows := int64(min(c.Minibatch, c.Games*c.Rollout))
	learner := rows*(GraphRowBytes(spec)) + params*GraphParamBytes
	return rollout + acting + network + learner + blasBytes(spec, rows, params), nil
}

// BLASBytes returns what a run of c's multiplies hold outside Go's heap
// (nn.BLASCallBytes, 0 but in the OpenBLAS build) at the learner's peak,
// where each graph of a minibatch multiplies at once: a buffer for each
// graph, of no more than its operands, which the graphs' own values
// bound. A command that limits Go's heap leaves this outside the limit.
func BLASBytes(c Config) int64 {
	spec, err := c.Spec()
	if err != nil {
		return 0
	}
	return blasBytes(spec, int64(min(c.Minibatch, c.Games*c.Rollout)), weightCount(spec))
}

// blasBytes is BLASBytes for a network of spec and params weights
// learning from minibatches of rows.
func blasBytes(spec nn.Spec, rows, params int64) int64 {
	return min(int64(shards)*nn.BLASCallBytes, rows*GraphRowBytes(spec)+params*4)
}

// ValidationBytes returns the most memory a validation of c holds beside
// the run's buffers (0 without validation): for each of GOMAXPROCS
// workers, its network player (agents.Neural.Bytes) and its game in play
// at agents.MoveBytes a move up to the step limit, and each deal's result
// to the end. A step limit of 2^30, which a checkpoint may hold, asks for
// 64 GiB a game.
func (c Config) ValidationBytes() int64 {
	if c.ValEvery <= 0 || c.ValGames <= 0 {
		return 0
	}
	r, err := c.Rules()
	spec, specErr := c.Spec()
	if err != nil || specErr != nil || r.MaxSteps() < 0 { // Validate refuses validation without a step limit
		return 0
	}
	player := 4*int64(spec.ObsLen+spec.NumActions) + spec.ScratchBytes(1)
	workers := int64(min(runtime.GOMAXPROCS(0), c.ValGames))
	return workers*(player+agents.MoveBytes*int64(r.MaxSteps())) + int64(c.ValGames)*validationResultBytes
}

// validationResultBytes is what a validation holds for each deal to its
// end: the game's result (its moves dropped) and its finished flag.
const validationResultBytes = int64(unsafe.Sizeof(agents.Result{})) + 8

// SaveBytes returns the memory Save holds at its peak beside a run's
// buffers while it writes a checkpoint of c: the trainer's state with
// Adam's two moments marshalled, then again with the network into the
// file's bytes, at SaveParamBytes a weight, and the games' snapshot. The
// imitation data, which a checkpoint holds while DAgger rounds remain, is
// not counted, as in BufferBytes.
func (c Config) SaveBytes() (int64, error) {
	spec, err := c.Spec()
	if err != nil {
		return 0, err
	}
	return weightCount(spec)*SaveParamBytes + int64(c.Games)*4<<10 + 4<<20, nil
}

// weightCount returns the number of weights and biases of a network of spec.
func weightCount(spec nn.Spec) int64 {
	n := int64(0)
	for _, d := range spec.Dims() {
		n += int64(d[0]*d[1] + d[1])
	}
	return n
}

// SaveParamBytes is what Save holds at its peak for each weight of the
// network. It makes each buffer once, at the size it will need
// (msgpackcheck.Marshal, and nn.Floats through a small buffer), so it
// holds at its peak about all it allocates: 20 bytes a weight for 2 x 2048
// hidden units (TotalAlloc). Before, its buffers grew by doubling and it
// allocated 61-66 bytes a weight, of which the RSS of a run grew by 43;
// the figure was set then and is kept, a margin over what Save now
// allocates, which TestSaveBytes keeps it above.
const SaveParamBytes = 48

// GraphRowBytes is what the learner holds for each row of a minibatch: its
// input buffers (observation, additive mask and one-hot action as float32)
// and, in the graphs, the values and gradients of every node the loss is
// made of: the observation's copies, each layer's activations, and ten
// action-wide rows (the logits and their gradients, the bias's broadcast,
// the policy head's float64 gradient). The constants were measured (heap
// after one iteration, for minibatches of 256 to 2048 rows, hidden layers
// of 64 to 2 x 1024, 8 and 104 face-up slots a column) and rounded up;
// TestBufferBytes keeps them honest. A columns network holds, besides,
// about twelve values a row for each column's encoding width (the
// encodings, the game's view repeated per column, their sums and tanh,
// and their gradients) and four for each of its source vectors' values;
// those two constants were measured at column widths 64 to 256, pair
// widths 16 to 64 and minibatches of 256 to 1536 rows. The first is 13:
// at a width of 768 and 8,192 rows the heap still held more than twelve
// after a collection (s73, a run over its --max-memory by 41 MiB in the
// pure-Go build).
func GraphRowBytes(spec nn.Spec) int64 {
	D, A := int64(spec.ObsLen), int64(spec.NumActions)
	hidden := int64(0)
	for _, h := range spec.Hidden {
		hidden += int64(h)
	}
	b := 4 * (3*D + 10*A + 6*hidden + 64)
	if spec.Arch == nn.Columns {
		const N, K = env.NumColumns, env.MaxMove
		b += 4 * (13*N*int64(spec.Column) + 4*N*K*int64(spec.Pair+1))
	}
	return b
}

// GraphParamBytes is what the learner's graphs hold for each weight: a
// gradient per graph (two graphs share a minibatch) and the transposed
// copies a multiply makes.
const GraphParamBytes = 4 * 4

// ImitationBound returns the most memory the imitation data of a run of c
// can take, at SampleBytes a position: every warm-start game at the step
// limit, and every DAgger game at its cap (daggerMoves), since the last
// round learns from all of it at once, and a position more a game, where
// it was cut (CloneBootstrap). Games that end sooner (wins, CloneTrim,
// CloneIdle) take less. It is 0 without imitation, and for counts or
// settings Validate refuses (not for a shaping discount other than the
// learner's, which a resumed run keeps).
func (c Config) ImitationBound() int64 {
	if c.validate() != nil { // negative counts, imitation without epochs
		// Not Validate: a shaping discount that is not the learner's,
		// which Resume takes (checkShaping), still has its bound.
		return 0
	}
	r, err := c.Rules()
	if err != nil {
		return 0
	}
	clone, dagger := int64(r.MaxSteps()), int64(daggerMoves)
	if clone < 0 { // no step limit: Validate refuses a warm start
		clone = 0
	} else {
		dagger = min(dagger, clone)
	}
	games := int64(c.CloneGames) + int64(c.DaggerRounds)*int64(c.DaggerGames)
	moves := int64(c.CloneGames)*clone + int64(c.DaggerRounds)*int64(c.DaggerGames)*dagger
	if moves == 0 {
		return 0
	}
	return (moves + games) * SampleBytes
}

// SampleBytes is what a position of imitation data takes once a phase
// learns from it: the position, its label and its return.
const SampleBytes = int64(unsafe.Sizeof(sample{}))

// ImitationBytes returns the memory the imitation data a resumed run holds
// (DAgger rounds remain) takes once a phase learns from it: a position, its
// label and its return for each move, about 1.2 KB each, and a position for
// each game with moves, where it may have been cut. A checkpoint's few
// bytes a move can claim gigabytes here, so a command checks it against the
// memory there is before the run goes on.
func (t *Trainer) ImitationBytes() int64 {
	moves := int64(0)
	for _, g := range t.imitation {
		if len(g.Played) > 0 {
			moves += int64(len(g.Played)) + 1
		}
	}
	return moves * SampleBytes
}

package agents

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/spiderenv/spider/agents/nn"
	"github.com/spiderenv/spider/env"
)

// Neural plays a trained network's choice: the legal action with the
// highest logit that does not lead back to a position already seen this
// game (remembered by State.Key, as Greedy does; if every action does, the
// highest logit). A network alone, like any deterministic policy, can
// otherwise loop between two positions until the step limit. It is
// deterministic, so it needs no seed. It sees what a player sees: the
// network reads the float32 observation, which shows no hidden card.
// Several Neural agents may share one Net, which they only read. Make one
// with NewNeural, which sizes its buffers for Net: a literal, or a Net
// replaced after, cannot play (CheckRules says so, and Act panics; Bytes
// panics on a literal without a Net).
type Neural struct {
	Net   *nn.Net
	seen  seenPositions
	order []env.Action
	rules env.Rules
	obs   []float32
	logit []float32
	value [1]float32
	sc    *nn.Scratch
	// madeFor is the Net NewNeural sized the buffers for.
	madeFor *nn.Net
}

// NewNeural returns an agent playing net, or why net cannot play (its
// specification names no game this program plays, or its weights do not
// fit its specification: a Net made by hand rather than by nn.New or
// nn.Load).
func NewNeural(net *nn.Net) (*Neural, error) {
	r, err := net.Spec.Rules()
	if err != nil {
		return nil, err
	}
	if err := net.CheckShape(); err != nil {
		return nil, fmt.Errorf("agents: %v", err)
	}
	// The network watches games of any length: its observation does not
	// depend on the step limit, and its own limit must not stop the moves
	// it tries ahead.
	o := r.Options()
	o.MaxSteps = -1
	if r, err = env.NewRules(o); err != nil {
		return nil, err
	}
	return &Neural{Net: net, rules: r, obs: make([]float32, r.Float32Len()), logit: make([]float32, env.NumActions),
		sc: net.NewScratch(1), madeFor: net}, nil
}

// Bytes returns the memory the agent allocates beside the network it
// shares: its observation, logits and forward pass. The positions it
// remembers grow with the game, within MoveBytes a move.
func (a *Neural) Bytes() int64 {
	return 4*int64(len(a.obs)+len(a.logit)) + a.Net.Spec.ScratchBytes(1)
}

// NeuralMaker returns the maker of agents playing net, which they share
// (read only), or why net cannot play.
func NeuralMaker(net *nn.Net) (Maker, error) {
	if _, err := NewNeural(net); err != nil {
		return nil, err
	}
	return func() Agent { a, _ := NewNeural(net); return a }, nil
}

// Name returns "nn".
func (*Neural) Name() string { return "nn" }

// Begin forgets the positions of the last game.
func (a *Neural) Begin(uint64) { clear(a.seen) }

// CheckRules reports whether the network was trained for games under r.
func (a *Neural) CheckRules(r env.Rules) error {
	if err := a.made(); err != nil {
		return err
	}
	return a.Net.Spec.Check(r)
}

// made reports whether a was made by NewNeural for its Net.
func (a *Neural) made() error {
	if a.Net == nil || a.Net != a.madeFor {
		return errors.New("agents: a Neural not made by NewNeural for its Net cannot play")
	}
	return nil
}

// Act plays the network's most likely legal action. It panics if the
// game is not one the network was trained for (CheckRules says which),
// which is a programming error.
func (a *Neural) Act(v View) Decision {
	if err := a.made(); err != nil {
		panic(err)
	}
	s, err := v.s.Reframe(a.rules)
	if err != nil {
		panic("agents: " + err.Error() + " (check with CheckRules first)")
	}
	s.ObserveFloat32(a.obs)
	a.Net.Forward(a.logit, a.value[:], a.obs, 1, a.sc)
	if a.seen == nil {
		a.seen = seenPositions{}
	}
	a.seen.mark(&s)
	a.order = append(a.order[:0], v.Legal()...)
	slices.SortStableFunc(a.order, func(x, y env.Action) int { return cmp.Compare(a.logit[y], a.logit[x]) })
	best := a.order[0]
	for _, act := range a.order {
		if !a.seen.leadsBack(&s, act) {
			best = act
			break
		}
	}
	// The reason gives the network's probability of its choice.
	sum := 0.0
	for _, l := range v.Legal() {
		sum += math.Exp(float64(a.logit[l] - a.logit[best]))
	}
	return Decision{Action: best, Reason: fmt.Sprintf("the network's choice (p=%.2f, value %.2f)", 1/sum, a.value[0])}
}

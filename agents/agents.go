package agents

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/spiderenv/spider/agents/nn"
	"github.com/spiderenv/spider/env"
)

// View is one game as its player sees it. The state behind it is never
// handed to an agent: only visible facts leave through the methods, plus
// Sample, which deals the unseen cards anew at random. Make it with
// NewView: the zero View has no game, and its methods that read one panic
// (Legal and Last return nil and false). The column methods panic if c is
// not 0 to env.NumColumns-1, as env.State's do. A View given
// to an agent is valid during that call only: the game it shows moves on
// after, so an agent keeps what it learns from it, not the View.
type View struct {
	s     *env.State
	legal []env.Action
	last  env.Action
	has   bool
}

// NewView returns the view of s with its legal actions (in id order, as
// State.AppendLegal gives them). last is the action that led to s, if
// known (hasLast), so agents can avoid undoing it.
func NewView(s *env.State, legal []env.Action, last env.Action, hasLast bool) View {
	return View{s: s, legal: legal, last: last, has: hasLast}
}

// Rules returns the game's configuration.
func (v View) Rules() env.Rules { return v.s.Rules() }

// Legal returns the legal actions in id order. The slice is shared: do
// not modify it.
func (v View) Legal() []env.Action { return v.legal }

// Last returns the action that led to this position, if known.
func (v View) Last() (env.Action, bool) { return v.last, v.has }

// FaceDown returns the number of face-down cards in column c.
func (v View) FaceDown(c int) int { return v.s.FaceDown(c) }

// FaceUpCount returns the number of face-up cards in column c.
func (v View) FaceUpCount(c int) int { return v.s.FaceUpCount(c) }

// Height returns the number of cards in column c.
func (v View) Height(c int) int { return v.s.Height(c) }

// Top returns the top card of column c (NoCard if empty).
func (v View) Top(c int) env.Card { return v.s.Top(c) }

// AppendFaceUp appends column c's face-up cards, deepest first.
func (v View) AppendFaceUp(dst []env.Card, c int) []env.Card { return v.s.AppendFaceUp(dst, c) }

// RunLength returns the length of the movable run on top of column c.
func (v View) RunLength(c int) int { return v.s.RunLength(c) }

// StockLeft returns the number of cards in the stock.
func (v View) StockLeft() int { return v.s.StockLeft() }

// Runs returns the number of completed runs.
func (v View) Runs() int { return v.s.Runs() }

// Score returns the score.
func (v View) Score() int { return v.s.Score() }

// Steps returns the number of actions taken.
func (v View) Steps() int { return v.s.Steps() }

// Key returns a 64-bit hash of what a player sees of the position
// (env.State.Key): two positions a player cannot tell apart share it, so
// an agent's own transposition table or loop check can use it without
// sampling a game first.
func (v View) Key() uint64 { return v.s.Key() }

// ObserveCompact writes the compact observation of the game (what a player
// sees; no hidden card) into dst and returns dst[:Rules().CompactLen()].
// It panics if dst is shorter.
func (v View) ObserveCompact(dst []uint8) []uint8 { return v.s.ObserveCompact(dst) }

// ObserveFloat32 writes the float32 observation of the game into dst and
// returns dst[:Rules().Float32Len()]. It panics if dst is shorter.
func (v View) ObserveFloat32(dst []float32) []float32 { return v.s.ObserveFloat32(dst) }

// Mask writes the game's action mask (1 for a legal id) into dst and
// returns the number of legal actions. It panics if dst holds fewer than
// env.NumActions bytes.
func (v View) Mask(dst []uint8) int { return v.s.Mask(dst) }

// Sample returns a full game that looks the same as this one, with every
// unseen card dealt anew at random from seed: what a search agent plays
// instead of peeking.
func (v View) Sample(seed uint64) env.State { return v.s.Resample(seed) }

// Decision is an agent's choice and, for hints, why.
type Decision struct {
	Action env.Action // one of the View's legal actions
	Reason string     // a short explanation for a hint; may be empty
}

// Agent chooses actions. Act is called only when at least one action is
// legal and must return one of them. Begin starts a new game; its seed is
// the deal's, given so that an agent's own randomness repeats with the
// deal. An agent must not deal the game again from it (env.NewGame):
// that is peeking, which only the labelled oracle does. The built-in agents
// only seed their generators from it: TestAgentsNeverReadHiddenCards
// checks that none but the oracle chooses by the hidden cards of its View,
// and TestSearchSamplesAreBlind that search's sampled games match the real
// hidden cards no more often than chance. A remote agent is sent no seed.
type Agent interface {
	Name() string
	Begin(seed uint64)
	Act(v View) Decision
}

// Maker builds an agent; each worker gets its own, and evaluations call
// it from several goroutines at once (so a Maker that sets something up
// on its first call needs a lock or sync.Once).
type Maker func() Agent

// MaxNodes is the largest search budget NewWith takes, 2^20 positions a
// plan, fifty times the default: about 1.3 GB of positions for each
// searching agent, reserved at its first plan (an eval at this budget
// peaked at 1.35 GB RSS, four suits, one worker). A larger one would only
// exhaust the machine.
const MaxNodes = 1 << 20

// Options are the settings agents share.
type Options struct {
	// Nodes is the search budget: positions explored per plan by search,
	// search-hand and oracle (0: their default, 20000; at most MaxNodes).
	// Others ignore it.
	Nodes int
	// MoveTime bounds the time the searches and the oracle may plan a move (0: no
	// bound, the default, so results stay reproducible). Others ignore it.
	MoveTime time.Duration
	// Draw picks which draw of their samples search and search-hand play
	// (Search.Draw; 0, the default, is the draw every table reports).
	// Others ignore it.
	Draw uint64
}

// makers are the agents by name.
var makers = map[string]func(Options) Agent{
	"random": func(Options) Agent { return &Random{} },
	"first":  func(Options) Agent { return First{} },
	"greedy": func(Options) Agent { return &Greedy{} },
	"search": func(o Options) Agent { return &Search{Nodes: o.Nodes, MoveTime: o.MoveTime, Draw: o.Draw} },
	// search-hand is search before the learned value, kept to pair with
	// it (they differ on one and two suits only).
	"search-hand": func(o Options) Agent {
		return &Search{Nodes: o.Nodes, MoveTime: o.MoveTime, Draw: o.Draw, HandOnly: true}
	},
	"oracle": func(o Options) Agent { return &Search{Nodes: o.Nodes, MoveTime: o.MoveTime, Peek: true} },
}

// Traits are what tables, hints and help texts need to know of an agent
// beyond its moves, declared by the agent (TraitsOf) rather than read
// from its name.
type Traits struct {
	// Peeks reports an agent that chooses by the hidden cards, as only
	// the labelled oracle does: tables mark it, and it never answers
	// hints. Any other agent must pass TestAgentsNeverReadHiddenCards.
	Peeks bool
	// Budget reports an agent that plays by Options.Nodes and MoveTime.
	Budget bool
	// Draws reports an agent that samples the hidden cards by
	// Options.Draw.
	Draws bool
}

// traitsOf is an agent that declares its Traits; others have none.
type traitsOf interface{ Traits() Traits }

// TraitsOf returns the traits of the built-in agent called name (any
// case); a network, a remote agent or an unknown name has none.
func TraitsOf(name string) Traits {
	mk, ok := makers[strings.ToLower(name)]
	if !ok {
		return Traits{}
	}
	if t, ok := mk(Options{}).(traitsOf); ok {
		return t.Traits()
	}
	return Traits{}
}

// NamesWith returns the names of Names whose traits keep says to keep.
func NamesWith(keep func(Traits) bool) []string {
	var out []string
	for _, n := range Names() {
		if keep(TraitsOf(n)) {
			out = append(out, n)
		}
	}
	return out
}

// Label returns how tables name the agent called name: an agent that sees
// the hidden cards (the oracle) is always marked as such.
func Label(name string) string {
	if TraitsOf(name).Peeks {
		return name + " (sees hidden cards)"
	}
	return name
}

// RulesChecker is an agent that plays only some configurations (a trained
// network); CheckRules says why it cannot play games under r.
type RulesChecker interface {
	CheckRules(r env.Rules) error
}

// CheckRules reports why a cannot play games under r, or nil when it can:
// the one place eval, play and the server ask. Agents that are not
// RulesCheckers play every configuration.
func CheckRules(a Agent, r env.Rules) error {
	if c, ok := a.(RulesChecker); ok {
		return c.CheckRules(r)
	}
	return nil
}

// Names returns the names New accepts, besides "nn:PATH".
func Names() []string {
	var out []string
	for n := range makers {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// New returns the maker of the agent called name, with default options.
func New(name string) (Maker, error) { return NewWith(name, Options{}) }

// NewWith returns the maker of the agent called name, with options o. The
// name "nn:PATH" loads the network checkpoint at PATH once; its agents
// share it.
func NewWith(name string, o Options) (Maker, error) {
	if path, ok := strings.CutPrefix(name, "nn:"); ok {
		if path == "" {
			return nil, errors.New("agents: nn: needs a checkpoint's path, as in nn:models/classic-1suit.spider")
		}
		net, _, err := nn.Load(path)
		if err != nil {
			return nil, err
		}
		return NeuralMaker(net)
	}
	m, ok := makers[strings.ToLower(name)]
	if !ok {
		if len(name) >= 3 && strings.EqualFold(name[:3], "nn:") {
			// The built-in names are read in any case; the prefix is not,
			// since eval and serve find a network by it.
			return nil, fmt.Errorf("agents: unknown agent %q: a network is named nn:PATH, in lower case", name)
		}
		return nil, fmt.Errorf("agents: unknown agent %q (known: %s, and nn:PATH)", name, strings.Join(Names(), ", "))
	}
	if o.Nodes < 0 || o.Nodes > MaxNodes {
		return nil, fmt.Errorf("agents: a search budget of %d nodes is outside 0 to %d", o.Nodes, MaxNodes)
	}
	if o.MoveTime < 0 {
		return nil, fmt.Errorf("agents: a search time of %v a move is negative", o.MoveTime)
	}
	return func() Agent { return m(o) }, nil
}

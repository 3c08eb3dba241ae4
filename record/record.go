// Package record saves and replays games: a recorded game is its
// configuration, its seed and its actions, in msgpack, so replaying it
// reproduces it exactly, score and all.
package record

import (
	"fmt"
	"os"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/spiderenv/spider/env"
	"github.com/spiderenv/spider/internal/atomicfile"
	"github.com/spiderenv/spider/internal/msgpackcheck"
)

// Version is the record format version. Version 2 stores the game as
// env.Options under the "game" key; version 1 had its own rules, suits,
// max_steps and time_per_action_ms keys.
const Version = 2

// Game is one recorded game. The result fields let a replay check itself.
type Game struct {
	Version int `msgpack:"version"`
	// Game is the configuration the game was played under, defaults
	// filled in.
	Game    env.Options `msgpack:"game"`
	Seed    uint64      `msgpack:"seed"`
	Player  string      `msgpack:"player"`
	Actions []uint16    `msgpack:"actions"`
	Score   int         `msgpack:"score"`
	Runs    int         `msgpack:"runs"`
	Won     bool        `msgpack:"won"`
}

// New records a finished game of r from seed.
func New(r env.Rules, seed uint64, player string, actions []env.Action, final *env.State) Game {
	g := Game{
		Version: Version, Game: r.Options(), Seed: seed, Player: player,
		Score: final.Score(), Runs: final.Runs(), Won: final.Status() == env.Won,
	}
	for _, a := range actions {
		g.Actions = append(g.Actions, uint16(a))
	}
	return g
}

// RulesOf returns the configuration a record was played under.
func (g Game) RulesOf() (env.Rules, error) { return env.NewRules(g.Game) }

// Save writes g to path through a temporary file and a rename, so a crash
// never leaves half a record.
func Save(path string, g Game) error {
	b, err := msgpack.Marshal(g)
	if err != nil {
		return err
	}
	return atomicfile.Write(path, b)
}

// Load reads a record, refusing with a message that names the file one
// that is not a record, declares more data than the file holds, has
// another format version (the message names both) or describes a game no
// configuration allows.
func Load(path string) (Game, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Game{}, err
	}
	// msgpack allocates whatever length a header declares: check every
	// declared length against the file's size before decoding.
	if err := msgpackcheck.Lengths(b); err != nil {
		return Game{}, fmt.Errorf("%s: not a spider game record: %v", path, err)
	}
	// The version is read first, so a record of another layout is
	// refused by its number.
	var h struct {
		Version int `msgpack:"version"`
	}
	if err := msgpack.Unmarshal(b, &h); err != nil {
		return Game{}, fmt.Errorf("%s: not a spider game record: %v", path, err)
	}
	if h.Version != Version {
		return Game{}, fmt.Errorf("%s: record version %d, this program reads version %d", path, h.Version, Version)
	}
	var g Game
	if err := msgpack.Unmarshal(b, &g); err != nil {
		return Game{}, fmt.Errorf("%s: not a spider game record: %v", path, err)
	}
	if _, err := g.RulesOf(); err != nil {
		return Game{}, fmt.Errorf("%s: %v", path, err)
	}
	return g, nil
}

// Replay replays g from its deal, calling visit (if not nil) after each
// action with its index. It returns the final position, or an error if an
// action is illegal or the result differs from the one recorded.
func Replay(g Game, visit func(i int, a env.Action, s *env.State)) (env.State, error) {
	r, err := g.RulesOf()
	if err != nil {
		return env.State{}, err
	}
	s := env.NewGame(r, g.Seed)
	for i, a := range g.Actions {
		if _, err := s.Step(env.Action(a)); err != nil {
			return s, fmt.Errorf("action %d: %v", i+1, err)
		}
		if visit != nil {
			visit(i, env.Action(a), &s)
		}
	}
	if s.Score() != g.Score || s.Runs() != g.Runs || (s.Status() == env.Won) != g.Won {
		return s, fmt.Errorf("replay ends with score %d, %d runs, won %v; the record says %d, %d, %v",
			s.Score(), s.Runs(), s.Status() == env.Won, g.Score, g.Runs, g.Won)
	}
	return s, nil
}

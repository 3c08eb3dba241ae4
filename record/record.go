// Package record saves and replays games: a recorded game is its
// configuration, its seed and its actions, in msgpack, so replaying it
// reproduces it exactly, score and all.
package record

import (
	"fmt"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/spiderenv/spider/env"
	"github.com/spiderenv/spider/internal/atomicfile"
	"github.com/spiderenv/spider/internal/msgpackcheck"
)

// Version is the record format version. Version 3 follows the msgpack map
// with its checksum (msgpackcheck.Seal: a msgpack uint32, the CRC-32C of
// every byte before it); version 2 had none. Version 2 stores the game as
// env.Options under the "game" key; version 1 had its own rules, suits,
// max_steps and time_per_action_ms keys.
const Version = 3

// MaxActions is the most actions a record holds, 2^24 (16.7 million):
// thousands of times a real game's few hundred. A game without a step
// limit (human play) has no natural end, so a bound is chosen, and it
// bounds the file: MaxSize follows from it.
const MaxActions = 1 << 24

// MaxPlayer is the longest player name a record holds, in bytes: enough
// for an "nn:PATH" policy with the longest path a system allows.
const MaxPlayer = 4096

// MaxSize is the largest record file Load reads, refused before reading:
// MaxActions actions of at most three bytes each (a msgpack uint16), the
// player's name, and 64 KiB for the keys and the game's options.
const MaxSize = 3*MaxActions + MaxPlayer + 64<<10

// Game is one recorded game. The result fields let a replay check itself.
type Game struct {
	Version int `msgpack:"version"` // the file format's (Version)
	// Game is the configuration the game was played under, defaults
	// filled in.
	Game    env.Options `msgpack:"game"`
	Seed    uint64      `msgpack:"seed"`    // the deal (env.NewGame)
	Player  string      `msgpack:"player"`  // who played it: a policy's name, or "human"
	Actions []uint16    `msgpack:"actions"` // every action, in order
	Score   int         `msgpack:"score"`   // the final score
	Runs    int         `msgpack:"runs"`    // runs completed
	Won     bool        `msgpack:"won"`     // every run completed
}

// New records a finished game of r from seed, final its last position
// (not nil: it panics).
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
// never leaves half a record, followed by its checksum. It refuses a game
// Load would refuse, one of another Version included.
func Save(path string, g Game) error {
	if g.Version != Version { // a Game literal made without New
		return fmt.Errorf("%s: record version %d, this program writes version %d (New sets it)", path, g.Version, Version)
	}
	if err := check(g); err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	b, err := msgpack.Marshal(g)
	if err != nil {
		return err
	}
	return atomicfile.Write(path, msgpackcheck.Seal(b))
}

// Load reads a record, refusing with a message that names the file one
// that is larger than MaxSize (before reading it), is not a record (a key
// of a record missing, or another key there),
// declares more data than the file holds, has another format version (the
// message names both), is damaged (its checksum differs, or bytes follow
// it), or describes a game no configuration allows (time_per_action_ms
// and every other option are range-checked by env.Options.Validate), with
// more actions than its step limit or MaxActions, or a player name over
// MaxPlayer bytes.
func Load(path string) (Game, error) {
	b, err := msgpackcheck.ReadFile(path, MaxSize)
	if err != nil {
		return Game{}, err
	}
	return parse(path, b)
}

// parse is Load after reading: it checks and decodes b, the content of
// the file at path (named in errors).
func parse(path string, b []byte) (Game, error) {
	// msgpack allocates whatever length a header declares: every declared
	// length is checked against the file's size before anything is
	// decoded, and each decode against what it may allocate (Size,
	// Decode). The version is read first, so a record of another layout
	// is refused by its number, and one of version 2 (without a checksum)
	// as such rather than as damaged; if it cannot be read, a checksum
	// that does not match says why.
	var h struct {
		Version int `msgpack:"version"`
	}
	head, err := msgpackcheck.Pick(b, "version")
	if err == nil {
		err = msgpackcheck.Decode(head, &h)
	}
	if err != nil {
		if derr := msgpackcheck.Damaged(b); derr != nil {
			return Game{}, fmt.Errorf("%s: damaged game record: %v", path, derr)
		}
		// A record cut short has no checksum at its end, but its first
		// entry still says what it is.
		if lead, lerr := msgpackcheck.Leading(b, "version"); lerr == nil && msgpackcheck.Decode(lead, &h) == nil && h.Version == Version {
			return Game{}, fmt.Errorf("%s: damaged game record (cut short?): %v", path, err)
		}
		return Game{}, fmt.Errorf("%s: not a spider game record: %v", path, err)
	}
	if h.Version != Version {
		return Game{}, fmt.Errorf("%s: record version %d, this program reads version %d", path, h.Version, Version)
	}
	body, err := msgpackcheck.Unseal(b)
	if err != nil {
		return Game{}, fmt.Errorf("%s: damaged game record: %v", path, err)
	}
	var g Game
	if err := msgpackcheck.Decode(body, &g); err != nil {
		return Game{}, fmt.Errorf("%s: not a spider game record: %v", path, err)
	}
	if err := checkKeys(body); err != nil {
		return Game{}, fmt.Errorf("%s: not a spider game record: %v", path, err)
	}
	if err := check(g); err != nil {
		return Game{}, fmt.Errorf("%s: %v", path, err)
	}
	return g, nil
}

// recordKeys are the keys of every record: Save writes them all.
var recordKeys = []string{"version", "game", "seed", "player", "actions", "score", "runs", "won"}

// checkKeys reports a record map (checked by Decode) that lacks one of
// recordKeys or holds another key, or one twice: msgpack fills a missing
// field with its zero and skips an unknown one, so a sealed map of a
// version alone loaded as a game of seed 0 and no moves.
func checkKeys(body []byte) error {
	picked, err := msgpackcheck.Pick(body, recordKeys...)
	if err != nil {
		return err
	}
	if mapLen(picked) < len(recordKeys) {
		for _, k := range recordKeys {
			if one, err := msgpackcheck.Pick(body, k); err != nil || mapLen(one) == 0 {
				return fmt.Errorf("no %q", k)
			}
		}
	}
	if mapLen(body) != mapLen(picked) {
		return fmt.Errorf("%d entries, where a record has the %d keys %v once each", mapLen(body), len(recordKeys), recordKeys)
	}
	return nil
}

// mapLen is the entry count of the map at the start of b, which Pick or
// Decode has checked (0 if it is not one).
func mapLen(b []byte) int {
	n, _, _ := msgpackcheck.MapLen(b)
	return n
}

// check reports what no record can hold: a game no configuration allows,
// more actions than the game's step limit or MaxActions, or a player name
// over MaxPlayer bytes.
func check(g Game) error {
	r, err := g.RulesOf()
	if err != nil {
		return err
	}
	switch n := len(g.Actions); {
	case n > MaxActions:
		return fmt.Errorf("%d actions, more than the %d a record holds", n, MaxActions)
	case r.MaxSteps() >= 0 && n > r.MaxSteps():
		return fmt.Errorf("%d actions, more than the game's step limit of %d", n, r.MaxSteps())
	case len(g.Player) > MaxPlayer:
		return fmt.Errorf("a player name of %d bytes, more than the %d a record holds", len(g.Player), MaxPlayer)
	}
	return nil
}

// Replay replays g from its deal, calling visit (if not nil) after each
// action with its index. It returns the final position; or, if an action
// is illegal or the result differs from the one recorded, the position
// where it stopped and an error.
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

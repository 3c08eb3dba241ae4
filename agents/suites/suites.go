// Package suites holds the named benchmark suites of spider eval: fixed
// deal sets, each under one rule set, number of suits and step limit, so
// that results from different people and languages are played on the same
// deals and can be compared. A suite never changes once published: a new
// deal set is a new version (or a new name), and a golden test pins every
// seed list.
//
// The seeds follow the project's rule: our agents are tuned and trained
// on seeds 1-50000 (the -dev suites lie there), and results are reported
// on seeds from 100001 (the -test suites), which no tuning ever uses.
// Seeds 50001-100000 are left unused.
package suites

import (
	"fmt"
	"sort"
	"strings"

	"github.com/spiderenv/spider/env"
)

// Suite is one named deal set with the game configuration it is played
// under.
type Suite struct {
	// Name is the suite's name, RULES-NSUIT-PURPOSE: classic-1suit-test.
	Name string `json:"name"`
	// Version changes whenever anything below would (it never should).
	Version string `json:"version"`
	// Purpose is "test" (report results; never tune on it) or "dev" (tune).
	Purpose  string      `json:"purpose"`
	RuleSet  env.RuleSet `json:"rules"`     // the games' rule set
	Suits    int         `json:"suits"`     // 1, 2 or 4
	MaxSteps int         `json:"max_steps"` // each game's step limit
	// First and Count are the seeds: First to First+Count-1.
	First uint64 `json:"first_seed"`
	Count int    `json:"deals"`
}

// Seeds returns the suite's seeds, in order. It panics on a negative
// Count (the built-in suites have none).
func (s Suite) Seeds() []uint64 {
	out := make([]uint64, s.Count)
	for i := range out {
		out[i] = s.First + uint64(i)
	}
	return out
}

// Options returns the suite's game options: its rules, suits and step
// limit, every other option at its default (no simulated clock).
func (s Suite) Options() env.Options {
	o := env.DefaultOptions()
	o.RuleSet, o.Suits, o.MaxSteps = s.RuleSet, s.Suits, s.MaxSteps
	return o
}

// Seed ranges. Tuning uses 1-50000; reports start at 100001.
const (
	devFirst  = 1
	devDeals  = 200
	testFirst = 100001
)

// all is every suite, in the order --list-suites shows them. The step
// limit is env's default (1000) for every suite, spelled out so that a
// change of the default cannot change a suite.
var all = []Suite{
	{Name: "classic-1suit-test", Version: "1", Purpose: "test", RuleSet: env.Classic, Suits: 1, MaxSteps: 1000, First: testFirst, Count: 1000},
	{Name: "classic-2suit-test", Version: "1", Purpose: "test", RuleSet: env.Classic, Suits: 2, MaxSteps: 1000, First: testFirst, Count: 200},
	{Name: "classic-4suit-test", Version: "1", Purpose: "test", RuleSet: env.Classic, Suits: 4, MaxSteps: 1000, First: testFirst, Count: 200},
	{Name: "cardems-1suit-test", Version: "1", Purpose: "test", RuleSet: env.Cardems, Suits: 1, MaxSteps: 1000, First: testFirst, Count: 200},
	{Name: "classic-1suit-dev", Version: "1", Purpose: "dev", RuleSet: env.Classic, Suits: 1, MaxSteps: 1000, First: devFirst, Count: devDeals},
	{Name: "classic-2suit-dev", Version: "1", Purpose: "dev", RuleSet: env.Classic, Suits: 2, MaxSteps: 1000, First: devFirst, Count: devDeals},
	{Name: "classic-4suit-dev", Version: "1", Purpose: "dev", RuleSet: env.Classic, Suits: 4, MaxSteps: 1000, First: devFirst, Count: devDeals},
	{Name: "cardems-1suit-dev", Version: "1", Purpose: "dev", RuleSet: env.Cardems, Suits: 1, MaxSteps: 1000, First: devFirst, Count: devDeals},
}

// All returns every suite (a copy).
func All() []Suite { return append([]Suite(nil), all...) }

// Names returns the suites' names, sorted.
func Names() []string {
	out := make([]string, len(all))
	for i, s := range all {
		out[i] = s.Name
	}
	sort.Strings(out)
	return out
}

// Lookup returns the suite called name.
func Lookup(name string) (Suite, error) {
	for _, s := range all {
		if s.Name == strings.ToLower(strings.TrimSpace(name)) {
			return s, nil
		}
	}
	return Suite{}, fmt.Errorf("unknown suite %q (known: %s)", name, strings.Join(Names(), ", "))
}

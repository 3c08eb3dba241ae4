package suites_test

import (
	"fmt"

	"github.com/spiderenv/spider/agents/suites"
)

// A suite names a fixed set of deals to report on; eval --suite plays it.
func ExampleLookup() {
	s, err := suites.Lookup("classic-1suit-test")
	if err != nil {
		panic(err)
	}
	seeds := s.Seeds()
	fmt.Println(s.Purpose, s.Suits, len(seeds), seeds[0], seeds[len(seeds)-1])
	// Output: test 1 1000 100001 101000
}

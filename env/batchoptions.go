package env

// Autoreset says what a Batch does with a game that has ended, in the
// meaning Gymnasium 1.x gives its vector environments' autoreset modes.
type Autoreset uint8

const (
	// NextStep resets an ended game on the following Step, which ignores
	// that game's action and gives it reward 0 and no termination. Until
	// then the ended game's observation stays its last one and its mask is
	// all ones (any action is accepted, and ignored). Gymnasium's default,
	// and EnvPool's.
	NextStep Autoreset = iota
	// SameStep resets an ended game within the step that ended it: the
	// buffers hold the new game's first observation and mask, while the
	// ended game's last observation and info go to the Final buffers, with
	// HasFinal set.
	SameStep
	// Disabled leaves an ended game ended: stepping it is an error until
	// ResetGames resets it.
	Disabled
	numAutoresets
)

var autoresetNames = names[Autoreset]{"Autoreset", "autoreset mode", []string{"next-step", "same-step", "disabled"}}

// String returns "next-step", "same-step" or "disabled".
func (a Autoreset) String() string { return autoresetNames.name(a) }

// ParseAutoreset returns the autoreset mode named s (case-insensitive).
func ParseAutoreset(s string) (Autoreset, error) { return autoresetNames.parse(s) }

// IllegalPolicy says what a Batch does with an illegal action.
type IllegalPolicy uint8

const (
	// RefuseIllegal refuses the whole step with an error naming the first
	// game whose action is illegal; nothing changes.
	RefuseIllegal IllegalPolicy = iota
	// NoopIllegal leaves that game as it was, sets its Illegal flag and
	// gives it reward -IllegalPenalty; the step counts towards truncation
	// (and in Moves and EpisodeLength, which count steps taken, refused
	// ones included), so that a policy stuck on illegal actions still
	// ends its episode, but takes no time on the game's clock: nothing
	// was played. An env.Env refuses such an action and counts nothing.
	NoopIllegal
	// LoseIllegal ends that game as terminated (a forfeit), sets its Illegal
	// flag and gives it reward -IllegalPenalty.
	LoseIllegal
	numIllegalPolicies
)

var illegalNames = names[IllegalPolicy]{"IllegalPolicy", "illegal-action policy", []string{"error", "noop", "lose"}}

// String returns "error", "noop" or "lose".
func (p IllegalPolicy) String() string { return illegalNames.name(p) }

// ParseIllegalPolicy returns the illegal-action policy named s.
func ParseIllegalPolicy(s string) (IllegalPolicy, error) { return illegalNames.parse(s) }

// MaxBatch is the largest number of games one Batch holds.
const MaxBatch = 1 << 20

// BatchOptions configure a Batch beyond its Rules.
type BatchOptions struct {
	N              int // games, 1 to MaxBatch
	Workers        int // goroutines stepping shards; 0 means GOMAXPROCS
	Autoreset      Autoreset
	Illegal        IllegalPolicy
	IllegalPenalty float32 // subtracted from the reward of an illegal action (noop and lose)
	// Presample makes every Reset and Step also draw, for each game, the
	// uniform legal action SampleLegal will return, while the game's mask
	// is still in cache; SampleLegal then only copies them. For a caller
	// that calls SampleLegal once after every Reset and Step (the random
	// policy) the actions are the same as without it, only faster; the
	// draws happen whether or not SampleLegal is called. StepSome,
	// ResetGames, ResetGamesSeeded and ResetSeeds draw only for the games
	// they touch, where
	// SampleLegal without Presample draws for every game, so after them
	// (and after Restore) the two give other, equally uniform, actions.
	Presample bool
	// Legal makes every Reset and Step also list each game's legal
	// actions in BatchBuffers.Legal, as OpenSpiel's legal_actions does:
	// a policy that picks among them (the first, a uniform one) then reads
	// a few ids instead of scanning a 1081-byte mask row. The mask's
	// computation writes the ids as it sets their bytes: a store and a
	// short sort per game stepped.
	Legal bool
}

// BatchBuffers are the flat arrays a Batch writes at every Reset and Step.
// Row i of each belongs to game i. The caller reads them in place, without
// copying; they stay valid until the next call, which updates them in
// place. The caller must not write to them: a step rewrites only what it
// changed (the columns of the observation that moved, the mask entries
// the move touched), so a byte written there stays and spoils what later
// steps hand out (copy a row to change it). The games themselves are safe
// from such writes: whether an action is legal comes from the game's
// state, not from Masks.
type BatchBuffers struct {
	ObsCompact []uint8   // N x CompactLen, when the encoding is Compact
	ObsFloat32 []float32 // N x Float32Len, when the encoding is Float32
	Masks      []uint8   // N x NumActions: 1 where the action is legal
	NumLegal   []int32   // legal actions per game (see Autoreset for ended games)
	Rewards    []float32
	Terminated []bool
	Truncated  []bool
	Illegal    []bool // the game's action was illegal (noop and lose policies)
	Score      []int32
	Runs       []uint8 // completed runs of the game now in the slot
	Moves      []int32 // steps taken in the current episode (NoopIllegal's refused ones too)

	// Episode statistics of the games that ended in this step (where
	// Terminated or Truncated is set): return (the rewards summed in
	// float64, then rounded to float32), length, win and completed runs.
	// Other entries are stale.
	EpisodeReturn []float32
	EpisodeLength []int32
	EpisodeWon    []bool
	EpisodeRuns   []uint8

	// Legal (with BatchOptions.Legal, else nil) is N x NumActions: row i
	// starts with game i's legal actions in increasing id order, the
	// NumLegal[i] ids whose mask byte is 1 (every id, for a game the next
	// step restarts under NextStep); the rest of the row is stale.
	Legal []int16

	// SameStep only: HasFinal marks the games that ended and restarted in
	// this step; their ended game's last observation is in the Final
	// buffer's row and its score in FinalScore.
	HasFinal        []bool
	FinalObsCompact []uint8
	FinalObsFloat32 []float32
	FinalScore      []int32
}

package server

import (
	"crypto/rand"
	"encoding/binary"
	"strconv"

	"github.com/spiderenv/spider/agents"
	"github.com/spiderenv/spider/env"
)

// ops lists the operations, in the hello reply.
var ops = []string{"hello", "make", "reset", "step", "render", "hint", "close"}

// PackedRowBytes is the size of one game's bit-packed mask row.
const PackedRowBytes = (env.NumActions + 7) / 8

// dispatch runs one decoded request and writes its reply into cn.en.
func (cn *conn) dispatch(q *request) (done bool, err *replyError) {
	if q.op != "hello" && !cn.hello {
		return false, fail(codeBadOrder, "the first request must be hello (op %q came first)", q.op)
	}
	switch q.op {
	case "hello":
		return false, cn.opHello(q)
	case "make":
		return false, cn.opMake(q)
	case "close":
		cn.en.start(true, q, 0)
		return true, nil
	}
	if !isKnown(q.op) {
		return false, fail(codeBadRequest, "unknown op %q (known: hello, make, reset, step, render, hint, close)", q.op)
	}
	if cn.batch == nil {
		return false, fail(codeBadOrder, "%s before make: make a batch first", q.op)
	}
	if q.op != "reset" && !cn.ready {
		return false, fail(codeBadOrder, "%s before reset: reset the batch first", q.op)
	}
	switch q.op {
	case "reset":
		return false, cn.opReset(q)
	case "step":
		return false, cn.opStep(q)
	case "render":
		i, err := cn.game(q)
		if err != nil {
			return false, err
		}
		s := cn.batch.State(i)
		cn.en.start(true, q, 1)
		cn.en.str("text", s.Render())
		return false, nil
	case "hint":
		i, err := cn.game(q)
		if err != nil {
			return false, err
		}
		s := cn.batch.State(i)
		legal := s.AppendLegal(nil)
		if len(legal) == 0 || cn.batch.Ended(i) {
			return false, fail(codeBadOrder, "game %d has no legal action (it has ended); reset it", i)
		}
		if cn.hint == nil {
			cn.hint = cn.s.cfg.Hint()
		}
		if err := agents.CheckRules(cn.hint, cn.batch.Rules()); err != nil {
			return false, fail(codeBadConfig, "the hint policy cannot advise on these games: %v", err)
		}
		// The hint agent sees each position afresh (Begin), so answers do
		// not depend on which games were asked about before.
		cn.hint.Begin(uint64(i))
		d := cn.hint.Act(agents.NewView(&s, legal, 0, false))
		cn.en.start(true, q, 3)
		cn.en.int("action", int64(d.Action))
		cn.en.str("notation", d.Action.String())
		cn.en.str("reason", d.Reason)
		return false, nil
	}
	return false, fail(codeInternal, "op %q has no handler", q.op)
}

func isKnown(op string) bool {
	for _, o := range ops {
		if o == op {
			return true
		}
	}
	return false
}

func (cn *conn) game(q *request) (int, *replyError) {
	if !q.has("game") {
		return 0, fail(codeBadRequest, "%s needs \"game\", the index of a game", q.op)
	}
	if q.game < 0 || q.game >= int64(cn.batch.N()) {
		return 0, fail(codeBadRequest, "game %d is outside 0 to %d", q.game, cn.batch.N()-1)
	}
	return int(q.game), nil
}

func (cn *conn) opHello(q *request) *replyError {
	if !q.has("version") {
		return fail(codeBadRequest, "hello needs \"version\" (this server speaks %d)", Version)
	}
	if q.version != Version {
		return fail(codeBadRequest, "protocol version %d is not supported (this server speaks %d)", q.version, Version)
	}
	cn.hello = true
	en := cn.en
	en.start(true, q, 5)
	en.int("version", Version)
	en.str("server", "spider")
	en.any("ops", ops)
	en.int("max_games", int64(cn.s.cfg.MaxGames))
	en.int("max_frame", int64(cn.s.cfg.MaxFrame))
	return nil
}

func (cn *conn) opMake(q *request) *replyError {
	o := env.Options{Suits: 1}
	var err error
	if q.has("rules") {
		if o.RuleSet, err = env.ParseRuleSet(q.rules); err != nil {
			return fail(codeBadConfig, "%v", err)
		}
	}
	if q.has("suits") {
		o.Suits = int(q.suits)
	}
	if q.has("obs") {
		if o.Encoding, err = env.ParseEncoding(q.obs); err != nil {
			return fail(codeBadConfig, "%v", err)
		}
	}
	if q.has("max_steps") {
		o.MaxSteps = int(q.maxSteps)
		if o.MaxSteps == 0 {
			return fail(codeBadConfig, "max_steps 0 would end every game at once; use a negative value for no limit")
		}
	}
	if q.has("face_up_slots") {
		o.FaceUpSlots = int(q.slots)
		if o.FaceUpSlots == 0 {
			return fail(codeBadConfig, "face_up_slots must be 1 to 104")
		}
	}
	if q.has("time_per_action_ms") {
		if q.timeMs < 0 || q.timeMs > 1e9 {
			return fail(codeBadConfig, "time_per_action_ms %d is outside 0 to 1e9", q.timeMs)
		}
		o.TimePerActionMs = int(q.timeMs)
	}
	r, err := env.NewRules(o)
	if err != nil {
		return fail(codeBadConfig, "%v", err)
	}
	bo := env.BatchOptions{N: 1, Workers: cn.s.cfg.Workers}
	if q.has("n") {
		if q.n < 1 {
			return fail(codeBadConfig, "n must be at least 1")
		}
		if q.n > int64(cn.s.cfg.MaxGames) {
			return &replyError{code: codeLimit, msg: "n must be 1 to " + strconv.Itoa(cn.s.cfg.MaxGames) + " (the server's --max-games)"}
		}
		bo.N = int(q.n)
	}
	if q.has("workers") {
		if q.workers < 0 || q.workers > 1024 {
			return fail(codeBadConfig, "workers %d is outside 0 to 1024", q.workers)
		}
		if q.workers > 0 {
			bo.Workers = int(q.workers)
		}
	}
	if q.has("autoreset") {
		if bo.Autoreset, err = env.ParseAutoreset(q.autoreset); err != nil {
			return fail(codeBadConfig, "%v", err)
		}
	}
	if q.has("illegal") {
		if bo.Illegal, err = env.ParseIllegalPolicy(q.illegal); err != nil {
			return fail(codeBadConfig, "%v", err)
		}
	}
	if q.has("illegal_penalty") {
		if !(q.penalty >= 0 && q.penalty <= 1e6) {
			return fail(codeBadConfig, "illegal_penalty %v is outside 0 to 1e6", q.penalty)
		}
		bo.IllegalPenalty = float32(q.penalty)
	}
	bits := false
	if q.has("mask") {
		switch q.mask {
		case "bytes":
		case "bits":
			bits = true
		default:
			return fail(codeBadConfig, "mask %q: want bytes or bits", q.mask)
		}
	}
	// Float32 observations of 4-suit games are 53 KB a game: bound memory.
	width := r.ObsLen()
	if r.Encoding() == env.Float32 {
		width *= 4
	}
	if bo.Autoreset == env.SameStep {
		width *= 2 // the final observations
	}
	if bytes := int64(bo.N) * int64(width+env.NumActions); bytes > int64(cn.s.cfg.MaxBytes) {
		return &replyError{code: codeLimit, msg: "a batch of " + strconv.Itoa(bo.N) + " games of this configuration needs " + strconv.FormatInt(bytes>>20, 10) + " MiB of buffers, over the server's limit of " + strconv.Itoa(cn.s.cfg.MaxBytes>>20) + " MiB"}
	}
	// Claim the games before building, so two connections cannot both pass.
	delta := int64(bo.N) - cn.games
	if total := cn.s.games.Add(delta); total > int64(cn.s.cfg.MaxTotal) {
		cn.s.games.Add(-delta)
		return &replyError{code: codeLimit, msg: "the server holds its limit of " + strconv.Itoa(cn.s.cfg.MaxTotal) + " games across connections"}
	}
	b, err := env.NewBatch(r, bo)
	if err != nil {
		cn.s.games.Add(-delta)
		return fail(codeBadConfig, "%v", err)
	}
	if cn.batch != nil {
		cn.batch.Close()
	}
	cn.batch, cn.games, cn.ready = b, int64(bo.N), false
	cn.spec = spec{rules: r, opts: b.Options(), bits: bits}
	cn.actions = make([]env.Action, bo.N)
	if bits {
		cn.packed = make([]byte, bo.N*PackedRowBytes)
	}
	return cn.makeReply(q)
}

func (cn *conn) makeReply(q *request) *replyError {
	r, o := cn.spec.rules, cn.spec.opts
	en := cn.en
	en.start(true, q, 14)
	en.int("n", int64(o.N))
	en.int("num_actions", env.NumActions)
	en.any("obs_shape", []int{r.ObsLen()})
	if r.Encoding() == env.Float32 {
		en.str("obs_dtype", "float32")
		low, high := make([]float32, r.ObsLen()), make([]float32, r.ObsLen())
		for i := range high {
			high[i] = 1
		}
		en.bin("obs_low", bytesOf(low))
		en.bin("obs_high", bytesOf(high))
	} else {
		en.str("obs_dtype", "uint8")
		high := make([]uint8, r.ObsLen())
		r.CompactHigh(high)
		en.bin("obs_low", make([]byte, r.ObsLen()))
		en.bin("obs_high", high)
	}
	if cn.spec.bits {
		en.str("mask", "bits")
		en.int("mask_row_bytes", PackedRowBytes)
	} else {
		en.str("mask", "bytes")
		en.int("mask_row_bytes", env.NumActions)
	}
	en.str("autoreset", o.Autoreset.String())
	en.str("illegal", o.Illegal.String())
	en.str("rules", r.RuleSet().String())
	en.int("suits", int64(r.Suits()))
	en.int("max_steps", int64(r.MaxSteps()))
	en.int("workers", int64(o.Workers))
	return nil
}

func (cn *conn) opReset(q *request) *replyError {
	b := cn.batch
	switch {
	case q.has("seed"):
		b.Reset(q.seed)
	case q.has("reset_mask"):
		if len(q.resetMask) != b.N() {
			return fail(codeBadRequest, "reset_mask has %d bytes for %d games", len(q.resetMask), b.N())
		}
		mask := make([]bool, b.N())
		for i, v := range q.resetMask {
			if v > 1 {
				return fail(codeBadRequest, "reset_mask byte %d is %d; want 0 or 1", i, v)
			}
			mask[i] = v == 1
		}
		if !cn.ready {
			return fail(codeBadOrder, "reset_mask before the first reset: reset the whole batch first")
		}
		b.ResetGames(mask)
	case cn.ready:
		b.ResetGames(allTrue(b.N()))
	default:
		var seed [8]byte
		rand.Read(seed[:])
		b.Reset(binary.LittleEndian.Uint64(seed[:]))
	}
	cn.ready = true
	cn.stepReply(q)
	return nil
}

func allTrue(n int) []bool {
	m := make([]bool, n)
	for i := range m {
		m[i] = true
	}
	return m
}

func (cn *conn) opStep(q *request) *replyError {
	b := cn.batch
	n := b.N()
	switch {
	case q.actions != nil:
		if len(q.actions) != 2*n {
			return fail(codeBadAction, "actions bin has %d bytes; want %d (uint16 little-endian, one per game)", len(q.actions), 2*n)
		}
		for i := range n {
			cn.actions[i] = env.Action(binary.LittleEndian.Uint16(q.actions[2*i:]))
		}
	case q.actionArr != nil:
		if len(q.actionArr) != n {
			return fail(codeBadAction, "%d actions for %d games", len(q.actionArr), n)
		}
		for i, v := range q.actionArr {
			if v < 0 || v > 0xffff {
				return fail(codeBadAction, "game %d: action %d is outside the action space 0 to %d", i, v, env.NumActions-1)
			}
			cn.actions[i] = env.Action(v)
		}
	default:
		return fail(codeBadRequest, "step needs \"actions\": a bin of uint16 or an array of integers, one per game")
	}
	if err := b.Step(cn.actions); err != nil {
		return fail(codeBadAction, "%v", err)
	}
	cn.stepReply(q)
	return nil
}

// stepReply writes the batch's buffers as a step reply.
func (cn *conn) stepReply(q *request) {
	b := cn.batch
	en := cn.en
	fields := 14
	same := b.HasFinal != nil
	if same {
		fields += 3
	}
	en.start(true, q, fields)
	if b.ObsFloat32 != nil {
		en.bin("obs", bytesOf(b.ObsFloat32))
	} else {
		en.bin("obs", b.ObsCompact)
	}
	if cn.spec.bits {
		packMasks(cn.packed, b.Masks)
		en.bin("masks", cn.packed)
	} else {
		en.bin("masks", b.Masks)
	}
	en.bin("num_legal", bytesOf(b.NumLegal))
	en.bin("rewards", bytesOf(b.Rewards))
	en.bin("terminated", bytesOf(b.Terminated))
	en.bin("truncated", bytesOf(b.Truncated))
	en.bin("illegal", bytesOf(b.Illegal))
	en.bin("score", bytesOf(b.Score))
	en.bin("moves", bytesOf(b.Moves))
	en.bin("runs", b.Runs)
	en.bin("episode_return", bytesOf(b.EpisodeReturn))
	en.bin("episode_length", bytesOf(b.EpisodeLength))
	en.bin("episode_won", bytesOf(b.EpisodeWon))
	en.bin("episode_runs", b.EpisodeRuns)
	if same {
		en.bin("has_final", bytesOf(b.HasFinal))
		if b.FinalObsFloat32 != nil {
			en.bin("final_obs", bytesOf(b.FinalObsFloat32))
		} else {
			en.bin("final_obs", b.FinalObsCompact)
		}
		en.bin("final_score", bytesOf(b.FinalScore))
	}
}

// packMasks packs each 1081-byte mask row of 0/1 bytes into 136 bytes,
// action a at bit a%8 of byte a/8.
func packMasks(dst, masks []byte) {
	rows := len(masks) / env.NumActions
	for g := range rows {
		row := masks[g*env.NumActions : (g+1)*env.NumActions]
		out := dst[g*PackedRowBytes : (g+1)*PackedRowBytes]
		i := 0
		for ; i+8 <= len(row); i += 8 {
			w := binary.LittleEndian.Uint64(row[i:])
			// Gather the low bit of each byte into one byte, byte k to bit k.
			out[i/8] = byte((w * 0x0102040810204080) >> 56)
		}
		out[i/8] = 0
		for k := 0; i < len(row); i, k = i+1, k+1 {
			out[i/8] |= row[i] << k
		}
	}
}

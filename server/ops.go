package server

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"math"
	"net"
	"slices"
	"strings"

	"github.com/spiderenv/spider/agents"
	"github.com/spiderenv/spider/env"
	"github.com/spiderenv/spider/internal/bytesize"
	"github.com/spiderenv/spider/picture"
)

// PackedRowBytes is the size of one game's bit-packed mask row.
const PackedRowBytes = (env.NumActions + 7) / 8

// stage is how far a connection has come: each operation needs one.
type stage uint8

const (
	stageStart stage = iota // nothing yet: only hello
	stageHello              // after hello
	stageMade               // after make
	stageReset              // after make and a reset of that batch
)

// refuse returns the bad_order failure of op, sent before the connection
// reached s, the first stage it lacks.
func (s stage) refuse(op string) *replyError {
	switch s {
	case stageHello:
		return fail(codeBadOrder, "the first request must be hello (op %q came first)", op)
	case stageMade:
		return fail(codeBadOrder, "%s before make: make a batch first", op)
	}
	return fail(codeBadOrder, "%s before reset: reset the batch first", op)
}

// stage returns the stage the connection has reached.
func (cn *conn) stage() stage {
	switch {
	case !cn.hello:
		return stageStart
	case cn.batch == nil:
		return stageHello
	case !cn.ready:
		return stageMade
	}
	return stageReset
}

// operation is one entry of the table of operations: the op's name, the
// stage it needs and its handler, which writes the reply into cn.en or
// returns the failure.
type operation struct {
	name   string
	needs  stage
	handle func(cn *conn, q *request) *replyError
}

// operations is the table of operations, in the order the hello reply
// lists them: the only place an op is named. It is filled by init because
// the hello handler reads it.
var (
	operations []operation
	opNames    []string
)

func init() {
	operations = []operation{
		{"hello", stageStart, (*conn).opHello},
		{"make", stageHello, (*conn).opMake},
		{"reset", stageMade, (*conn).opReset},
		{"step", stageReset, (*conn).opStep},
		{"render", stageReset, (*conn).opRender},
		{"hint", stageReset, (*conn).opHint},
		{"close", stageHello, (*conn).opClose},
	}
	for _, op := range operations {
		opNames = append(opNames, op.name)
	}
}

// optionKeys are the game options make takes, in env.Options' order, as
// the hello reply lists them: a client can check that it knows each.
var optionKeys = func() []string {
	var keys []string
	for _, f := range env.OptionFields() {
		keys = append(keys, f.Key)
	}
	return keys
}()

func lookupOp(name string) *operation {
	for i := range operations {
		if operations[i].name == name {
			return &operations[i]
		}
	}
	return nil
}

// internOp returns the table's string for the op named b, or a new string
// for an unknown op.
func internOp(b []byte) string {
	for _, op := range operations {
		if string(b) == op.name {
			return op.name
		}
	}
	return string(b)
}

// dispatch runs one decoded request through the table and its handler.
func (cn *conn) dispatch(q *request) *replyError {
	op := lookupOp(q.op)
	if op == nil {
		return fail(codeBadRequest, "unknown op %q (known: %s)", q.op, strings.Join(opNames, ", "))
	}
	if at := cn.stage(); at < op.needs {
		return (at + 1).refuse(q.op) // the first stage missing
	}
	return op.handle(cn, q)
}

func (cn *conn) opHello(q *request) *replyError {
	if !q.has(fieldVersion) {
		return fail(codeBadRequest, "hello needs \"version\" (this server speaks %d)", Version)
	}
	if q.version != Version {
		return fail(codeBadRequest, "protocol version %d is not supported (this server speaks %d)", q.version, Version)
	}
	cn.hello = true
	en := &cn.en
	en.begin(true, q)
	en.int("version", Version)
	en.str("server", "spider")
	en.strs("ops", opNames)
	en.strs("options", optionKeys)
	en.int("max_games", int64(cn.s.cfg.MaxGames))
	en.int("max_frame", int64(cn.s.cfg.MaxFrame))
	return nil
}

func (cn *conn) opClose(q *request) *replyError {
	cn.closing = true
	cn.dropBatch()
	cn.en.begin(true, q)
	return nil
}

// maxWorkers bounds a make request's workers.
const maxWorkers = 1024

func (cn *conn) opMake(q *request) *replyError {
	// The game options, whatever they are: zero means the default.
	var o env.Options
	for _, v := range q.options {
		switch {
		case v.big:
			return fail(codeBadConfig, "%s %d is more than any game can have", v.field.Key, uint64(v.num))
		case v.field.Numeric:
			if v.field.SetInt(&o, v.num) != nil { // past an int, where int has 32 bits
				return fail(codeBadConfig, "%s %d is more than any game can have", v.field.Key, v.num)
			}
		case v.field.Float:
			v.field.SetFloat(&o, v.float)
		default:
			if err := v.field.Set(&o, v.text); err != nil {
				return fail(codeBadConfig, "%v", err)
			}
		}
	}
	r, err := env.NewRules(o)
	if err != nil {
		return fail(codeBadConfig, "%v", err)
	}
	// The batch fields.
	cfg := &cn.s.cfg
	bo := env.BatchOptions{N: 1, Workers: cfg.Workers}
	if q.has(fieldN) {
		if q.n < 1 {
			return fail(codeBadConfig, "n must be at least 1")
		}
		if q.n > int64(cfg.MaxGames) {
			return fail(codeLimit, "n must be 1 to %d (the server's --max-games)", cfg.MaxGames)
		}
		bo.N = int(q.n)
	}
	if q.has(fieldWorkers) {
		if q.workers == math.MaxInt64 {
			// count reads every integer from 2^63-1 up as 2^63-1.
			return fail(codeBadConfig, "workers 2^63-1 or more is outside 0 to %d", maxWorkers)
		}
		if q.workers < 0 || q.workers > maxWorkers {
			return fail(codeBadConfig, "workers %d is outside 0 to %d", q.workers, maxWorkers)
		}
		if q.workers > 0 {
			bo.Workers = int(q.workers)
		}
	}
	if q.has(fieldAutoreset) {
		if bo.Autoreset, err = env.ParseAutoreset(q.autoreset); err != nil {
			return fail(codeBadConfig, "%v", err)
		}
	}
	if q.has(fieldIllegal) {
		if bo.Illegal, err = env.ParseIllegalPolicy(q.illegal); err != nil {
			return fail(codeBadConfig, "%v", err)
		}
	}
	if q.has(fieldPenalty) {
		if !(q.penalty >= 0 && q.penalty <= 1e6) {
			return fail(codeBadConfig, "illegal_penalty %v is outside 0 to 1e6", q.penalty)
		}
		bo.IllegalPenalty = float32(q.penalty)
	}
	bits := false
	if q.has(fieldMask) {
		// Case-insensitive, as the other names of make are (env's parsers).
		switch strings.ToLower(q.mask) {
		case "bytes":
		case "bits":
			bits = true
		default:
			return fail(codeBadConfig, "mask %q: want bytes or bits", q.mask)
		}
	}
	// Shared memory, when asked for and possible: otherwise the batch is
	// served over the socket, and the reply says why.
	shm, shmWhy := q.has(fieldShm) && q.shm, ""
	switch {
	case !shm:
	case !shmSupported:
		shm, shmWhy = false, noShmWhy
	case unixConn(cn.c) == nil:
		shm, shmWhy = false, "the connection is not a Unix socket: shared memory needs client and server on one machine, connected by a Unix socket"
	}
	// Float32 observations of 4-suit games are 53 KB a game: bound memory.
	width := r.ObsLen()
	if r.Encoding() == env.Float32 {
		width *= 4
	}
	if bo.Autoreset == env.SameStep {
		width *= 2 // the final observations
	}
	if shm && q.has(fieldLegal) && q.legal {
		width += 2 * env.NumActions // the legal lists (int16), a shared batch's only
	}
	if size := int64(bo.N) * int64(width+env.NumActions); size > int64(cfg.MaxBytes) {
		return fail(codeLimit, "a batch of %d games of this configuration needs %s of buffers, over the server's --max-batch-bytes %s",
			bo.N, bytesize.Format(size), bytesize.Format(int64(cfg.MaxBytes)))
	}
	askedBits := bits
	if shm {
		bits = false // the segment holds the mask bytes the batch writes
		// The lists are a shared batch's: over the socket they would
		// double the reply, and a client derives them from the mask.
		bo.Legal = q.has(fieldLegal) && q.legal
	}
	// Claim the games before building, so two connections cannot both pass.
	delta := int64(bo.N) - cn.games
	if total := cn.s.games.Add(delta); total > int64(cfg.MaxTotal) {
		cn.s.games.Add(-delta)
		return fail(codeLimit, "the server holds its limit of %d games across connections (--max-total)", cfg.MaxTotal)
	}
	// And the memory: the batch, the per-game request state and a reply
	// buffer sized once for the largest reply. The old batch's stays held
	// until the new one is built: both are alive until then. A shared
	// batch's buffers are in its segment (its reply is small), counted the
	// same.
	plan := func(shm bool) (need, reply int64) {
		need = BatchBytes(r, bo) + int64(bo.N)*connGameBytes
		if bits {
			need += int64(bo.N) * PackedRowBytes
		}
		reply = makeReplyBytes(r)
		if shm {
			need += shmBytes(bo.N)
			reply += 2 << 10 // the layout
		} else {
			reply = max(reply, stepReplyBytes(r, bo, bits))
		}
		if cn.picture != nil {
			reply = max(reply, rgbReplyBytes)
		}
		return need, reply
	}
	need, reply := plan(shm)
	if !cn.s.reserve(need + reply) {
		cn.s.games.Add(-delta)
		return fail(codeLimit, "a batch of %d games of this configuration needs %s of memory (buffers, game states and replies), over what the server has free of its --max-memory %s",
			bo.N, bytesize.Format(need+reply), cn.s.maxMemoryText())
	}
	var seg *segment
	if shm {
		cn.s.roomOutsideHeap()
		if seg, err = cn.s.openSegment(env.BatchLayout(r, bo), bo.N); err != nil {
			// Served over the socket instead, which needs a larger reply.
			shm, shmWhy, bits, bo.Legal = false, err.Error(), askedBits, false
			cn.s.unreserve(need + reply)
			need, reply = plan(false)
			if !cn.s.reserve(need + reply) {
				cn.s.games.Add(-delta)
				return fail(codeLimit, "a batch of %d games of this configuration needs %s of memory (buffers, game states and replies), over what the server has free of its --max-memory %s",
					bo.N, bytesize.Format(need+reply), cn.s.maxMemoryText())
			}
		}
	}
	var b *env.Batch
	if seg != nil {
		b, err = env.NewBatchIn(r, bo, seg.buffers)
	} else {
		b, err = env.NewBatch(r, bo)
	}
	if err != nil {
		if seg != nil {
			cn.s.closeSegment(seg)
		}
		cn.s.games.Add(-delta)
		cn.s.unreserve(need + reply)
		return fail(codeBadConfig, "%v", err)
	}
	if cn.batch != nil {
		cn.batch.Close()
	}
	if cn.seg != nil {
		cn.s.closeSegment(cn.seg)
	}
	cn.seg = seg
	cn.shmWhy = shmWhy
	old := cn.held.batch + cn.held.reply // given back below, once nothing points at it
	cn.held.batch, cn.held.reply = need, reply
	cn.en.dropRefs() // the last reply's views into the old batch
	cn.en.buf = make([]byte, 0, reply)
	cn.batch, cn.games, cn.ready, cn.bits = b, int64(bo.N), false, bits
	cn.actions = make([]env.Action, bo.N)
	cn.ids = make([]int32, bo.N)
	cn.resetMask = make([]bool, bo.N)
	cn.seedVals, cn.seeded = make([]uint64, bo.N), make([]bool, bo.N)
	cn.packed = nil
	if bits {
		cn.packed = make([]byte, bo.N*PackedRowBytes)
	}
	if seg == nil {
		setSendBuffer(cn.c, stepFrameBytes(r, bo, bits))
	}
	// Collected before another connection can take the bytes (giveBack),
	// since the process would hold both until the collector's next cycle.
	cn.s.giveBack(old)
	cn.makeReply(q)
	if q.has(fieldShm) {
		cn.shmReply()
	}
	if q.has(fieldLegal) {
		cn.en.bool("legal", bo.Legal)
	}
	return nil
}

// maxSendBuffer bounds the socket send buffer a batch asks for; the
// kernel bounds it further (net.core.wmem_max).
const maxSendBuffer = 8 << 20

// minSendBuffer is the least a batch asks for: setting a send buffer
// turns off the kernel's growing of it, and one of a few kilobytes (a
// small batch's step reply) sent a 921,600-byte picture in pieces that
// each waited for a delayed ACK: seconds a picture over TCP's loopback.
const minSendBuffer = 4 << 20

// setSendBuffer asks the kernel for a send buffer that holds a whole step
// reply of size bytes, so that the reply leaves in one go rather than in
// pieces of the default size, each waking the client. It is the kernel's
// memory, used while a reply is in flight, and best effort.
func setSendBuffer(c net.Conn, size int64) {
	if wb, ok := c.(interface{ SetWriteBuffer(int) error }); ok {
		wb.SetWriteBuffer(int(min(max(size, minSendBuffer), maxSendBuffer)))
	}
}

// shmReply adds to the make reply whether the batch shares memory, and
// then where each array lies, or else why not.
func (cn *conn) shmReply() {
	en := &cn.en
	en.bool("shm", cn.seg != nil)
	if cn.seg == nil {
		en.str("shm_error", cn.shmWhy)
		return
	}
	l := cn.seg.layout
	en.ints("shm_size", l.Size, len(cn.seg.actions))
	en.key("shm_layout")
	en.buf = appendArrayLen(en.buf, len(l.Fields)+1)
	field := func(name string, fd, offset int, dtype string, shape []int) {
		en.buf = append(en.buf, 0x85)
		en.buf = appendStr(appendStr(en.buf, "name"), name)
		en.buf = appendInt(appendStr(en.buf, "fd"), int64(fd))
		en.buf = appendInt(appendStr(en.buf, "offset"), int64(offset))
		en.buf = appendStr(appendStr(en.buf, "dtype"), dtype)
		en.buf = appendArrayLen(appendStr(en.buf, "shape"), len(shape))
		for _, d := range shape {
			en.buf = appendInt(en.buf, int64(d))
		}
	}
	for _, f := range l.Fields {
		field(f.Name, 0, f.Offset, f.DType, f.Shape)
	}
	field("actions", 1, 0, "uint16", []int{cn.batch.N()})
}

// makeReply describes the new batch: its spaces, known before any game
// exists, its batch fields and every game option under its key.
func (cn *conn) makeReply(q *request) {
	b := cn.batch
	r, bo := b.Rules(), b.Options()
	en := &cn.en
	en.begin(true, q)
	en.int("n", int64(bo.N))
	en.int("num_actions", env.NumActions)
	en.ints("obs_shape", r.ObsLen())
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
	if cn.bits {
		en.str("mask", "bits")
		en.int("mask_row_bytes", PackedRowBytes)
	} else {
		en.str("mask", "bytes")
		en.int("mask_row_bytes", env.NumActions)
	}
	en.str("autoreset", bo.Autoreset.String())
	en.str("illegal", bo.Illegal.String())
	en.int("workers", int64(bo.Workers))
	o := r.Options()
	for _, f := range env.OptionFields() {
		switch {
		case f.Numeric:
			en.int(f.Key, f.Value(o).(int64))
		case f.Float:
			en.float(f.Key, f.Value(o).(float64))
		default:
			en.str(f.Key, f.Value(o).(string))
		}

	}
}

func (cn *conn) opReset(q *request) *replyError {
	b := cn.batch
	if q.has(fieldSeeds) && q.has(fieldSeed) {
		return fail(codeBadRequest, "seeds with seed: send one of the two")
	}
	masked := q.has(fieldResetMask)
	if masked {
		if len(q.resetMask) != b.N() {
			return fail(codeBadRequest, "reset_mask has %d bytes for %d games", len(q.resetMask), b.N())
		}
		for i, v := range q.resetMask {
			if v > 1 {
				return fail(codeBadRequest, "reset_mask byte %d is %d; want 0 or 1", i, v)
			}
			cn.resetMask[i] = v == 1
		}
	}
	switch {
	case q.has(fieldSeeds):
		if q.seedCount != b.N() {
			return fail(codeBadRequest, "seeds has %d items for %d games", q.seedCount, b.N())
		}
		in := reader{b: q.seeds}
		for i := range q.seedCount {
			cn.seedVals[i], cn.seeded[i], _ = in.seedItem() // checked when the request was read
		}
		if masked {
			if !cn.ready {
				return fail(codeBadOrder, "reset_mask before the first reset: reset the whole batch first")
			}
			if err := b.ResetGamesSeeded(cn.resetMask, cn.seedVals, cn.seeded); err != nil {
				return fail(codeInternal, "%v", err)
			}
			break
		}
		if !cn.ready && slices.Contains(cn.seeded, false) {
			return fail(codeBadOrder, "a nil seed before the first reset: the game has no episodes to go on with; give every game a seed")
		}
		if err := b.ResetSeeds(cn.seedVals, cn.seeded); err != nil {
			return fail(codeInternal, "%v", err)
		}
	case q.has(fieldSeed):
		// Version 1 made a seed with reset_mask a whole reset, as Batch.Reset
		// is; a client that wants only the masked games seeded sends seeds.
		b.Reset(q.seed)
	case masked:
		if !cn.ready {
			return fail(codeBadOrder, "reset_mask before the first reset: reset the whole batch first")
		}
		if err := b.ResetGames(cn.resetMask); err != nil {
			return fail(codeInternal, "%v", err)
		}
	case cn.ready:
		for i := range cn.resetMask {
			cn.resetMask[i] = true
		}
		if err := b.ResetGames(cn.resetMask); err != nil {
			return fail(codeInternal, "%v", err)
		}
	default:
		var seed [8]byte
		rand.Read(seed[:])
		b.Reset(binary.LittleEndian.Uint64(seed[:]))
	}
	cn.ready = true
	cn.stepReply(q)
	return nil
}

func (cn *conn) opStep(q *request) *replyError {
	n := cn.batch.N()
	switch {
	case !q.has(fieldActions) && cn.seg != nil:
		// Copied out of the shared memory before they are checked, so
		// that what is checked is what is played.
		cn.seg.actionsAt(cn.actions)
	case !q.has(fieldActions):
		return fail(codeBadRequest, "step needs \"actions\": a bin of uint16 or an array of integers, one per game")
	case q.actionArray:
		if q.actionCount != n {
			return fail(codeBadAction, "%d actions for %d games", q.actionCount, n)
		}
		items := reader{b: q.actions} // checked by the decoder
		for i := range n {
			v, err := items.int()
			if err == errTooLarge {
				return fail(codeBadAction, "game %d: action %d is not an action id: ids are 0 to %d, and an array item must fit a uint16 (0 to 65535)", i, uint64(v), env.NumActions-1)
			}
			if err != nil {
				return fail(codeInternal, "action %d: %v", i, err)
			}
			if v < 0 || v > 0xffff {
				return fail(codeBadAction, "game %d: action %d is not an action id: ids are 0 to %d, and an array item must fit a uint16 (0 to 65535)", i, v, env.NumActions-1)
			}
			cn.actions[i] = env.Action(v)
		}
	default:
		if len(q.actions) != 2*n {
			return fail(codeBadAction, "actions bin has %d bytes; want %d (uint16 little-endian, one per game)", len(q.actions), 2*n)
		}
		for i := range n {
			cn.actions[i] = env.Action(binary.LittleEndian.Uint16(q.actions[2*i:]))
		}
	}
	ids, re := cn.envIDs(q)
	if re != nil {
		return re
	}
	var err error
	if ids != nil {
		err = cn.batch.StepSome(cn.actions, ids)
	} else {
		err = cn.batch.Step(cn.actions)
	}
	if err != nil {
		// A game that has ended is not a bad action: the client is right to
		// have sent it, and needs to know to reset rather than choose again.
		if errors.Is(err, env.ErrEpisodeOver) {
			return fail(codeOver, "%v", err)
		}
		return fail(codeBadAction, "%v", err)
	}
	cn.stepReply(q)
	return nil
}

// envIDs returns the games a step names in env_ids, or nil for all.
func (cn *conn) envIDs(q *request) ([]int32, *replyError) {
	if !q.has(fieldEnvIDs) {
		return nil, nil
	}
	n := cn.batch.N()
	b := q.envIDs
	if len(b)%4 != 0 || len(b) > 4*n {
		return nil, fail(codeBadRequest, "env_ids bin has %d bytes; want 4 per game (int32 little-endian), %d games at most", len(b), n)
	}
	ids := cn.ids[:len(b)/4]
	prev := int64(-1)
	for k := range ids {
		id := int64(int32(binary.LittleEndian.Uint32(b[4*k:])))
		if id < 0 || id >= int64(n) {
			return nil, fail(codeBadRequest, "env_ids item %d is %d, outside 0 to %d", k, id, n-1)
		}
		if id <= prev {
			return nil, fail(codeBadRequest, "env_ids must be strictly increasing: item %d is %d after %d", k, id, prev)
		}
		ids[k], prev = int32(id), id
	}
	return ids, nil
}

// stepReply writes the batch's buffers as a step reply; a batch in shared
// memory has them there already, and its reply only says the step is done.
func (cn *conn) stepReply(q *request) {
	b := cn.batch
	en := &cn.en
	en.begin(true, q)
	if cn.seg != nil {
		if q.has(fieldSeq) {
			en.int("seq", q.seq)
		}
		en.bool("done", true)
		return
	}
	if b.ObsFloat32 != nil {
		en.binRef("obs", bytesOf(b.ObsFloat32))
	} else {
		en.binRef("obs", b.ObsCompact)
	}
	if cn.bits {
		packMasks(cn.packed, b.Masks)
		en.binRef("masks", cn.packed)
	} else {
		en.binRef("masks", b.Masks)
	}
	en.binRef("num_legal", bytesOf(b.NumLegal))
	en.binRef("rewards", bytesOf(b.Rewards))
	en.binRef("terminated", bytesOf(b.Terminated))
	en.binRef("truncated", bytesOf(b.Truncated))
	en.binRef("illegal", bytesOf(b.Illegal))
	en.binRef("score", bytesOf(b.Score))
	en.binRef("moves", bytesOf(b.Moves))
	en.binRef("runs", b.Runs)
	en.binRef("episode_return", bytesOf(b.EpisodeReturn))
	en.binRef("episode_length", bytesOf(b.EpisodeLength))
	en.binRef("episode_won", bytesOf(b.EpisodeWon))
	en.binRef("episode_runs", b.EpisodeRuns)
	if b.HasFinal != nil {
		en.binRef("has_final", bytesOf(b.HasFinal))
		if b.FinalObsFloat32 != nil {
			en.binRef("final_obs", bytesOf(b.FinalObsFloat32))
		} else {
			en.binRef("final_obs", b.FinalObsCompact)
		}
		en.binRef("final_score", bytesOf(b.FinalScore))
	}
}

// game returns the game a render or hint request names.
func (cn *conn) game(q *request) (int, *replyError) {
	if !q.has(fieldGame) {
		return 0, fail(codeBadRequest, "%s needs \"game\", the index of a game", q.op)
	}
	if q.game < 0 || q.game >= int64(cn.batch.N()) {
		return 0, fail(codeBadRequest, "game %d is outside 0 to %d", q.game, cn.batch.N()-1)
	}
	return int(q.game), nil
}

// opRender answers with game's board as a player sees it: text, or with
// "mode": "rgb_array" the picture as a bin of Height x Width x 3 bytes.
func (cn *conn) opRender(q *request) *replyError {
	i, err := cn.game(q)
	if err != nil {
		return err
	}
	rgb := false
	switch q.mode {
	case "", "ansi", "text":
	case "rgb_array":
		rgb = true
	default:
		return fail(codeBadRequest, "render mode %q: want ansi, text or rgb_array", q.mode)
	}
	if rgb {
		// Only connections that ask pay for the picture and a reply
		// buffer large enough for it, both or neither: a request refused
		// for the buffer gives the picture's memory back, leaving the
		// connection as it was.
		var pic int64
		if cn.picture == nil {
			pic = picture.Size
		}
		if !cn.s.reserve(pic) {
			return fail(codeLimit, "a picture does not fit the server's memory (--max-memory %s) now", cn.s.maxMemoryText())
		}
		if cn.held.reply < rgbReplyBytes && !cn.setReply(rgbReplyBytes) {
			cn.s.unreserve(pic)
			return fail(codeLimit, "a picture does not fit the server's memory (--max-memory %s) now", cn.s.maxMemoryText())
		}
		if cn.picture == nil {
			cn.held.extra += picture.Size
			cn.picture = make([]uint8, picture.Size)
		}
	}
	s := cn.batch.State(i)
	cn.en.begin(true, q)
	if !rgb {
		cn.en.str("text", s.Render())
		return nil
	}
	cn.en.bin("rgb", picture.Draw(cn.picture, &s))
	cn.en.int("height", picture.Height)
	cn.en.int("width", picture.Width)
	return nil
}

func (cn *conn) opHint(q *request) *replyError {
	i, err := cn.game(q)
	if err != nil {
		return err
	}
	s := cn.batch.State(i)
	legal := s.AppendLegal(nil)
	if len(legal) == 0 || cn.batch.Ended(i) {
		return fail(codeOver, "game %d has ended: it has no legal action to hint until it is reset", i)
	}
	made := cn.hint == nil
	if made {
		if !cn.s.reserve(int64(cn.s.cfg.HintBytes)) {
			return fail(codeLimit, "the hint policy does not fit the server's memory (--max-memory %s) now", cn.s.maxMemoryText())
		}
		cn.held.extra += int64(cn.s.cfg.HintBytes)
		cn.hint = cn.s.cfg.Hint()
	}
	if err := agents.CheckRules(cn.hint, cn.batch.Rules()); err != nil {
		// A refused request leaves the connection holding what it held
		// before: an agent made for it is given back.
		if made {
			cn.hint = nil
			cn.held.extra -= int64(cn.s.cfg.HintBytes)
			cn.s.unreserve(int64(cn.s.cfg.HintBytes))
		}
		return fail(codeBadConfig, "the hint policy cannot advise on these games: %v", err)
	}
	// The hint agent sees each position afresh (Begin), so answers do not
	// depend on which games were asked about before; its seed is what the
	// player sees (Key, no hidden card), so they do not depend on the
	// game's slot or connection either.
	cn.hint.Begin(s.Key())
	d := cn.hint.Act(agents.NewView(&s, legal, 0, false))
	cn.en.begin(true, q)
	cn.en.int("action", int64(d.Action))
	cn.en.str("notation", d.Action.String())
	cn.en.str("reason", d.Reason)
	return nil
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

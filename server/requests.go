package server

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/spiderenv/spider/env"
)

// Limits on what a request may declare, checked before anything is
// allocated: a peer controls every length in the frame.
const (
	maxFields = 64  // fields in a request map
	maxString = 256 // bytes in a string field or key
	maxDepth  = 16  // nesting of an ignored unknown field
)

// field is a request field the server reads by its own name. The game
// options (env.Options keys) are not among them: the decoder finds those
// with env.LookupOption, so a new option needs no change here.
type field uint8

const (
	fieldOp field = iota
	fieldID
	fieldVersion
	fieldN
	fieldWorkers
	fieldAutoreset
	fieldIllegal
	fieldPenalty
	fieldMask
	fieldGame
	fieldSeed
	fieldResetMask
	fieldActions
	fieldMode
	fieldSeeds
	fieldShm
	fieldSeq
	fieldEnvIDs
	fieldLegal
	numFields
)

// requestFields holds each field's key and the reader that decodes its
// value into the request.
var requestFields = [numFields]struct {
	key  string
	read func(*reader, *request) error
}{
	fieldOp:        {"op", func(r *reader, q *request) (err error) { q.op, err = r.op(); return }},
	fieldID:        {"id", func(r *reader, q *request) (err error) { q.id, err = r.int(); return }},
	fieldVersion:   {"version", func(r *reader, q *request) (err error) { q.version, err = r.int(); return }},
	fieldN:         {"n", func(r *reader, q *request) (err error) { q.n, err = r.count(); return }},
	fieldWorkers:   {"workers", func(r *reader, q *request) (err error) { q.workers, err = r.count(); return }},
	fieldAutoreset: {"autoreset", func(r *reader, q *request) (err error) { q.autoreset, err = r.text(); return }},
	fieldIllegal:   {"illegal", func(r *reader, q *request) (err error) { q.illegal, err = r.text(); return }},
	fieldPenalty:   {"illegal_penalty", func(r *reader, q *request) (err error) { q.penalty, err = r.float(); return }},
	fieldMask:      {"mask", func(r *reader, q *request) (err error) { q.mask, err = r.text(); return }},
	fieldGame:      {"game", func(r *reader, q *request) (err error) { q.game, err = r.int(); return }},
	fieldSeed:      {"seed", (*reader).seed},
	fieldResetMask: {"reset_mask", func(r *reader, q *request) (err error) { q.resetMask, err = r.bin(); return }},
	fieldActions:   {"actions", (*reader).actions},
	fieldMode:      {"mode", func(r *reader, q *request) (err error) { q.mode, err = r.text(); return }},
	fieldSeeds:     {"seeds", (*reader).seeds},
	fieldShm:       {"shm", func(r *reader, q *request) (err error) { q.shm, err = r.bool(); return }},
	fieldSeq:       {"seq", func(r *reader, q *request) (err error) { q.seq, err = r.int(); return }},
	fieldEnvIDs:    {"env_ids", func(r *reader, q *request) (err error) { q.envIDs, err = r.bin(); return }},
	fieldLegal:     {"legal", func(r *reader, q *request) (err error) { q.legal, err = r.bool(); return }},
}

func lookupField(key []byte) (field, bool) {
	for f := range numFields {
		if string(key) == requestFields[f].key {
			return f, true
		}
	}
	return 0, false
}

// request is a decoded request map. A field not sent keeps its zero value
// and its bit in seen stays clear. The byte slices are views into the
// frame, valid until the next frame is read.
type request struct {
	seen      uint32 // bit f set when field f was sent with a value (a nil seed is none)
	given     uint32 // bit f set when field f's key came, to refuse it twice
	op        string
	id        int64
	version   int64
	n         int64
	workers   int64
	game      int64
	autoreset string
	illegal   string
	mask      string
	mode      string // render's picture: "ansi" or "text" (the default), "rgb_array"
	penalty   float64
	seed      uint64
	shm       bool   // make: share the batch's buffers in memory (Unix socket, Linux)
	legal     bool   // make: with shm, list each game's legal actions in the segment
	seq       int64  // step: the client's sequence number, echoed
	envIDs    []byte // step: the games to step, int32 little-endian, increasing
	resetMask []byte
	// seeds is the items of a msgpack array of seedCount seeds, each an
	// integer from 0 to 2^64-1 or nil, checked here and read again by reset.
	seeds     []byte
	seedCount int
	// actions is a bin of little-endian uint16, or, when actionArray is
	// set, the items of a msgpack array of actionCount integers, each
	// checked to be one.
	actions     []byte
	actionArray bool
	actionCount int
	// options are the game options sent, in the order sent.
	options []option
	// ignored are the keys of unknown fields, kept to refuse duplicates.
	ignored [][]byte
	in      reader // the payload being decoded
}

// option is one game option of a request: an integer for a numeric field,
// the text for a name.
type option struct {
	field env.OptionField
	num   int64
	big   bool // num holds the bits of a uint64 past 2^63-1
	float float64
	text  string
}

func (q *request) has(f field) bool { return q.seen&(1<<f) != 0 }

// The field bits must fit request.seen and request.given.
var _ [32 - numFields]struct{}

// decodeRequest reads one request map from payload into q, reusing q's
// slices. Every length the frame declares is checked against the bytes
// it really has left before anything is read or allocated; a step or reset
// request allocates nothing.
func decodeRequest(payload []byte, q *request) *replyError {
	*q = request{options: q.options[:0], ignored: q.ignored[:0], in: reader{b: payload}}
	r := &q.in // in q, which is on the heap already: a local would escape through the table's readers
	n, err := r.mapLen()
	if err != nil {
		return fail(codeBadFrame, "a request must be a msgpack map with string keys: %v", err)
	}
	if n > maxFields {
		return fail(codeBadRequest, "a request of %d fields is over the limit of %d", n, maxFields)
	}
	if err := r.fits(2 * n); err != nil { // every key and value takes a byte at least
		return fail(codeBadFrame, "a request map of %d fields: %v", n, err)
	}
	for range n {
		key, err := r.str()
		if err != nil {
			return fail(codeBadFrame, "a request must be a msgpack map with string keys: %v", err)
		}
		if re := q.read(r, key); re != nil {
			return re
		}
	}
	if n := r.left(); n != 0 {
		return fail(codeBadFrame, "%d bytes after the request map: a frame holds one msgpack value", n)
	}
	if !q.has(fieldOp) {
		return fail(codeBadRequest, "the request has no \"op\"")
	}
	return nil
}

// read decodes the value of the field named key: one of the server's own
// fields, a game option, or an unknown field, which is skipped (for newer
// clients).
func (q *request) read(r *reader, key []byte) *replyError {
	var err error
	if f, ok := lookupField(key); ok {
		if q.given&(1<<f) != 0 {
			return fail(codeBadRequest, "field %q given twice", key)
		}
		q.given |= 1 << f
		q.seen |= 1 << f // the reader may clear it: a nil seed is no seed
		if err = requestFields[f].read(r, q); err != nil {
			q.seen &^= 1 << f // a failed reply must not echo a bad id
		}
	} else if of, ok := env.LookupOption(string(key)); ok {
		for _, o := range q.options {
			if o.field.Key == of.Key {
				return fail(codeBadRequest, "field %q given twice", key)
			}
		}
		o := option{field: of}
		switch {
		case of.Numeric:
			if o.num, err = r.int(); err == errTooLarge {
				o.big, err = true, nil // bad_config at make, as any value out of range
			}
		case of.Float:
			o.float, err = r.float()
		default:
			o.text, err = r.text()
		}
		q.options = append(q.options, o)
	} else {
		for _, k := range q.ignored {
			if bytes.Equal(k, key) {
				return fail(codeBadRequest, "field %q given twice", key)
			}
		}
		q.ignored = append(q.ignored, key)
		err = r.skip(0)
	}
	if err != nil {
		return fail(codeBadRequest, "field %q has the wrong type or value: %v", key, err)
	}
	return nil
}

// reader reads msgpack values from one frame's payload. Every length it
// meets is checked against the bytes left before it is used.
type reader struct {
	b   []byte
	off int
}

var (
	errTooLong = errors.New("a declared length runs past the end of the frame")
	errShort   = errors.New("the frame ends inside a value")
)

func (r *reader) left() int { return len(r.b) - r.off }

// fits checks that n bytes, a length the frame declared, are left.
func (r *reader) fits(n int) error {
	if n < 0 || n > r.left() {
		return errTooLong
	}
	return nil
}

func (r *reader) peek() (byte, error) {
	if r.off >= len(r.b) {
		return 0, errShort
	}
	return r.b[r.off], nil
}

// take returns the next n bytes, n a size the format fixes.
func (r *reader) take(n int) ([]byte, error) {
	if n > r.left() {
		return nil, errShort
	}
	b := r.b[r.off : r.off+n : r.off+n]
	r.off += n
	return b, nil
}

// span returns the next n bytes, n a length the frame declared.
func (r *reader) span(n int) ([]byte, error) {
	if err := r.fits(n); err != nil {
		return nil, err
	}
	return r.take(n)
}

// uint reads a big-endian unsigned integer of size bytes (1, 2, 4 or 8).
func (r *reader) uint(size int) (uint64, error) {
	b, err := r.take(size)
	if err != nil {
		return 0, err
	}
	switch size {
	case 1:
		return uint64(b[0]), nil
	case 2:
		return uint64(binary.BigEndian.Uint16(b)), nil
	case 4:
		return uint64(binary.BigEndian.Uint32(b)), nil
	}
	return binary.BigEndian.Uint64(b), nil
}

// header reads a type byte and the length after it: a fix type's length
// is in its low bits (fixMask over fixLow to fixLow|fixMask), the others
// in 1, 2 or 4 bytes after the codes c8, c16 and c32.
func (r *reader) header(fixLow, fixMask, c8, c16, c32 byte, what string) (int, error) {
	c, err := r.peek()
	if err != nil {
		return 0, err
	}
	size := 0
	switch {
	case c&^fixMask == fixLow:
		r.off++
		return int(c & fixMask), nil
	case c == c8 && c8 != 0:
		size = 1
	case c == c16:
		size = 2
	case c == c32:
		size = 4
	default:
		return 0, fmt.Errorf("want %s", what)
	}
	r.off++
	n, err := r.uint(size)
	return r.length(n, err)
}

// length is a declared length n as an int. Where int has 32 bits a
// uint32 of 2^31 or more would read negative: it is refused as running
// past the end of the frame, which no frame (at most an int's bytes) has.
func (r *reader) length(n uint64, err error) (int, error) {
	if err == nil && n > math.MaxInt {
		err = errTooLong
	}
	return int(n), err
}

func (r *reader) mapLen() (int, error)   { return r.header(0x80, 0x0f, 0, 0xde, 0xdf, "a map") }
func (r *reader) arrayLen() (int, error) { return r.header(0x90, 0x0f, 0, 0xdc, 0xdd, "an array") }
func (r *reader) strLen() (int, error)   { return r.header(0xa0, 0x1f, 0xd9, 0xda, 0xdb, "a string") }

// binLen reads a bin header (bin has no fix form).
func (r *reader) binLen() (int, error) {
	c, err := r.peek()
	if err != nil {
		return 0, err
	}
	if c < 0xc4 || c > 0xc6 {
		return 0, errors.New("want a bin")
	}
	r.off++
	return r.length(r.uint(1 << (c - 0xc4)))
}

// str reads a string of at most maxString bytes, as a view.
func (r *reader) str() ([]byte, error) {
	n, err := r.strLen()
	if err != nil {
		return nil, err
	}
	if n > maxString {
		return nil, fmt.Errorf("a string of %d bytes is over the limit of %d", n, maxString)
	}
	return r.span(n)
}

// text reads a string of at most maxString bytes, as a string.
func (r *reader) text() (string, error) {
	b, err := r.str()
	return string(b), err
}

// op reads the op's name, the table's own string when it is a known op,
// so decoding one allocates nothing.
func (r *reader) op() (string, error) {
	b, err := r.str()
	if err != nil {
		return "", err
	}
	return internOp(b), nil
}

// bin reads a bin, as a view.
func (r *reader) bin() ([]byte, error) {
	n, err := r.binLen()
	if err != nil {
		return nil, err
	}
	return r.span(n)
}

var errWantInt = errors.New("want an integer")

// errTooLarge is int's error for a msgpack uint64 past 2^63-1. It is an
// integer, only out of every range a field has, so the fields with a
// documented range error (actions, game options, n, workers) give that
// error instead of bad_request; the value int returns with it holds the
// uint64's bits, for the message.
var errTooLarge = errors.New("integer too large")

// int reads any msgpack integer that fits an int64.
// bool reads a msgpack true or false.
func (r *reader) bool() (bool, error) {
	c, err := r.peek()
	if err != nil {
		return false, err
	}
	if c != 0xc2 && c != 0xc3 {
		return false, errors.New("not a boolean")
	}
	r.off++
	return c == 0xc3, nil
}

func (r *reader) int() (int64, error) {
	c, err := r.peek()
	if err != nil {
		return 0, err
	}
	switch {
	case c <= 0x7f: // positive fixint
		r.off++
		return int64(c), nil
	case c >= 0xe0: // negative fixint
		r.off++
		return int64(int8(c)), nil
	case c >= 0xcc && c <= 0xcf: // uint 8, 16, 32, 64
		r.off++
		u, err := r.uint(1 << (c - 0xcc))
		if err == nil && u > math.MaxInt64 {
			err = errTooLarge
		}
		return int64(u), err
	case c >= 0xd0 && c <= 0xd3: // int 8, 16, 32, 64
		r.off++
		size := 1 << (c - 0xd0)
		u, err := r.uint(size)
		shift := 64 - 8*size // sign-extend
		return int64(u<<shift) >> shift, err
	}
	return 0, errWantInt
}

// float reads a float32, a float64 or an integer.
func (r *reader) float() (float64, error) {
	c, err := r.peek()
	if err != nil {
		return 0, err
	}
	switch c {
	case 0xca:
		r.off++
		u, err := r.uint(4)
		return float64(math.Float32frombits(uint32(u))), err
	case 0xcb:
		r.off++
		u, err := r.uint(8)
		return math.Float64frombits(u), err
	}
	v, err := r.int()
	switch err {
	case errWantInt:
		err = errors.New("want a number")
	case errTooLarge:
		return float64(uint64(v)), nil
	}
	return float64(v), err
}

// count reads n or workers: an integer whose range the make op checks. A
// uint64 past 2^63-1 reads as 2^63-1, past every limit, so it gets the
// range's error, as any other integer too large does.
func (r *reader) count() (int64, error) {
	v, err := r.int()
	if err == errTooLarge {
		return math.MaxInt64, nil
	}
	return v, err
}

// seed reads the reset seed: a non-negative integer up to 2^64-1, or nil,
// which counts as no seed.
func (r *reader) seed(q *request) error {
	v, ok, err := r.seedItem()
	if err == nil && !ok {
		q.seen &^= 1 << fieldSeed
	}
	q.seed = v
	return err
}

// seedItem reads a seed: an integer from 0 to 2^64-1 (ok), or nil (not ok).
func (r *reader) seedItem() (v uint64, ok bool, err error) {
	c, err := r.peek()
	if err != nil {
		return 0, false, err
	}
	switch c {
	case 0xc0:
		r.off++
		return 0, false, nil
	case 0xcf:
		r.off++
		v, err = r.uint(8)
		return v, true, err
	}
	n, err := r.int()
	if err == nil && n < 0 {
		err = errors.New("negative")
	}
	return uint64(n), true, err
}

// seeds reads reset's list of seeds: an array of integers or nils, whose
// items are checked here and read again by the reset.
func (r *reader) seeds(q *request) error {
	n, err := r.arrayLen()
	if err == errTooLong { // an array32 too long for a 32-bit int
		return err
	}
	if err != nil {
		return errors.New("want an array of seeds (integers from 0 to 2^64-1, or nil)")
	}
	if err := r.fits(n); err != nil { // every item takes a byte at least
		return err
	}
	start := r.off
	for range n {
		if _, _, err := r.seedItem(); err != nil {
			return err
		}
	}
	q.seeds, q.seedCount = r.b[start:r.off], n
	return nil
}

// actions reads the step's actions: a bin of uint16, or an array of
// integers, whose items are checked here and read again by the step.
func (r *reader) actions(q *request) error {
	c, err := r.peek()
	if err != nil {
		return err
	}
	if c >= 0xc4 && c <= 0xc6 {
		q.actions, err = r.bin()
		return err
	}
	n, err := r.arrayLen()
	if err == errTooLong { // an array32 too long for a 32-bit int
		return err
	}
	if err != nil {
		return errors.New("want a bin of uint16 or an array of integers")
	}
	if err := r.fits(n); err != nil { // every item takes a byte at least
		return err
	}
	start := r.off
	for range n {
		if _, err := r.int(); err != nil && err != errTooLarge { // too large is bad_action, at the step
			return err
		}
	}
	q.actions, q.actionArray, q.actionCount = r.b[start:r.off], true, n
	return nil
}

// skip passes over one value of an unknown field without allocating it
// and without recursing deeper than maxDepth.
func (r *reader) skip(depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("an unknown field is nested more than %d deep", maxDepth)
	}
	c, err := r.peek()
	if err != nil {
		return err
	}
	items := 0 // nested values to skip after the header
	switch {
	case c <= 0x7f || c >= 0xe0 || c == 0xc0 || c == 0xc2 || c == 0xc3: // fixints, nil, bools
		r.off++
		return nil
	case c >= 0x80 && c <= 0x8f || c == 0xde || c == 0xdf:
		n, err := r.mapLen()
		if err != nil {
			return err
		}
		items = 2 * n
	case c >= 0x90 && c <= 0x9f || c == 0xdc || c == 0xdd:
		n, err := r.arrayLen()
		if err != nil {
			return err
		}
		items = n
	case c >= 0xa0 && c <= 0xbf || c >= 0xd9 && c <= 0xdb:
		n, err := r.strLen()
		if err == nil {
			_, err = r.span(n)
		}
		return err
	case c >= 0xc4 && c <= 0xc6:
		_, err := r.bin()
		return err
	case c >= 0xc7 && c <= 0xc9: // ext 8, 16, 32: length, type, data
		r.off++
		n, err := r.uint(1 << (c - 0xc7))
		if err == nil {
			_, err = r.take(1)
		}
		if err == nil {
			_, err = r.span(int(n))
		}
		return err
	case c == 0xca || c == 0xcb: // float 32, 64
		r.off++
		_, err := r.take(4 << (c - 0xca))
		return err
	case c >= 0xcc && c <= 0xd3: // uint and int 8 to 64
		r.off++
		_, err := r.take(1 << ((c - 0xcc) & 3))
		return err
	case c >= 0xd4 && c <= 0xd8: // fixext 1 to 16: type, data
		r.off++
		_, err := r.take(1 + 1<<(c-0xd4))
		return err
	default:
		return fmt.Errorf("byte 0x%02x is not msgpack", c)
	}
	if err := r.fits(items); err != nil { // every item takes a byte at least
		return err
	}
	for range items {
		if err := r.skip(depth + 1); err != nil {
			return err
		}
	}
	return nil
}

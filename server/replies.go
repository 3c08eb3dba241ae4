package server

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"unsafe"
)

// Error codes of failed replies (PROTOCOL.md).
const (
	codeBadFrame   = "bad_frame"
	codeBadRequest = "bad_request"
	codeBadOrder   = "bad_order"
	codeBadConfig  = "bad_config"
	codeBadAction  = "bad_action"
	codeOver       = "episode_over"
	codeLimit      = "limit"
	codeInternal   = "internal"
)

// replyError is a failed request: the code and the message of its reply.
// Every one is made by fail.
type replyError struct {
	code string
	msg  string
}

func (e *replyError) Error() string { return e.code + ": " + e.msg }

// fail returns the failure with the given code and a message formatted as
// by fmt.Sprintf.
func fail(code, format string, args ...any) *replyError {
	return &replyError{code: code, msg: fmt.Sprintf(format, args...)}
}

// encoder writes one reply into a reused buffer, already framed: the
// buffer starts with the frame's length prefix and a map32 header, both
// reserved by begin and filled in by frame, which also writes the number of
// fields the reply's methods wrote. msgpack allows map32 for a map of any
// size, so no caller counts fields. Once the buffer has grown to the
// largest reply, encoding allocates nothing. A large array (binRef) is not
// copied into the buffer: the reply refers to it, and writeTo writes it
// from where it lies, between the buffer's pieces.
type encoder struct {
	buf    []byte
	fields uint32
	refs   []ref // arrays written by reference, in order
	extra  int   // their bytes
}

// ref is an array of the reply left where it lies: its bytes go after
// buf[:at].
type ref struct {
	at   int
	data []byte
}

// begin starts a reply with "ok" and, when q sent one, its "id". q is nil
// when no request was read.
func (en *encoder) begin(ok bool, q *request) {
	en.buf = append(en.buf[:0],
		0, 0, 0, 0, // the frame's length
		0xdf, 0, 0, 0, 0) // map32 and its number of fields
	en.fields = 0
	en.refs, en.extra = en.refs[:0], 0
	en.bool("ok", ok)
	if q != nil && q.has(fieldID) {
		en.int("id", q.id)
	}
}

// dropRefs forgets the arrays the last reply wrote by reference, which
// would otherwise keep a released batch reachable from the slice's
// backing array, out of the collector's reach.
func (en *encoder) dropRefs() {
	clear(en.refs[:cap(en.refs)])
	en.refs = en.refs[:0]
}

// failure writes the failed reply of re.
func (en *encoder) failure(q *request, re *replyError) {
	en.begin(false, q)
	en.str("code", re.code)
	en.str("error", re.msg)
}

// seal writes the frame's length and the number of fields.
func (en *encoder) seal() {
	binary.BigEndian.PutUint32(en.buf[frameHeader+1:], en.fields)
	binary.BigEndian.PutUint32(en.buf[:frameHeader], uint32(len(en.buf)+en.extra-frameHeader))
}

// frame completes the reply and returns its frame, valid until the next
// begin. A reply with arrays by reference is put together in a new slice
// (tests); the server writes those with writeTo.
func (en *encoder) frame() []byte {
	en.seal()
	if len(en.refs) == 0 {
		return en.buf
	}
	out := make([]byte, 0, len(en.buf)+en.extra)
	last := 0
	for _, r := range en.refs {
		out = append(append(out, en.buf[last:r.at]...), r.data...)
		last = r.at
	}
	return append(out, en.buf[last:]...)
}

// writeTo completes the reply and writes its frame to w piece by piece:
// the arrays by reference straight from where they lie. Through a
// bufio.Writer the small pieces gather in its buffer and a large array
// goes to the connection without a copy.
func (en *encoder) writeTo(w io.Writer) error {
	en.seal()
	last := 0
	for _, r := range en.refs {
		if _, err := w.Write(en.buf[last:r.at]); err != nil {
			return err
		}
		if _, err := w.Write(r.data); err != nil {
			return err
		}
		last = r.at
	}
	_, err := w.Write(en.buf[last:])
	return err
}

// payload returns the reply's msgpack map, without the frame header.
func (en *encoder) payload() []byte { return en.frame()[frameHeader:] }

func (en *encoder) key(k string) {
	en.fields++
	en.buf = appendStr(en.buf, k)
}

func (en *encoder) bool(k string, v bool) {
	en.key(k)
	if v {
		en.buf = append(en.buf, 0xc3)
	} else {
		en.buf = append(en.buf, 0xc2)
	}
}

func (en *encoder) str(k, v string) {
	en.key(k)
	en.buf = appendStr(en.buf, v)
}

func (en *encoder) int(k string, v int64) {
	en.key(k)
	en.buf = appendInt(en.buf, v)
}

func (en *encoder) float(k string, v float64) {
	en.key(k)
	en.buf = binary.BigEndian.AppendUint64(append(en.buf, 0xcb), math.Float64bits(v))
}

func (en *encoder) bin(k string, v []byte) {
	en.binHeader(k, len(v))
	en.buf = append(en.buf, v...)
}

// binRef writes a bin field whose bytes stay where they are until the
// reply is written: the step reply's arrays, which would cost a copy of
// megabytes otherwise.
func (en *encoder) binRef(k string, v []byte) {
	en.binHeader(k, len(v))
	en.refs = append(en.refs, ref{at: len(en.buf), data: v})
	en.extra += len(v)
}

// binHeader writes key k and the header of a bin of n bytes.
func (en *encoder) binHeader(k string, n int) {
	en.key(k)
	switch {
	case n <= math.MaxUint8:
		en.buf = append(en.buf, 0xc4, byte(n))
	case n <= math.MaxUint16:
		en.buf = binary.BigEndian.AppendUint16(append(en.buf, 0xc5), uint16(n))
	default:
		en.buf = binary.BigEndian.AppendUint32(append(en.buf, 0xc6), uint32(n))
	}
}

func (en *encoder) ints(k string, v ...int) {
	en.key(k)
	en.buf = appendArrayLen(en.buf, len(v))
	for _, x := range v {
		en.buf = appendInt(en.buf, int64(x))
	}
}

func (en *encoder) strs(k string, v []string) {
	en.key(k)
	en.buf = appendArrayLen(en.buf, len(v))
	for _, s := range v {
		en.buf = appendStr(en.buf, s)
	}
}

func appendStr(b []byte, s string) []byte {
	switch n := len(s); {
	case n < 32:
		b = append(b, 0xa0|byte(n))
	case n <= math.MaxUint8:
		b = append(b, 0xd9, byte(n))
	case n <= math.MaxUint16:
		b = binary.BigEndian.AppendUint16(append(b, 0xda), uint16(n))
	default:
		b = binary.BigEndian.AppendUint32(append(b, 0xdb), uint32(n))
	}
	return append(b, s...)
}

func appendArrayLen(b []byte, n int) []byte {
	switch {
	case n < 16:
		return append(b, 0x90|byte(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(b, 0xdc), uint16(n))
	}
	return binary.BigEndian.AppendUint32(append(b, 0xdd), uint32(n))
}

// appendInt writes v in the shortest msgpack form, as msgpack's own
// encoders do: non-negative values as fixint or uint, negative ones as
// negative fixint or int.
func appendInt(b []byte, v int64) []byte {
	switch {
	case v >= 0 && v <= math.MaxInt8:
		return append(b, byte(v))
	case v >= 0 && v <= math.MaxUint8:
		return append(b, 0xcc, byte(v))
	case v >= 0 && v <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(b, 0xcd), uint16(v))
	case v >= 0 && v <= math.MaxUint32:
		return binary.BigEndian.AppendUint32(append(b, 0xce), uint32(v))
	case v >= 0:
		return binary.BigEndian.AppendUint64(append(b, 0xcf), uint64(v))
	case v >= -32:
		return append(b, byte(v))
	case v >= math.MinInt8:
		return append(b, 0xd0, byte(v))
	case v >= math.MinInt16:
		return binary.BigEndian.AppendUint16(append(b, 0xd1), uint16(v))
	case v >= math.MinInt32:
		return binary.BigEndian.AppendUint32(append(b, 0xd2), uint32(v))
	}
	return binary.BigEndian.AppendUint64(append(b, 0xd3), uint64(v))
}

// The array views below reinterpret typed slices as their raw bytes. The
// protocol is little-endian; every platform Go supports that we build for
// (amd64, arm64) is too, and init refuses the others.
func init() {
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		panic("server: the wire format needs a little-endian machine")
	}
}

func bytesOf[T any](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(s[0])))
}

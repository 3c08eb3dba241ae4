package server

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"unsafe"

	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

// Error codes of failed replies (PROTOCOL.md).
const (
	codeBadFrame   = "bad_frame"
	codeBadRequest = "bad_request"
	codeBadOrder   = "bad_order"
	codeBadConfig  = "bad_config"
	codeBadAction  = "bad_action"
	codeLimit      = "limit"
	codeInternal   = "internal"
)

// replyError is a failed request: its code, its message and whether the
// connection must close after the reply.
type replyError struct {
	code  string
	msg   string
	fatal bool
}

func (e *replyError) Error() string { return e.code + ": " + e.msg }

func fail(code, format string, args ...any) *replyError {
	return &replyError{code: code, msg: fmt.Sprintf(format, args...)}
}

// readFrame reads one frame into buf (grown as needed, never past max) and
// returns the payload. An oversize or empty length is refused before any
// allocation, as a fatal replyError; a broken stream returns the I/O error.
func readFrame(r io.Reader, buf []byte, max int) ([]byte, []byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, buf, err
	}
	n := int(binary.BigEndian.Uint32(hdr[:]))
	switch {
	case n == 0:
		return nil, buf, &replyError{code: codeBadFrame, msg: "empty frame", fatal: true}
	case n > max:
		return nil, buf, &replyError{code: codeBadFrame, msg: fmt.Sprintf("frame of %d bytes is over the limit of %d", n, max), fatal: true}
	}
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, buf, err
	}
	return buf, buf, nil
}

// writeFrame writes payload with its length prefix.
func writeFrame(w io.Writer, payload []byte) error {
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], uint32(len(payload)))
	if _, err := w.Write(hdr[:]); err != nil {
		return err
	}
	_, err := w.Write(payload)
	return err
}

// request is a decoded request map. Fields not sent keep their zero value
// and their bit in seen stays clear.
type request struct {
	seen      map[string]bool
	op        string
	id        int64
	version   int64
	rules     string
	obs       string
	autoreset string
	illegal   string
	mask      string
	suits     int64
	n         int64
	maxSteps  int64
	slots     int64
	timeMs    int64
	workers   int64
	game      int64
	seed      uint64
	penalty   float64
	resetMask []byte
	actions   []byte  // raw bin of little-endian uint16
	actionArr []int64 // the array form
}

func (q *request) has(k string) bool { return q.seen[k] }

// Limits on what a request may declare, checked before anything is
// allocated: a peer controls every length in the frame.
const (
	maxFields = 64  // fields in a request map
	maxString = 256 // bytes in a string field or key
	maxDepth  = 16  // nesting of an ignored unknown field
)

// frameReader guards the lengths a request declares against the bytes the
// frame really has left. The decoder reads straight from r (a bytes.Reader
// is an io.ByteScanner, so msgpack does not buffer it), so r.Len is exact.
type frameReader struct {
	d *msgpack.Decoder
	r *bytes.Reader
}

var errTooLong = errors.New("a declared length runs past the end of the frame")

func (f frameReader) fits(n int) error {
	if n < 0 || n > f.r.Len() {
		return errTooLong
	}
	return nil
}

// str reads a string of at most maxString bytes.
func (f frameReader) str() (string, error) {
	c, err := f.d.PeekCode()
	if err != nil {
		return "", err
	}
	if !msgpcode.IsString(c) {
		return "", errors.New("want a string")
	}
	n, err := f.d.DecodeBytesLen()
	if err != nil {
		return "", err
	}
	if n > maxString {
		return "", fmt.Errorf("a string of %d bytes is over the limit of %d", n, maxString)
	}
	if err := f.fits(n); err != nil {
		return "", err
	}
	b := make([]byte, n)
	if err := f.d.ReadFull(b); err != nil {
		return "", err
	}
	return string(b), nil
}

// bin reads a bin into buf (grown as needed, within the frame's size).
func (f frameReader) bin(buf []byte) ([]byte, error) {
	c, err := f.d.PeekCode()
	if err != nil {
		return buf, err
	}
	if !msgpcode.IsBin(c) {
		return buf, errors.New("want a bin")
	}
	n, err := f.d.DecodeBytesLen()
	if err != nil {
		return buf, err
	}
	if err := f.fits(n); err != nil {
		return buf, err
	}
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if buf == nil {
		buf = []byte{}
	}
	return buf, f.d.ReadFull(buf)
}

// skip passes over one value of an unknown field without allocating it and
// without recursing deeper than maxDepth.
func (f frameReader) skip(depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("an unknown field is nested more than %d deep", maxDepth)
	}
	c, err := f.d.PeekCode()
	if err != nil {
		return err
	}
	switch {
	case msgpcode.IsFixedMap(c) || c == msgpcode.Map16 || c == msgpcode.Map32:
		n, err := f.d.DecodeMapLen()
		if err == nil {
			err = f.fits(2 * n)
		}
		for i := 0; err == nil && i < 2*n; i++ {
			err = f.skip(depth + 1)
		}
		return err
	case msgpcode.IsFixedArray(c) || c == msgpcode.Array16 || c == msgpcode.Array32:
		n, err := f.d.DecodeArrayLen()
		if err == nil {
			err = f.fits(n)
		}
		for i := 0; err == nil && i < n; i++ {
			err = f.skip(depth + 1)
		}
		return err
	case msgpcode.IsString(c) || msgpcode.IsBin(c):
		n, err := f.d.DecodeBytesLen()
		if err == nil {
			err = f.fits(n)
		}
		if err == nil {
			_, err = f.r.Seek(int64(n), io.SeekCurrent)
		}
		return err
	case msgpcode.IsExt(c):
		_, n, err := f.d.DecodeExtHeader()
		if err == nil {
			err = f.fits(n)
		}
		if err == nil {
			_, err = f.r.Seek(int64(n), io.SeekCurrent)
		}
		return err
	}
	return f.d.Skip() // a scalar
}

// decodeRequest reads one request map from payload. buf is reused for the
// actions bin across calls.
func decodeRequest(d *msgpack.Decoder, payload []byte, q *request, actBuf []byte) ([]byte, error) {
	r := bytes.NewReader(payload)
	d.Reset(r)
	f := frameReader{d: d, r: r}
	clear(q.seen)
	seen := q.seen
	*q = request{seen: seen}
	if c, err := d.PeekCode(); err != nil || !(msgpcode.IsFixedMap(c) || c == msgpcode.Map16 || c == msgpcode.Map32) {
		return actBuf, fail(codeBadFrame, "a request must be a msgpack map with string keys")
	}
	n, err := d.DecodeMapLen()
	if err != nil || n < 0 {
		return actBuf, fail(codeBadFrame, "a request must be a msgpack map with string keys")
	}
	if n > maxFields {
		return actBuf, fail(codeBadRequest, "a request of %d fields is over the limit of %d", n, maxFields)
	}
	for range n {
		k, err := f.str()
		if err != nil {
			return actBuf, fail(codeBadFrame, "a request must be a msgpack map with string keys")
		}
		if q.seen[k] {
			return actBuf, fail(codeBadRequest, "field %q given twice", k)
		}
		q.seen[k] = true
		var ferr error
		switch k {
		case "op":
			q.op, ferr = f.str()
		case "rules":
			q.rules, ferr = f.str()
		case "obs":
			q.obs, ferr = f.str()
		case "autoreset":
			q.autoreset, ferr = f.str()
		case "illegal":
			q.illegal, ferr = f.str()
		case "mask":
			q.mask, ferr = f.str()
		case "id":
			q.id, ferr = decodeInt(d)
		case "version":
			q.version, ferr = decodeInt(d)
		case "suits":
			q.suits, ferr = decodeInt(d)
		case "n":
			q.n, ferr = decodeInt(d)
		case "max_steps":
			q.maxSteps, ferr = decodeInt(d)
		case "face_up_slots":
			q.slots, ferr = decodeInt(d)
		case "time_per_action_ms":
			q.timeMs, ferr = decodeInt(d)
		case "workers":
			q.workers, ferr = decodeInt(d)
		case "game":
			q.game, ferr = decodeInt(d)
		case "illegal_penalty":
			q.penalty, ferr = decodeFloat(d)
		case "seed":
			if c, _ := d.PeekCode(); c == msgpcode.Nil {
				ferr = d.DecodeNil()
				delete(q.seen, k)
				break
			}
			var v int64
			if c, _ := d.PeekCode(); c == msgpcode.Uint64 {
				q.seed, ferr = d.DecodeUint64()
				break
			}
			v, ferr = decodeInt(d)
			if ferr == nil && v < 0 {
				ferr = errors.New("negative")
			}
			q.seed = uint64(v)
		case "reset_mask":
			q.resetMask, ferr = f.bin(nil)
		case "actions":
			actBuf, ferr = decodeActions(f, q, actBuf)
		default:
			ferr = f.skip(0) // unknown fields are ignored, for newer clients
		}
		if ferr != nil {
			return actBuf, fail(codeBadRequest, "field %q has the wrong type or value: %v", k, ferr)
		}
	}
	if !q.has("op") {
		return actBuf, fail(codeBadRequest, "the request has no \"op\"")
	}
	return actBuf, nil
}

func decodeInt(d *msgpack.Decoder) (int64, error) {
	c, err := d.PeekCode()
	if err != nil {
		return 0, err
	}
	if msgpcode.IsFixedNum(c) || (c >= msgpcode.Uint8 && c <= msgpcode.Int64) {
		if c == msgpcode.Uint64 {
			v, err := d.DecodeUint64()
			if err == nil && v > math.MaxInt64 {
				return 0, errors.New("integer too large")
			}
			return int64(v), err
		}
		return d.DecodeInt64()
	}
	return 0, errors.New("want an integer")
}

func decodeFloat(d *msgpack.Decoder) (float64, error) {
	c, err := d.PeekCode()
	if err != nil {
		return 0, err
	}
	if c == msgpcode.Float || c == msgpcode.Double {
		return d.DecodeFloat64()
	}
	v, err := decodeInt(d)
	return float64(v), err
}

// decodeActions reads the actions as a bin of uint16 or an int array.
func decodeActions(f frameReader, q *request, buf []byte) ([]byte, error) {
	c, err := f.d.PeekCode()
	if err != nil {
		return buf, err
	}
	if msgpcode.IsBin(c) {
		buf, err = f.bin(buf)
		q.actions = buf
		return buf, err
	}
	if !(msgpcode.IsFixedArray(c) || c == msgpcode.Array16 || c == msgpcode.Array32) {
		return buf, errors.New("want a bin of uint16 or an array of integers")
	}
	n, err := f.d.DecodeArrayLen()
	if err == nil {
		err = f.fits(n) // every item takes at least one byte
	}
	if err != nil {
		return buf, err
	}
	q.actionArr = make([]int64, 0, n)
	for range n {
		v, err := decodeInt(f.d)
		if err != nil {
			return buf, err
		}
		q.actionArr = append(q.actionArr, v)
	}
	return buf, nil
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

// encoder writes a reply map into a reused buffer.
type encoder struct {
	buf bytes.Buffer
	e   *msgpack.Encoder
}

func newEncoder() *encoder {
	en := &encoder{}
	en.e = msgpack.NewEncoder(&en.buf)
	return en
}

// start begins a reply of n fields after "ok" (and "id" when the request
// had one).
func (en *encoder) start(ok bool, q *request, n int) {
	en.buf.Reset()
	hasID := q != nil && q.has("id")
	if hasID {
		n++
	}
	en.e.EncodeMapLen(n + 1)
	en.e.EncodeString("ok")
	en.e.EncodeBool(ok)
	if hasID {
		en.e.EncodeString("id")
		en.e.EncodeInt(q.id)
	}
}

func (en *encoder) str(k, v string) { en.e.EncodeString(k); en.e.EncodeString(v) }
func (en *encoder) int(k string, v int64) {
	en.e.EncodeString(k)
	en.e.EncodeInt(v)
}
func (en *encoder) bin(k string, v []byte) { en.e.EncodeString(k); en.e.EncodeBytes(v) }
func (en *encoder) any(k string, v any) error {
	en.e.EncodeString(k)
	return en.e.Encode(v)
}

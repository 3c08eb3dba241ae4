package msgpackcheck

import (
	"bytes"

	"github.com/vmihailenco/msgpack/v5"
)

// Marshal returns v encoded as msgpack.Marshal encodes it, into a buffer
// made size bytes large at once (size guesses the encoding's length; the
// buffer grows if it is short), with room for Seal's trailer after it.
// msgpack.Marshal grows its buffer by doubling from nothing: for a
// checkpoint of tens of megabytes it allocates about twice the file, and
// the garbage it leaves let the heap grow past its limit while a
// collection ran.
func Marshal(v any, size int) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(max(size, 0) + TrailerSize)
	enc := msgpack.GetEncoder()
	defer msgpack.PutEncoder(enc)
	enc.Reset(&buf)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// MarshalSealed returns Seal(Marshal(v, size)), sealed in place: Seal
// copies what it seals, which for a checkpoint is tens of megabytes more.
func MarshalSealed(v any, size int) ([]byte, error) {
	b, err := Marshal(v, size)
	if err != nil {
		return nil, err
	}
	return appendSum(b), nil
}

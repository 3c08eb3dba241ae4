package server

import (
	"encoding/binary"
	"errors"
	"io"
)

// frameHeader is the size of a frame's length prefix: a big-endian uint32.
const frameHeader = 4

// readFrame reads one frame into buf (grown as needed, never past limit) and
// returns the payload and the buffer to reuse. An empty or oversize length
// is refused before anything is allocated, with a bad_frame *replyError
// (after which the stream cannot be trusted: the caller closes it); a
// broken stream returns the I/O error. Before the buffer grows to a
// capacity of size bytes, g (if not nil) is asked for them, beside the old
// buffer's, which lives on while it is copied; its *replyError refuses the
// frame, mid-stream, like an oversize one. Once copied, g is told, and
// lets the old buffer's bytes go.
func readFrame(r io.Reader, buf []byte, limit int, g frameGrower) (payload, reuse []byte, err error) {
	// The header is read into buf too: a local array passed to r would
	// escape, and cost an allocation per frame.
	if cap(buf) < frameHeader {
		buf = make([]byte, frameHeader)
	}
	if _, err := io.ReadFull(r, buf[:frameHeader]); err != nil {
		return nil, buf, err
	}
	// Compared as int64: where int has 32 bits, 2^31 and more read negative.
	n64 := int64(binary.BigEndian.Uint32(buf[:frameHeader]))
	switch {
	case n64 == 0:
		return nil, buf, fail(codeBadFrame, "empty frame")
	case n64 > int64(limit):
		return nil, buf, fail(codeBadFrame, "frame of %d bytes is over the limit of %d (--max-frame)", n64, limit)
	}
	n := int(n64)
	// The buffer grows with the bytes that arrive, not with the length the
	// peer declared: a peer that announces a frame of limit bytes and sends
	// nothing holds 64 KiB, not max. Once grown, it is reused as it is. It
	// grows to exactly the size wanted (make, not append, which would round
	// up), so the bytes grow reserved are the bytes it holds.
	buf = buf[:0]
	for len(buf) < n {
		have := len(buf)
		want := have + min(n-have, max(have, 64<<10)) // no have*2, which can pass int's range
		if cap(buf) < want {
			if g != nil {
				if re := g.growFrame(want); re != nil {
					return nil, buf, re
				}
			}
			bigger := make([]byte, have, want)
			copy(bigger, buf)
			buf = bigger
			if g != nil {
				g.grewFrame(want)
			}
		}
		buf = buf[:want]
		if _, err := io.ReadFull(r, buf[have:want]); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, buf, err
		}
	}
	return buf, buf, nil
}

// frameGrower accounts for a frame buffer's memory as readFrame grows it:
// growFrame reserves a new buffer of size bytes while the old one is
// still held, or refuses; grewFrame, once the old one is copied, keeps
// only the new one's size.
type frameGrower interface {
	growFrame(size int) *replyError
	grewFrame(size int)
}

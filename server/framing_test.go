package server

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"
)

// A peer that declares a frame of the largest size and sends a few bytes
// costs the server the bytes that came, rounded up to 64 KiB, not the
// declared size; a whole frame still reads, and a later one reuses the
// grown buffer.
func TestReadFrameGrowsWithTheBytesThatCome(t *testing.T) {
	declared := binary.BigEndian.AppendUint32(nil, 64<<20)
	_, buf, err := readFrame(bytes.NewReader(append(declared, make([]byte, 100)...)), nil, 64<<20, nil)
	if !errors.Is(err, io.ErrUnexpectedEOF) || cap(buf) > 64<<10 {
		t.Fatalf("a 64 MiB frame cut after 100 bytes: %v, buffer of %d bytes", err, cap(buf))
	}
	payload := bytes.Repeat([]byte{7}, 300_000)
	frame := append(binary.BigEndian.AppendUint32(nil, uint32(len(payload))), payload...)
	got, buf, err := readFrame(bytes.NewReader(frame), buf, 64<<20, nil)
	if err != nil || !bytes.Equal(got, payload) {
		t.Fatalf("a whole frame of %d bytes: %v, %d bytes back", len(payload), err, len(got))
	}
	grown := cap(buf)
	if _, buf, err = readFrame(bytes.NewReader(frame), buf, 64<<20, nil); err != nil || cap(buf) != grown {
		t.Fatalf("the second frame: %v, buffer %d bytes, the first grew it to %d", err, cap(buf), grown)
	}
	if allocs := testing.AllocsPerRun(10, func() { readFrame(bytes.NewReader(frame), buf, 64<<20, nil) }); allocs > 1 {
		t.Fatalf("%v allocations to read a frame into a grown buffer (the reader's own is the 1)", allocs)
	}
}

// TestReadFrameLimitIsInclusive reads a frame of exactly the limit and
// refuses one byte more, before reading its payload, as bad_frame.
func TestReadFrameLimitIsInclusive(t *testing.T) {
	const limit = 1000
	for _, tc := range []struct {
		size int
		ok   bool
	}{{limit - 1, true}, {limit, true}, {limit + 1, false}, {limit + 2, false}} {
		payload := bytes.Repeat([]byte{0xc0}, tc.size)
		frame := append(binary.BigEndian.AppendUint32(nil, uint32(tc.size)), payload...)
		got, _, err := readFrame(bytes.NewReader(frame), nil, limit, nil)
		if tc.ok {
			if err != nil || len(got) != tc.size {
				t.Fatalf("a frame of %d bytes, limit %d: %v, %d bytes; want the whole frame", tc.size, limit, err, len(got))
			}
			continue
		}
		var re *replyError
		if !errors.As(err, &re) || re.code != codeBadFrame || got != nil {
			t.Fatalf("a frame of %d bytes, limit %d: %v, %d bytes; want a bad_frame refusal", tc.size, limit, err, len(got))
		}
	}
}

// TestReadFrameCutAtAPieceIsUnexpected: a stream that ends after the
// header, or exactly where the buffer grows, ends inside a frame: the
// error is io.ErrUnexpectedEOF, not the io.EOF of a stream that ended
// between frames.
func TestReadFrameCutAtAPieceIsUnexpected(t *testing.T) {
	for _, sent := range []int{0, 64 << 10} {
		frame := append(binary.BigEndian.AppendUint32(nil, 1<<20), make([]byte, sent)...)
		if _, _, err := readFrame(bytes.NewReader(frame), nil, 1<<20, nil); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("a frame of 1 MiB cut after %d bytes: %v; want io.ErrUnexpectedEOF", sent, err)
		}
	}
	if _, _, err := readFrame(bytes.NewReader(nil), nil, 1<<20, nil); err != io.EOF {
		t.Errorf("a stream ended between frames: %v; want io.EOF", err)
	}
}

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

package msgpackcheck

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"math"
	"os"
)

// castagnoli is CRC-32C's table: hardware-accelerated on amd64 and arm64
// (gigabytes a second), and it finds every burst error of up to 32 bits,
// a flipped bit among them. It guards against damage, not against someone
// who edits a file on purpose and recomputes the sum.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// TrailerSize is the size of the checksum Seal appends: a msgpack uint32
// (the code 0xce and four big-endian bytes).
const TrailerSize = 5

// Seal returns b, one msgpack value, followed by its checksum: a msgpack
// uint32 holding the CRC-32C (Castagnoli) of every byte of b. The result is
// two msgpack values one after the other, so a streaming reader in any
// language reads the data and then the sum.
func Seal(b []byte) []byte {
	out := make([]byte, len(b), len(b)+TrailerSize)
	copy(out, b)
	return appendSum(out)
}

// appendSum appends to b the checksum of b that Seal writes.
func appendSum(b []byte) []byte {
	sum := crc32.Checksum(b, castagnoli)
	return binary.BigEndian.AppendUint32(append(b, 0xce), sum)
}

// Unseal checks that b is one msgpack value (checked as Size does)
// followed by exactly the checksum Seal appends, and that the sum matches;
// it returns the value's bytes. A flipped bit, missing bytes or bytes added
// at the end are all refused.
func Unseal(b []byte) ([]byte, error) {
	n, err := Size(b)
	if err != nil {
		return nil, err
	}
	rest := b[n:]
	if len(rest) != TrailerSize || rest[0] != 0xce {
		// A flipped bit can change where the value seems to end; a
		// checksum at the file's end that does not match says so better.
		if err := Damaged(b); err != nil {
			return nil, err
		}
	}
	switch {
	case len(rest) == 0:
		return nil, errors.New("no checksum after the data")
	case len(rest) < TrailerSize || rest[0] != 0xce:
		return nil, fmt.Errorf("the %d bytes after the data are not a checksum", len(rest))
	case len(rest) > TrailerSize:
		return nil, fmt.Errorf("%d unexpected bytes after the checksum", len(rest)-TrailerSize)
	}
	if err := Damaged(b); err != nil {
		return nil, err
	}
	return b[:n], nil
}

// Damaged is for bytes that do not parse: it returns Unseal's mismatch
// error if they end with a checksum that does not match the bytes before
// it, nil otherwise. A sealed file that no longer parses has most likely
// been damaged (a flipped bit in a length moves every value after it),
// which says more than the parse error does.
func Damaged(b []byte) error {
	if len(b) <= TrailerSize || b[len(b)-TrailerSize] != 0xce {
		return nil
	}
	n := len(b) - TrailerSize
	want := binary.BigEndian.Uint32(b[n+1:])
	if got := crc32.Checksum(b[:n], castagnoli); got != want {
		return fmt.Errorf("checksum mismatch (CRC-32C %08x, the file says %08x): the file is damaged", got, want)
	}
	return nil
}

// ReadFile reads the file at path, refusing (with an error naming it) one
// of more than limit bytes before reading it: what stat says first, then
// what the read finds, in case the file grows meanwhile or is a named pipe
// (whose size stat says is 0). A folder, device or socket is refused
// unread.
func ReadFile(path string, limit int64) ([]byte, error) { return readFile(path, limit, true) }

// ReadRegularFile is ReadFile for a file that will be replaced by a
// rename, which only a regular file can be: a named pipe is refused too.
func ReadRegularFile(path string, limit int64) ([]byte, error) { return readFile(path, limit, false) }

// readFile is ReadFile, taking a named pipe if pipes.
func readFile(path string, limit int64, pipes bool) ([]byte, error) {
	// Where int has 32 bits no slice holds more than an int's bytes: a
	// larger limit would panic in make, not refuse the file.
	limit = min(limit, math.MaxInt-1)
	f, st, err := OpenFile(path, pipes)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st.Size() > limit {
		return nil, fmt.Errorf("%s: %d bytes, more than any valid file can have (%d)", path, st.Size(), limit)
	}
	size := max(st.Size(), 0)
	b := make([]byte, 0, min(size, limit)+1)
	b, err = readAll(io.LimitReader(f, limit+1), b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s: more than %d bytes, more than any valid file can have", path, limit)
	}
	return b, nil
}

// OpenFile opens the file at path for reading, refusing a folder, a
// device or a socket (and a named pipe unless pipes) with an error naming
// it: a device reads for ever (/dev/zero would fill a buffer to its limit,
// gigabytes, before it is refused), while a named pipe is read to its end
// like a file, for process substitution. A named pipe no one writes to
// does not block the open.
func OpenFile(path string, pipes bool) (*os.File, os.FileInfo, error) {
	if path == "" {
		// os says "open : no such file or directory".
		return nil, nil, fmt.Errorf("an empty file name: %w", fs.ErrNotExist)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|openFlags, 0)
	if err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	switch m := st.Mode(); {
	case err != nil:
	case m.IsDir():
		err = fmt.Errorf("%s: a folder, not a file", path)
	case m&os.ModeNamedPipe != 0 && !pipes:
		err = fmt.Errorf("%s: a named pipe, not a regular file", path)
	case !m.IsRegular() && m&os.ModeNamedPipe == 0:
		err = fmt.Errorf("%s: not a regular file (a device or socket)", path)
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, st, nil
}

// readAll is io.ReadAll into b's spare capacity.
func readAll(r io.Reader, b []byte) ([]byte, error) {
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}

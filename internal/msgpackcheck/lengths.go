// Package msgpackcheck checks the lengths an untrusted msgpack value
// declares against the bytes it really has, before a decoder allocates them.
package msgpackcheck

import (
	"encoding/binary"
	"fmt"
)

// MaxDepth is how deeply Size lets containers nest. msgpack decodes and
// skips nested values recursively, so a file of a few megabytes that opens
// millions of arrays would exhaust the goroutine's stack (a fatal error,
// not a panic); every file of this project nests fewer than 10 deep.
const MaxDepth = 64

// Lengths walks the msgpack value at the start of b and checks that
// no string, bin, ext, array or map declares more than the bytes left
// after its header could hold (an array item or a map key takes at least
// one byte), and that containers nest at most MaxDepth deep. msgpack v5
// allocates a declared length before reading the data, so a few bytes
// claiming 2^32 items would otherwise exhaust memory; after this check a
// decoded slice has at most len(b) items. Bytes after the value are not
// looked at.
func Lengths(b []byte) error {
	_, err := Size(b)
	return err
}

// Size checks the msgpack value at the start of b as Lengths does and
// returns how many bytes it takes.
func Size(b []byte) (int, error) {
	pos := 0
	// open holds, for each container being read, the items it still
	// expects; the walk ends when the first value and everything it
	// opened are read.
	open := make([]int, 0, 16)
	// need reads an n-byte big-endian length at pos+1 and returns it with
	// the size of the header (code and length).
	need := func(n int) (int, int, error) {
		if pos+1+n > len(b) {
			return 0, 0, fmt.Errorf("truncated at byte %d", pos)
		}
		switch n {
		case 1:
			return int(b[pos+1]), 2, nil
		case 2:
			return int(binary.BigEndian.Uint16(b[pos+1:])), 3, nil
		default:
			// Compared as uint64 first: on a 32-bit platform a length of
			// 2^31 or more would turn negative as an int.
			v := binary.BigEndian.Uint32(b[pos+1:])
			if uint64(v) > uint64(len(b)) {
				return 0, 0, fmt.Errorf("the value at byte %d declares more than the %d bytes left", pos, len(b)-pos-5)
			}
			return int(v), 5, nil
		}
	}
	for {
		if pos >= len(b) {
			return 0, fmt.Errorf("truncated at byte %d", pos)
		}
		c := b[pos]
		var data, items, hdr int // bytes of data, items that follow, header size
		var err error
		switch {
		case c <= 0x7f || c >= 0xe0 || c == 0xc0 || c == 0xc2 || c == 0xc3: // fixints, nil, bools
			hdr = 1
		case c <= 0x8f: // fixmap
			hdr, items = 1, 2*int(c&0x0f)
		case c <= 0x9f: // fixarray
			hdr, items = 1, int(c&0x0f)
		case c <= 0xbf: // fixstr
			hdr, data = 1, int(c&0x1f)
		case c == 0xc4 || c == 0xd9: // bin8, str8
			data, hdr, err = need(1)
		case c == 0xc5 || c == 0xda: // bin16, str16
			data, hdr, err = need(2)
		case c == 0xc6 || c == 0xdb: // bin32, str32
			data, hdr, err = need(4)
		case c >= 0xc7 && c <= 0xc9: // ext8, ext16, ext32: length, type, data
			data, hdr, err = need(1 << (c - 0xc7))
			data++
		case c == 0xca || c == 0xce || c == 0xd2: // float32, uint32, int32
			hdr = 5
		case c == 0xcb || c == 0xcf || c == 0xd3: // float64, uint64, int64
			hdr = 9
		case c == 0xcc || c == 0xd0: // uint8, int8
			hdr = 2
		case c == 0xcd || c == 0xd1: // uint16, int16
			hdr = 3
		case c >= 0xd4 && c <= 0xd8: // fixext 1, 2, 4, 8, 16: type, data
			hdr, data = 2, 1<<(c-0xd4)
		case c == 0xdc || c == 0xdd: // array16, array32
			items, hdr, err = need(2 << (c - 0xdc))
		case c == 0xde || c == 0xdf: // map16, map32
			items, hdr, err = need(2 << (c - 0xde))
			items *= 2
		default: // 0xc1 is never used
			return 0, fmt.Errorf("invalid msgpack code 0x%02x at byte %d", c, pos)
		}
		if err != nil {
			return 0, err
		}
		left := len(b) - pos - hdr
		if left < 0 || data > left || items > left-data {
			return 0, fmt.Errorf("the value at byte %d declares more than the %d bytes left", pos, max(left, 0))
		}
		pos += hdr + data
		// This value is one item of the innermost open container. A
		// container with items opens; a value that completes the
		// innermost container closes it, and maybe the ones around it.
		if len(open) > 0 {
			open[len(open)-1]--
		}
		if items > 0 {
			if len(open) == MaxDepth {
				return 0, fmt.Errorf("the value at byte %d nests more than %d deep", pos-hdr-data, MaxDepth)
			}
			open = append(open, items)
		} else {
			for len(open) > 0 && open[len(open)-1] == 0 {
				open = open[:len(open)-1]
			}
		}
		if len(open) == 0 {
			return pos, nil
		}
	}
}

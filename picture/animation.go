package picture

import (
	"bytes"
	"compress/lzw"
	"encoding/binary"
	"time"
)

// Animation is an animated GIF of pictures, built a frame at a time. Each
// frame is compressed as it is added, and only the rectangle that changed
// since the frame before is stored (the rest stays on screen): about 6 KB
// a move, 6 MB for a random game's thousand moves. image/gif's EncodeAll
// would hold every whole frame, 300 KB each, until the end.
type Animation struct {
	out    bytes.Buffer
	prev   []uint8 // the last frame's palette indices, Width x Height
	cur    []uint8
	frames int
	lzw    *lzw.Writer
	blocks blockWriter
}

// paletteBits is the GIF colour table's size as a power of two: Palette's
// colours, padded to 16.
const paletteBits = 4

// The delays a frame may have. Browsers show a delay under 0.02 s as 0.1 s,
// so shorter ones are raised to it; GIF's field holds 655.35 s at most.
const (
	MinDelay = 20 * time.Millisecond
	MaxDelay = 65535 * 10 * time.Millisecond
)

// NewAnimation returns an empty animation that loops forever.
func NewAnimation() *Animation {
	a := &Animation{prev: make([]uint8, Width*Height), cur: make([]uint8, Width*Height)}
	a.blocks.w = &a.out
	a.out.WriteString("GIF89a")
	a.u16(Width)
	a.u16(Height)
	// A global colour table of 2^paletteBits colours, background colour
	// 0 (the table's felt), square pixels.
	a.out.Write([]byte{0x80 | (paletteBits-1)<<4 | (paletteBits - 1), 0, 0})
	for i := range 1 << paletteBits {
		var c [3]uint8
		if i < len(rgb) {
			c = rgb[i]
		}
		a.out.Write(c[:])
	}
	// The NETSCAPE2.0 extension: loop forever (count 0).
	a.out.Write([]byte{0x21, 0xff, 0x0b})
	a.out.WriteString("NETSCAPE2.0")
	a.out.Write([]byte{0x03, 0x01, 0x00, 0x00, 0x00})
	return a
}

// Add appends pix, a picture made by Draw, shown for delay (rounded to
// GIF's hundredths of a second and kept between MinDelay and MaxDelay).
// A colour outside Palette becomes the nearest one in it. It panics if
// len(pix) < Size.
func (a *Animation) Add(pix []uint8, delay time.Duration) {
	indexPixels(a.cur, pix[:Size])
	x0, y0, x1, y1 := 0, 0, Width, Height
	if a.frames > 0 {
		x0, y0, x1, y1 = changed(a.prev, a.cur)
	}
	delay = min(max(delay, MinDelay), MaxDelay)
	// The graphic control extension: leave the frame in place for the
	// next one to draw over (disposal 1), the delay, no transparency.
	a.out.Write([]byte{0x21, 0xf9, 0x04, 1 << 2})
	a.u16(int((delay + 5*time.Millisecond) / (10 * time.Millisecond)))
	a.out.Write([]byte{0, 0})
	// The image descriptor: the changed rectangle, no local colour table.
	a.out.WriteByte(0x2c)
	a.u16(x0)
	a.u16(y0)
	a.u16(x1 - x0)
	a.u16(y1 - y0)
	a.out.WriteByte(0)
	a.out.WriteByte(paletteBits) // LZW's minimum code size
	if a.lzw == nil {
		a.lzw = lzw.NewWriter(&a.blocks, lzw.LSB, paletteBits).(*lzw.Writer)
	} else {
		a.lzw.Reset(&a.blocks, lzw.LSB, paletteBits)
	}
	for y := y0; y < y1; y++ {
		a.lzw.Write(a.cur[y*Width+x0 : y*Width+x1]) // into a bytes.Buffer: cannot fail
	}
	a.lzw.Close()
	a.blocks.flush()
	a.out.WriteByte(0) // the block terminator
	a.prev, a.cur = a.cur, a.prev
	a.frames++
}

// Frames returns the number of frames added.
func (a *Animation) Frames() int { return a.frames }

// Bytes returns the GIF file of the frames added so far. More frames may
// still be added; a later Bytes includes them.
func (a *Animation) Bytes() []byte {
	b := make([]byte, a.out.Len()+1)
	copy(b, a.out.Bytes())
	b[len(b)-1] = 0x3b // the trailer
	return b
}

// u16 writes v little-endian, as GIF's numbers are.
func (a *Animation) u16(v int) {
	var b [2]byte
	binary.LittleEndian.PutUint16(b[:], uint16(v))
	a.out.Write(b[:])
}

// changed returns the smallest rectangle holding every pixel that differs
// between two frames, x0 and y0 included and x1 and y1 not; 1 x 1 at the
// corner when none does, since a GIF frame cannot be empty.
func changed(prev, cur []uint8) (x0, y0, x1, y1 int) {
	x0, y0, x1, y1 = Width, Height, 0, 0
	for y := range Height {
		row, old := cur[y*Width:(y+1)*Width], prev[y*Width:(y+1)*Width]
		if bytes.Equal(row, old) {
			continue
		}
		y0, y1 = min(y0, y), y+1
		for x := range Width {
			if row[x] != old[x] {
				x0 = min(x0, x)
				break
			}
		}
		for x := Width - 1; x >= 0; x-- {
			if row[x] != old[x] {
				x1 = max(x1, x+1)
				break
			}
		}
	}
	if y1 == 0 {
		return 0, 0, 1, 1
	}
	return x0, y0, x1, y1
}

// blockWriter cuts LZW's output into GIF's data sub-blocks: a length byte
// and up to 255 bytes each.
type blockWriter struct {
	w   *bytes.Buffer
	buf [255]byte
	n   int
}

func (b *blockWriter) Write(p []byte) (int, error) {
	for _, c := range p {
		b.buf[b.n] = c
		b.n++
		if b.n == len(b.buf) {
			b.flush()
		}
	}
	return len(p), nil
}

// flush writes the bytes held as one sub-block.
func (b *blockWriter) flush() {
	if b.n > 0 {
		b.w.WriteByte(byte(b.n))
		b.w.Write(b.buf[:b.n])
		b.n = 0
	}
}

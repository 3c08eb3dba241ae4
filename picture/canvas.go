package picture

import (
	"image"

	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"

	"github.com/spiderenv/spider/env"
)

// canvas is a picture's bytes, Width x Height RGB pixels row by row. Every
// drawing call clips to it, so a layout mistake shows as a clipped card,
// never as a panic.
type canvas []uint8

// put sets the pixel at (x, y) to colour col, when it is on the canvas.
func (c canvas) put(x, y int, col uint8) {
	if x < 0 || x >= Width || y < 0 || y >= Height {
		return
	}
	i := 3 * (y*Width + x)
	c[i], c[i+1], c[i+2] = rgb[col][0], rgb[col][1], rgb[col][2]
}

// fill paints the rectangle from (x0, y0) up to but not including (x1, y1).
func (c canvas) fill(x0, y0, x1, y1 int, col uint8) {
	x0, y0 = max(x0, 0), max(y0, 0)
	x1, y1 = min(x1, Width), min(y1, Height)
	p := rgb[col]
	for y := y0; y < y1; y++ {
		row := c[3*(y*Width+x0) : 3*(y*Width+x1)]
		for i := 0; i < len(row); i += 3 {
			row[i], row[i+1], row[i+2] = p[0], p[1], p[2]
		}
	}
}

// outline draws the border of a w x h card place at (x, y), its corner
// pixels left out as a card's are.
func (c canvas) outline(x, y, w, h int, col uint8) {
	c.fill(x+1, y, x+w-1, y+1, col)
	c.fill(x+1, y+h-1, x+w-1, y+h, col)
	c.fill(x, y+1, x+1, y+h-1, col)
	c.fill(x+w-1, y+1, x+w, y+h-1, col)
}

// blank draws a card's shape filled with col inside its border.
func (c canvas) blank(x, y, w, h int, col uint8) {
	c.outline(x, y, w, h, edge)
	c.fill(x+1, y+1, x+w-1, y+h-1, col)
}

// back draws a face-down card: the same for every card, so it tells
// nothing of the card.
func (c canvas) back(x, y, w, h int) {
	c.blank(x, y, w, h, back)
	for dy := 3; dy < h-3; dy++ {
		for dx := 3; dx < w-3; dx++ {
			if (dx+dy)%6 == 0 || (dx-dy+6*h)%6 == 0 {
				c.put(x+dx, y+dy, backLine)
			}
		}
	}
}

// face draws a face-up card: its rank and a small suit in the top left
// corner, which is what shows when another card lies on it, and with
// scale > 0 a large suit (7*scale pixels) in the middle of what is left.
func (c canvas) face(x, y, w, h int, card env.Card, scale int) {
	c.blank(x, y, w, h, paper)
	col := uint8(ink)
	if su := card.Suit(); su == env.Hearts || su == env.Diamonds {
		col = red
	}
	// The font leaves two blank rows above a capital, so text one pixel
	// below the border puts the ink three below it, where the most of it
	// shows when a long column packs its cards tighter than upStep.
	rank := rankText[card.Rank()]
	drawText(c, x+3, y+1, rank, col)
	c.suit(x+3+textWidth(len(rank))+1, y+4, card.Suit(), 1, col)
	if scale > 0 {
		size := suitSize * scale
		top := y + 16 + (h-16-size)/2
		c.suit(x+(w-size)/2, top, card.Suit(), scale, col)
	}
}

// rankText is each rank as a player reads it, "10" in full.
var rankText = [env.NumRanks + 1]string{"?", "A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K"}

// suitSize is the side of a suit's bitmap, in pixels at scale 1.
const suitSize = 7

// suitBits are the suits in the order of env.Suit, a row of seven pixels
// to a string, "#" drawn.
var suitBits = [env.NumSuits][suitSize]string{
	env.Spades: {
		"...#...",
		"..###..",
		".#####.",
		"#######",
		"#######",
		"...#...",
		"..###..",
	},
	env.Hearts: {
		".##.##.",
		"#######",
		"#######",
		"#######",
		".#####.",
		"..###..",
		"...#...",
	},
	env.Diamonds: {
		"...#...",
		"..###..",
		".#####.",
		"#######",
		".#####.",
		"..###..",
		"...#...",
	},
	env.Clubs: {
		"..###..",
		"..###..",
		"##.#.##",
		"#######",
		"##.#.##",
		"...#...",
		".#####.",
	},
}

// suit draws su's bitmap with its top left at (x, y), each of its pixels
// scale x scale.
func (c canvas) suit(x, y int, su env.Suit, scale int, col uint8) {
	for dy, row := range suitBits[su&3] {
		for dx := range suitSize {
			if row[dx] == '#' {
				c.fill(x+dx*scale, y+dy*scale, x+(dx+1)*scale, y+(dy+1)*scale, col)
			}
		}
	}
}

// The text font: the Go project's fixed 7x13 bitmap font, its printable
// ASCII copied into bit rows once so drawing reads no image.
const (
	glyphAdvance = 7
	glyphH       = 13
	firstGlyph   = ' '
	numGlyphs    = '~' - ' ' + 1
)

// glyphs holds each printable ASCII character's rows, bit x for column x.
var glyphs = func() (out [numGlyphs][glyphH]uint8) {
	f := basicfont.Face7x13
	for i := range numGlyphs {
		dr, mask, mp, _, ok := f.Glyph(fixed.P(0, f.Ascent), rune(firstGlyph+i))
		if !ok {
			panic("picture: basicfont lacks " + string(rune(firstGlyph+i)))
		}
		for dy := range min(dr.Dy(), glyphH) {
			for dx := range min(dr.Dx(), 8) {
				if _, _, _, a := mask.At(mp.X+dx, mp.Y+dy).RGBA(); a >= 0x8000 {
					out[i][dy] |= 1 << dx
				}
			}
		}
	}
	return out
}()

// textWidth is the width of n characters.
func textWidth(n int) int { return n * glyphAdvance }

// drawText writes s with the top of its line at y, starting at x. A byte
// outside printable ASCII is drawn as "?".
func drawText[S ~string | ~[]byte](c canvas, x, y int, s S, col uint8) {
	for i := range len(s) {
		ch := s[i]
		if ch < firstGlyph || ch >= firstGlyph+numGlyphs {
			ch = '?'
		}
		rows := &glyphs[ch-firstGlyph]
		for dy, bits := range rows {
			for dx := 0; bits != 0; dx, bits = dx+1, bits>>1 {
				if bits&1 != 0 {
					c.put(x+dx, y+dy, col)
				}
			}
		}
		x += glyphAdvance
	}
}

// bounds is the canvas as an image rectangle, for the paletted images.
var bounds = image.Rect(0, 0, Width, Height)

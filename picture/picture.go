// Package picture draws a game as a player sees it, as an RGB image of a
// fixed size: the cards of every column (faces with rank and suit, backs
// for face-down cards), the completed runs and the stock's deals left. It
// reads only what env.State shows a player, so a picture never reveals a
// face-down card or the stock's order. The server sends it for
// render_mode "rgb_array"; spider replay --gif makes animations of it.
package picture

import (
	"image"
	"image/color"
	"strconv"

	"github.com/spiderenv/spider/env"
)

// The picture's size. 640 x 480 fits ten columns of cards wide enough for
// "10" and a suit, and both sides divide by 16, as video encoders (the
// ones Gymnasium's RecordVideo uses) prefer.
const (
	Width    = 640
	Height   = 480
	Channels = 3                         // red, green, blue
	Size     = Height * Width * Channels // bytes in one picture
)

// The colours, by their index in Palette.
const (
	felt     = iota // the table
	feltDark        // outlines of empty places
	paper           // card faces and the status text
	edge            // card borders
	ink             // black suits
	red             // red suits
	back            // card backs
	backLine        // the pattern on card backs
	gold            // the game's end: won, lost, truncated
	numColours
)

// Palette holds every colour Draw uses, so a picture converts to a
// paletted image (a GIF frame, a small PNG) without loss.
var Palette = color.Palette{
	felt:     color.RGBA{0x1e, 0x66, 0x3a, 0xff},
	feltDark: color.RGBA{0x12, 0x47, 0x27, 0xff},
	paper:    color.RGBA{0xfa, 0xfa, 0xf5, 0xff},
	edge:     color.RGBA{0x3c, 0x3c, 0x3c, 0xff},
	ink:      color.RGBA{0x14, 0x14, 0x14, 0xff},
	red:      color.RGBA{0xc8, 0x14, 0x1e, 0xff},
	back:     color.RGBA{0x2b, 0x4f, 0xa0, 0xff},
	backLine: color.RGBA{0x7a, 0x98, 0xd8, 0xff},
	gold:     color.RGBA{0xff, 0xd2, 0x3c, 0xff},
}

// rgb holds Palette as bytes, for the drawing loops.
var rgb = func() (out [numColours][3]uint8) {
	for i, c := range Palette {
		r, g, b, _ := c.RGBA()
		out[i] = [3]uint8{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8)}
	}
	return out
}()

// The layout, in pixels. The top band holds the status line, then the
// completed runs (left) and the stock (right); the tableau fills the rest.
const (
	margin    = 8
	statusY   = 2  // top of the status line's text
	bandY     = 20 // top of the runs and stock row
	smallW    = 30 // a card in the runs and stock row
	smallH    = 42
	runPitch  = 34
	stockStep = 10 // how far each deal's back sits from the next
	maxBacks  = 10 // backs drawn at most; the text gives the count
	tableauY  = 70
	cardW     = 57
	cardH     = 80
	colPitch  = 63 // ten columns of 57 with 6 between, 8 at each side
	downStep  = 8  // how much of a face-down card shows under the next
	upStep    = 16 // how much of a face-up card shows: its rank and suit
	bottom    = Height - 4
)

// Draw writes the picture of s into dst, Height rows of Width pixels of
// red, green and blue bytes, and returns dst[:Size]. It writes every byte,
// never allocates, and reads only what a player sees. It panics if
// len(dst) < Size, which is a programming error.
func Draw(dst []uint8, s *env.State) []uint8 {
	if len(dst) < Size {
		panic("picture: Draw: dst shorter than Size")
	}
	c := canvas(dst[:Size])
	c.fill(0, 0, Width, Height, felt)
	drawStatus(c, s)
	drawRuns(c, s)
	drawStock(c, s)
	var cards [env.NumCards]env.Card
	for col := range env.NumColumns {
		drawColumn(c, s, col, cards[:0])
	}
	return dst[:Size]
}

// drawStatus writes the status line: rule set, score and moves, and the
// game's end in gold.
func drawStatus(c canvas, s *env.State) {
	r := s.Rules()
	var buf [96]byte
	b := append(buf[:0], r.RuleSet().String()...)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(r.Suits()), 10)
	b = append(b, "-suit   score "...)
	b = strconv.AppendInt(b, int64(s.Score()), 10)
	b = append(b, "   moves "...)
	b = strconv.AppendInt(b, int64(s.Steps()), 10)
	drawText(c, margin, statusY, b, paper)
	end := ""
	switch {
	case s.Status() != env.Playing:
		end = s.Status().String()
	case s.Truncated():
		end = "truncated"
	}
	if end != "" {
		drawText(c, Width-margin-textWidth(len(end)), statusY, end, gold)
	}
}

// drawRuns shows eight places for completed runs, left to right, each
// filled run as a small King of its suit, spades first.
func drawRuns(c canvas, s *env.State) {
	i := 0
	for su := env.Spades; su < env.NumSuits; su++ {
		for range s.SuitRuns(su) {
			x := margin + i*runPitch
			c.face(x, bandY, smallW, smallH, env.MakeCard(env.King, su), 2)
			i++
		}
	}
	for ; i < env.NumRuns; i++ {
		c.outline(margin+i*runPitch, bandY, smallW, smallH, feltDark)
	}
}

// drawStock shows one back per deal left at the right (at most maxBacks),
// with the stock's cards and deals left as text beside them. An empty
// stock, or one that can deal no more, shows an empty place.
func drawStock(c canvas, s *env.State) {
	deals := s.DealsLeft()
	shown := min(deals, maxBacks)
	x := Width - margin - smallW
	if shown == 0 {
		c.outline(x, bandY, smallW, smallH, feltDark)
	}
	for i := range shown {
		c.back(x-(shown-1-i)*stockStep, bandY, smallW, smallH)
	}
	left := x - max(shown-1, 0)*stockStep
	var buf [48]byte
	b := append(buf[:0], "stock "...)
	b = strconv.AppendInt(b, int64(s.StockLeft()), 10)
	b = append(b, "  "...)
	b = strconv.AppendInt(b, int64(deals), 10)
	b = append(b, " deal"...)
	if deals != 1 {
		b = append(b, 's')
	}
	drawText(c, left-8-textWidth(len(b)), bandY+(smallH-glyphH)/2, b, paper)
}

// drawColumn draws column col top to bottom of the screen, deepest card
// first so each card covers the one below it. A column too long for the
// table shows less of each card, face-down ones first; the top card is
// always whole.
func drawColumn(c canvas, s *env.State, col int, buf []env.Card) {
	x := margin + col*colPitch
	h, down := s.Height(col), s.FaceDown(col)
	if h == 0 {
		c.outline(x, tableauY, cardW, cardH, feltDark)
		return
	}
	up := s.AppendFaceUp(buf, col)
	dStep, uStep := downStep, upStep
	room := bottom - tableauY - cardH
	if down*dStep+(len(up)-1)*uStep > room {
		dStep = downStep / 2
		if len(up) > 1 {
			uStep = max(1, min(upStep, (room-down*dStep)/(len(up)-1)))
		}
	}
	y := tableauY
	for range down {
		c.back(x, y, cardW, cardH)
		y += dStep
	}
	for i, card := range up {
		scale := 0 // only the top card shows its large suit
		if i == len(up)-1 {
			scale = 3
		}
		c.face(x, y, cardW, cardH, card, scale)
		y += uStep
	}
}

// Paletted returns a picture made by Draw as a paletted image over
// Palette, for GIF and PNG files. A colour not in Palette (a picture from
// elsewhere) becomes the nearest one. It panics if len(pix) < Size.
func Paletted(pix []uint8) *image.Paletted {
	m := image.NewPaletted(bounds, Palette)
	indexPixels(m.Pix, pix[:Size])
	return m
}

// indexPixels writes the Palette index of each RGB pixel of pix into dst.
func indexPixels(dst, pix []uint8) {
	last := uint8(felt)
	for i := range dst {
		p := pix[3*i : 3*i+3 : 3*i+3]
		if rgb[last] != [3]uint8(p) {
			last = colourIndex(p)
		}
		dst[i] = last
	}
}

// colourIndex finds an RGB pixel's colour in Palette, or the nearest.
func colourIndex(p []uint8) uint8 {
	for i, c := range rgb {
		if c == [3]uint8(p) {
			return uint8(i)
		}
	}
	return uint8(Palette.Index(color.RGBA{p[0], p[1], p[2], 0xff}))
}

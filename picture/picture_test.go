package picture

import (
	"bytes"
	"flag"
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/spiderenv/spider/env"
)

var update = flag.Bool("update", false, "rewrite the golden pictures in testdata")

// tolerance is the mean absolute difference, per colour byte (0-255), a
// picture may have from its golden file: room for a retouched glyph or a
// colour nudged by a few steps, well under one card moving (which
// TestGoldenToleranceSeesAMove checks).
const tolerance = 0.3

// midgame is a position with all that a picture shows: completed runs of
// two suits, empty columns, a column too long for the table, a face-down
// stack, a stock cardems deals from onto fewer than ten columns, and the
// step limit reached.
const midgame = `1: 3h 5s Kh | 9s 8s
2: Ah | Qh Jh Th 9h 8h 7h 6h 5h 4h 3h 2h
3: | 4h
4: Ks Qd | Ts 9d 8c 7h 6s 5d 4c 3h 2s Ac
5: 2c 2c 3c 3c 4c | Kd Qd Jd Td 9d 8d 7d 6d 5d 4s 3c 2c Kc Qh Jh Th 9h 8h 7c 6c 5c 4c 3c 2c Qc Jc
6: | Kc
7: | Qc
8: | Jc
stock: 2s 3s 4s 5s 6s 7s 8s 9s Ts Js Qs Ks 3d 4d
runs: s h
steps: 40`

// goldenStates are the pictures pinned in testdata, by file name.
func goldenStates(t *testing.T) map[string]env.State {
	t.Helper()
	mid, err := env.ParseState(env.MustRules(env.Options{RuleSet: env.Cardems, Suits: 4, MaxSteps: 40}), midgame)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]env.State{
		"newgame-classic-4-seed42.png": env.NewGame(env.MustRules(env.Options{Suits: 4}), 42),
		"midgame-cardems-4.png":        mid,
	}
}

// meanDiff is the mean absolute difference between a picture and an
// image of the same size, over every colour byte.
func meanDiff(t *testing.T, pix []uint8, m image.Image) float64 {
	t.Helper()
	if b := m.Bounds(); b.Dx() != Width || b.Dy() != Height {
		t.Fatalf("the golden image is %v, want %dx%d", b, Width, Height)
	}
	sum := 0
	for y := range Height {
		for x := range Width {
			r, g, b, _ := m.At(m.Bounds().Min.X+x, m.Bounds().Min.Y+y).RGBA()
			p := pix[3*(y*Width+x):]
			for i, v := range [3]uint32{r >> 8, g >> 8, b >> 8} {
				sum += max(int(p[i])-int(v), int(v)-int(p[i]))
			}
		}
	}
	return float64(sum) / Size
}

func readGolden(t *testing.T, name string) image.Image {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatalf("%v (run go test ./picture -update to create it)", err)
	}
	defer f.Close()
	m, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return m
}

// TestGoldenPictures compares the pictures of fixed positions with PNGs
// in testdata, within tolerance; -update rewrites them.
func TestGoldenPictures(t *testing.T) {
	for name, s := range goldenStates(t) {
		pix := Draw(make([]uint8, Size), &s)
		if *update {
			var b bytes.Buffer
			if err := png.Encode(&b, Paletted(pix)); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join("testdata", name), b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if d := meanDiff(t, pix, readGolden(t, name)); d > tolerance {
			t.Errorf("%s: mean difference %.3f per byte, over the tolerance %v (look at the picture; -update if the change is meant)", name, d, tolerance)
		}
	}
}

// TestGoldenToleranceSeesAMove checks that the tolerance is tight enough
// to matter: one move away from a golden position is far outside it.
func TestGoldenToleranceSeesAMove(t *testing.T) {
	s := goldenStates(t)["newgame-classic-4-seed42.png"]
	legal := s.AppendLegal(nil)
	if _, err := s.Step(legal[0]); err != nil {
		t.Fatal(err)
	}
	d := meanDiff(t, Draw(make([]uint8, Size), &s), readGolden(t, "newgame-classic-4-seed42.png"))
	if d <= 2*tolerance {
		t.Errorf("after %v the picture differs from the deal's by %.3f per byte; the tolerance %v would hide a move", legal[0], d, tolerance)
	}
}

// Two positions that differ only in where their unseen cards lie (as in
// env's observation test): the same cards, dealt differently among the
// face-down places and the stock.
const (
	hiddenA = "1: 3h 5s Kh | 9s 8s\n2: Ah | Qh\n3: | 4h\nstock: 2s 3s 4s 5s 6s 7s 8s 9s Ts Js Qs Ks"
	hiddenB = "1: Ks 7s 2s | 9s 8s\n2: 9s | Qh\n3: | 4h\nstock: Kh 5s 4s 3h Ah 3s 8s 5s Ts 6s Js Qs"
)

func TestPictureHidesFaceDownCardsAndStockOrder(t *testing.T) {
	for _, suits := range []int{2, 4} {
		for _, rs := range []env.RuleSet{env.Classic, env.Cardems} {
			r := env.MustRules(env.Options{RuleSet: rs, Suits: suits})
			a, err := env.ParseState(r, hiddenA)
			if err != nil {
				t.Fatal(err)
			}
			b, err := env.ParseState(r, hiddenB)
			if err != nil {
				t.Fatal(err)
			}
			if a == b {
				t.Fatal("the two positions should differ in their hidden cards")
			}
			if !bytes.Equal(Draw(make([]uint8, Size), &a), Draw(make([]uint8, Size), &b)) {
				t.Errorf("%v %d suits: the pictures differ: a hidden card leaks", rs, suits)
			}
			// The same test sees a visible difference, so it can fail.
			c, err := env.ParseState(r, hiddenA+"\n4: | 7h")
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Equal(Draw(make([]uint8, Size), &a), Draw(make([]uint8, Size), &c)) {
				t.Errorf("%v %d suits: a card more on the table left the picture unchanged", rs, suits)
			}
		}
	}
}

// TestPictureShowsRunsAndDeals reads the top band: one filled place per
// completed run, and one back per deal left.
func TestPictureShowsRunsAndDeals(t *testing.T) {
	s := goldenStates(t)["midgame-cardems-4.png"]
	pix := Draw(make([]uint8, Size), &s)
	at := func(x, y int) uint8 { return colourIndex(pix[3*(y*Width+x):]) }
	for i := range env.NumRuns {
		// Inside the place's top right corner: a card's face, or the table.
		got, want := at(margin+i*runPitch+smallW-3, bandY+3), uint8(felt)
		if i < s.Runs() {
			want = paper
		}
		if got != want {
			t.Errorf("run place %d shows colour %d, want %d (%d runs)", i, got, want, s.Runs())
		}
	}
	for _, tc := range []struct {
		text  string
		deals int
	}{
		{midgame, 1}, // 14 cards onto eight columns: one deal, four stranded
		{"1: | Ks\nstock: 2s 3s 4s 5s 6s 7s 8s 9s Ts Js Qs Ks 3d 4d", 5}, // onto one column: 14, 13, 12, 11, 10
		{"1: | Ks\n2: | Kh\n3: | Kd\n4: | Kc\n5: | Ks\n6: | Kh\n7: | Kd\n8: | Kc\n9: | Qs\n10: | Qh", 0},
		{"1: | Ks\nstock: " + strings.Repeat("2s 3h 4d 5c 6s ", 10), 41}, // 50 onto one column: more deals than backs drawn
	} {
		s, err := env.ParseState(env.MustRules(env.Options{RuleSet: env.Cardems, Suits: 4}), tc.text)
		if err != nil {
			t.Fatal(err)
		}
		if s.DealsLeft() != tc.deals {
			t.Fatalf("DealsLeft = %d, want %d", s.DealsLeft(), tc.deals)
		}
		pix = Draw(pix, &s)
		backs := 0
		for j := range maxBacks + 1 {
			// The left border of the j-th back from the right.
			if at(Width-margin-smallW-j*stockStep, bandY+smallH/2) == edge {
				backs++
			}
		}
		if want := min(tc.deals, maxBacks); backs != want {
			t.Errorf("%d backs in the stock for %d deals left, want %d", backs, tc.deals, want)
		}
	}
}

// TestPicturePalette checks that Draw uses only Palette's colours, so a
// paletted copy loses nothing, and that it writes every byte it returns.
func TestPicturePalette(t *testing.T) {
	for name, s := range goldenStates(t) {
		dirty := bytes.Repeat([]uint8{7}, Size+5)
		pix := Draw(dirty, &s)
		if len(pix) != Size {
			t.Fatalf("Draw returned %d bytes, want %d", len(pix), Size)
		}
		clean := Draw(make([]uint8, Size), &s)
		if !bytes.Equal(pix, clean) {
			t.Errorf("%s: the picture depends on what dst held before", name)
		}
		m := Paletted(pix)
		for i, c := range m.Pix {
			if rgb[c] != [3]uint8(pix[3*i:3*i+3]) {
				t.Fatalf("%s: pixel %d is %v, not a Palette colour", name, i, pix[3*i:3*i+3])
			}
		}
	}
}

func TestDrawAllocatesNothing(t *testing.T) {
	s := goldenStates(t)["midgame-cardems-4.png"]
	buf := make([]uint8, Size)
	if n := testing.AllocsPerRun(5, func() { Draw(buf, &s) }); n != 0 {
		t.Errorf("Draw allocates %v times a picture", n)
	}
}

// TestDrawPanicsOnAShortBuffer: short is by length, so buf[:0] passed by
// mistake panics even when its capacity would hold the picture.
func TestDrawPanicsOnAShortBuffer(t *testing.T) {
	s := goldenStates(t)["midgame-cardems-4.png"]
	for _, buf := range [][]uint8{make([]uint8, Size-1), make([]uint8, 0, Size)} {
		func() {
			defer func() {
				if v := recover(); v == nil || !strings.Contains(fmt.Sprint(v), "shorter than Size") {
					t.Errorf("Draw into a buffer of length %d (capacity %d): panic %v", len(buf), cap(buf), v)
				}
			}()
			Draw(buf, &s)
		}()
	}
}

func BenchmarkDraw(b *testing.B) {
	s := env.NewGame(env.MustRules(env.Options{Suits: 4}), 42)
	buf := make([]uint8, Size)
	b.SetBytes(Size)
	for b.Loop() {
		Draw(buf, &s)
	}
}

// TestPictureShowsTheGamesEnd: the status line ends in gold words exactly
// when the game is over (won, lost or truncated), and a game still in
// play shows no gold at all.
func TestPictureShowsTheGamesEnd(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    env.Options
		text string
		end  bool
	}{
		{"truncated", env.Options{RuleSet: env.Cardems, Suits: 4, MaxSteps: 40}, midgame, true},
		{"playing", env.Options{RuleSet: env.Cardems, Suits: 4, MaxSteps: 41}, midgame, false},
		{"lost", env.Options{Suits: 1}, "1: | Ks\n2: | Ks\n3: | Ks\n4: | Ks\n5: | Ks\n6: | Ks\n7: | Ks\n8: | Ks\n9: | 2s\n10: | 4s", true},
		{"won", env.Options{Suits: 1}, "runs: s s s s s s s s", true},
	} {
		s, err := env.ParseState(env.MustRules(tc.o), tc.text)
		if err != nil {
			t.Fatal(err)
		}
		pix := Draw(make([]uint8, Size), &s)
		golds := 0
		for y := statusY; y < statusY+glyphH; y++ {
			for x := range Width {
				if colourIndex(pix[3*(y*Width+x):]) == gold {
					golds++
				}
			}
		}
		if (golds > 0) != tc.end {
			t.Errorf("%s (status %v, truncated %v): %d gold pixels in the status line, want the end shown: %v",
				tc.name, s.Status(), s.Truncated(), golds, tc.end)
		}
	}
}

// TestPictureSuitColours: hearts and diamonds are drawn in red, spades
// and clubs in black, on the cards of the tableau and on the Kings that
// stand for completed runs, each run its own suit's.
func TestPictureSuitColours(t *testing.T) {
	s, err := env.ParseState(env.MustRules(env.Options{Suits: 4}), "1: | 5s\n2: | 5h\n3: | 5d\n4: | 5c\nruns: s h d c")
	if err != nil {
		t.Fatal(err)
	}
	pix := Draw(make([]uint8, Size), &s)
	// count returns the red and black pixels in a rectangle.
	count := func(x0, y0, w, h int) (reds, blacks int) {
		for y := y0; y < y0+h; y++ {
			for x := x0; x < x0+w; x++ {
				switch colourIndex(pix[3*(y*Width+x):]) {
				case red:
					reds++
				case ink:
					blacks++
				}
			}
		}
		return reds, blacks
	}
	for i, su := range []env.Suit{env.Spades, env.Hearts, env.Diamonds, env.Clubs} {
		isRed := su == env.Hearts || su == env.Diamonds
		for _, place := range []struct {
			what       string
			x, y, w, h int
		}{
			{"the card in column " + strconv.Itoa(i+1), margin + i*colPitch, tableauY, cardW, cardH},
			{"run place " + strconv.Itoa(i), margin + i*runPitch, bandY, smallW, smallH},
		} {
			reds, blacks := count(place.x, place.y, place.w, place.h)
			if isRed && (reds == 0 || blacks != 0) || !isRed && (blacks == 0 || reds != 0) {
				t.Errorf("%s (%v) has %d red and %d black pixels; want only %s", place.what, su, reds, blacks, map[bool]string{true: "red", false: "black"}[isRed])
			}
		}
	}
}

// TestPictureStockText reads the words beside the stock: its cards and
// deals left, "deal" in the singular for one, right-aligned against the
// backs. The band left of the backs and right of the run places must be
// exactly those words on the table.
func TestPictureStockText(t *testing.T) {
	r := env.MustRules(env.Options{RuleSet: env.Cardems, Suits: 4})
	for _, tc := range []struct {
		text, words string
	}{
		{midgame, "stock 14  1 deal"},
		{"1: | Ks\nstock: 2s 3s 4s 5s 6s 7s 8s 9s Ts Js Qs Ks 3d 4d", "stock 14  5 deals"},
		{"1: | Ks\n2: | Kh\n3: | Kd\n4: | Kc\n5: | Ks\n6: | Kh\n7: | Kd\n8: | Kc\n9: | Qs\n10: | Qh", "stock 0  0 deals"},
	} {
		s, err := env.ParseState(r, tc.text)
		if err != nil {
			t.Fatal(err)
		}
		pix := Draw(make([]uint8, Size), &s)
		want := canvas(make([]uint8, Size))
		want.fill(0, 0, Width, Height, felt)
		shown := min(s.DealsLeft(), maxBacks)
		left := Width - margin - smallW - max(shown-1, 0)*stockStep
		y := bandY + (smallH-glyphH)/2
		drawText(want, left-8-textWidth(len(tc.words)), y, tc.words, paper)
		for row := y; row < y+glyphH; row++ {
			lo, hi := 3*(row*Width+margin+env.NumRuns*runPitch), 3*(row*Width+left-1)
			if !bytes.Equal(pix[lo:hi], want[lo:hi]) {
				t.Errorf("%d deals left: row %d beside the stock is not the words %q", s.DealsLeft(), row, tc.words)
				break
			}
		}
	}
}

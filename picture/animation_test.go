package picture

import (
	"bytes"
	"image"
	"image/draw"
	"image/gif"
	"testing"
	"time"

	"github.com/spiderenv/spider/env"
	"github.com/spiderenv/spider/internal/rng"
)

// TestAnimationDecodes builds an animation of a game played at random,
// with one frame repeated, and reads it back with image/gif: every frame,
// drawn over the ones before as GIF players do, must be the picture of its
// position exactly, with its delay.
func TestAnimationDecodes(t *testing.T) {
	s := env.NewGame(env.MustRules(env.Options{Suits: 2}), 7)
	g := rng.New(7)
	var want []*image.Paletted
	var delays []int
	a := NewAnimation()
	pix := make([]uint8, Size)
	add := func(d time.Duration, cs int) {
		Draw(pix, &s)
		a.Add(pix, d)
		want = append(want, Paletted(pix))
		delays = append(delays, cs)
	}
	add(time.Second, 100)
	add(time.Millisecond, 2)    // raised to the shortest delay browsers keep
	add(25*time.Millisecond, 3) // rounded to hundredths
	for range 30 {
		legal := s.AppendLegal(nil)
		if len(legal) == 0 {
			break
		}
		if _, err := s.Step(legal[g.IntN(len(legal))]); err != nil {
			t.Fatal(err)
		}
		add(250*time.Millisecond, 25)
	}
	add(time.Hour, 65535)
	if a.Frames() != len(want) {
		t.Fatalf("Frames = %d, want %d", a.Frames(), len(want))
	}
	file := a.Bytes()
	if len(file) > len(want)*Width*Height/20 {
		t.Errorf("%d frames take %d bytes: only the changes should be stored, compressed", len(want), len(file))
	}
	got, err := gif.DecodeAll(bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Image) != len(want) || got.LoopCount != 0 || got.Config.Width != Width || got.Config.Height != Height {
		t.Fatalf("decoded %d frames, loop %d, %dx%d; want %d, 0 (forever), %dx%d",
			len(got.Image), got.LoopCount, got.Config.Width, got.Config.Height, len(want), Width, Height)
	}
	screen := image.NewPaletted(image.Rect(0, 0, Width, Height), Palette)
	for i, frame := range got.Image {
		if got.Disposal[i] != gif.DisposalNone {
			t.Errorf("frame %d: disposal %d, want none (the next frame draws over it)", i, got.Disposal[i])
		}
		draw.Draw(screen, frame.Bounds(), frame, frame.Bounds().Min, draw.Src)
		if !bytes.Equal(screen.Pix, want[i].Pix) {
			t.Fatalf("frame %d (bounds %v) shows another picture", i, frame.Bounds())
		}
		if got.Delay[i] != delays[i] {
			t.Errorf("frame %d: delay %d, want %d", i, got.Delay[i], delays[i])
		}
	}
	if b := got.Image[1].Bounds(); b.Dx()*b.Dy() != 1 {
		t.Errorf("a repeated picture is stored as %v; want one pixel", b)
	}
	// More frames after Bytes: the next file holds them all.
	a.Add(pix, time.Second)
	if again, err := gif.DecodeAll(bytes.NewReader(a.Bytes())); err != nil || len(again.Image) != len(want)+1 {
		t.Fatalf("after one more frame: %v", err)
	}
}

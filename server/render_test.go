package server

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/spiderenv/spider/env"
	"github.com/spiderenv/spider/picture"
)

// TestRenderModes asks for games a few moves in as text (mode absent,
// "ansi" or "text") and as a picture, and compares each with the same game
// played in process: the picture comes as one bin of Height x Width x 3
// bytes, with its height and width.
func TestRenderModes(t *testing.T) {
	_, addr := start(t, Config{})
	cl := dial(t, addr)
	hello(cl)
	const n = 3
	cl.ok(map[string]any{"op": "make", "suits": 4, "n": n})
	ref, err := env.NewBatch(env.MustRules(env.Options{Suits: 4}), env.BatchOptions{N: n})
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	cl.ok(map[string]any{"op": "reset", "seed": 11})
	ref.Reset(11)
	actions := make([]env.Action, n)
	for range 5 {
		ref.SampleLegal(actions)
		cl.ok(map[string]any{"op": "step", "actions": actionsBin(actions)})
		if err := ref.Step(actions); err != nil {
			t.Fatal(err)
		}
	}
	for game := range n {
		s := ref.State(game)
		for _, mode := range []any{nil, "ansi", "text"} {
			req := map[string]any{"op": "render", "game": game}
			if mode != nil {
				req["mode"] = mode
			}
			rep := cl.ok(req)
			if rep["text"] != s.Render() || len(rep) != 2 {
				t.Fatalf("render mode %v: %v; want ok and the text\n%s", mode, rep, s.Render())
			}
		}
		rep := cl.ok(map[string]any{"op": "render", "game": game, "mode": "rgb_array", "id": 4})
		rgb, isBin := rep["rgb"].([]byte) // an array of integers would decode as []any
		if !isBin || len(rep) != 5 || fmt.Sprint(rep["height"], rep["width"], rep["id"]) != fmt.Sprint(picture.Height, picture.Width, 4) {
			t.Fatalf("rgb_array reply: rgb %T, keys %d, height %v, width %v, id %v; want a bin, ok, rgb, height, width and id",
				rep["rgb"], len(rep), rep["height"], rep["width"], rep["id"])
		}
		if want := picture.Draw(make([]uint8, picture.Size), &s); !bytes.Equal(rgb, want) {
			t.Fatalf("game %d: the picture differs from the game's (%d bytes, want %d)", game, len(rgb), len(want))
		}
	}
	// A bad mode changes nothing: the next render still answers.
	cl.failed(map[string]any{"op": "render", "game": 0, "mode": "png"}, "bad_request", `render mode "png": want ansi, text or rgb_array`)
	cl.failed(map[string]any{"op": "render", "game": 0, "mode": 3}, "bad_request", `field "mode" has the wrong type or value: want a string`)
	cl.failed(map[string]any{"op": "render", "game": 7, "mode": "rgb_array"}, "bad_request", "game 7 is outside 0 to 2")
	s := ref.State(0)
	if rep := cl.ok(map[string]any{"op": "render", "game": 0}); rep["text"] != s.Render() {
		t.Fatalf("after the bad modes: %v", rep)
	}
	// The reply is msgpack bin on the wire, not only after decoding.
	cl.send(map[string]any{"op": "render", "game": 0, "mode": "rgb_array"})
	payload, _, err := readFrame(cl.c, nil, 1<<30, nil)
	if err != nil {
		t.Fatal(err)
	}
	key := must(msgpack.Marshal("rgb"))
	at := bytes.Index(payload, key)
	if at < 0 || payload[at+len(key)] != 0xc6 {
		t.Fatalf("the rgb field is not a bin32")
	}
}

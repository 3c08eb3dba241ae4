package server

import (
	"bytes"
	"context"
	"log"
	"net"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// FuzzDecodeRequest feeds arbitrary frames to the frame reader and the
// request decoder: they must return a request or an error, never panic; a
// decoded request always has an op, and an action array the step can read
// again.
func FuzzDecodeRequest(f *testing.F) {
	for _, m := range []map[string]any{
		{"op": "hello", "version": 1},
		{"op": "make", "n": 4, "suits": 2, "obs": "float32", "illegal_penalty": 0.5, "seed": nil},
		{"op": "step", "actions": []byte{1, 0, 56, 4}},
		{"op": "step", "actions": []int{1, 2, 1080}},
		{"op": "reset", "seed": uint64(1 << 63), "reset_mask": []byte{1, 0}},
		{"op": "make", "rules": "cardems", "max_steps": -1, "face_up_slots": 0, "time_per_action_ms": int64(1 << 40), "x": map[string]any{"y": []any{1.5, nil, true}}},
	} {
		b, _ := msgpack.Marshal(m)
		f.Add(append([]byte{0, 0, 0, byte(len(b))}, b...))
	}
	f.Add([]byte{0, 0, 0, 3, 0xc1, 0xc1, 0xc1})
	// Declared lengths far past the frame: arrays, bins, strings, maps.
	f.Add([]byte{0, 0, 0, 22, 0x82, 0xa2, 'o', 'p', 0xa4, 's', 't', 'e', 'p', 0xa7, 'a', 'c', 't', 'i', 'o', 'n', 's', 0xdd, 0xff, 0xff, 0xff, 0xf0})
	f.Add([]byte{0, 0, 0, 22, 0x82, 0xa2, 'o', 'p', 0xa4, 's', 't', 'e', 'p', 0xa7, 'a', 'c', 't', 'i', 'o', 'n', 's', 0xc6, 0xff, 0xff, 0xff, 0xf0})
	f.Add([]byte{0, 0, 0, 9, 0x81, 0xa2, 'o', 'p', 0xdb, 0x7f, 0xff, 0xff, 0xff})
	f.Add([]byte{0, 0, 0, 5, 0xdf, 0xff, 0xff, 0xff, 0xff})
	nested := append(append([]byte{0x82, 0xa2, 'o', 'p', 0xa5, 'h', 'e', 'l', 'l', 'o', 0xa1, 'x'}, bytes.Repeat([]byte{0x91}, 4096)...), 0xc0)
	f.Add(append([]byte{0, 0, byte(len(nested) >> 8), byte(len(nested))}, nested...))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	huge := must(msgpack.Marshal(map[string]any{"op": "step", "actions": []uint64{1 << 63, 5}}))
	f.Add(append([]byte{0, 0, 0, byte(len(huge))}, huge...))
	f.Fuzz(func(t *testing.T, data []byte) {
		payload, _, err := readFrame(bytes.NewReader(data), nil, 1<<16, nil)
		if err != nil {
			return
		}
		var q request
		re := decodeRequest(payload, &q)
		if re == nil && !q.has(fieldOp) {
			t.Fatal("a request without op was accepted")
		}
		if re != nil && re.code != codeBadFrame && re.code != codeBadRequest {
			t.Fatalf("decoding failed with %v; want bad_frame or bad_request", re)
		}
		if re == nil && q.actionArray {
			// The step reads the array's items again: they must be there.
			items := reader{b: q.actions}
			for i := range q.actionCount {
				// A uint64 past 2^63-1 is an integer too, refused at the step.
				if _, err := items.int(); err != nil && err != errTooLarge {
					t.Fatalf("action %d of an accepted array: %v", i, err)
				}
			}
			if items.left() != 0 {
				t.Fatalf("%d bytes after the accepted actions", items.left())
			}
		}
	})
}

// FuzzServe sends arbitrary payloads, after a hello, a make and a reset
// (so step, render and hint reach their handlers), to a real server: every
// frame gets a reply or a closed connection, and no handler ever panics.
func FuzzServe(f *testing.F) {
	for _, m := range []map[string]any{
		{"op": "reset", "seed": 3},
		{"op": "step", "actions": []int{1080, 1080}},
		{"op": "render", "game": 1},
		{"op": "render", "game": 0, "mode": "rgb_array"},
		{"op": "hint", "game": 0},
		{"op": "make", "n": 2, "autoreset": "same-step", "mask": "bits"},
		{"op": "reset", "reset_mask": []byte{1, 1}},
	} {
		b, _ := msgpack.Marshal(m)
		f.Add(b)
	}
	var logs syncLog
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	f.Cleanup(cancel)
	go New(Config{MaxGames: 8, Log: log.New(&logs, "", 0)}).Serve(ctx, ln)
	addr := ln.Addr().String()
	f.Fuzz(func(t *testing.T, payload []byte) {
		if len(payload) == 0 {
			return
		}
		cl := dial(t, addr)
		hello(cl)
		cl.ok(map[string]any{"op": "make", "n": 2})
		cl.ok(map[string]any{"op": "reset", "seed": 1})
		cl.sendRaw(payload)
		if r := cl.recv(); r != nil {
			if _, ok := r["ok"].(bool); !ok {
				t.Fatalf("reply without ok: %v", r)
			}
		}
		if strings.Contains(logs.String(), "panic") {
			t.Fatalf("a handler panicked: %s", logs.String())
		}
	})
}

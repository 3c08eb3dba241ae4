package server_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"net"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/spiderenv/spider/server"
)

// A server on a free loopback port, and a client speaking PROTOCOL.md to
// it: every message is a msgpack map behind a 4-byte big-endian length.
func Example() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- server.New(server.Config{MaxGames: 1024}).Serve(ctx, ln) }()

	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		panic(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	call := func(req map[string]any) map[string]any {
		b, err := msgpack.Marshal(req)
		if err != nil {
			panic(err)
		}
		if _, err := c.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...)); err != nil {
			panic(err)
		}
		var hdr [4]byte
		if _, err := io.ReadFull(c, hdr[:]); err != nil {
			panic(err)
		}
		reply := make([]byte, binary.BigEndian.Uint32(hdr[:]))
		if _, err := io.ReadFull(c, reply); err != nil {
			panic(err)
		}
		var m map[string]any
		if err := msgpack.Unmarshal(reply, &m); err != nil {
			panic(err)
		}
		return m
	}
	int32s := func(b []byte) (v []int32) {
		for i := 0; i < len(b); i += 4 {
			v = append(v, int32(binary.LittleEndian.Uint32(b[i:])))
		}
		return v
	}

	r := call(map[string]any{"op": "hello", "version": server.Version})
	fmt.Println("hello:", r["ok"], r["server"], r["version"], r["ops"])

	r = call(map[string]any{"op": "make", "n": 2, "suits": 2, "max_steps": 0})
	fmt.Println("make:", r["n"], "games of", r["rules"], r["suits"], "suits, max_steps", r["max_steps"], "(0 is the default),",
		r["obs_dtype"], r["obs_shape"], "observations, masks as", r["mask"])

	r = call(map[string]any{"op": "reset", "seed": 42})
	fmt.Println("reset: legal actions", int32s(r["num_legal"].([]byte)), "score", int32s(r["score"].([]byte)))

	r = call(map[string]any{"op": "hint", "game": 0})
	fmt.Println("hint:", r["notation"], "-", r["reason"])

	r = call(map[string]any{"op": "step", "id": 1, "actions": []any{r["action"], 1080}})
	rewards := r["rewards"].([]byte)
	fmt.Println("step", r["id"], "rewards", math.Float32frombits(binary.LittleEndian.Uint32(rewards)),
		math.Float32frombits(binary.LittleEndian.Uint32(rewards[4:])), "score", int32s(r["score"].([]byte)))

	r = call(map[string]any{"op": "step", "actions": []int{0, 0}})
	fmt.Println("refused:", r["ok"], r["code"])

	r = call(map[string]any{"op": "close"})
	fmt.Println("close:", r["ok"])

	cancel()
	fmt.Println("stopped cleanly:", <-done == nil)
	// Output:
	// hello: true spider 1 [hello make reset step render hint close]
	// make: 2 games of classic 2 suits, max_steps 1000 (0 is the default), uint8 [806] observations, masks as bytes
	// reset: legal actions [6 9] score [500 500]
	// hint: 7>8x1 - turns a face-down card
	// step 1 rewards -1 -1 score [499 499]
	// refused: false bad_action
	// close: true
	// stopped cleanly: true
}

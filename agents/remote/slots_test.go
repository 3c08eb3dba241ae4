package remote

import (
	"bytes"
	"encoding/binary"
	"strings"
	"sync"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/spiderenv/spider/env"
)

// TestRemoteSlotsNewFlagsAndBoardsTrackEachGame records what each request
// says of each game (its slot, the new flag and the board's step count)
// and checks that a slot's games make sense: a slot's board counts one
// more step than at its previous request unless the request flags it new,
// and then (and only then) it counts none; every deal starts once.
func TestRemoteSlotsNewFlagsAndBoardsTrackEachGame(t *testing.T) {
	type seen struct {
		slot  int
		new   bool
		steps int
	}
	var mu sync.Mutex
	var reqs [][]seen
	record := func(m map[string]any) {
		n := int(toInt(m["n"]))
		slots, news := m["slots"].([]byte), m["new"].([]byte)
		boards := m["boards"].([]any)
		var r []seen
		for i := range n {
			b := boards[i].(map[string]any)
			r = append(r, seen{int(binary.LittleEndian.Uint16(slots[2*i:])), news[i] == 1, int(toInt(b["steps"]))})
		}
		mu.Lock()
		reqs = append(reqs, r)
		mu.Unlock()
	}
	ln, addr := listenAgent(t)
	reqNo := 0
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		for {
			m, err := readFrame(conn)
			if err != nil {
				return
			}
			switch m["op"] {
			case "hello":
				writeFrame(conn, map[string]any{"ok": true, "id": m["id"], "version": 1, "name": "rec", "board": true})
			case "act":
				record(m)
				n := int(toInt(m["n"]))
				masks := m["masks"].([]byte)
				out := make([]byte, 2*n)
				for i := range n {
					binary.LittleEndian.PutUint16(out[2*i:], uint16(bytes.IndexByte(masks[i*env.NumActions:(i+1)*env.NumActions], 1)))
				}
				if reqNo++; reqNo == 1 {
					binary.LittleEndian.PutUint16(out, 0xfffe) // slot 0's game fails at once: a hole before the others
				}
				writeFrame(conn, map[string]any{"ok": true, "id": m["id"], "actions": out})
			default:
				return
			}
		}
	}()
	f := &fakeAgent{addr: addr}
	r := rules(t, env.Options{Suits: 2, MaxSteps: 300})
	const deals, width = 7, 7
	evalBoth(t, f, Options{Rules: r, Width: width}, seedRange(100001, deals))
	last := map[int]int{} // slot -> steps at its last request
	starts := 0
	for k, req := range reqs {
		for _, g := range req {
			if g.slot < 0 || g.slot >= width {
				t.Fatalf("request %d: slot %d outside 0-%d", k, g.slot, width-1)
			}
			prev, ok := last[g.slot]
			switch {
			case g.new:
				starts++
				if g.steps != 0 {
					t.Fatalf("request %d slot %d: flagged new at step %d", k, g.slot, g.steps)
				}
			case !ok || g.steps != prev+1:
				t.Fatalf("request %d slot %d: step %d after %d (seen before: %v), not flagged new", k, g.slot, g.steps, prev, ok)
			}
			last[g.slot] = g.steps
		}
	}
	// The game answered illegally at the first request failed, and with
	// no deal left its slot stays empty: no later request names it.
	for k, req := range reqs[1:] {
		for _, g := range req {
			if g.slot == reqs[0][0].slot {
				t.Fatalf("request %d names slot %d, whose game failed with no deal left", k+2, g.slot)
			}
		}
	}
	if starts != deals {
		t.Fatalf("%d games flagged new for %d deals", starts, deals)
	}
}

// TestReplyWithTooManyActionsIsRefused: an agent that answers more actions
// than games asked is as broken as one that answers fewer.
func TestReplyWithTooManyActionsIsRefused(t *testing.T) {
	b, _ := msgpack.Marshal(map[string]any{"ok": true, "id": 1, "actions": []int{1, 2, 3}})
	rep, err := decodeReply(b)
	if err == nil {
		err = rep.check(2)
	}
	if err == nil || !strings.Contains(err.Error(), "3 actions for 2 games") {
		t.Fatalf("3 actions for 2 games: %v", err)
	}
}

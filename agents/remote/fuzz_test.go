package remote

import (
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/spiderenv/spider/internal/alloccount"
)

// FuzzDecodeReply feeds arbitrary bytes to the reader of a remote agent's
// replies, which come from another process: it must never panic nor
// allocate much more than the reply is, and what it accepts it must read
// the same again.
func FuzzDecodeReply(f *testing.F) {
	for _, v := range []any{
		map[string]any{"ok": true, "id": 3, "actions": []int{1, 1080, 5}},
		map[string]any{"ok": true, "id": 4, "actions": []byte{1, 0, 2, 0}},
		map[string]any{"ok": true, "id": 1, "version": 1, "name": "agent", "board": true},
		map[string]any{"ok": false, "id": 2, "error": "no"},
	} {
		b, err := msgpack.Marshal(v)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	// Actions declared inside an extension (TestDecodeReplyRefusesBadReplies).
	f.Add([]byte{0xc7, 15, 1, 0x81, 0xa7, 'a', 'c', 't', 'i', 'o', 'n', 's', 0xdd, 0x02, 0xfa, 0xf0, 0x80, 0xc0})
	f.Fuzz(func(t *testing.T, b []byte) {
		var rep reply
		var err error
		// The count is the process's, the fuzzer's own work included:
		// hence the 16 MB, which the 100 MB a map inside an extension
		// took still passes by far.
		if got := alloccount.BytesFast(func() { rep, err = decodeReply(b) }); got > 8*uint64(len(b))+16<<20 {
			t.Fatalf("decoding %d bytes allocated %d", len(b), got)
		}
		if err != nil {
			return
		}
		again, err := decodeReply(b)
		if err != nil || again.ok != rep.ok || again.id != rep.id || len(again.actions) != len(rep.actions) || again.name != rep.name || again.errMsg != rep.errMsg {
			t.Fatalf("read %+v, then %+v (%v)", rep, again, err)
		}
		if len(rep.name) > maxNameText || len(rep.errMsg) > maxErrorText {
			t.Fatalf("texts of %d and %d bytes kept", len(rep.name), len(rep.errMsg))
		}
	})
}

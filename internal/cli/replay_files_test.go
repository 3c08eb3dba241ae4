package cli

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spiderenv/spider/env"
	"github.com/spiderenv/spider/record"
)

// TestReplayEscapesPlayerName: a record's player name is the file's text,
// and replay prints it. A name holding escape sequences (a window title,
// a cleared screen) is printed quoted, its control characters escaped; a
// plain name as it is.
func TestReplayEscapesPlayerName(t *testing.T) {
	for _, tc := range []struct{ player, want string }{
		{"\x1b]0;pwned\a\x1b[2J", `played by "\x1b]0;pwned\a\x1b[2J",`},
		{"nn:run/best.spider", "played by nn:run/best.spider,"},
		{"ünïcode ok", "played by ünïcode ok,"},
		{"bad\xffutf8", `played by "bad\xffutf8",`},
		{"bidi\u202eevil", `played by "bidi\u202eevil",`},
	} {
		r := env.MustRules(env.Options{Suits: 1, MaxSteps: 5})
		s := env.NewGame(r, 1)
		p := filepath.Join(t.TempDir(), "game.spider")
		if err := record.Save(p, record.New(r, 1, tc.player, nil, &s)); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := runReplay(context.Background(), replayOptions{}, p, &out, io.Discard); err != nil {
			t.Fatal(err)
		}
		if bytes.ContainsAny(out.Bytes(), "\x1b\a") || !strings.Contains(out.String(), tc.want) {
			t.Errorf("player %q printed as:\n%q\nwant %q and no control character", tc.player, out.String(), tc.want)
		}
	}
}

// TestReplayRefusesHostileRecord: the 116-byte record, whose
// actions claim 2^32-1 items, is refused at once (it took 8.4 GB and 50 s).
func TestReplayRefusesHostileRecord(t *testing.T) {
	b := []byte{0x84, 0xa7}
	b = append(b, "version"...)
	b = append(b, record.Version, 0xa4)
	b = append(b, "game"...)
	b = append(b, 0x81, 0xa5)
	b = append(b, "suits"...)
	b = append(b, 0x02, 0xa6)
	b = append(b, "player"...)
	player := strings.Repeat("p", 116-len(b)-2-8-5)
	b = append(b, 0xd9, byte(len(player)))
	b = append(b, player...)
	b = append(b, 0xa7)
	b = append(b, "actions"...)
	b = binary.BigEndian.AppendUint32(append(b, 0xdd), 1<<32-1)
	if len(b) != 116 {
		t.Fatalf("%d bytes, not 116", len(b))
	}
	p := filepath.Join(t.TempDir(), "hostile.spider")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	start := time.Now()
	err := runReplay(context.Background(), replayOptions{}, p, &out, io.Discard)
	if err == nil || !strings.HasPrefix(err.Error(), p+": damaged game record (cut short?): ") || out.Len() > 0 {
		t.Fatalf("the 116-byte record: %v, printed %q", err, out.String())
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("refusing it took %v", d)
	}
}

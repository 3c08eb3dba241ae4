package nn

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/spiderenv/spider/env"
	"github.com/spiderenv/spider/internal/alloccount"
	"github.com/spiderenv/spider/internal/msgpackcheck"
)

// smallNet is a network of a few thousand weights.
func smallNet(t testing.TB) *Net {
	n, err := New(SpecFor(env.MustRules(env.Options{FaceUpSlots: 2, MaxSteps: 100}), []int{4}), 1)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// head returns the start of a checkpoint map of keys entries: the kind and
// the format, whose keys are two of them.
func head(keys int) []byte {
	b := []byte{0x80 | byte(keys)}
	b = append(b, 0xa4)
	b = append(b, "kind"...)
	b = append(b, 0xa0|byte(len(kind)))
	b = append(b, kind...)
	b = append(b, 0xa6)
	b = append(b, "format"...)
	return append(b, byte(Format))
}

func key(b []byte, k string) []byte { return append(append(b, 0xa0|byte(len(k))), k...) }

func u32(b []byte, code byte, n uint32) []byte {
	return binary.BigEndian.AppendUint32(append(b, code), n)
}

// hostileCheckpoints are crafted files that claim far more than they hold:
// the 35-byte checkpoint (a weight array of 2^32-1 items), the same
// of 2^28 items, spec.hidden of 2^32-1 items, a weight bin of 2^32-1 bytes,
// a sealed one of a million nil weight layers, which the file does back
// with a byte each but which would cost 24 bytes each, twice, and one of
// ten million nested arrays under an unknown key, which msgpack skips
// recursively.
func hostileCheckpoints() map[string][]byte {
	nils := u32(key(head(3), "w"), 0xdd, 1<<20)
	nils = msgpackcheck.Seal(append(nils, bytes.Repeat([]byte{0xc0}, 1<<20)...))
	deep := append(key(head(3), "x"), bytes.Repeat([]byte{0x91}, 10_000_000)...)
	return map[string][]byte{
		"deep":        append(deep, 0xc0),
		"w-2^32":      u32(key(head(3), "w"), 0xdd, 1<<32-1),
		"w-2^28":      u32(key(head(3), "w"), 0xdd, 1<<28),
		"hidden-2^32": u32(key(append(key(head(3), "spec"), 0x81), "hidden"), 0xdd, 1<<32-1),
		"bin-2^32":    u32(append(key(head(3), "w"), 0x91), 0xc6, 1<<32-1),
		"nil-layers":  nils,
	}
}

// TestLoadRefusesHostileCheckpoints loads each crafted file: a quick
// refusal naming the file, allocating little. Before msgpackcheck, the
// 35-byte file ended the process (fatal: out of memory) and the 2^28 one
// took 6 GB for 31 s; before the allocation estimate, the nil layers cost
// 50 MB for a 1 MB file; before the depth limit, the nested arrays ended
// the process (fatal: stack overflow).
func TestLoadRefusesHostileCheckpoints(t *testing.T) {
	dir := t.TempDir()
	files := hostileCheckpoints()
	if n := len(files["w-2^32"]); n != 35 {
		t.Fatalf("the issue's checkpoint is %d bytes, not 35", n)
	}
	for name, b := range files {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		var err error
		start := time.Now()
		got := alloccount.Bytes(func() { _, _, err = Load(p) })
		if err == nil || !strings.HasPrefix(err.Error(), p+": ") {
			t.Errorf("%s: %v; want a refusal naming the file", name, err)
			continue
		}
		if limit := uint64(2*len(b)) + 1<<20; got > limit {
			t.Errorf("%s: refusing %d bytes allocated %d (more than %d): %v", name, len(b), got, limit, err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%s: refusing it took %v", name, d)
		}
		if want := "nests more than 64 deep"; name == "deep" && !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want it to say %q", name, err, want)
		}
		if want := "declares more than"; name != "nil-layers" && name != "deep" && !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want it to say %q", name, err, want)
		}
		if want := "decoding would allocate more than"; name == "nil-layers" && !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want it to say %q", name, err, want)
		}
	}
}

// TestCheckpointsRefuseWrongShapes: a layer with one weight or bias too
// many or too few is neither saved nor read (a forward pass would index
// past it, or ignore the extra).
func TestCheckpointsRefuseWrongShapes(t *testing.T) {
	for name, edit := range map[string]func(n *Net){
		"bias too many":   func(n *Net) { n.B[0] = append(n.B[0], 0) },
		"bias too few":    func(n *Net) { n.B[0] = n.B[0][:len(n.B[0])-1] },
		"weight too many": func(n *Net) { n.W[1] = append(n.W[1], 0) },
		"weight too few":  func(n *Net) { n.W[1] = n.W[1][:len(n.W[1])-1] },
	} {
		n := smallNet(t)
		edit(n)
		if err := Save(filepath.Join(t.TempDir(), "n.spider"), n, nil); err == nil || !strings.Contains(err.Error(), "weights and") {
			t.Errorf("%s: Save says %v", name, err)
		}
		b, err := encode(n, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := parse("n.spider", b); err == nil || !strings.Contains(err.Error(), "weights and") {
			t.Errorf("%s: reading says %v", name, err)
		}
	}
}

// TestLoadRefusesOversizedFile: a file over MaxSize is refused from its
// size, unread (a sparse file takes no disk).
func TestLoadRefusesOversizedFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "huge.spider")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(MaxSize + 1); err != nil {
		t.Skipf("no sparse file here: %v", err)
	}
	f.Close()
	var lerr error
	start := time.Now()
	got := alloccount.Bytes(func() { _, _, lerr = Load(p) })
	want := fmt.Sprintf("%s: %d bytes, more than any valid file can have (%d)", p, MaxSize+1, MaxSize)
	if lerr == nil || lerr.Error() != want {
		t.Fatalf("a file of MaxSize+1 bytes: %v; want %q", lerr, want)
	}
	if got > 64<<10 || time.Since(start) > time.Second {
		t.Fatalf("refusing it took %d bytes and %v", got, time.Since(start))
	}
}

// TestLoadRefusesDamagedCheckpoints: a flipped bit anywhere in the weights
// and bytes added at the end are refused by the checksum, naming the file;
// a format-2 file (no checksum) by its version.
func TestLoadRefusesDamagedCheckpoints(t *testing.T) {
	dir := t.TempDir()
	n := smallNet(t)
	good := filepath.Join(dir, "good.spider")
	if err := Save(good, n, msgpack.RawMessage{0x81, 0xa1, 'x', 0x01}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	back, raw, err := Load(good)
	if err != nil || !reflect.DeepEqual(back, n) || !bytes.Equal(raw, []byte{0x81, 0xa1, 'x', 0x01}) {
		t.Fatalf("the saved checkpoint: %v", err)
	}
	w0 := bytes.Index(b, floatBytes(n.W[0][:4]))
	if w0 < 0 {
		t.Fatal("the first weights are not in the file")
	}
	for name, tc := range map[string]struct {
		b    []byte
		want string
	}{
		"flipped-weight":   {flip(b, w0+1, 0), "damaged checkpoint: checksum mismatch"},
		"flipped-last-bit": {flip(b, w0+4*len(n.W[0])-1, 7), "damaged checkpoint: checksum mismatch"},
		"flipped-sum":      {flip(b, len(b)-1, 3), "damaged checkpoint: checksum mismatch"},
		"flipped-length":   {flip(b, w0-1, 2), "damaged checkpoint: checksum mismatch"}, // the first layer's size
		"trailing-garbage": {append(bytes.Clone(b), "garbage"...), "damaged checkpoint: 7 unexpected bytes after the checksum"},
		"no-checksum":      {b[:len(b)-msgpackcheck.TrailerSize], "damaged checkpoint: no checksum after the data"},
		"format-2":         {format2(t, n), fmt.Sprintf("checkpoint format 2, this program reads format %d", Format)},
	} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, tc.b, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, _, err := Load(p); err == nil || !strings.HasPrefix(err.Error(), p+": "+tc.want) {
			t.Errorf("%s: %v; want %q", name, err, p+": "+tc.want)
		}
	}
}

func floatBytes(f []float32) []byte {
	var b []byte
	for _, v := range f {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return b
}

func flip(b []byte, i int, bit uint) []byte {
	out := bytes.Clone(b)
	out[i] ^= 1 << bit
	return out
}

// format2 returns n as format 2 wrote it: the same map without a checksum.
func format2(t testing.TB, n *Net) []byte {
	c := checkpoint{Kind: kind, Format: 2, Spec: n.Spec}
	for i := range n.W {
		c.W = append(c.W, n.W[i])
		c.B = append(c.B, n.B[i])
	}
	b, err := msgpack.Marshal(&c)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// FuzzReadCheckpoint feeds arbitrary bytes to the checkpoint reader: it
// must never panic nor allocate much more than the file is, and what it
// accepts must be a consistent network that saves back to a file it reads
// the same.
func FuzzReadCheckpoint(f *testing.F) {
	// The smallest network (one hidden unit; the policy head has a weight
	// per action), so the fuzzer's mutations and minimizations stay quick.
	n, err := New(SpecFor(env.MustRules(env.Options{FaceUpSlots: 1}), []int{1}), 1)
	if err != nil {
		f.Fatal(err)
	}
	for _, train := range []msgpack.RawMessage{nil, {0x81, 0xa4, 'i', 't', 'e', 'r', 0x03}} {
		b, err := encode(n, train)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add(format2(f, n))
	for _, b := range hostileCheckpoints() {
		if len(b) < 4096 {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		readCheckpoint(t, b)
		// Most changes break the checksum, which then hides the decoder
		// from the fuzzer: the value is also read with its sum fixed.
		if n, err := msgpackcheck.Size(b); err == nil {
			readCheckpoint(t, msgpackcheck.Seal(b[:n]))
		}
	})
}

// readCheckpoint is FuzzReadCheckpoint's check of one input.
func readCheckpoint(t *testing.T, b []byte) {
	var net *Net
	var train msgpack.RawMessage
	var err error
	got := alloccount.BytesFast(func() { net, train, err = parse("fuzz.spider", b) })
	if limit := 32*uint64(len(b)) + 64<<20; got > limit {
		t.Fatalf("reading %d bytes allocated %d", len(b), got)
	}
	if err != nil {
		if !strings.HasPrefix(err.Error(), "fuzz.spider: ") {
			t.Fatalf("an error that does not name the file: %v", err)
		}
		return
	}
	if err := net.Spec.validate(); err != nil {
		t.Fatalf("accepted an invalid specification: %v", err)
	}
	dims := net.Spec.Dims()
	for i, d := range dims {
		if len(net.W[i]) != d[0]*d[1] || len(net.B[i]) != d[1] {
			t.Fatalf("accepted layer %d of %d weights", i, len(net.W[i]))
		}
	}
	again, err := encode(net, train)
	if err != nil {
		t.Fatal(err)
	}
	back, train2, err := parse("again", again)
	if err != nil || !reflect.DeepEqual(back, net) || !bytes.Equal(train, train2) {
		t.Fatalf("saved back, it reads %v", err)
	}
}

// TestLoadRefusesUnknownGameOption: a network saved by a newer build with a
// game option this build does not know is refused, naming the option, not
// read as the default game.
func TestLoadRefusesUnknownGameOption(t *testing.T) {
	m := smallNetAsMap(t)
	m["spec"].(map[string]any)["game"].(map[string]any)["from_a_newer_build"] = 7
	if _, _, err := parse("new.spider", sealedMap(t, m)); err == nil || !strings.HasPrefix(err.Error(), "new.spider: ") || !strings.Contains(err.Error(), `unknown game option "from_a_newer_build"`) {
		t.Fatalf("a network with an unknown game option: %v", err)
	}
	// The same map without the option reads.
	delete(m["spec"].(map[string]any)["game"].(map[string]any), "from_a_newer_build")
	if _, _, err := parse("same.spider", sealedMap(t, m)); err != nil {
		t.Fatalf("the network itself: %v", err)
	}
}

// TestLoadRefusesGameInsideAnExtension: a network whose game options are
// a map wrapped in an msgpack extension, followed inside it by 50 million
// hidden widths declared in 5 bytes. Read out of the extension, they went
// unchecked: a file of about 60 bytes took 800 MB. Keys are written in
// order, so the widths come where "hidden" follows "game".
func TestLoadRefusesGameInsideAnExtension(t *testing.T) {
	m := smallNetAsMap(t)
	payload := append([]byte{0x80, 0xa6}, "hidden"...)
	payload = append(payload, 0xdd, 0x02, 0xfa, 0xf0, 0x80)
	m["spec"].(map[string]any)["game"] = msgpack.RawMessage(append([]byte{0xc7, byte(len(payload)), 1}, payload...))
	sealed := sealedMap(t, m)
	var perr error
	got := alloccount.Bytes(func() { _, _, perr = parse("ext.spider", sealed) })
	if perr == nil || !strings.HasPrefix(perr.Error(), "ext.spider: ") || !strings.Contains(perr.Error(), "game options: not a map") {
		t.Fatalf("a network whose game is inside an extension: %v", perr)
	}
	if got > 1<<20 {
		t.Fatalf("refusing it allocated %d bytes", got)
	}
}

// smallNetAsMap returns smallNet's checkpoint as a generic map, to edit
// and write again with sealedMap.
func smallNetAsMap(t *testing.T) map[string]any {
	t.Helper()
	b, err := encode(smallNet(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	n, err := msgpackcheck.Size(b)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := msgpack.Unmarshal(b[:n], &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// sealedMap returns m as a checkpoint file's bytes: its keys in order
// (so that a crafted value's place among them is known) and its checksum.
func sealedMap(t *testing.T, m map[string]any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	enc.SetSortMapKeys(true)
	if err := enc.Encode(m); err != nil {
		t.Fatal(err)
	}
	return msgpackcheck.Seal(buf.Bytes())
}

// TestFloatsRefusesPartialFloats: a bin whose length is not a multiple
// of four bytes holds no whole float32s, and is refused as such.
func TestFloatsRefusesPartialFloats(t *testing.T) {
	for _, n := range []int{1, 2, 3, 6, 10} {
		b, _ := msgpack.Marshal(make([]byte, n))
		var f Floats
		if err := msgpack.Unmarshal(b, &f); err == nil || err.Error() != fmt.Sprintf("a float32 array of %d bytes", n) {
			t.Errorf("a bin of %d bytes: %v", n, err)
		}
	}
	b, _ := msgpack.Marshal(Floats{1.5, -2})
	var f Floats
	if err := msgpack.Unmarshal(b, &f); err != nil || !reflect.DeepEqual(f, Floats{1.5, -2}) {
		t.Errorf("two floats: %v, %v", f, err)
	}
}

// TestFloatsFromAStreamGrowsWithTheData: read from a stream, which cannot
// say how many bytes it holds, a bin that declares 64 MiB and holds 8
// bytes costs a few megabytes at most, not the 64 declared.
func TestFloatsFromAStreamGrowsWithTheData(t *testing.T) {
	b := binary.BigEndian.AppendUint32([]byte{0xc6}, 64<<20)
	b = append(b, make([]byte, 8)...)
	var err error
	got := alloccount.Bytes(func() {
		var f Floats
		err = msgpack.NewDecoder(struct{ io.Reader }{bytes.NewReader(b)}).Decode(&f)
	})
	if err == nil {
		t.Fatal("a bin of 64 MiB holding 8 bytes decoded")
	}
	if got > 8<<20 {
		t.Fatalf("refusing it allocated %d bytes", got)
	}
}

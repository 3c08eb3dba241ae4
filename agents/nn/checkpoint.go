package nn

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/spiderenv/spider/env"
	"github.com/spiderenv/spider/internal/atomicfile"
	"github.com/spiderenv/spider/internal/msgpackcheck"
)

// Format is the checkpoint format version this package writes and reads.
// Format 3 follows the msgpack map with its checksum (msgpackcheck.Seal: a
// msgpack uint32, the CRC-32C of every byte before it); format 2 had none.
// Format 2 stores the game as env.Options under the specification's
// "game" key; format 1 had its own rule_set, suits, slots, max_steps and
// encoding keys.
const Format = 3

// MaxSize is the largest checkpoint file Load reads and Save writes, 2 GiB:
// Load refuses a larger file before reading it. The specification allows
// networks far beyond it (16 hidden layers of 16384), so the bound is a
// generous constant instead: a checkpoint holds the weights three times
// over (the weights and Adam's two moments), so 2 GiB is a network of
// about 180 million parameters, eleven times [1024, 1024] hidden units on
// the widest observation (16 million); the runs documented here write
// checkpoints of 7-8 MB. Where int has 32 bits it is 2 GiB less two
// bytes, the most a slice there holds with the byte ReadFile reads past
// the limit.
const MaxSize int64 = min(2<<30, math.MaxInt-1)

// kind marks a file as a spider checkpoint.
const kind = "spider-policy"

// Floats is a float32 slice that msgpack stores as one bin of
// little-endian bytes: compact and fast, unlike an array of floats.
type Floats []float32

// EncodeMsgpack writes f as a bin, through a small buffer: a copy of the
// whole slice as bytes was as much again as a checkpoint's weights.
func (f Floats) EncodeMsgpack(e *msgpack.Encoder) error {
	if err := e.EncodeBytesLen(4 * len(f)); err != nil {
		return err
	}
	var buf [4096]byte
	for len(f) > 0 {
		n := min(len(f), len(buf)/4)
		for i, v := range f[:n] {
			binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(v))
		}
		if _, err := e.Writer().Write(buf[:4*n]); err != nil {
			return err
		}
		f = f[n:]
	}
	return nil
}

// DecodeMsgpack reads a bin written by EncodeMsgpack. It reads the bytes
// through a small buffer straight into the floats. When the decoder reads
// from memory (msgpack.Unmarshal) and holds the bytes declared, the floats
// are allocated once, at their size; otherwise the slice grows as it
// fills, so a declared length the data does not back costs no more than
// the data read.
func (f *Floats) DecodeMsgpack(d *msgpack.Decoder) error {
	n, err := d.DecodeBytesLen()
	if err != nil {
		return err
	}
	if n == -1 { // nil
		*f = nil
		return nil
	}
	if n%4 != 0 {
		return fmt.Errorf("a float32 array of %d bytes", n)
	}
	size := min(n/4, 1<<20)
	if r, ok := d.Buffered().(interface{ Len() int }); ok && n <= r.Len() {
		// Growing would hold the old and the new slice at once, and a
		// large layer's garbage until the collector runs.
		size = n / 4
	}
	out := make([]float32, 0, size)
	buf := make([]byte, min(n, 64<<10))
	for n > 0 {
		k := min(n, len(buf))
		if err := d.ReadFull(buf[:k]); err != nil {
			return err
		}
		for i := 0; i < k; i += 4 {
			out = append(out, math.Float32frombits(binary.LittleEndian.Uint32(buf[i:])))
		}
		n -= k
	}
	*f = out
	return nil
}

// header is the part of a checkpoint every format version shares: read
// first, so a file of another version is refused by its number rather
// than by whatever its layout fails to decode into.
type header struct {
	Kind   string `msgpack:"kind"`
	Format int    `msgpack:"format"`
}

// checkpoint is the file's content.
type checkpoint struct {
	Kind   string             `msgpack:"kind"`
	Format int                `msgpack:"format"`
	Spec   Spec               `msgpack:"spec"`
	W      []Floats           `msgpack:"w"`
	B      []Floats           `msgpack:"b"`
	Train  msgpack.RawMessage `msgpack:"train,omitempty"` // the trainer's state, opaque here
}

// Save writes n and the trainer's state (msgpack, may be nil) to path
// through a temporary file and a rename, followed by its checksum. It
// refuses, writing nothing, what Load would refuse: a file over MaxSize,
// a specification Load does not play, weights that do not fit it or are
// not finite.
func Save(path string, n *Net, train msgpack.RawMessage) error {
	if err := n.check(); err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	b, err := encode(n, train)
	if err != nil {
		return err
	}
	if int64(len(b)) > MaxSize {
		return fmt.Errorf("%s: a checkpoint of %d bytes is over the %d any reader accepts", path, len(b), MaxSize)
	}
	return atomicfile.Write(path, b)
}

// encode returns the checkpoint file of n and train: the msgpack map and
// its checksum.
func encode(n *Net, train msgpack.RawMessage) ([]byte, error) {
	c := checkpoint{Kind: kind, Format: Format, Spec: n.Spec, Train: train}
	for i := range n.W {
		c.W = append(c.W, n.W[i])
		c.B = append(c.B, n.B[i])
	}
	// Each float32 is four bytes of a bin (Floats); the specification and
	// the bins' headers take a little more.
	size := len(train) + 4096
	for i := range n.W {
		size += 4 * (len(n.W[i]) + len(n.B[i]))
	}
	return msgpackcheck.MarshalSealed(&c, size)
}

// Load reads a checkpoint, refusing with a message naming the file one
// that is larger than MaxSize (before reading it), is not a spider
// checkpoint, has another format version (the message names both), is
// damaged (its checksum differs, or bytes follow it), declares more data
// than the file holds or than decoding it may allocate, plays another
// observation than float32, or whose weights do not fit its specification
// or are not finite. It returns the network and the trainer's state.
func Load(path string) (*Net, msgpack.RawMessage, error) {
	b, err := msgpackcheck.ReadFile(path, MaxSize)
	if err != nil {
		return nil, nil, err
	}
	return parse(path, b)
}

// parse is Load after reading: it checks and decodes b, the content of
// the file at path (named in errors).
func parse(path string, b []byte) (*Net, msgpack.RawMessage, error) {
	// msgpack allocates whatever length a header declares: every declared
	// length is checked against the file's size before anything is
	// decoded, and each decode against what it may allocate (Size,
	// Decode). The kind and version are read before the checksum, so a
	// file of another version is refused by its number, not as damaged;
	// if they cannot be read, a checksum that does not match says why.
	var h header
	head, err := msgpackcheck.Pick(b, "kind", "format")
	if err == nil {
		err = msgpackcheck.Decode(head, &h)
	}
	if err != nil {
		if derr := msgpackcheck.Damaged(b); derr != nil {
			return nil, nil, fmt.Errorf("%s: damaged checkpoint: %v", path, derr)
		}
		// A checkpoint cut short has no checksum at its end, but its
		// first entries still say what it is.
		if lead, lerr := msgpackcheck.Leading(b, "kind", "format"); lerr == nil && msgpackcheck.Decode(lead, &h) == nil && h.Kind == kind {
			return nil, nil, fmt.Errorf("%s: damaged checkpoint (cut short?): %v", path, err)
		}
		return nil, nil, fmt.Errorf("%s: not a spider checkpoint: %v", path, err)
	}
	if h.Kind != kind {
		return nil, nil, fmt.Errorf("%s: not a spider checkpoint", path)
	}
	if h.Format != Format {
		return nil, nil, fmt.Errorf("%s: checkpoint format %d, this program reads format %d", path, h.Format, Format)
	}
	body, err := msgpackcheck.Unseal(b)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: damaged checkpoint: %v", path, err)
	}
	var c checkpoint
	if err := msgpackcheck.Decode(body, &c); err != nil {
		return nil, nil, fmt.Errorf("%s: unreadable checkpoint: %v", path, err)
	}
	n := &Net{Spec: c.Spec}
	for i := range c.W {
		n.W = append(n.W, c.W[i])
	}
	for i := range c.B {
		n.B = append(n.B, c.B[i])
	}
	if err := n.check(); err != nil {
		return nil, nil, fmt.Errorf("%s: %v", path, err)
	}
	return n, c.Train, nil
}

// check reports what no checkpoint may hold, for Load and Save alike: a
// specification no game or network allows, weights that do not fit it,
// or a weight or bias that is not finite (a run that diverged).
func (n *Net) check() error {
	if _, err := n.Spec.Rules(); err != nil {
		return err
	}
	if err := n.Spec.Check(mustRules(n.Spec)); err != nil {
		return fmt.Errorf("inconsistent specification: %v", err)
	}
	if err := n.CheckShape(); err != nil {
		return err
	}
	for i := range n.W {
		if !finite(n.W[i]) || !finite(n.B[i]) {
			return fmt.Errorf("layer %d holds a weight or bias that is not finite", i)
		}
	}
	return nil
}

// CheckShape reports why n's weights do not fit its Spec (a Net made by
// hand rather than by New or Load), or nil: the Spec is one Validate
// takes, and every layer has the weights and biases Dims gives it.
func (n *Net) CheckShape() error {
	if err := n.Spec.validate(); err != nil {
		return err
	}
	dims := n.Spec.Dims()
	if len(n.W) != len(dims) || len(n.B) != len(dims) {
		return fmt.Errorf("%d weight and %d bias layers, the specification has %d", len(n.W), len(n.B), len(dims))
	}
	for i, d := range dims {
		if len(n.W[i]) != d[0]*d[1] || len(n.B[i]) != d[1] {
			return fmt.Errorf("layer %d has %d weights and %d biases, want %d and %d", i, len(n.W[i]), len(n.B[i]), d[0]*d[1], d[1])
		}
	}
	return nil
}

// finite reports whether every value of f is a number and not infinite.
func finite(f []float32) bool {
	for _, v := range f {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return false
		}
	}
	return true
}

func mustRules(s Spec) (r env.Rules) {
	r, _ = s.Rules()
	return r
}

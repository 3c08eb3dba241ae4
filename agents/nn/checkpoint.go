package nn

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"slices"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/spiderenv/spider/env"
	"github.com/spiderenv/spider/internal/atomicfile"
	"github.com/spiderenv/spider/internal/msgpackcheck"
)

// Format is the checkpoint format version this package writes and reads.
// Format 2 stores the game as env.Options under the specification's
// "game" key; format 1 had its own rule_set, suits, slots, max_steps and
// encoding keys.
const Format = 2

// kind marks a file as a spider checkpoint.
const kind = "spider-policy"

// Floats is a float32 slice that msgpack stores as one bin of
// little-endian bytes: compact and fast, unlike an array of floats.
type Floats []float32

// EncodeMsgpack writes f as a bin.
func (f Floats) EncodeMsgpack(e *msgpack.Encoder) error {
	b := make([]byte, 4*len(f))
	for i, v := range f {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return e.EncodeBytes(b)
}

// DecodeMsgpack reads a bin written by EncodeMsgpack.
func (f *Floats) DecodeMsgpack(d *msgpack.Decoder) error {
	b, err := d.DecodeBytes()
	if err != nil {
		return err
	}
	if len(b)%4 != 0 {
		return fmt.Errorf("a float32 array of %d bytes", len(b))
	}
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
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
// through a temporary file and a rename.
func Save(path string, n *Net, train msgpack.RawMessage) error {
	c := checkpoint{Kind: kind, Format: Format, Spec: n.Spec, Train: train}
	for i := range n.W {
		c.W = append(c.W, n.W[i])
		c.B = append(c.B, n.B[i])
	}
	b, err := msgpack.Marshal(&c)
	if err != nil {
		return err
	}
	return atomicfile.Write(path, b)
}

// Load reads a checkpoint, refusing (with a message naming the file) one
// that is not a spider checkpoint, has another format version (the
// message names both), declares more data than the file holds, plays
// another observation than float32, or whose weights do not fit its
// specification or are not finite. It returns the network and the
// trainer's state.
func Load(path string) (*Net, msgpack.RawMessage, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	// msgpack allocates whatever length a header declares: check every
	// declared length against the file's size before decoding.
	if err := msgpackcheck.Lengths(b); err != nil {
		return nil, nil, fmt.Errorf("%s: not a spider checkpoint: %v", path, err)
	}
	var h header
	if err := msgpack.Unmarshal(b, &h); err != nil || h.Kind != kind {
		return nil, nil, fmt.Errorf("%s: not a spider checkpoint", path)
	}
	if h.Format != Format {
		return nil, nil, fmt.Errorf("%s: checkpoint format %d, this program reads format %d", path, h.Format, Format)
	}
	var c checkpoint
	if err := msgpack.Unmarshal(b, &c); err != nil {
		return nil, nil, fmt.Errorf("%s: unreadable checkpoint: %v", path, err)
	}
	if _, err := c.Spec.Rules(); err != nil {
		return nil, nil, fmt.Errorf("%s: %v", path, err)
	}
	if err := c.Spec.Check(mustRules(c.Spec)); err != nil {
		return nil, nil, fmt.Errorf("%s: inconsistent specification: %v", path, err)
	}
	if err := c.Spec.validate(); err != nil {
		return nil, nil, fmt.Errorf("%s: %v", path, err)
	}
	dims := c.Spec.Dims()
	if len(c.W) != len(dims) || len(c.B) != len(dims) {
		return nil, nil, fmt.Errorf("%s: %d weight layers, the specification has %d", path, len(c.W), len(dims))
	}
	n := &Net{Spec: c.Spec}
	for i, d := range dims {
		if len(c.W[i]) != d[0]*d[1] || len(c.B[i]) != d[1] {
			return nil, nil, fmt.Errorf("%s: layer %d has %d weights and %d biases, want %d and %d", path, i, len(c.W[i]), len(c.B[i]), d[0]*d[1], d[1])
		}
		for _, v := range slices.Concat(c.W[i], c.B[i]) {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return nil, nil, fmt.Errorf("%s: layer %d holds a weight or bias that is not finite", path, i)
			}
		}
		n.W = append(n.W, c.W[i])
		n.B = append(n.B, c.B[i])
	}
	return n, c.Train, nil
}

func mustRules(s Spec) (r env.Rules) {
	r, _ = s.Rules()
	return r
}

package env

import (
	"fmt"
	"unsafe"
)

// BufferField is one array of a batch's BatchBuffers as BatchLayout places
// it in a block of memory: its name (the key of the server's step reply),
// where it starts, its element type (uint8, bool, int32 or float32) and
// its shape (N, or N x row length). Int16 is the legal lists' type.
type BufferField struct {
	Name   string
	Offset int
	DType  string
	Shape  []int
}

// Bytes returns the field's size in bytes.
func (f BufferField) Bytes() int {
	n := dtypeSize(f.DType)
	for _, d := range f.Shape {
		n *= d
	}
	return n
}

func dtypeSize(dtype string) int {
	switch dtype {
	case "int32", "float32":
		return 4
	case "uint16", "int16":
		return 2
	}
	return 1
}

// Layout is where each of a batch's buffers lies in one block of Size
// bytes: NewBatchIn's, and what a client mapping the block reads.
type Layout struct {
	Fields []BufferField
	Size   int
}

// Field returns the field named name, and whether there is one.
func (l Layout) Field(name string) (BufferField, bool) {
	for _, f := range l.Fields {
		if f.Name == name {
			return f, true
		}
	}
	return BufferField{}, false
}

// LayoutAlign is the alignment of every field of a Layout: a cache line,
// so that two arrays never share one and each starts where numpy and SIMD
// code like it.
const LayoutAlign = 64

// BatchLayout returns the layout of a batch's BatchBuffers in one block:
// the fields in the order of BatchBuffers, each aligned to LayoutAlign,
// the same-step ones (has_final, final_obs, final_score) only under
// SameStep. It panics if o.N is not 1 to MaxBatch, which NewBatch
// refuses too: a programming error (it returned a negative size).
func BatchLayout(r Rules, o BatchOptions) Layout {
	n, obsN := o.N, r.ObsLen()
	if n < 1 || n > MaxBatch {
		panic(fmt.Sprintf("env: BatchLayout of %d games (want 1 to %d)", n, MaxBatch))
	}
	obsType := "uint8"
	if r.encoding == Float32 {
		obsType = "float32"
	}
	var l Layout
	add := func(name, dtype string, shape ...int) {
		f := BufferField{Name: name, Offset: l.Size, DType: dtype, Shape: shape}
		l.Fields = append(l.Fields, f)
		l.Size += (f.Bytes() + LayoutAlign - 1) / LayoutAlign * LayoutAlign
	}
	add("obs", obsType, n, obsN)
	add("masks", "uint8", n, NumActions)
	add("num_legal", "int32", n)
	add("rewards", "float32", n)
	add("terminated", "bool", n)
	add("truncated", "bool", n)
	add("illegal", "bool", n)
	add("score", "int32", n)
	add("runs", "uint8", n)
	add("moves", "int32", n)
	add("episode_return", "float32", n)
	add("episode_length", "int32", n)
	add("episode_won", "bool", n)
	add("episode_runs", "uint8", n)
	if o.Legal {
		add("legal", "int16", n, NumActions)
	}
	if o.Autoreset == SameStep {
		add("has_final", "bool", n)
		add("final_obs", obsType, n, obsN)
		add("final_score", "int32", n)
	}
	return l
}

// newBuffers returns the buffers of a batch, allocated, or with mem carved
// into them as BatchLayout says when mem is not nil.
func newBuffers(r Rules, o BatchOptions, mem []byte) BatchBuffers {
	l := BatchLayout(r, o)
	i := 0
	next := func() BufferField { f := l.Fields[i]; i++; return f }
	var bb BatchBuffers
	if r.encoding == Float32 {
		bb.ObsFloat32 = carve[float32](mem, next())
	} else {
		bb.ObsCompact = carve[uint8](mem, next())
	}
	bb.Masks = carve[uint8](mem, next())
	bb.NumLegal = carve[int32](mem, next())
	bb.Rewards = carve[float32](mem, next())
	bb.Terminated = carve[bool](mem, next())
	bb.Truncated = carve[bool](mem, next())
	bb.Illegal = carve[bool](mem, next())
	bb.Score = carve[int32](mem, next())
	bb.Runs = carve[uint8](mem, next())
	bb.Moves = carve[int32](mem, next())
	bb.EpisodeReturn = carve[float32](mem, next())
	bb.EpisodeLength = carve[int32](mem, next())
	bb.EpisodeWon = carve[bool](mem, next())
	bb.EpisodeRuns = carve[uint8](mem, next())
	if o.Legal {
		bb.Legal = carve[int16](mem, next())
	}
	if o.Autoreset == SameStep {
		bb.HasFinal = carve[bool](mem, next())
		if r.encoding == Float32 {
			bb.FinalObsFloat32 = carve[float32](mem, next())
		} else {
			bb.FinalObsCompact = carve[uint8](mem, next())
		}
		bb.FinalScore = carve[int32](mem, next())
	}
	return bb
}

// carve returns field f as a slice of T: mem's bytes at its offset, or new
// memory when mem is nil.
func carve[T any](mem []byte, f BufferField) []T {
	var zero T
	n := f.Bytes() / int(unsafe.Sizeof(zero))
	if mem == nil {
		return make([]T, n)
	}
	b := mem[f.Offset : f.Offset+f.Bytes()]
	if n == 0 {
		return []T{}
	}
	return unsafe.Slice((*T)(unsafe.Pointer(&b[0])), n)
}

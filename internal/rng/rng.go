package rng

import "math/bits"

// Rand is a SplitMix64 generator. Its zero value is a valid generator seeded
// with 0. Copying a Rand copies its state.
type Rand struct{ s uint64 }

// New returns a generator seeded with seed.
func New(seed uint64) Rand { return Rand{s: seed} }

// Uint64 returns the next 64 random bits.
func (r *Rand) Uint64() uint64 {
	r.s += 0x9e3779b97f4a7c15
	z := r.s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// IntN returns a uniform number in [0, n). It panics if n <= 0, which is a
// programming error.
func (r *Rand) IntN(n int) int {
	if n <= 0 {
		panic("rng: IntN with n <= 0")
	}
	bound := uint64(n)
	hi, lo := bits.Mul64(r.Uint64(), bound)
	if lo < bound {
		threshold := -bound % bound
		for lo < threshold {
			hi, lo = bits.Mul64(r.Uint64(), bound)
		}
	}
	return int(hi)
}

// Float64 returns a uniform number in [0, 1) with 53 random bits, as
// math/rand/v2's Float64 does.
func (r *Rand) Float64() float64 { return float64(r.Uint64()>>11) / (1 << 53) }

// Mix returns a well-mixed 64-bit value from a and b, for deriving a child
// seed (such as game i of a batch) from a parent seed.
func Mix(a, b uint64) uint64 {
	r := New(a ^ (b * 0xd1342543de82ef95))
	r.Uint64()
	return r.Uint64()
}

// State returns the generator's state: New(r.State()) continues r's stream.
func (r *Rand) State() uint64 { return r.s }

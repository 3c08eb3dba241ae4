// Package rng is the project's own small random number generator.
//
// Deals, seeded playouts and golden tests must give the same numbers forever,
// on every Go version, so they cannot rest on math/rand, whose algorithms the
// standard library may change. SplitMix64 is tiny, fast, passes BigCrush and
// is fully specified by its constants; IntN uses Lemire's multiply-and-reject
// method, so the bounded numbers are unbiased.
package rng

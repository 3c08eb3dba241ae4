package nn

// BLAS names the matrix-multiply library this binary was built with:
// "openblas" (build tag openblas, cgo, and libopenblas installed; the
// Makefile picks the tag when the library links) or "gonum" (pure Go,
// always available). Forward passes use it here; the trainer's graph uses
// the same one.
func BLAS() string { return blasName }

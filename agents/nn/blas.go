package nn

// BLAS names the matrix-multiply library this binary was built with:
// "openblas" (build tag openblas, cgo, and libopenblas installed; the
// Makefile picks the tag when the library links) or "gonum" (pure Go,
// always available). Forward passes use it here; the trainer's graph uses
// the same one.
func BLAS() string { return blasName }

// BLASKernel names the CPU kernel the OpenBLAS build multiplies with, as
// OpenBLAS calls it ("Zen", "Haswell", "SkylakeX", ...), or returns "" in
// the pure-Go build. OpenBLAS picks it from the machine's vector units at
// start-up (OPENBLAS_CORETYPE overrides the choice), and kernels round
// differently: the same binary and checkpoint play some deals differently
// on two machines, and a training run follows another path.
func BLASKernel() string { return blasKernel() }

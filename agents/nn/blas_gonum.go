//go:build !openblas || !cgo

package nn

// blasName is what BLAS reports: without the openblas build tag (or
// without cgo) every multiply is gonum's pure-Go BLAS.
const blasName = "gonum"

// BLASCallBytes is the most memory one multiply may hold outside Go's
// heap: none, since gonum's multiplies allocate on it (the OpenBLAS
// build's says why it matters).
const BLASCallBytes = 0

// blasThreads is the number of threads a multiply uses: gonum's float32
// GEMM runs on goroutines, not on threads of its own, for a game at a
// time on the calling one (layer). Only the openblas build has a count to
// check; this one lets the test compile.
func blasThreads() int { return 1 }

// blasKernel is empty: gonum's kernels do not change with the machine's
// vector units the way OpenBLAS's do.
func blasKernel() string { return "" }

//go:build openblas && cgo

package nn

// #cgo LDFLAGS: -lopenblas
// void openblas_set_num_threads(int);
// int openblas_get_num_threads(void);
// char* openblas_get_corename(void);
import "C"

import (
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/netlib/blas/netlib"
)

// blasName is what BLAS reports: this build multiplies through OpenBLAS
// (Debian's libopenblas-dev, through gonum's cgo binding), about ten times
// gonum's pure-Go float32 GEMM on the machines we measured.
const blasName = "openblas"

// init points blas32 at OpenBLAS with one thread per call. Forward
// passes are small (one row a move, or a minibatch shard) and already run
// one per goroutine. With OpenBLAS's own threads as well, a program using
// this package without the trainer (which used to set the count) played
// 100 games of the columns network in 17.6 s of wall time, 13.6 s of it in
// the kernel, instead of 11.4 s, and won 48 of them where spider eval wins
// 46: another thread count sums in another order, which breaks near-ties
// between logits differently.
func init() {
	C.openblas_set_num_threads(1)
	blas32.Use(netlib.Implementation{})
}

// BLASCallBytes is the most memory one multiply may hold outside Go's
// heap while it runs: OpenBLAS packs its operands into a buffer of its
// own, 128 MiB on x86-64 (BUFFER_SIZE), one for each call in flight, and
// keeps it for the next. A columns network's learner of 768-wide
// encodings and 8,192-row minibatches touched 121 MiB of one; Go's
// memory limit does not see it, so a bound on the process must count it.
const BLASCallBytes = 128 << 20

// blasThreads is the number of threads OpenBLAS uses per call.
func blasThreads() int { return int(C.openblas_get_num_threads()) }

// blasKernel is the CPU kernel OpenBLAS chose at start-up for this
// machine (or the one OPENBLAS_CORETYPE forces).
func blasKernel() string { return C.GoString(C.openblas_get_corename()) }

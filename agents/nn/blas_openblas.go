//go:build openblas && cgo

package nn

// #cgo LDFLAGS: -lopenblas
import "C"

import (
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/netlib/blas/netlib"
)

// blasName is what BLAS reports: this build multiplies through OpenBLAS
// (Debian's libopenblas-dev, through gonum's cgo binding), about ten times
// gonum's pure-Go float32 GEMM on the machines we measured.
const blasName = "openblas"

func init() { blas32.Use(netlib.Implementation{}) }

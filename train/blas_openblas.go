//go:build openblas && cgo

package train

// void openblas_set_num_threads(int);
import "C"

import (
	"gonum.org/v1/netlib/blas/netlib"
	G "gorgonia.org/gorgonia"
)

// init points gorgonia (and through it gorgonia's tensors) at OpenBLAS, the
// library nn's forward pass uses in this build, with one thread per call:
// the learner already runs a graph per core (see shards), and OpenBLAS's
// own threads would spin against them.
func init() {
	C.openblas_set_num_threads(1)
	G.Use(netlib.Implementation{})
}

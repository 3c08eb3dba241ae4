//go:build openblas && cgo

package train

import (
	"gonum.org/v1/netlib/blas/netlib"
	G "gorgonia.org/gorgonia"
)

// init points gorgonia (and through it gorgonia's tensors) at OpenBLAS, the
// library nn's forward pass uses in this build. nn's init has already set
// one thread per call (this package imports nn): the learner runs a graph
// per core (see shards), and OpenBLAS's own threads would spin against
// them.
func init() { G.Use(netlib.Implementation{}) }

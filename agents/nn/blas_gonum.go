//go:build !openblas || !cgo

package nn

// blasName is what BLAS reports: without the openblas build tag (or
// without cgo) every multiply is gonum's pure-Go BLAS.
const blasName = "gonum"

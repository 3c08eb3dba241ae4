package nn

import (
	"math"
	"os"
	"strings"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/gonum"

	"github.com/spiderenv/spider/internal/rng"
)

// TestBLASAgreesWithPureGo multiplies the same matrices through the BLAS
// this build uses (blas32, which the openblas build points at OpenBLAS) and
// through gonum's pure-Go implementation directly. The shapes are a layer's
// and a transposed product's, as the forward pass and the trainer use.
func TestBLASAgreesWithPureGo(t *testing.T) {
	t.Logf("BLAS: %s", BLAS())
	if BLAS() != "openblas" && BLAS() != "gonum" {
		t.Fatalf("BLAS() = %q", BLAS())
	}
	g := rng.New(2)
	fill := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(g.IntN(2001)-1000) / 1000
		}
		return v
	}
	const m, k, n = 37, 300, 129
	a, b := fill(m*k), fill(k*n)
	for _, tb := range []blas.Transpose{blas.NoTrans, blas.Trans} {
		ldb := n
		if tb == blas.Trans {
			ldb = k // b read as an n x k matrix
		}
		got, want := fill(m*n), make([]float32, m*n)
		copy(want, got)
		blas32.Implementation().Sgemm(blas.NoTrans, tb, m, n, k, 0.5, a, k, b, ldb, 1, got, n)
		gonum.Implementation{}.Sgemm(blas.NoTrans, tb, m, n, k, 0.5, a, k, b, ldb, 1, want, n)
		for i := range got {
			if math.Abs(float64(got[i]-want[i])) > 1e-3 {
				t.Fatalf("transpose %c, element %d: %v through %s, %v in pure Go", tb, i, got[i], BLAS(), want[i])
			}
		}
	}
}

// TestBLASRunsOneThreadPerCall pins the thread count the openblas build
// sets for every program that multiplies through nn, not only spider's
// trainer: OpenBLAS's default spins a thread per core against goroutines
// that already use every core.
func TestBLASRunsOneThreadPerCall(t *testing.T) {
	if BLAS() != "openblas" {
		t.Skip("pure-Go build: gonum multiplies on the calling goroutine, no threads to count")
	}
	if n := blasThreads(); n != 1 {
		t.Fatalf("%s multiplies on %d threads per call, want 1", BLAS(), n)
	}
}

// TestBLASKernelIsNamed checks that the openblas build names the kernel
// OpenBLAS runs (spider version prints it: results depend on it) and that
// OPENBLAS_CORETYPE, read when the library starts, is what it reports. The
// pure-Go build has no kernel to name.
func TestBLASKernelIsNamed(t *testing.T) {
	k := BLASKernel()
	t.Logf("kernel: %q", k)
	if BLAS() != "openblas" {
		if k != "" {
			t.Fatalf("pure-Go build names kernel %q", k)
		}
		return
	}
	if k == "" || k == "Unknown" {
		t.Fatalf("OpenBLAS names no kernel: %q", k)
	}
	if want := os.Getenv("OPENBLAS_CORETYPE"); want != "" && !strings.EqualFold(k, want) {
		t.Fatalf("OPENBLAS_CORETYPE=%s, kernel %q", want, k)
	}
}

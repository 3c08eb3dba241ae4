// Package layers holds the test that keeps the packages' dependencies
// pointing down: env at the bottom, then what reads only env (its
// conformance checker, the pictures), then agents (with agents/nn), then
// server, train and record (and fitvalue, the dev command that refits
// search's learned value), then the command line. The helpers under
// internal/ sit below everything and import no package of the module.
package layers

import (
	"bufio"
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/spiderenv/spider/"

// tier gives each package its layer; a package may import only packages of
// a lower layer (so agents/nn, which agents imports, sits below it).
var tier = map[string]int{
	"internal/rng": 0, "internal/stats": 0, "internal/atomicfile": 0, "internal/msgpackcheck": 0, "internal/alloccount": 0, "internal/bytesize": 0, "internal/printable": 0, "internal/peercred": 0, "internal/otheruser": 0,
	"env": 1, "env/envtest": 2, "picture": 2,
	"agents/suites": 2, "agents/nn": 3, "agents": 4, "agents/remote": 5,
	"server": 5, "train": 5, "record": 5, "agents/internal/fitvalue": 5,
	"internal/cli": 6,
	"cmd/spider":   7,
}

func TestImportsPointDown(t *testing.T) {
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", module+"...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	seen := 0
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		pkg := strings.TrimPrefix(fields[0], module)
		if pkg == "internal/layers" {
			continue
		}
		mine, ok := tier[pkg]
		if !ok {
			t.Errorf("package %s has no layer: add it to the table", pkg)
			continue
		}
		seen++
		for _, imp := range fields[1:] {
			dep, ours := strings.CutPrefix(imp, module)
			if !ours {
				continue
			}
			if tier[dep] >= mine {
				t.Errorf("%s (layer %d) imports %s (layer %d): dependencies must point down", pkg, mine, dep, tier[dep])
			}
		}
	}
	if seen != len(tier) {
		t.Errorf("go list showed %d of the %d packages in the table", seen, len(tier))
	}
}

package cli

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/pflag"

	"github.com/spiderenv/spider/agents/nn"
)

// Version is the program's version: "dev" unless the build sets it, as in
// go build -ldflags "-X github.com/spiderenv/spider/internal/cli.Version=v1.2.0".
var Version = "dev"

func versionCommand(*pflag.FlagSet) func(context.Context, []string, io.Reader, io.Writer, io.Writer) error {
	return func(_ context.Context, _ []string, _ io.Reader, stdout, _ io.Writer) error {
		info, _ := debug.ReadBuildInfo()
		_, err := fmt.Fprintln(stdout, versionLine(Version, info))
		return err
	}
}

// blasLine is the BLAS's name, with OpenBLAS's CPU kernel where it has one.
func blasLine() string {
	if k := nn.BLASKernel(); k != "" {
		return nn.BLAS() + " (" + k + " kernel)"
	}
	return nn.BLAS()
}

// versionLine is the version command's line: the version, then the
// commit the build came from when Go recorded one (go build in a git
// checkout does, unless -buildvcs=false), the Go toolchain, and the BLAS
// the networks multiply with. A module version ("go install ...@v1.2.0")
// stands in for a Version left at "dev". The BLAS is named because it
// rounds differently: a network's near-tied moves can go the other way,
// so eval reports of nn policies from the two builds differ (the shipped
// two-suit network played 190 of 1,000 deals differently, and each build
// won 10-11 the other lost; docs/training.md). OpenBLAS's kernel is named
// too: it depends on the machine, and it rounds differently as well.
func versionLine(version string, info *debug.BuildInfo) string {
	var about []string
	if info != nil {
		if version == "dev" && info.Main.Version != "" && info.Main.Version != "(devel)" {
			version = info.Main.Version
		}
		rev, modified := "", false
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
		if rev != "" {
			c := "commit " + rev[:min(12, len(rev))]
			if modified {
				c += " with uncommitted changes"
			}
			about = append(about, c)
		}
	}
	about = append(about, runtime.Version()+" "+runtime.GOOS+"/"+runtime.GOARCH, "blas "+blasLine())
	return "spider " + version + " (" + strings.Join(about, ", ") + ")"
}

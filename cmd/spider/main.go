// Command spider plays, benchmarks and serves the Spider Solitaire
// environment. Run "spider help" for its subcommands.
package main

import (
	"os"

	"github.com/spiderenv/spider/internal/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }

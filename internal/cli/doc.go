// Package cli holds the spider command's subcommands. Each one has its own
// pflag.FlagSet that fills an options struct, and a run function that takes
// a context, the options and the output streams, so tests call it directly.
package cli

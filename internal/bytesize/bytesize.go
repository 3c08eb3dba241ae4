// Package bytesize writes sizes in bytes as the commands and the server's
// limit replies show them.
package bytesize

import "fmt"

// Format writes n in the largest binary unit it fills, e.g. 51.9GiB, with
// one decimal unless the unit divides it, so that a few KiB never read
// as 0MiB.
func Format(n int64) string {
	for _, u := range []struct {
		name string
		size int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.size {
			if n%u.size == 0 {
				return fmt.Sprintf("%d%s", n/u.size, u.name)
			}
			return fmt.Sprintf("%.1f%s", float64(n)/float64(u.size), u.name)
		}
	}
	return fmt.Sprintf("%dB", n)
}

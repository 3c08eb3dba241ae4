package cli

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/spiderenv/spider/internal/bytesize"
)

// byteSize is a flag of bytes that takes a unit: 4GiB, 512MiB, 2G (GiB),
// 1.5e9 or plain bytes.
type byteSize int64

var byteUnits = []struct {
	suffix string
	size   float64
}{
	{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"tib", 1 << 40},
	{"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9}, {"tb", 1e12},
	{"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30}, {"t", 1 << 40},
	{"b", 1},
}

func (b *byteSize) Set(s string) error {
	text := strings.ToLower(strings.TrimSpace(s))
	scale := 1.0
	for _, u := range byteUnits {
		if num, ok := strings.CutSuffix(text, u.suffix); ok {
			text, scale = strings.TrimSpace(num), u.size
			break
		}
	}
	v, err := strconv.ParseFloat(text, 64)
	if err != nil || !(v >= 0) || v*scale >= math.MaxInt64 {
		return fmt.Errorf("%q is not a size in bytes (e.g. 4GiB, 512MiB, 1e9)", s)
	}
	*b = byteSize(v * scale)
	return nil
}

func (b byteSize) String() string { return bytesize.Format(int64(b)) }

func (*byteSize) Type() string { return "size" }

// intBytes is a byteSize flag that sets an int (a server.Config field), so
// that every flag of bytes takes the same units.
type intBytes struct{ v *int }

func (b intBytes) Set(s string) error {
	var n byteSize
	if err := n.Set(s); err != nil {
		return err
	}
	if int64(n) > math.MaxInt {
		return fmt.Errorf("%q is over %s, the most a %d-bit build can count", s, bytesize.Format(math.MaxInt), strconv.IntSize)
	}
	*b.v = int(n)
	return nil
}

func (b intBytes) String() string {
	if b.v == nil {
		return "0"
	}
	return bytesize.Format(int64(*b.v))
}

func (intBytes) Type() string { return "size" }

// meminfo is where the machine's memory is read; a variable so tests can
// point it elsewhere.
var meminfo = "/proc/meminfo"

// machineMemory returns the memory /proc/meminfo reports: MemAvailable
// (what can be allocated without swapping) and MemTotal. ok is false where
// it cannot be read (not Linux).
func machineMemory() (available, total int64, ok bool) {
	f, err := os.Open(meminfo)
	if err != nil {
		return 0, 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		key, rest, found := strings.Cut(sc.Text(), ":")
		if !found {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		if err != nil {
			continue
		}
		switch key {
		case "MemAvailable":
			available = kb << 10
		case "MemTotal":
			total = kb << 10
		}
	}
	return available, total, available > 0 && total > 0
}

// checkMemory refuses, with a usage error that says how much is needed, a
// configuration (what) that needs more memory than limit (the command's
// --max-memory) or, when limit is 0, than the machine has available: it
// would otherwise die at its first allocation with Go's out-of-memory
// trace, or push the machine into swap.
func checkMemory(need int64, limit byteSize, what, lower string) error {
	return checkMemoryOf(need, limit, "; --max-memory sets another limit", what, lower)
}

// checkAvailable is checkMemory for what no --max-memory bounds (demo's
// undo history, eval's searches, a checkpoint's imitation data): the
// machine's available memory is the limit.
func checkAvailable(need int64, what, lower string) error {
	return checkMemoryOf(need, 0, "", what, lower)
}

// checkMemoryOf is checkMemory and checkAvailable: other follows
// MemAvailable in the message when the machine's memory is the limit.
func checkMemoryOf(need int64, limit byteSize, other, what, lower string) error {
	have, from := int64(limit), "--max-memory"
	if have == 0 {
		avail, _, ok := machineMemory()
		if !ok {
			return nil
		}
		have, from = avail, "available on this machine (MemAvailable in /proc/meminfo"+other+")"
	}
	if have > math.MaxInt { // a 32-bit build: no process of it holds more than an int counts
		have, from = math.MaxInt, fmt.Sprintf("most a %d-bit build can hold", strconv.IntSize)
	}
	if need <= have {
		return nil
	}
	return usageError{fmt.Errorf("%s needs %s of memory, over the %s %s: %s",
		what, bytesize.Format(need), bytesize.Format(have), from, lower)}
}

// limitToAvailable sets Go's memory limit to the memory the machine has
// available, unless a lower one is set, and returns what restores the
// old limit. A command that has checked what it holds against the
// memory available then stays near it: the collector runs harder as the
// heap nears the limit, rather than letting garbage double the heap.
func limitToAvailable() (restore func()) {
	avail, _, ok := machineMemory()
	if !ok || avail >= debug.SetMemoryLimit(-1) {
		return func() {}
	}
	old := debug.SetMemoryLimit(avail)
	return func() { debug.SetMemoryLimit(old) }
}

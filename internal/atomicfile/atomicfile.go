// Package atomicfile writes files through a temporary name and a rename,
// so a crash never leaves half a file under the real name. A process
// killed between the two leaves its temporary behind; the next Write into
// that folder removes it once its writer is known to be gone.
package atomicfile

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// StaleAge is how long a temporary whose writer cannot be checked (one
// written on another host) must have gone unmodified before Write
// removes it. Writing even gigabytes takes seconds, so an hour-old
// temporary is no longer being written.
const StaleAge = time.Hour

// Write writes data to path: first to a temporary file in the same folder,
// synced, then renamed over path, and the folder synced. A new file is
// readable by all (0644), as os.WriteFile would make it under the usual
// umask; a file it replaces keeps its permission bits. What is at path
// is replaced: a symbolic link
// by the file (a caller that means the link's target resolves it first,
// where it can check that folder), and a hard link is parted from the old
// file (a rename cannot keep it). The temporary is named
// ".NAME.tmp-HOST-PID-RANDOM" (HOST a hash of the host name, PID this
// process's id, NAME cut short so the whole fits a file name's 255
// bytes); the first Write into a folder in a process removes the
// temporaries of that pattern that processes killed while writing left
// there (see removeStale), and RemoveInFlight removes this process's.
func Write(path string, data []byte) error {
	mode := os.FileMode(0o644)
	if fi, err := os.Lstat(path); err == nil && fi.Mode().IsRegular() {
		mode = fi.Mode().Perm()
	}
	dir := filepath.Dir(path)
	cleanOnce(dir)
	// A temporary is made and counted in flight under one lock, which
	// RemoveInFlight keeps: it sees every temporary it must remove, and
	// none is made after it.
	startMu.Lock()
	tmp, err := os.CreateTemp(dir, tempPattern(filepath.Base(path)))
	if err == nil {
		inFlight.Store(tmp.Name(), struct{}{})
	}
	startMu.Unlock()
	if err != nil {
		return err
	}
	defer func() {
		os.Remove(tmp.Name()) // fails harmlessly once renamed
		inFlight.Delete(tmp.Name())
	}()
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if beforeRename != nil {
		beforeRename(tmp.Name())
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	// The rename lives in the folder: until the folder is synced, a crash
	// of the machine may forget it, leaving the old file (or none) under
	// path after Write said the new one was there. Best effort: some
	// systems cannot sync a folder (Windows, some network file systems),
	// and the file is already in place either way.
	syncDir(dir)
	return nil
}

// syncDir syncs the folder dir, ignoring errors; a variable so that
// tests can see it called.
var syncDir = func(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

// maxName is the longest file name (in bytes) the usual file systems
// take (NAME_MAX).
const maxName = 255

// tempPattern is os.CreateTemp's pattern of a temporary for the file
// named base: base cut short (at a character's start) where the whole
// name, with the suffix and CreateTemp's random digits (at most 10),
// would pass maxName, so that any name that fits can be written.
func tempPattern(base string) string {
	suffix := ".tmp-" + hostTag + "-" + strconv.Itoa(os.Getpid()) + "-"
	room := maxName - len(".") - len(suffix) - 10
	if len(base) > room {
		// At a character's start, if one is near: a name need not be
		// UTF-8, and the name must keep some of itself.
		cut := room
		for cut > room-utf8.UTFMax+1 && !utf8.RuneStart(base[cut]) {
			cut--
		}
		base = base[:cut]
	}
	return "." + base + suffix + "*"
}

// inFlight holds the temporaries this process is writing.
var inFlight sync.Map

// startMu is held while a Write makes its temporary, and by
// RemoveInFlight until its resume.
var startMu sync.Mutex

// RemoveInFlight removes the temporaries this process is writing: a
// command that exits at once (a second Ctrl-C) calls it so as to leave
// no part of a file behind. A Write under way then fails, or leaves
// nothing (its file is gone), and the file it replaces stays whole. A
// Write that starts after it waits, for the exit, until resume is called
// (by a test; the process exits instead).
func RemoveInFlight() (resume func()) {
	startMu.Lock()
	inFlight.Range(func(name, _ any) bool {
		os.Remove(name.(string))
		return true
	})
	var once sync.Once
	return func() { once.Do(startMu.Unlock) }
}

// beforeRename, if set (by tests), runs between writing the temporary and
// renaming it: where a killed process leaves its temporary behind.
var beforeRename func(tmp string)

// hostTag tells this host's temporaries from those another host writes
// into a shared folder, whose process ids mean nothing here: eight hex
// digits of a hash of the host name.
var hostTag = func() string {
	name, _ := os.Hostname()
	h := uint32(2166136261) // FNV-1a
	for i := 0; i < len(name); i++ {
		h = (h ^ uint32(name[i])) * 16777619
	}
	return fmt.Sprintf("%08x", h)
}()

// cleaned holds the folders this process has already cleaned: once per
// folder is enough for what earlier processes left, and reading a folder of
// thousands of files (replay --frames) at every Write would be slow.
var cleaned sync.Map

// cleanOnce runs removeStale on dir the first time this process writes
// into it.
func cleanOnce(dir string) {
	key := dir
	if abs, err := filepath.Abs(dir); err == nil {
		key = abs
	}
	if _, done := cleaned.LoadOrStore(key, true); !done {
		removeStale(dir, time.Now())
	}
}

// removeStale removes from dir the temporaries of this package's pattern
// whose writers are gone: those of this host whose process no longer
// exists, and those it cannot check (another host's, or unnamed by
// process) once unmodified for StaleAge. A temporary of a live process is
// never removed. It is best effort: a temporary it cannot remove or read
// stays, and Write goes on.
func removeStale(dir string, now time.Time) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		name := e.Name()
		if !e.Type().IsRegular() || !strings.HasPrefix(name, ".") {
			continue
		}
		i := strings.LastIndex(name, ".tmp-")
		if i <= 1 {
			continue
		}
		host, pid, ok := parseSuffix(name[i+len(".tmp-"):])
		if !ok {
			continue
		}
		// A process id outside 1 to 2^31-1 is no process's: kill(2)
		// would read a larger one as negative, a process group.
		if host == hostTag && pid > 0 && pid <= math.MaxInt32 {
			if alive, known := processAlive(int(pid)); known {
				if !alive {
					os.Remove(filepath.Join(dir, name))
				}
				continue
			}
		}
		if info, err := e.Info(); err == nil && now.Sub(info.ModTime()) > StaleAge {
			os.Remove(filepath.Join(dir, name))
		}
	}
}

// parseSuffix reads what follows ".tmp-" in a temporary's name:
// "HOST-PID-RANDOM" as Write makes it. ok is false for any other name,
// "RANDOM" alone as earlier versions made theirs among them: a user's
// own ".zshrc.tmp-20240101" has that form, and removing it would lose
// their file, where an old temporary left behind costs only its space.
// pid is an int64 so that a number too large for a 32-bit int is still
// read as ours, and left to the age check as any number no process has.
func parseSuffix(s string) (host string, pid int64, ok bool) {
	parts := strings.Split(s, "-")
	switch {
	case len(parts) == 3 && len(parts[0]) == 8 && hex(parts[0]) && digits(parts[1]) && digits(parts[2]):
		pid, err := strconv.ParseInt(parts[1], 10, 64)
		return parts[0], pid, err == nil
	}
	return "", 0, false
}

func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

func hex(s string) bool {
	for i := 0; i < len(s); i++ {
		if !(s[i] >= '0' && s[i] <= '9' || s[i] >= 'a' && s[i] <= 'f') {
			return false
		}
	}
	return true
}

// Package atomicfile writes files through a temporary name and a rename,
// so a crash never leaves half a file under the real name.
package atomicfile

import (
	"os"
	"path/filepath"
)

// Write writes data to path: first to a temporary file in the same folder,
// synced, then renamed over path. The file is readable by all (0644), as
// os.WriteFile would make it under the usual umask.
func Write(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // fails harmlessly once renamed
	if err := tmp.Chmod(0o644); err != nil {
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
	return os.Rename(tmp.Name(), path)
}

// Package durable writes files so that a crash at any point leaves either the old content or the
// new one, never a part, and the change survives a power loss once the call returns: the
// write-to-temp-file, fsync, rename, fsync-the-directory sequence the file-based checkpoint and HA
// stores share. Temp files are named "." + the target's base name + ".tmp-" + a random suffix in
// the target's directory, so a reader that lists the directory recognizes (and skips) the one a
// crash left behind with IsTemp.
package durable

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// tempMarker is what every temp file's name holds after the target's base name.
const tempMarker = ".tmp-"

// IsTemp reports whether name (a base name, as os.ReadDir gives it) is a temp file WriteFile or
// CreateExclusive made, possibly left half-written by a crash.
func IsTemp(name string) bool {
	return strings.HasPrefix(name, ".") && strings.Contains(name, tempMarker)
}

// WriteFile writes data to path atomically and durably: temp file in the same directory, fsync,
// rename over path, fsync the directory. A reader sees the old content or the new, never a part.
// Errors: the I/O error of the step that failed (the temp file is removed then).
func WriteFile(path string, data []byte) error {
	tmp, err := writeTemp(path, data)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return SyncDir(filepath.Dir(path))
}

// CreateExclusive writes data to path atomically and durably like WriteFile, but only if path
// does not exist: the temp file is hard-linked to path, which fails (with an error matching
// fs.ErrExist) when path exists, also when another process created it a moment before.
func CreateExclusive(path string, data []byte) error {
	tmp, err := writeTemp(path, data)
	if err != nil {
		return err
	}
	err = os.Link(tmp, path)
	if rerr := os.Remove(tmp); err == nil {
		err = rerr
	}
	if err != nil {
		return err
	}
	return SyncDir(filepath.Dir(path))
}

// writeTemp writes data to a new temp file beside path and fsyncs it; it returns the temp file's
// path.
func writeTemp(path string, data []byte) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+tempMarker+"*")
	if err != nil {
		return "", err
	}
	tmp := f.Name()
	if _, err = f.Write(data); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(tmp)
		return "", err
	}
	return tmp, nil
}

// Rename renames from to to and fsyncs their directory (both must be in the same one), so the
// rename survives a crash once Rename returns.
func Rename(from, to string) error {
	if err := os.Rename(from, to); err != nil {
		return err
	}
	return SyncDir(filepath.Dir(to))
}

// Remove removes path and fsyncs its directory. A missing path is not an error (nothing is
// synced then).
func Remove(path string) error {
	if err := os.Remove(path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	return SyncDir(filepath.Dir(path))
}

// SyncDir fsyncs the directory dir, making the creation, renaming and removal of its entries
// durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

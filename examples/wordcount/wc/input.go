package wc

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
)

// InputFile is one input file and its size in bytes when it was listed.
type InputFile struct {
	Path string `json:"path"`
	Size int64  `json:"size"`
}

// DefaultInputDir returns the default input: the src directory of the Go installation,
// runtime.GOROOT() if that is set and has a src directory, else the GOROOT `go env GOROOT` prints.
func DefaultInputDir() (string, error) {
	//lint:ignore SA1019 the root the binary was built with is what we want when it still exists.
	if root := runtime.GOROOT(); root != "" {
		if dir := filepath.Join(root, "src"); isDir(dir) {
			return dir, nil
		}
	}
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		return "", fmt.Errorf("wc: finding the default input: go env GOROOT: %w", err)
	}
	root := strings.TrimSpace(string(out))
	if root == "" {
		return "", errors.New("wc: finding the default input: go env GOROOT printed nothing")
	}
	dir := filepath.Join(root, "src")
	if !isDir(dir) {
		return "", fmt.Errorf("wc: finding the default input: %s is not a directory", dir)
	}
	return dir, nil
}

func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// ListInputFiles lists every regular file whose name ends in ".go" below dir, recursively, sorted
// by path (byte order). Paths start with dir. Symbolic links and other non-regular files below dir
// are skipped; dir itself may be a symbolic link to a directory (Debian's /usr/lib/go/src is one).
func ListInputFiles(dir string) ([]InputFile, error) {
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, fmt.Errorf("wc: listing input files: %w", err)
	}
	if !isDir(root) {
		return nil, fmt.Errorf("wc: listing input files: %s is not a directory", dir)
	}
	var files []InputFile
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() || !strings.HasSuffix(d.Name(), ".go") {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		files = append(files, InputFile{Path: filepath.Join(dir, rel), Size: info.Size()})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("wc: listing input files below %s: %w", dir, err)
	}
	slices.SortFunc(files, func(a, b InputFile) int { return strings.Compare(a.Path, b.Path) })
	return files, nil
}

// SequentialCount is the plain loop the job is checked against: read each file in turn, tokenize
// it and count its words.
func SequentialCount(files []InputFile) (map[string]int, error) {
	var c Counter
	var buf []byte
	for _, f := range files {
		var err error
		if buf, err = readFile(f.Path, buf); err != nil {
			return nil, err
		}
		c.AddText(buf)
	}
	return c.Map(), nil
}

// readFile reads the whole file into buf, reusing its memory, and returns the filled slice.
func readFile(path string, buf []byte) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return buf[:0], fmt.Errorf("wc: %w", err)
	}
	defer f.Close()
	buf = buf[:0]
	if fi, err := f.Stat(); err == nil && fi.Size() > 0 {
		buf = slices.Grow(buf, int(fi.Size())+1) // +1 sees EOF without growing again
	}
	for {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, 4096)
		}
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, fmt.Errorf("wc: reading %s: %w", path, err)
		}
	}
}

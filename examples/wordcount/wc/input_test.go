package wc

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
}

func TestListInputFiles(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "b.go"), "bb")
	writeFile(t, filepath.Join(dir, "a.go"), "a")
	writeFile(t, filepath.Join(dir, "a", "z.go"), "zzz")
	writeFile(t, filepath.Join(dir, "a.b", "c.go"), "cccc")      // sorts before a/z.go: '.' < '/'
	writeFile(t, filepath.Join(dir, "sub", "deep", "x.go"), "")  // empty files count
	writeFile(t, filepath.Join(dir, "sub", ".hidden.go"), "h")   // hidden files too
	writeFile(t, filepath.Join(dir, "sub", "x.go.txt"), "no")    // wrong suffix
	writeFile(t, filepath.Join(dir, "sub", "README"), "no")      // no suffix
	writeFile(t, filepath.Join(dir, "sub", "y.GO"), "no")        // suffix is case-sensitive
	writeFile(t, filepath.Join(dir, "dir.go", "inner.go"), "ii") // a directory named *.go is walked, not listed
	require.NoError(t, os.Symlink(filepath.Join(dir, "b.go"), filepath.Join(dir, "link.go")))
	require.NoError(t, os.Symlink(filepath.Join(dir, "sub"), filepath.Join(dir, "linkdir")))

	want := []InputFile{
		{filepath.Join(dir, "a.b", "c.go"), 4},
		{filepath.Join(dir, "a.go"), 1},
		{filepath.Join(dir, "a", "z.go"), 3},
		{filepath.Join(dir, "b.go"), 2},
		{filepath.Join(dir, "dir.go", "inner.go"), 2},
		{filepath.Join(dir, "sub", ".hidden.go"), 1},
		{filepath.Join(dir, "sub", "deep", "x.go"), 0},
	}
	got, err := ListInputFiles(dir)
	require.NoError(t, err)
	assert.Equal(t, want, got)

	// The input directory itself may be a symbolic link; the paths keep its name.
	link := filepath.Join(t.TempDir(), "src")
	require.NoError(t, os.Symlink(dir, link))
	got, err = ListInputFiles(link)
	require.NoError(t, err)
	for i := range want {
		want[i].Path = filepath.Join(link, strings.TrimPrefix(want[i].Path, dir))
	}
	assert.Equal(t, want, got)

	_, err = ListInputFiles(filepath.Join(dir, "missing"))
	assert.ErrorIs(t, err, os.ErrNotExist)
	_, err = ListInputFiles(filepath.Join(dir, "a.go"))
	assert.ErrorContains(t, err, "is not a directory")
}

func TestDefaultInputDir(t *testing.T) {
	dir, err := DefaultInputDir()
	require.NoError(t, err)
	assert.Equal(t, "src", filepath.Base(dir))
	fi, err := os.Stat(filepath.Join(dir, "fmt", "print.go"))
	require.NoError(t, err)
	assert.True(t, fi.Mode().IsRegular())
}

func TestSequentialCount(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.go"), "package a // héllo héllo\nfunc F() {}")
	writeFile(t, filepath.Join(dir, "b", "b.go"), "package b\xff日本語 F")
	files, err := ListInputFiles(dir)
	require.NoError(t, err)
	got, err := SequentialCount(files)
	require.NoError(t, err)
	assert.Equal(t, map[string]int{"package": 2, "a": 1, "b": 1, "héllo": 2, "func": 1, "F": 2, "日本語": 1}, got)

	_, err = SequentialCount(append(files, InputFile{Path: filepath.Join(dir, "gone.go")}))
	assert.ErrorIs(t, err, os.ErrNotExist)

	got, err = SequentialCount(nil)
	require.NoError(t, err)
	assert.Empty(t, got)
}

func TestReadFileReusesBuffer(t *testing.T) {
	dir := t.TempDir()
	big := strings.Repeat("x", 10000)
	writeFile(t, filepath.Join(dir, "big"), big)
	writeFile(t, filepath.Join(dir, "small"), "abc")
	buf, err := readFile(filepath.Join(dir, "big"), nil)
	require.NoError(t, err)
	assert.Equal(t, big, string(buf))
	capBefore := cap(buf)
	buf, err = readFile(filepath.Join(dir, "small"), buf)
	require.NoError(t, err)
	assert.Equal(t, "abc", string(buf))
	assert.Equal(t, capBefore, cap(buf))
}

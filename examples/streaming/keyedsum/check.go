package keyedsum

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// MaxProblems is how many problems a CheckError lists; it counts the others.
const MaxProblems = 20

// CheckError is Check's verdict on output that is not exactly-once: the first MaxProblems
// problems in reading order and how many more there were, then (always) the missing records.
type CheckError struct {
	Problems []string
	More     int
}

func (e *CheckError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "keyedsum: the output is not exactly-once: %d problems", len(e.Problems)+e.More)
	for _, p := range e.Problems {
		b.WriteString("\n  ")
		b.WriteString(p)
	}
	if e.More > 0 {
		fmt.Fprintf(&b, "\n  … and %d more", e.More)
	}
	return b.String()
}

// Summary is what Check read.
type Summary struct {
	// Runs and Files are the run directories and the part files read.
	Runs, Files int
	// Lines is the number of lines read; Keys the number of distinct keys in them.
	Lines int64
	Keys  int
}

// Check verifies the sink's output for records 1..records with keys i mod keys: the part files
// (part-<n>, in increasing n; other names are ignored) of each directory of runs, one run after
// the other. It holds exactly-once when every line is "key\tsum\ti" with 1 ≤ i ≤ records and
// key = i mod keys; every i appears exactly once over all runs; within one run each key's lines
// are in one part file; and each key's sums, read in that order, are the running totals of its i
// values (the first line of a key has sum = i; each later one, the previous sum + i).
//
// It returns what it read, and a *CheckError listing the problems when the output is not
// exactly-once; another error when a run directory cannot be read. After a wrong sum it goes on
// from the sum the file holds, so one lost or repeated record is one problem, not a cascade.
func Check(records, keys int64, runs ...string) (Summary, error) {
	var sum Summary
	if records < 1 || keys < 1 {
		return sum, fmt.Errorf("keyedsum: check: records %d and keys %d must be at least 1", records, keys)
	}
	c := &checker{records: records, keys: keys, seen: make([]uint64, (records+64)/64), last: make(map[int64]int64)}
	for r, dir := range runs {
		files, err := partFiles(dir)
		if err != nil {
			return sum, err
		}
		sum.Runs++
		owner := make(map[int64]string) // key → the part file of this run that holds it
		for _, f := range files {
			sum.Files++
			if err := c.readFile(f, r, owner); err != nil {
				return sum, err
			}
		}
	}
	var missing []string
	nMissing := 0
	for i := int64(1); i <= records; i++ {
		if c.seen[i/64]&(1<<(i%64)) == 0 {
			if nMissing < 10 {
				missing = append(missing, strconv.FormatInt(i, 10))
			}
			nMissing++
		}
	}
	if nMissing > 0 {
		list := strings.Join(missing, ", ")
		if nMissing > len(missing) {
			list += ", …"
		}
		// Always listed, past MaxProblems too: it is the verdict's summary.
		c.problems = append(c.problems, fmt.Sprintf("%d of the records 1..%d are missing: %s", nMissing, records, list))
	}
	sum.Lines, sum.Keys = c.lines, len(c.last)
	if len(c.problems) > 0 {
		return sum, &CheckError{Problems: c.problems, More: c.more}
	}
	return sum, nil
}

type checker struct {
	records, keys int64
	seen          []uint64        // bit i: record i was read
	last          map[int64]int64 // key → its last sum read
	lines         int64
	problems      []string
	more          int
}

func (c *checker) problem(format string, args ...any) {
	if len(c.problems) < MaxProblems {
		c.problems = append(c.problems, fmt.Sprintf(format, args...))
		return
	}
	c.more++
}

// partFiles lists dir's part-<n> files in increasing n.
func partFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("keyedsum: check: %w", err)
	}
	type part struct {
		n    int
		path string
	}
	var parts []part
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), "part-")
		if !ok || !e.Type().IsRegular() {
			continue
		}
		n, err := strconv.Atoi(rest)
		if err != nil || n < 0 || strconv.Itoa(n) != rest {
			continue
		}
		parts = append(parts, part{n, filepath.Join(dir, e.Name())})
	}
	slices.SortFunc(parts, func(a, b part) int { return a.n - b.n })
	out := make([]string, len(parts))
	for i, p := range parts {
		out[i] = p.path
	}
	return out, nil
}

func (c *checker) readFile(path string, run int, owner map[int64]string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("keyedsum: check: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	warned := make(map[int64]bool) // keys already reported as shared with another file
	for line := 1; sc.Scan(); line++ {
		c.lines++
		key, s, i, ok := parseLine(sc.Bytes())
		if !ok {
			c.problem("%s:%d: malformed line %q (want key<TAB>sum<TAB>i)", path, line, sc.Text())
			continue
		}
		if i < 1 || i > c.records {
			c.problem("%s:%d: record %d is outside 1..%d", path, line, i, c.records)
			continue
		}
		if want := KeyOf(i, c.keys); key != want {
			c.problem("%s:%d: record %d has key %d, want %d (i mod %d)", path, line, i, key, want, c.keys)
			continue
		}
		if bit := uint64(1) << (i % 64); c.seen[i/64]&bit != 0 {
			c.problem("%s:%d: record %d appears again", path, line, i)
		} else {
			c.seen[i/64] |= bit
		}
		if o, ok := owner[key]; !ok {
			owner[key] = path
		} else if o != path && !warned[key] {
			warned[key] = true
			c.problem("%s:%d: key %d is also in %s of run %d: a key's lines must be in one part file per run", path, line, key, o, run+1)
		}
		prev := c.last[key]
		if want := prev + i; s != want {
			c.problem("%s:%d: key %d: sum %d, want %d (the previous sum %d + %d)", path, line, key, s, want, prev, i)
		}
		c.last[key] = s
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("keyedsum: check: %s: %w", path, err)
	}
	return nil
}

// parseLine reads "key\tsum\ti".
func parseLine(b []byte) (key, sum, i int64, ok bool) {
	var f [3]int64
	for k := range f {
		var field []byte
		if k < 2 {
			var found bool
			field, b, found = bytes.Cut(b, []byte{'\t'})
			if !found {
				return 0, 0, 0, false
			}
		} else {
			field = b
		}
		v, err := strconv.ParseInt(string(field), 10, 64)
		if err != nil {
			return 0, 0, 0, false
		}
		f[k] = v
	}
	return f[0], f[1], f[2], true
}

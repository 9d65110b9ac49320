package checkpoint

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/internal/durable"
)

const metadataPrefix, metadataSuffix = "checkpoint-", ".json"

// FileCompletedCheckpointStore is a durable CompletedCheckpointStore in one directory: one
// metadata file per retained snapshot, "checkpoint-<20-digit id>.json", each written atomically
// (temp file, fsync, rename, fsync directory) before Add returns. Open recovers the snapshots the
// directory holds. A subsumed checkpoint's metadata is removed and then its state files, except
// files a retained snapshot still lists; a subsumed savepoint's files are never deleted. Flink:
// DefaultCompletedCheckpointStore over a file-system state handle store.
type FileCompletedCheckpointStore struct {
	retained
	dir string
}

// OpenFileCompletedCheckpointStore opens (creating it if needed) the store in dir, keeping
// maxRetained snapshots (0 means DefaultNumRetained). It recovers every metadata file in dir,
// oldest first; if more than maxRetained are there, it keeps them all until the next Add
// subsumes the surplus. Errors: ErrInvalidConfig, the I/O error, or a metadata file that does not
// decode (named in the error; nothing is deleted).
func OpenFileCompletedCheckpointStore(dir string, maxRetained int) (*FileCompletedCheckpointStore, error) {
	n, err := resolveRetained(maxRetained)
	if err != nil {
		return nil, err
	}
	if dir == "" {
		return nil, errorsJoin(ErrInvalidConfig, "checkpoint store directory is empty")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	s := &FileCompletedCheckpointStore{dir: dir, retained: retained{maxRetained: n}}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasPrefix(name, metadataPrefix) || !strings.HasSuffix(name, metadataSuffix) {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		var cp CompletedCheckpoint
		if err := json.Unmarshal(data, &cp); err != nil {
			return nil, fmt.Errorf("checkpoint: metadata file %s: %w", filepath.Join(dir, name), err)
		}
		s.cps = append(s.cps, cp)
	}
	slices.SortFunc(s.cps, func(a, b CompletedCheckpoint) int { return int(a.CheckpointID - b.CheckpointID) })
	return s, nil
}

func (s *FileCompletedCheckpointStore) metadataPath(id CheckpointID) string {
	return filepath.Join(s.dir, fmt.Sprintf("%s%020d%s", metadataPrefix, id, metadataSuffix))
}

// Add implements CompletedCheckpointStore: the metadata is durable before Add returns.
func (s *FileCompletedCheckpointStore) Add(cp CompletedCheckpoint) ([]CompletedCheckpoint, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	subsumed, err := s.add(cp, func(cp CompletedCheckpoint) error {
		data, err := json.Marshal(cp)
		if err != nil {
			return err
		}
		if err := durable.WriteFile(s.metadataPath(cp.CheckpointID), data); err != nil {
			return fmt.Errorf("checkpoint: storing checkpoint %d: %w", cp.CheckpointID, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, old := range subsumed {
		s.discard(old, old.Properties.DiscardOnSubsumed())
	}
	return subsumed, nil
}

// discard removes cp's metadata and, if withState, the files no retained snapshot lists. Best
// effort: a file that cannot be removed stays (it is garbage, never a loss).
func (s *FileCompletedCheckpointStore) discard(cp CompletedCheckpoint, withState bool) {
	if err := os.Remove(s.metadataPath(cp.CheckpointID)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return // metadata still there: keep the state it points to
	}
	if !withState {
		return
	}
	referenced := map[string]bool{}
	for _, kept := range s.cps {
		for _, f := range kept.referencedFiles() {
			referenced[f] = true
		}
	}
	for _, f := range cp.referencedFiles() {
		if !referenced[f] {
			_ = os.Remove(f)
		}
	}
}

// Shutdown implements CompletedCheckpointStore.
func (s *FileCompletedCheckpointStore) Shutdown(discard bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.shutdown = true
	if !discard {
		return nil
	}
	all := s.cps
	s.cps = nil
	for _, cp := range all {
		s.discard(cp, cp.Properties.DiscardOnSubsumed())
	}
	return nil
}

// FileCheckpointIDCounter is a durable CheckpointIDCounter: the next ID in one file, rewritten
// atomically (temp file, fsync, rename, fsync directory) before GetAndIncrement returns, so a
// counter opened over the same file later, in this process or another, never hands out an ID
// again. Flink: ZooKeeperCheckpointIDCounter / KubernetesCheckpointIDCounter, on a file.
type FileCheckpointIDCounter struct {
	idCounter
}

// OpenFileCheckpointIDCounter opens (creating it with InitialCheckpointID if missing) the counter
// file at path. Errors: ErrInvalidConfig for an empty path, the I/O error, or a file that does
// not hold a positive number (named in the error).
func OpenFileCheckpointIDCounter(path string) (*FileCheckpointIDCounter, error) {
	if path == "" {
		return nil, errorsJoin(ErrInvalidConfig, "checkpoint ID counter path is empty")
	}
	c := &FileCheckpointIDCounter{idCounter{path: path, next: InitialCheckpointID}}
	c.persist = c.write
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, err
		}
		if err := c.write(InitialCheckpointID); err != nil {
			return nil, err
		}
		return c, nil
	case err != nil:
		return nil, err
	}
	n, perr := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if perr != nil || n <= 0 {
		return nil, fmt.Errorf("checkpoint: ID counter file %s holds %q, not a positive number", path, jobgraph.Truncate(string(data)))
	}
	c.next = CheckpointID(n)
	return c, nil
}

func (c *FileCheckpointIDCounter) write(next CheckpointID) error {
	return durable.WriteFile(c.path, []byte(strconv.FormatInt(int64(next), 10)+"\n"))
}

// Shutdown implements CheckpointIDCounter; discard removes the file.
func (c *FileCheckpointIDCounter) Shutdown(discard bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.shutdown = true
	if discard {
		if err := os.Remove(c.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

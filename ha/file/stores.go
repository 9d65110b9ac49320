package file

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/ha"
	"github.com/jobgraph/jobgraph/internal/durable"
)

const (
	jsonSuffix  = ".json"
	dirtySuffix = "_DIRTY" + jsonSuffix // Flink: FileSystemJobResultStore.DIRTY_FILE_EXTENSION
)

// listJobFiles returns the JobIDs of the files in dir named "<jobID>"+suffix, ascending; temp
// files and any other name are skipped.
func listJobFiles(dir, suffix string) ([]jobgraph.JobID, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var ids []jobgraph.JobID
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || durable.IsTemp(name) || !strings.HasSuffix(name, suffix) {
			continue
		}
		id, err := jobgraph.ParseJobID(strings.TrimSuffix(name, suffix))
		if err != nil {
			continue // not an entry of this kind (a dirty result when listing clean ones, say)
		}
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b jobgraph.JobID) int { return slices.Compare(a[:], b[:]) })
	return ids, nil
}

// planStore is the ExecutionPlanStore in Dir/plans: one "<jobID>.json" per job, the JobGraph's
// JSON form (jobgraph.Decode reads it).
type planStore struct {
	s   *Services
	dir string
}

func (p *planStore) path(id jobgraph.JobID) string {
	return filepath.Join(p.dir, id.String()+jsonSuffix)
}

// Put implements ha.ExecutionPlanStore: the plan is durable when Put returns. Errors: a nil
// graph, a graph that does not encode, an error wrapping ha.ErrNotLeader unless the client leads,
// the I/O error.
func (p *planStore) Put(ctx context.Context, g *jobgraph.JobGraph) error {
	if g == nil {
		return errors.New("ha/file: Put of a nil job graph")
	}
	data, err := json.Marshal(g)
	if err != nil {
		return fmt.Errorf("ha/file: encode job graph %s: %w", g.JobID, err)
	}
	return p.s.fenced("storing the execution plan of job "+g.JobID.String(), func() error {
		if err := durable.WriteFile(p.path(g.JobID), data); err != nil {
			return fmt.Errorf("ha/file: storing the execution plan of job %s: %w", g.JobID, err)
		}
		return nil
	})
}

// Get implements ha.ExecutionPlanStore, reading the file. Errors: one wrapping ha.ErrNotFound,
// a file that does not decode (named), the I/O error.
func (p *planStore) Get(ctx context.Context, id jobgraph.JobID) (*jobgraph.JobGraph, error) {
	data, err := os.ReadFile(p.path(id))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("ha/file: execution plan of job %s: %w", id, ha.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("ha/file: reading the execution plan of job %s: %w", id, err)
	}
	g, err := jobgraph.Decode(data)
	if err != nil {
		return nil, fmt.Errorf("ha/file: execution plan file %s: %w", p.path(id), err)
	}
	return g, nil
}

// Remove implements ha.ExecutionPlanStore: fenced like Put; a missing plan is not an error.
func (p *planStore) Remove(ctx context.Context, id jobgraph.JobID) error {
	return p.s.fenced("removing the execution plan of job "+id.String(), func() error {
		if err := durable.Remove(p.path(id)); err != nil {
			return fmt.Errorf("ha/file: removing the execution plan of job %s: %w", id, err)
		}
		return nil
	})
}

// JobIDs implements ha.ExecutionPlanStore, listing the directory.
func (p *planStore) JobIDs(ctx context.Context) ([]jobgraph.JobID, error) {
	ids, err := listJobFiles(p.dir, jsonSuffix)
	if err != nil {
		return nil, fmt.Errorf("ha/file: listing the execution plans: %w", err)
	}
	return ids, nil
}

// resultStore is the JobResultStore in Dir/job-result-store, as Flink's FileSystemJobResultStore:
// "<jobID>_DIRTY.json" while dirty, renamed to "<jobID>.json" once clean.
type resultStore struct {
	s   *Services
	dir string
	// mu orders this client's CreateDirty and MarkClean of one job against each other (one
	// lock for all jobs: both are a few syscalls and an fsync or two). Across clients only the
	// leader writes.
	mu sync.Mutex
}

// resultEntry is the file's JSON: Flink's JsonJobResultEntry shape.
type resultEntry struct {
	Result  json.RawMessage `json:"result"`
	Version int             `json:"version"`
}

const resultEntryVersion = 1

func (r *resultStore) dirtyPath(id jobgraph.JobID) string {
	return filepath.Join(r.dir, id.String()+dirtySuffix)
}

func (r *resultStore) cleanPath(id jobgraph.JobID) string {
	return filepath.Join(r.dir, id.String()+jsonSuffix)
}

func exists(path string) (bool, error) {
	_, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// CreateDirty implements ha.JobResultStore: the dirty entry is durable when it returns. Errors:
// one wrapping ha.ErrAlreadyExists if the job has an entry (dirty or clean), one wrapping
// ha.ErrNotLeader unless the client leads, the I/O error.
func (r *resultStore) CreateDirty(ctx context.Context, result jobgraph.JobResult) error {
	res, err := json.Marshal(result)
	if err != nil {
		return fmt.Errorf("ha/file: encode job result %s: %w", result.JobID, err)
	}
	data, err := json.Marshal(resultEntry{Result: res, Version: resultEntryVersion})
	if err != nil {
		return fmt.Errorf("ha/file: encode job result %s: %w", result.JobID, err)
	}
	id := result.JobID
	return r.s.fenced("creating the dirty job result of "+id.String(), func() error {
		r.mu.Lock()
		defer r.mu.Unlock()
		clean, err := exists(r.cleanPath(id))
		if err != nil {
			return fmt.Errorf("ha/file: job result of %s: %w", id, err)
		}
		if clean {
			return fmt.Errorf("ha/file: job result of %s: %w", id, ha.ErrAlreadyExists)
		}
		// A hard link never replaces an existing dirty entry.
		if err := durable.CreateExclusive(r.dirtyPath(id), data); err != nil {
			if errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("ha/file: job result of %s: %w", id, ha.ErrAlreadyExists)
			}
			return fmt.Errorf("ha/file: creating the dirty job result of %s: %w", id, err)
		}
		return nil
	})
}

// MarkClean implements ha.JobResultStore: it renames the dirty entry to the clean one, durably.
// Marking a clean entry again is not an error. Errors: one wrapping ha.ErrNotFound if the job has
// no entry, one wrapping ha.ErrNotLeader unless the client leads, the I/O error.
func (r *resultStore) MarkClean(ctx context.Context, id jobgraph.JobID) error {
	return r.s.fenced("marking the job result of "+id.String()+" clean", func() error {
		r.mu.Lock()
		defer r.mu.Unlock()
		err := durable.Rename(r.dirtyPath(id), r.cleanPath(id))
		if errors.Is(err, fs.ErrNotExist) {
			clean, serr := exists(r.cleanPath(id))
			switch {
			case serr != nil:
				return fmt.Errorf("ha/file: job result of %s: %w", id, serr)
			case clean:
				return nil
			}
			return fmt.Errorf("ha/file: job result of %s: %w", id, ha.ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("ha/file: marking the job result of %s clean: %w", id, err)
		}
		return nil
	})
}

// Get implements ha.JobResultStore, reading the dirty file, then the clean one (in this order, so
// a MarkClean in between is never missed). Errors: one wrapping ha.ErrNotFound, a file that does
// not decode (named), the I/O error.
func (r *resultStore) Get(ctx context.Context, id jobgraph.JobID) (ha.JobResultEntry, error) {
	res, err := r.read(r.dirtyPath(id))
	if err == nil {
		return ha.JobResultEntry{Result: res}, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return ha.JobResultEntry{}, err
	}
	res, err = r.read(r.cleanPath(id))
	if errors.Is(err, fs.ErrNotExist) {
		return ha.JobResultEntry{}, fmt.Errorf("ha/file: job result of %s: %w", id, ha.ErrNotFound)
	}
	if err != nil {
		return ha.JobResultEntry{}, err
	}
	return ha.JobResultEntry{Result: res, Clean: true}, nil
}

// read decodes the entry at path; an error matching fs.ErrNotExist if there is none.
func (r *resultStore) read(path string) (jobgraph.JobResult, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return jobgraph.JobResult{}, err
		}
		return jobgraph.JobResult{}, fmt.Errorf("ha/file: reading job result %s: %w", path, err)
	}
	var entry resultEntry
	var res jobgraph.JobResult
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&entry); err != nil {
		return jobgraph.JobResult{}, fmt.Errorf("ha/file: job result file %s: %w", path, err)
	}
	if entry.Version != resultEntryVersion {
		return jobgraph.JobResult{}, fmt.Errorf("ha/file: job result file %s: version %d, want %d", path, entry.Version, resultEntryVersion)
	}
	if err := json.Unmarshal(entry.Result, &res); err != nil {
		return jobgraph.JobResult{}, fmt.Errorf("ha/file: job result file %s: %w", path, err)
	}
	return res, nil
}

// DirtyResults implements ha.JobResultStore, listing the directory: the dirty entries in
// ascending JobID order (one cleaned while listing is left out).
func (r *resultStore) DirtyResults(ctx context.Context) ([]jobgraph.JobResult, error) {
	ids, err := listJobFiles(r.dir, dirtySuffix)
	if err != nil {
		return nil, fmt.Errorf("ha/file: listing the job results: %w", err)
	}
	var out []jobgraph.JobResult
	for _, id := range ids {
		res, err := r.read(r.dirtyPath(id))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, res)
	}
	return out, nil
}

package etcd

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/ha"
)

// planStore is the ExecutionPlanStore: each plan's JSON form (json.Marshal of the JobGraph, read
// back with jobgraph.Decode) at <prefix>/plans/<jobID>. Put and Remove are fenced.
type planStore struct{ s *Services }

func (p planStore) key(id jobgraph.JobID) string { return p.s.planPrefix() + id.String() }

// Put stores g, replacing an earlier version. Errors: a nil g, the encoding's, ha.ErrNotLeader
// (wrapped) if the client does not lead, ctx's or etcd's.
func (p planStore) Put(ctx context.Context, g *jobgraph.JobGraph) error {
	if g == nil {
		return fmt.Errorf("ha/etcd: Put of a nil job graph")
	}
	data, err := json.Marshal(g)
	if err != nil {
		return fmt.Errorf("ha/etcd: encode job graph %s: %w", g.JobID, err)
	}
	_, err = p.s.fencedTxn(ctx, "put of the execution plan of job "+g.JobID.String(), nil,
		[]clientv3.Op{clientv3.OpPut(p.key(g.JobID), string(data))}, nil)
	return err
}

// Get returns the stored graph: an error wrapping ha.ErrNotFound if there is none, the decoding
// error for a value that is not a JobGraph, ctx's or etcd's.
func (p planStore) Get(ctx context.Context, id jobgraph.JobID) (*jobgraph.JobGraph, error) {
	resp, err := p.s.client.Get(ctx, p.key(id))
	if err != nil {
		return nil, fmt.Errorf("ha/etcd: get of the execution plan of job %s: %w", id, err)
	}
	if len(resp.Kvs) == 0 {
		return nil, fmt.Errorf("ha/etcd: execution plan of job %s: %w", id, ha.ErrNotFound)
	}
	g, err := jobgraph.Decode(resp.Kvs[0].Value)
	if err != nil {
		return nil, fmt.Errorf("ha/etcd: execution plan of job %s at %s: %w", id, p.key(id), err)
	}
	return g, nil
}

// Remove deletes the plan (a missing one is not an error). Errors: ha.ErrNotLeader (wrapped),
// ctx's or etcd's.
func (p planStore) Remove(ctx context.Context, id jobgraph.JobID) error {
	_, err := p.s.fencedTxn(ctx, "remove of the execution plan of job "+id.String(), nil,
		[]clientv3.Op{clientv3.OpDelete(p.key(id))}, nil)
	return err
}

// JobIDs lists the stored jobs in ascending order. A key below the prefix that is not a JobID
// is an error naming it.
func (p planStore) JobIDs(ctx context.Context) ([]jobgraph.JobID, error) {
	resp, err := p.s.client.Get(ctx, p.s.planPrefix(), clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return nil, fmt.Errorf("ha/etcd: list of the execution plans: %w", err)
	}
	ids := make([]jobgraph.JobID, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		id, err := jobgraph.ParseJobID(strings.TrimPrefix(string(kv.Key), p.s.planPrefix()))
		if err != nil {
			return nil, fmt.Errorf("ha/etcd: execution plan key %q: %w", jobgraph.Truncate(string(kv.Key)), err)
		}
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b jobgraph.JobID) int { return slices.Compare(a[:], b[:]) })
	return ids, nil
}

// resultStore is the JobResultStore: each job's ha.JobResultEntry as JSON ({"result": ...,
// "clean": bool}) at <prefix>/results/<jobID>. CreateDirty and MarkClean are fenced.
type resultStore struct{ s *Services }

func (r resultStore) key(id jobgraph.JobID) string { return r.s.resultPrefix() + id.String() }

// CreateDirty records result as dirty, in one transaction with the fence and the check that the
// job has no entry. Errors: ha.ErrAlreadyExists (wrapped) if it has one, ha.ErrNotLeader
// (wrapped) if the client does not lead (checked first), the encoding's, ctx's or etcd's.
func (r resultStore) CreateDirty(ctx context.Context, result jobgraph.JobResult) error {
	data, err := json.Marshal(ha.JobResultEntry{Result: result})
	if err != nil {
		return fmt.Errorf("ha/etcd: encode job result %s: %w", result.JobID, err)
	}
	key := r.key(result.JobID)
	resp, err := r.s.fencedTxn(ctx, "dirty job result of "+result.JobID.String(),
		[]clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(key), "=", 0)},
		[]clientv3.Op{clientv3.OpPut(key, string(data))}, nil)
	if err != nil {
		return err
	}
	if !resp.Succeeded {
		return fmt.Errorf("ha/etcd: job result of %s: %w", result.JobID, ha.ErrAlreadyExists)
	}
	return nil
}

// MarkClean marks the job's entry clean: a read, then a transaction with the fence and the
// entry's revision (again if another write came between). Marking a clean entry again is not
// an error. Errors: ha.ErrNotFound (wrapped) if the job has no entry, ha.ErrNotLeader (wrapped)
// if the client does not lead, a stored value that does not decode, ctx's or etcd's.
func (r resultStore) MarkClean(ctx context.Context, id jobgraph.JobID) error {
	key := r.key(id)
	what := "clean job result of " + id.String()
	if _, err := r.s.currentTerm(what); err != nil {
		return err
	}
	resp, err := r.s.client.Get(ctx, key)
	for {
		if err != nil {
			return fmt.Errorf("ha/etcd: %s: %w", what, err)
		}
		if len(resp.Kvs) == 0 {
			return fmt.Errorf("ha/etcd: job result of %s: %w", id, ha.ErrNotFound)
		}
		kv := resp.Kvs[0]
		entry, derr := decodeEntry(key, kv.Value)
		if derr != nil {
			return derr
		}
		if entry.Clean {
			return nil
		}
		entry.Clean = true
		data, merr := json.Marshal(entry)
		if merr != nil {
			return fmt.Errorf("ha/etcd: encode job result %s: %w", id, merr)
		}
		txn, terr := r.s.fencedTxn(ctx, what,
			[]clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(key), "=", kv.ModRevision)},
			[]clientv3.Op{clientv3.OpPut(key, string(data))},
			[]clientv3.Op{clientv3.OpGet(key)})
		if terr != nil {
			return terr
		}
		if txn.Succeeded {
			return nil
		}
		// Changed or removed since the read: decide again on what is there now.
		resp, err = (*clientv3.GetResponse)(txn.Responses[1].GetResponseRange()), nil
	}
}

// Get returns the job's entry: an error wrapping ha.ErrNotFound if it has none.
func (r resultStore) Get(ctx context.Context, id jobgraph.JobID) (ha.JobResultEntry, error) {
	key := r.key(id)
	resp, err := r.s.client.Get(ctx, key)
	if err != nil {
		return ha.JobResultEntry{}, fmt.Errorf("ha/etcd: get of the job result of %s: %w", id, err)
	}
	if len(resp.Kvs) == 0 {
		return ha.JobResultEntry{}, fmt.Errorf("ha/etcd: job result of %s: %w", id, ha.ErrNotFound)
	}
	return decodeEntry(key, resp.Kvs[0].Value)
}

// DirtyResults lists the dirty results, in ascending JobID order.
func (r resultStore) DirtyResults(ctx context.Context) ([]jobgraph.JobResult, error) {
	resp, err := r.s.client.Get(ctx, r.s.resultPrefix(), clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("ha/etcd: list of the job results: %w", err)
	}
	var out []jobgraph.JobResult
	for _, kv := range resp.Kvs {
		entry, err := decodeEntry(string(kv.Key), kv.Value)
		if err != nil {
			return nil, err
		}
		if !entry.Clean {
			out = append(out, entry.Result)
		}
	}
	slices.SortFunc(out, func(a, b jobgraph.JobResult) int { return slices.Compare(a.JobID[:], b.JobID[:]) })
	return out, nil
}

func decodeEntry(key string, data []byte) (ha.JobResultEntry, error) {
	var entry ha.JobResultEntry
	if err := json.Unmarshal(data, &entry); err != nil {
		return ha.JobResultEntry{}, fmt.Errorf("ha/etcd: job result at %s: %w", key, err)
	}
	return entry, nil
}

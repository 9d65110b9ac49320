package etcd

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
)

// CheckpointRecoveryFactory is the checkpoint.CheckpointRecoveryFactory of Services: job J's
// CompletedCheckpointStore keeps each snapshot's metadata under <prefix>/checkpoints/J/ and its
// CheckpointIDCounter the next ID at <prefix>/checkpoint-counter/J, so the JobMaster of another
// client that takes over J recovers both. Every call reads etcd (call it off a main loop).
// Flink: ZooKeeperCheckpointRecoveryFactory, KubernetesCheckpointRecoveryFactory.
type CheckpointRecoveryFactory struct{ s *Services }

var _ checkpoint.CheckpointRecoveryFactory = CheckpointRecoveryFactory{}

// CreateRecoveredCompletedCheckpointStore reads job's stored snapshots (oldest first) and returns
// a store over them retaining maxRetained (0: checkpoint.DefaultNumRetained). If more than
// maxRetained are stored, all are kept until the next Add subsumes the surplus. Errors:
// checkpoint.ErrInvalidConfig for a negative maxRetained, a value that does not decode (its key
// named; nothing is deleted), etcd's.
func (f CheckpointRecoveryFactory) CreateRecoveredCompletedCheckpointStore(job jobgraph.JobID, maxRetained int) (checkpoint.CompletedCheckpointStore, error) {
	if maxRetained < 0 {
		return nil, fmt.Errorf("ha/etcd: execution.checkpointing.num-retained %d is negative: %w", maxRetained, checkpoint.ErrInvalidConfig)
	}
	if maxRetained == 0 {
		maxRetained = checkpoint.DefaultNumRetained
	}
	s := f.s
	ctx, cancel := s.requestContext()
	defer cancel()
	prefix := s.checkpointPrefix(job)
	resp, err := s.client.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend))
	if err != nil {
		return nil, fmt.Errorf("ha/etcd: read of the checkpoints of job %s: %w", job, err)
	}
	st := &CompletedCheckpointStore{s: s, job: job, maxRetained: maxRetained}
	for _, kv := range resp.Kvs {
		var cp checkpoint.CompletedCheckpoint
		if err := json.Unmarshal(kv.Value, &cp); err != nil {
			return nil, fmt.Errorf("ha/etcd: checkpoint metadata at %s: %w", kv.Key, err)
		}
		st.cps = append(st.cps, cp)
	}
	// Keys sort by the zero-padded ID; sorting again keeps the order right for any key.
	slices.SortFunc(st.cps, func(a, b checkpoint.CompletedCheckpoint) int { return int(a.CheckpointID - b.CheckpointID) })
	return st, nil
}

// CreateCheckpointIDCounter returns job's counter over etcd; a job without a stored counter
// starts at checkpoint.InitialCheckpointID (nothing is written until the first ID is taken).
// Errors: etcd's, a stored value that is not a positive number.
func (f CheckpointRecoveryFactory) CreateCheckpointIDCounter(job jobgraph.JobID) (checkpoint.CheckpointIDCounter, error) {
	c := &CheckpointIDCounter{s: f.s, key: f.s.counterKey(job)}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.readLocked(); err != nil {
		return nil, err
	}
	return c, nil
}

// CompletedCheckpointStore is a checkpoint.CompletedCheckpointStore over etcd: each retained
// snapshot's JSON (checkpoint.CompletedCheckpoint) at <prefix>/checkpoints/<jobID>/<20-digit
// zero-padded ID>. Add writes the new snapshot and deletes the subsumed ones in one fenced
// transaction; Latest, All and MaxRetained answer from memory. A subsumed checkpoint's state
// files that no retained snapshot lists are deleted after the transaction (best effort; a
// savepoint's never), as checkpoint.FileCompletedCheckpointStore does. Flink:
// DefaultCompletedCheckpointStore over a ZooKeeper or Kubernetes state handle store. Safe for
// concurrent use; Add and Shutdown wait on etcd (at most Options.RequestTimeout).
type CompletedCheckpointStore struct {
	s           *Services
	job         jobgraph.JobID
	maxRetained int

	mu       sync.Mutex
	cps      []checkpoint.CompletedCheckpoint
	shutdown bool
}

var _ checkpoint.CompletedCheckpointStore = (*CompletedCheckpointStore)(nil)

func (st *CompletedCheckpointStore) key(id checkpoint.CheckpointID) string {
	return fmt.Sprintf("%s%020d", st.s.checkpointPrefix(st.job), int64(id))
}

// Add implements checkpoint.CompletedCheckpointStore. Errors: checkpoint.ErrShutdown after
// Shutdown, checkpoint.ErrInvalidCheckpoint (ID ≤ 0, or not newer than the newest stored),
// ha.ErrNotLeader (wrapped) if the client does not lead, the encoding's, etcd's; on any error
// nothing changed.
func (st *CompletedCheckpointStore) Add(cp checkpoint.CompletedCheckpoint) ([]checkpoint.CompletedCheckpoint, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.shutdown {
		return nil, checkpoint.ErrShutdown
	}
	if cp.CheckpointID <= 0 {
		return nil, fmt.Errorf("ha/etcd: checkpoint ID %d is not positive: %w", cp.CheckpointID, checkpoint.ErrInvalidCheckpoint)
	}
	if n := len(st.cps); n > 0 && cp.CheckpointID <= st.cps[n-1].CheckpointID {
		return nil, fmt.Errorf("ha/etcd: checkpoint %d is not newer than the stored checkpoint %d: %w", cp.CheckpointID, st.cps[n-1].CheckpointID, checkpoint.ErrInvalidCheckpoint)
	}
	data, err := json.Marshal(cp)
	if err != nil {
		return nil, fmt.Errorf("ha/etcd: encode checkpoint %d of job %s: %w", cp.CheckpointID, st.job, err)
	}
	var copied checkpoint.CompletedCheckpoint
	if err := json.Unmarshal(data, &copied); err != nil { // the store's own copy: no caller shares it
		return nil, fmt.Errorf("ha/etcd: decode checkpoint %d of job %s: %w", cp.CheckpointID, st.job, err)
	}
	over := max(len(st.cps)+1-st.maxRetained, 0)
	ops := []clientv3.Op{clientv3.OpPut(st.key(cp.CheckpointID), string(data))}
	for _, old := range st.cps[:over] {
		ops = append(ops, clientv3.OpDelete(st.key(old.CheckpointID)))
	}
	// A recovered store may hold far more than maxRetained: delete the surplus in batches after
	// the new one is stored, so that the first transaction stays within etcd's limit.
	first, rest := ops, []clientv3.Op(nil)
	if len(ops) > maxTxnOps {
		first, rest = ops[:maxTxnOps], ops[maxTxnOps:]
	}
	ctx, cancel := st.s.requestContext()
	defer cancel()
	what := fmt.Sprintf("store of checkpoint %d of job %s", cp.CheckpointID, st.job)
	if _, err := st.s.fencedTxn(ctx, what, nil, first, nil); err != nil {
		return nil, err
	}
	for len(rest) > 0 {
		n := min(len(rest), maxTxnOps)
		if _, err := st.s.fencedTxn(ctx, what, nil, rest[:n], nil); err != nil {
			break // metadata of subsumed checkpoints left behind is removed by a later Add's list
		}
		rest = rest[n:]
	}
	subsumed := slices.Clone(st.cps[:over])
	st.cps = append(slices.Delete(st.cps, 0, over), copied)
	for _, old := range subsumed {
		if old.Properties.DiscardOnSubsumed() {
			st.discardFiles(old)
		}
	}
	return subsumed, nil
}

// discardFiles deletes cp's state files that no retained snapshot lists; a file that cannot be
// deleted stays (garbage, never a loss).
func (st *CompletedCheckpointStore) discardFiles(cp checkpoint.CompletedCheckpoint) {
	referenced := map[string]bool{}
	for _, kept := range st.cps {
		for _, ts := range kept.TaskStates {
			for _, f := range ts.State.Files {
				referenced[f] = true
			}
		}
	}
	for _, ts := range cp.TaskStates {
		for _, f := range ts.State.Files {
			if !referenced[f] {
				if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
					continue
				}
			}
		}
	}
}

// Latest implements checkpoint.CompletedCheckpointStore.
func (st *CompletedCheckpointStore) Latest() (checkpoint.CompletedCheckpoint, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if len(st.cps) == 0 {
		return checkpoint.CompletedCheckpoint{}, false
	}
	return cloneCheckpoint(st.cps[len(st.cps)-1]), true
}

// All implements checkpoint.CompletedCheckpointStore.
func (st *CompletedCheckpointStore) All() []checkpoint.CompletedCheckpoint {
	st.mu.Lock()
	defer st.mu.Unlock()
	out := make([]checkpoint.CompletedCheckpoint, len(st.cps))
	for i, cp := range st.cps {
		out[i] = cloneCheckpoint(cp)
	}
	return out
}

// MaxRetained implements checkpoint.CompletedCheckpointStore.
func (st *CompletedCheckpointStore) MaxRetained() int { return st.maxRetained }

// Shutdown implements checkpoint.CompletedCheckpointStore: with discard, every snapshot's
// metadata of the job is deleted in one fenced transaction, then the state files of its
// checkpoints (not of savepoints). Later Adds fail with checkpoint.ErrShutdown, also when the
// discard failed. Errors: ha.ErrNotLeader (wrapped) if the client does not lead, etcd's.
func (st *CompletedCheckpointStore) Shutdown(discard bool) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.shutdown = true
	if !discard {
		return nil
	}
	ctx, cancel := st.s.requestContext()
	defer cancel()
	what := fmt.Sprintf("discard of the checkpoints of job %s", st.job)
	if _, err := st.s.fencedTxn(ctx, what, nil, []clientv3.Op{clientv3.OpDelete(st.s.checkpointPrefix(st.job), clientv3.WithPrefix())}, nil); err != nil {
		return err
	}
	all := st.cps
	st.cps = nil
	for _, cp := range all {
		if cp.Properties.DiscardOnSubsumed() {
			st.discardFiles(cp)
		}
	}
	return nil
}

// cloneCheckpoint deep-copies what a caller could change in place.
func cloneCheckpoint(cp checkpoint.CompletedCheckpoint) checkpoint.CompletedCheckpoint {
	data, err := json.Marshal(cp)
	if err == nil {
		var out checkpoint.CompletedCheckpoint
		if json.Unmarshal(data, &out) == nil {
			return out
		}
	}
	return cp
}

// CheckpointIDCounter is a checkpoint.CheckpointIDCounter over etcd: the next ID, in decimal, at
// <prefix>/checkpoint-counter/<jobID>. Every change is a fenced compare-and-swap on the key's
// revision (absent: the key does not exist yet), so two clients never hand out the same ID and a
// client that does not lead hands out none. Flink: ZooKeeperCheckpointIDCounter (a shared
// counter with a version check), KubernetesCheckpointIDCounter. Safe for concurrent use; each
// call waits on etcd (at most Options.RequestTimeout).
type CheckpointIDCounter struct {
	s   *Services
	key string

	mu       sync.Mutex
	next     checkpoint.CheckpointID // as of modRev
	modRev   int64                   // the key's mod revision; 0: absent
	shutdown bool
}

var _ checkpoint.CheckpointIDCounter = (*CheckpointIDCounter)(nil)

func (c *CheckpointIDCounter) readLocked() error {
	ctx, cancel := c.s.requestContext()
	defer cancel()
	resp, err := c.s.client.Get(ctx, c.key)
	if err != nil {
		return fmt.Errorf("ha/etcd: read of the checkpoint ID counter %s: %w", c.key, err)
	}
	return c.takeLocked((*clientv3.GetResponse)(resp))
}

// takeLocked sets next and modRev from a read of the key.
func (c *CheckpointIDCounter) takeLocked(resp *clientv3.GetResponse) error {
	if len(resp.Kvs) == 0 {
		c.next, c.modRev = checkpoint.InitialCheckpointID, 0
		return nil
	}
	kv := resp.Kvs[0]
	n, err := strconv.ParseInt(string(kv.Value), 10, 64)
	if err != nil || n <= 0 {
		return fmt.Errorf("ha/etcd: checkpoint ID counter %s holds %q, not a positive number", c.key, jobgraph.Truncate(string(kv.Value)))
	}
	c.next, c.modRev = checkpoint.CheckpointID(n), kv.ModRevision
	return nil
}

// setLocked makes next the stored value by a fenced compare-and-swap; when another client
// changed the key since the last read, it reads again and asks decide (with the current value)
// for the value to set, again. decide returns an error to give up.
func (c *CheckpointIDCounter) setLocked(what string, decide func(current checkpoint.CheckpointID) (checkpoint.CheckpointID, error)) error {
	ctx, cancel := c.s.requestContext()
	defer cancel()
	for {
		next, err := decide(c.next)
		if err != nil {
			return err
		}
		resp, err := c.s.fencedTxn(ctx, what,
			[]clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(c.key), "=", c.modRev)},
			[]clientv3.Op{clientv3.OpPut(c.key, strconv.FormatInt(int64(next), 10))},
			[]clientv3.Op{clientv3.OpGet(c.key)})
		if err != nil {
			return err
		}
		if resp.Succeeded {
			c.next, c.modRev = next, resp.Header.Revision
			return nil
		}
		if err := c.takeLocked((*clientv3.GetResponse)(resp.Responses[1].GetResponseRange())); err != nil {
			return err
		}
	}
}

// GetAndIncrement implements checkpoint.CheckpointIDCounter. Errors: checkpoint.ErrShutdown,
// ha.ErrNotLeader (wrapped), etcd's; on error no ID was handed out.
func (c *CheckpointIDCounter) GetAndIncrement() (checkpoint.CheckpointID, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.shutdown {
		return 0, checkpoint.ErrShutdown
	}
	var id checkpoint.CheckpointID
	err := c.setLocked("advance of the checkpoint ID counter "+c.key, func(cur checkpoint.CheckpointID) (checkpoint.CheckpointID, error) {
		id = cur
		return cur + 1, nil
	})
	if err != nil {
		return 0, err
	}
	return id, nil
}

// Get implements checkpoint.CheckpointIDCounter: the stored next ID, read from etcd.
func (c *CheckpointIDCounter) Get() (checkpoint.CheckpointID, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.shutdown {
		return 0, checkpoint.ErrShutdown
	}
	if err := c.readLocked(); err != nil {
		return 0, err
	}
	return c.next, nil
}

// SetCount implements checkpoint.CheckpointIDCounter. Errors: checkpoint.ErrShutdown,
// checkpoint.ErrIDCounterDecrease for a next below the stored value (nothing changes),
// ha.ErrNotLeader (wrapped), etcd's.
func (c *CheckpointIDCounter) SetCount(next checkpoint.CheckpointID) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.shutdown {
		return checkpoint.ErrShutdown
	}
	return c.setLocked("set of the checkpoint ID counter "+c.key, func(cur checkpoint.CheckpointID) (checkpoint.CheckpointID, error) {
		if next < cur {
			return 0, fmt.Errorf("ha/etcd: SetCount(%d) below the next ID %d: %w", next, cur, checkpoint.ErrIDCounterDecrease)
		}
		return next, nil
	})
}

// Shutdown implements checkpoint.CheckpointIDCounter; discard deletes the key (fenced: an error
// wrapping ha.ErrNotLeader if the client does not lead). Later calls fail with
// checkpoint.ErrShutdown.
func (c *CheckpointIDCounter) Shutdown(discard bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.shutdown = true
	if !discard {
		return nil
	}
	ctx, cancel := c.s.requestContext()
	defer cancel()
	_, err := c.s.fencedTxn(ctx, "discard of the checkpoint ID counter "+c.key, nil, []clientv3.Op{clientv3.OpDelete(c.key)}, nil)
	return err
}

package checkpoint

import (
	"fmt"
	"slices"
	"sync"
)

// DefaultNumRetained is Flink's execution.checkpointing.num-retained (formerly
// state.checkpoints.num-retained) default.
const DefaultNumRetained = 1

// CompletedCheckpointStore keeps the completed checkpoints and savepoints a job can recover from.
// Flink: org.apache.flink.runtime.checkpoint.CompletedCheckpointStore. Implementations are safe for
// concurrent use; Add and Shutdown may do I/O, so the coordinator calls them through its
// IOExecutor, never on its owner's loop.
//
// Retention: the store keeps the newest MaxRetained snapshots (checkpoints and savepoints alike,
// ordered by ID). A snapshot that leaves the list is subsumed: a checkpoint's state is discarded,
// a savepoint's never (DiscardOnSubsumed), so savepoints are never subsumed by checkpoints in the
// sense that their data survives; a file is deleted only when no retained snapshot lists it.
type CompletedCheckpointStore interface {
	// Add stores cp (durably, for a durable store) and then removes the oldest snapshots beyond
	// MaxRetained, returning those it removed (oldest first). Flink:
	// addCheckpointAndSubsumeOldestOne. Errors: ErrInvalidCheckpoint (ID ≤ 0, or not newer than
	// the newest stored: nothing changes), or the I/O error of storing (nothing stored). A failure
	// to delete a subsumed checkpoint's files is not an error of Add: the files stay.
	Add(cp CompletedCheckpoint) (subsumed []CompletedCheckpoint, err error)
	// Latest returns the newest stored snapshot; false if none.
	Latest() (CompletedCheckpoint, bool)
	// All returns the stored snapshots, oldest first (copies).
	All() []CompletedCheckpoint
	// MaxRetained is the number of snapshots kept (≥ 1).
	MaxRetained() int
	// Shutdown ends the store. discard removes every stored checkpoint's state and metadata (a
	// globally terminal job without retained checkpoints; savepoints' state stays); otherwise
	// everything stays for the next leader or process. Later Adds fail with ErrShutdown.
	Shutdown(discard bool) error
}

// CheckpointIDCounter hands out checkpoint IDs. Flink:
// org.apache.flink.runtime.checkpoint.CheckpointIDCounter. Implementations are safe for concurrent
// use and may do I/O (called through the coordinator's IOExecutor).
type CheckpointIDCounter interface {
	// GetAndIncrement returns the next ID and advances the counter (durably, for a durable
	// counter: an ID it returned is never returned again, also by a counter opened later over the
	// same storage). On error the counter has not advanced as far as the caller knows.
	GetAndIncrement() (CheckpointID, error)
	// Get returns the ID GetAndIncrement would return next.
	Get() (CheckpointID, error)
	// SetCount makes next the ID GetAndIncrement returns next (after restoring a checkpoint whose
	// ID is next-1). A next below the current value fails with ErrIDCounterDecrease and changes
	// nothing: IDs are never reused (where Flink's setCount may go back).
	SetCount(next CheckpointID) error
	// Shutdown ends the counter; discard removes its storage (a globally terminal job).
	Shutdown(discard bool) error
}

// StandaloneCompletedCheckpointStore is the in-memory CompletedCheckpointStore. Flink:
// StandaloneCompletedCheckpointStore. Its subsumed checkpoints are simply dropped (the state
// handles are plain data and own no files it could delete).
type StandaloneCompletedCheckpointStore struct {
	retained
	discarded bool // shut down with discard (guarded by mu)
	// forget, set by a StandaloneCheckpointRecoveryFactory, is called after Shutdown(true) with
	// no lock held: the factory drops the store.
	forget func()
}

// NewStandaloneCompletedCheckpointStore keeps maxRetained snapshots; 0 means DefaultNumRetained.
// A negative maxRetained is an ErrInvalidConfig error.
func NewStandaloneCompletedCheckpointStore(maxRetained int) (*StandaloneCompletedCheckpointStore, error) {
	n, err := resolveRetained(maxRetained)
	if err != nil {
		return nil, err
	}
	return &StandaloneCompletedCheckpointStore{retained: retained{maxRetained: n}}, nil
}

func resolveRetained(n int) (int, error) {
	switch {
	case n < 0:
		return 0, errorsJoin(ErrInvalidConfig, "execution.checkpointing.num-retained %d is negative", n)
	case n == 0:
		return DefaultNumRetained, nil
	}
	return n, nil
}

func validateNew(cps []CompletedCheckpoint, cp CompletedCheckpoint) error {
	if cp.CheckpointID <= 0 {
		return errorsJoin(ErrInvalidCheckpoint, "checkpoint ID %d is not positive", cp.CheckpointID)
	}
	if len(cps) > 0 && cp.CheckpointID <= cps[len(cps)-1].CheckpointID {
		return errorsJoin(ErrInvalidCheckpoint, "checkpoint %d is not newer than the stored checkpoint %d", cp.CheckpointID, cps[len(cps)-1].CheckpointID)
	}
	return nil
}

// Add implements CompletedCheckpointStore.
func (s *StandaloneCompletedCheckpointStore) Add(cp CompletedCheckpoint) ([]CompletedCheckpoint, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.add(cp, nil)
}

// Shutdown implements CompletedCheckpointStore.
func (s *StandaloneCompletedCheckpointStore) Shutdown(discard bool) error {
	s.mu.Lock()
	s.shutdown = true
	if discard {
		s.cps, s.discarded = nil, true
	}
	forget := s.forget
	s.mu.Unlock()
	if discard && forget != nil {
		forget()
	}
	return nil
}

// cloneCompleted deep-copies cp so no caller shares the store's slices.
func cloneCompleted(cp CompletedCheckpoint) CompletedCheckpoint {
	cp.TaskStates = slices.Clone(cp.TaskStates)
	for i := range cp.TaskStates {
		st := &cp.TaskStates[i].State
		st.Data = slices.Clone(st.Data)
		st.Files = slices.Clone(st.Files)
	}
	cp.CoordinatorStates = slices.Clone(cp.CoordinatorStates)
	for i := range cp.CoordinatorStates {
		cp.CoordinatorStates[i].State = slices.Clone(cp.CoordinatorStates[i].State)
	}
	return cp
}

// StandaloneCheckpointIDCounter is the in-memory CheckpointIDCounter, starting at
// InitialCheckpointID. Flink: StandaloneCheckpointIDCounter. It does not survive the process: a
// job that must never reuse an ID across processes uses FileCheckpointIDCounter.
type StandaloneCheckpointIDCounter struct {
	idCounter
	discarded bool // shut down with discard (guarded by mu)
	// forget, set by a StandaloneCheckpointRecoveryFactory, is called after Shutdown(true) with
	// no lock held: the factory drops the counter.
	forget func()
}

// NewStandaloneCheckpointIDCounter returns a counter whose first ID is InitialCheckpointID.
func NewStandaloneCheckpointIDCounter() *StandaloneCheckpointIDCounter {
	return &StandaloneCheckpointIDCounter{idCounter: idCounter{next: InitialCheckpointID}}
}

// idCounter is what both CheckpointIDCounters share: the next ID under a lock, refused after
// Shutdown, never going back. persist, when set, makes a new next ID durable before it counts
// (the file counter's write); path names it in GetAndIncrement's error.
type idCounter struct {
	mu       sync.Mutex
	next     CheckpointID
	shutdown bool
	persist  func(next CheckpointID) error
	path     string
}

// GetAndIncrement implements CheckpointIDCounter for the embedding counter.
func (c *idCounter) GetAndIncrement() (CheckpointID, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.shutdown {
		return 0, ErrShutdown
	}
	id := c.next
	if c.persist != nil {
		if err := c.persist(id + 1); err != nil {
			return 0, fmt.Errorf("checkpoint: advancing ID counter %s: %w", c.path, err)
		}
	}
	c.next = id + 1
	return id, nil
}

// Get implements CheckpointIDCounter for the embedding counter.
func (c *idCounter) Get() (CheckpointID, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.shutdown {
		return 0, ErrShutdown
	}
	return c.next, nil
}

// SetCount implements CheckpointIDCounter for the embedding counter.
func (c *idCounter) SetCount(next CheckpointID) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.shutdown {
		return ErrShutdown
	}
	if next < c.next {
		return errorsJoin(ErrIDCounterDecrease, "SetCount(%d) below the next ID %d", next, c.next)
	}
	if c.persist != nil {
		if err := c.persist(next); err != nil {
			return err
		}
	}
	c.next = next
	return nil
}

// Shutdown implements CheckpointIDCounter. The in-memory counter has no storage to remove;
// discard makes a StandaloneCheckpointRecoveryFactory forget it.
func (c *StandaloneCheckpointIDCounter) Shutdown(discard bool) error {
	c.mu.Lock()
	c.shutdown = true
	c.discarded = c.discarded || discard
	forget := c.forget
	c.mu.Unlock()
	if discard && forget != nil {
		forget()
	}
	return nil
}

// retained is the list of completed checkpoints a store keeps, oldest first, and what every store
// answers from it alone. Embedded by both stores; mu guards the embedding store's whole state.
type retained struct {
	mu          sync.Mutex
	maxRetained int
	cps         []CompletedCheckpoint
	shutdown    bool
}

// add is Add of the embedding store, s.mu held: it refuses a shut-down store and a checkpoint not
// newer than the last, runs persist (nil: nothing to persist) before cp is retained, and returns
// the checkpoints cp subsumed, oldest first, no longer retained.
func (s *retained) add(cp CompletedCheckpoint, persist func(CompletedCheckpoint) error) ([]CompletedCheckpoint, error) {
	if s.shutdown {
		return nil, ErrShutdown
	}
	if err := validateNew(s.cps, cp); err != nil {
		return nil, err
	}
	if persist != nil {
		if err := persist(cp); err != nil {
			return nil, err
		}
	}
	s.cps = append(s.cps, cloneCompleted(cp))
	over := len(s.cps) - s.maxRetained
	if over <= 0 {
		return nil, nil
	}
	subsumed := slices.Clone(s.cps[:over])
	s.cps = slices.Delete(s.cps, 0, over)
	return subsumed, nil
}

// Latest implements CompletedCheckpointStore for the embedding store.
func (s *retained) Latest() (CompletedCheckpoint, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.cps) == 0 {
		return CompletedCheckpoint{}, false
	}
	return cloneCompleted(s.cps[len(s.cps)-1]), true
}

// All implements CompletedCheckpointStore for the embedding store.
func (s *retained) All() []CompletedCheckpoint {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]CompletedCheckpoint, len(s.cps))
	for i, cp := range s.cps {
		out[i] = cloneCompleted(cp)
	}
	return out
}

// MaxRetained implements CompletedCheckpointStore for the embedding store.
func (s *retained) MaxRetained() int { return s.maxRetained }

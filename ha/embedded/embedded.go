// Package embedded is the in-memory ha.Services: every election grants leadership at once to its
// first contender, stores keep their data in memory, each entry a copy no caller holds (a
// JobResult as its encoded bytes, a JobGraph as a deep copy, jobgraph.JobGraph.Clone), so a
// caller can never change what was stored. It is what the MiniCluster uses by default.
// Flink: org.apache.flink.runtime.highavailability.nonha.embedded.EmbeddedHaServices.
package embedded

import (
	"container/list"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/ha"
	"github.com/jobgraph/jobgraph/internal/mainloop"
)

// Services is the in-memory ha.Services. Leadership callbacks run on one goroutine owned by
// Services, in the order they were caused. Safe for concurrent use; Close it once.
type Services struct {
	loop *mainloop.Loop

	mu        sync.Mutex
	elections map[jobgraph.JobID]*Election
	plans     *planStore
	results   *resultStore
	// The cluster's two elections, and every job's checkpoints for the Services' life.
	dispatcher      *Election
	resourceManager *Election
	checkpoints     *checkpoint.StandaloneCheckpointRecoveryFactory
}

var _ ha.Services = (*Services)(nil)

// Options configures Services; the zero value is what New uses.
type Options struct {
	// MaxCleanResults bounds how many clean entries the JobResultStore keeps (entries of jobs
	// whose cleanup completed). Marking one more clean evicts the entry marked clean the longest
	// ago; dirty entries are never evicted (recovery needs them). 0 means unlimited, as Flink's
	// EmbeddedJobResultStore keeps every clean entry; negative is an error.
	//
	// What an evicted entry answered stops: the Dispatcher answers job-not-found for that JobID
	// once its job also left the Dispatcher's archive, and accepts a new submission under it
	// (Flink does the same with job-result-store.delete-on-commit, its default for the file
	// store). One clean entry costs its JSON-encoded JobResult plus the map entry: about 210
	// bytes for a job that finished without failures (BenchmarkCleanResultMemory), more with
	// an exception history.
	MaxCleanResults int
}

// New returns empty in-memory HA services whose JobResultStore keeps every clean entry.
func New() *Services {
	s, _ := NewWithOptions(Options{})
	return s
}

// NewWithOptions returns empty in-memory HA services configured by o; an error for a negative
// MaxCleanResults.
func NewWithOptions(o Options) (*Services, error) {
	if o.MaxCleanResults < 0 {
		return nil, fmt.Errorf("ha/embedded: Options.MaxCleanResults is %d, negative (0 means unlimited)", o.MaxCleanResults)
	}
	loop := mainloop.New("ha-embedded")
	return &Services{
		loop:      loop,
		elections: make(map[jobgraph.JobID]*Election),
		plans:     &planStore{plans: make(map[jobgraph.JobID]*jobgraph.JobGraph)},
		results: &resultStore{entries: make(map[jobgraph.JobID]storedResult), max: o.MaxCleanResults,
			clean: list.New()},
		dispatcher:      &Election{loop: loop},
		resourceManager: &Election{loop: loop},
		checkpoints:     checkpoint.NewStandaloneCheckpointRecoveryFactory(),
	}, nil
}

func (s *Services) election(job jobgraph.JobID) *Election {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.elections[job]
	if !ok {
		e = &Election{loop: s.loop}
		e.forget = func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.elections[job] == e {
				delete(s.elections, job)
			}
		}
		s.elections[job] = e
	}
	return e
}

// JobMasterLeaderElection returns the job's election (the same one for every call).
func (s *Services) JobMasterLeaderElection(job jobgraph.JobID) ha.LeaderElection {
	return s.election(job)
}

// JobMasterElection is JobMasterLeaderElection with the concrete type, for tests that revoke
// or re-grant leadership.
func (s *Services) JobMasterElection(job jobgraph.JobID) *Election { return s.election(job) }

// JobMasterLeaderRetrieval follows the job's election.
func (s *Services) JobMasterLeaderRetrieval(job jobgraph.JobID) ha.LeaderRetrieval {
	return &retrieval{election: s.election(job)}
}

// DispatcherLeaderElection returns a handle on the cluster's Dispatcher election (one election
// for every call): the contender started on the handle leads if nobody does, and the handle's
// Close removes only that contender, so that a standby started on another handle (a second
// MiniCluster over the same Services) is granted leadership next.
func (s *Services) DispatcherLeaderElection() ha.LeaderElection {
	return &handle{election: s.dispatcher}
}

// DispatcherElection is DispatcherLeaderElection with the concrete type, for tests that revoke
// or re-grant the Dispatcher's leadership.
func (s *Services) DispatcherElection() *Election { return s.dispatcher }

// DispatcherLeaderRetrieval follows the Dispatcher's election.
func (s *Services) DispatcherLeaderRetrieval() ha.LeaderRetrieval {
	return &retrieval{election: s.dispatcher}
}

// ResourceManagerLeaderElection returns a handle on the cluster's ResourceManager election, as
// DispatcherLeaderElection does.
func (s *Services) ResourceManagerLeaderElection() ha.LeaderElection {
	return &handle{election: s.resourceManager}
}

// ResourceManagerElection is ResourceManagerLeaderElection with the concrete type, for tests.
func (s *Services) ResourceManagerElection() *Election { return s.resourceManager }

// ResourceManagerLeaderRetrieval follows the ResourceManager's election.
func (s *Services) ResourceManagerLeaderRetrieval() ha.LeaderRetrieval {
	return &retrieval{election: s.resourceManager}
}

// CheckpointRecoveryFactory returns the in-memory factory that keeps every job's checkpoints and
// counter for the Services' life (checkpoint.StandaloneCheckpointRecoveryFactory).
func (s *Services) CheckpointRecoveryFactory() checkpoint.CheckpointRecoveryFactory {
	return s.checkpoints
}

// CleanupJobData implements ha.Services: an election forgets itself once unused, so there is
// nothing more to remove.
func (s *Services) CleanupJobData(ctx context.Context, job jobgraph.JobID) error { return nil }

func (s *Services) ExecutionPlanStore() ha.ExecutionPlanStore { return s.plans }
func (s *Services) JobResultStore() ha.JobResultStore         { return s.results }

// Close stops the callback goroutine; pending callbacks are delivered first.
func (s *Services) Close() error {
	s.loop.Close()
	return nil
}

// Election is one in-memory leader election. The first contender is granted leadership at once
// with a new session; later contenders wait. Close removes every contender, so a contender that
// is started after Close leads next.
type Election struct {
	loop *mainloop.Loop

	mu         sync.Mutex
	contenders []ha.LeaderContender
	session    ha.SessionID // current leader session; zero when nobody leads
	leader     ha.LeaderContender
	address    string // confirmed address of the current session
	confirmed  bool
	listeners  []ha.LeaderRetrievalListener
	// forget removes the election from its Services once nobody uses it, so the map of
	// elections does not grow with every job a long-running Dispatcher ever ran.
	forget func()
}

// forgetIfUnusedLocked drops the election from its Services when it has no contender and no
// listener left; a later call for the same job starts a fresh election.
func (e *Election) forgetIfUnusedLocked() {
	if len(e.contenders) == 0 && len(e.listeners) == 0 && e.forget != nil {
		e.forget()
	}
}

// Start adds contender; it is granted leadership at once if nobody leads.
func (e *Election) Start(contender ha.LeaderContender) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if slices.Contains(e.contenders, contender) {
		return fmt.Errorf("ha/embedded: contender started twice")
	}
	e.contenders = append(e.contenders, contender)
	if e.leader == nil {
		e.grantLocked()
	}
	return nil
}

func (e *Election) grantLocked() {
	if len(e.contenders) == 0 {
		return
	}
	e.leader = e.contenders[0]
	e.session = ha.NewSessionID()
	e.confirmed = false
	c, s := e.leader, e.session
	e.loop.Execute(func() { c.GrantLeadership(s) })
}

// ConfirmLeadership publishes address for session if it is the current one.
func (e *Election) ConfirmLeadership(session ha.SessionID, address string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.leader == nil || session != e.session {
		return
	}
	e.address, e.confirmed = address, true
	e.notifyLocked()
}

func (e *Election) notifyLocked() {
	addr, s := "", ha.SessionID{}
	if e.confirmed {
		addr, s = e.address, e.session
	}
	for _, l := range e.listeners {
		e.loop.Execute(func() { l.NotifyLeaderAddress(addr, s) })
	}
}

// HasLeadership reports whether session is the current leader session.
func (e *Election) HasLeadership(session ha.SessionID) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.leader != nil && session == e.session
}

// Close removes every contender started on this election; the leader is revoked.
// (Each JobMaster runner has its own election per job in this implementation.)
func (e *Election) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.revokeLocked()
	e.contenders = nil
	e.forgetIfUnusedLocked()
	return nil
}

// Revoke takes leadership from the current leader and grants it again to the same contender with
// a new session. It simulates a leader change in tests.
func (e *Election) Revoke() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.revokeLocked()
	e.grantLocked()
}

func (e *Election) revokeLocked() {
	if e.leader == nil {
		return
	}
	c := e.leader
	e.leader, e.session, e.confirmed, e.address = nil, ha.SessionID{}, false, ""
	e.loop.Execute(c.RevokeLeadership)
	e.notifyLocked()
}

// handle is one contender's part in a cluster-wide Election: Close removes that contender only.
type handle struct {
	election *Election

	mu        sync.Mutex
	contender ha.LeaderContender
	closed    bool
}

func (h *handle) Start(contender ha.LeaderContender) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.closed:
		return fmt.Errorf("ha/embedded: Start on a closed election")
	case h.contender != nil:
		return fmt.Errorf("ha/embedded: a second contender started on one election handle")
	}
	h.contender = contender
	return h.election.Start(contender)
}

func (h *handle) ConfirmLeadership(session ha.SessionID, address string) {
	h.election.ConfirmLeadership(session, address)
}

func (h *handle) HasLeadership(session ha.SessionID) bool { return h.election.HasLeadership(session) }

// Close removes the handle's contender; if it leads it is revoked and the next contender granted.
func (h *handle) Close() error {
	h.mu.Lock()
	c := h.contender
	h.contender, h.closed = nil, true
	h.mu.Unlock()
	if c != nil {
		h.election.remove(c)
	}
	return nil
}

// remove takes contender out of the election, revoking it and granting the next if it leads.
func (e *Election) remove(contender ha.LeaderContender) {
	e.mu.Lock()
	defer e.mu.Unlock()
	i := slices.Index(e.contenders, contender)
	if i < 0 {
		return
	}
	e.contenders = slices.Delete(e.contenders, i, i+1)
	if e.leader == contender {
		e.revokeLocked()
		e.grantLocked()
	}
}

type retrieval struct {
	election *Election
	listener ha.LeaderRetrievalListener
}

func (r *retrieval) Start(listener ha.LeaderRetrievalListener) error {
	e := r.election
	e.mu.Lock()
	defer e.mu.Unlock()
	r.listener = listener
	e.listeners = append(e.listeners, listener)
	if e.confirmed {
		addr, s := e.address, e.session
		e.loop.Execute(func() { listener.NotifyLeaderAddress(addr, s) })
	}
	return nil
}

func (r *retrieval) Stop() error {
	e := r.election
	e.mu.Lock()
	defer e.mu.Unlock()
	if i := slices.Index(e.listeners, r.listener); i >= 0 {
		e.listeners = slices.Delete(e.listeners, i, i+1)
	}
	e.forgetIfUnusedLocked()
	return nil
}

type planStore struct {
	mu sync.Mutex
	// Each a copy of what Put was given (jobgraph.JobGraph.Clone: the graph its JSON form
	// decodes to), never handed out: Get returns a copy of it.
	plans map[jobgraph.JobID]*jobgraph.JobGraph
}

func (p *planStore) Put(ctx context.Context, g *jobgraph.JobGraph) error {
	if g == nil {
		return fmt.Errorf("ha/embedded: Put of a nil job graph")
	}
	c, err := g.Clone()
	if err != nil {
		return fmt.Errorf("ha/embedded: encode job graph %s: %w", g.JobID, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.plans[g.JobID] = c
	return nil
}

func (p *planStore) Get(ctx context.Context, id jobgraph.JobID) (*jobgraph.JobGraph, error) {
	p.mu.Lock()
	g, ok := p.plans[id]
	p.mu.Unlock()
	if !ok {
		return nil, &notFoundError{what: "execution plan of job", id: id}
	}
	return g.Clone()
}

func (p *planStore) Remove(ctx context.Context, id jobgraph.JobID) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.plans, id)
	return nil
}

func (p *planStore) JobIDs(ctx context.Context) ([]jobgraph.JobID, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	ids := slices.Collect(maps.Keys(p.plans))
	slices.SortFunc(ids, func(a, b jobgraph.JobID) int { return slices.Compare(a[:], b[:]) })
	return ids, nil
}

type resultStore struct {
	mu      sync.Mutex
	entries map[jobgraph.JobID]storedResult
	// With max > 0: the clean entries in the order they were marked clean (oldest first), so
	// that marking one clean and evicting the oldest cost O(1). An entry never stops being clean
	// and leaves only by eviction, so the list is only ever cut at its front.
	max   int
	clean *list.List // of jobgraph.JobID
}

// storedResult is one entry: the JobResult encoded (so no caller can change it) and the clean
// flag beside it, so that MarkClean and the duplicate check of every submission (Get of a job
// without an entry) decode nothing.
type storedResult struct {
	result []byte // JSON of the jobgraph.JobResult
	clean  bool
}

// notFoundError is the error for a job without an entry: it matches ha.ErrNotFound and is
// formatted only when its message is asked for. Every submission asks the store about a job it
// does not hold (twice: the Dispatcher and the runner), so the miss must cost next to nothing.
type notFoundError struct {
	what string // "job result", "execution plan"
	id   jobgraph.JobID
}

func (e *notFoundError) Error() string {
	return fmt.Sprintf("ha/embedded: %s of %s: %v", e.what, e.id, ha.ErrNotFound)
}

func (e *notFoundError) Unwrap() error { return ha.ErrNotFound }

func (r *resultStore) CreateDirty(ctx context.Context, result jobgraph.JobResult) error {
	data, err := json.Marshal(result)
	if err != nil {
		return fmt.Errorf("ha/embedded: encode job result %s: %w", result.JobID, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.entries[result.JobID]; ok {
		return fmt.Errorf("ha/embedded: job result of %s: %w", result.JobID, ha.ErrAlreadyExists)
	}
	r.entries[result.JobID] = storedResult{result: data}
	return nil
}

func (r *resultStore) MarkClean(ctx context.Context, id jobgraph.JobID) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	entry, ok := r.entries[id]
	if !ok {
		return &notFoundError{what: "job result", id: id}
	}
	if entry.clean {
		return nil
	}
	entry.clean = true
	r.entries[id] = entry
	if r.max > 0 {
		r.clean.PushBack(id)
		for r.clean.Len() > r.max {
			oldest := r.clean.Remove(r.clean.Front()).(jobgraph.JobID)
			delete(r.entries, oldest)
		}
	}
	return nil
}

func (r *resultStore) Get(ctx context.Context, id jobgraph.JobID) (ha.JobResultEntry, error) {
	r.mu.Lock()
	entry, ok := r.entries[id]
	r.mu.Unlock()
	if !ok {
		return ha.JobResultEntry{}, &notFoundError{what: "job result", id: id}
	}
	return entry.decode()
}

func (e storedResult) decode() (ha.JobResultEntry, error) {
	out := ha.JobResultEntry{Clean: e.clean}
	err := json.Unmarshal(e.result, &out.Result)
	return out, err
}

func (r *resultStore) DirtyResults(ctx context.Context) ([]jobgraph.JobResult, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []jobgraph.JobResult
	for _, e := range r.entries {
		if e.clean {
			continue
		}
		entry, err := e.decode()
		if err != nil {
			return nil, err
		}
		out = append(out, entry.Result)
	}
	slices.SortFunc(out, func(a, b jobgraph.JobResult) int { return slices.Compare(a.JobID[:], b.JobID[:]) })
	return out, nil
}

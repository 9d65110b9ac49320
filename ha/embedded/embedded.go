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

// Services is one client of an in-memory HA backend: New makes the backend and its first
// client, NewClient more clients over the same backend (several JobManagers of one cluster in one
// process, as the HA conformance suite's shared cases run them). The clients share the stores,
// the checkpoints and the elections: each component (the Dispatcher, the ResourceManager, each
// job's JobMaster) has one election across all clients, granted at once to its first contender
// on any client, the next one waiting; no write is ever refused (no leadership fences a store
// here). Each client hands out its own Election handles and retrievals: closing a handle, or the
// client, removes only the contenders and listeners started through it (its leader is revoked
// and the next contender, maybe another client's, granted).
//
// Leadership and retrieval callbacks of every client run on one goroutine the backend owns, in
// the order they were caused, so callbacks to one contender never overlap. It runs while any
// client is open: the Close of the last open client delivers what is pending and ends it (a
// client made after that starts a new one). Safe for concurrent use.
type Services struct {
	b *backend

	// Guarded by b.mu.
	closed          bool
	dispatcher      *Election
	resourceManager *Election
	jobs            map[jobgraph.JobID]*Election // this client's JobMaster handles, until closed
}

// backend is what the clients of one in-memory cluster share.
type backend struct {
	plans       *planStore
	results     *resultStore
	checkpoints *checkpoint.StandaloneCheckpointRecoveryFactory

	mu   sync.Mutex
	loop *mainloop.Loop // nil once every client closed
	open int            // clients not closed
	// The cluster's two elections, and the JobMaster election of each job someone contends for
	// or follows (dropped once nobody does, so the map does not grow with every job ever run).
	dispatcher      *election
	resourceManager *election
	elections       map[jobgraph.JobID]*election
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
	b := &backend{
		plans: &planStore{plans: make(map[jobgraph.JobID]*jobgraph.JobGraph)},
		results: &resultStore{entries: make(map[jobgraph.JobID]storedResult), max: o.MaxCleanResults,
			clean: list.New()},
		checkpoints:     checkpoint.NewStandaloneCheckpointRecoveryFactory(),
		dispatcher:      &election{},
		resourceManager: &election{},
		elections:       make(map[jobgraph.JobID]*election),
	}
	return b.newClient(), nil
}

// NewClient returns another client of s's backend: it shares s's stores, checkpoints and
// elections, and has its own election handles and retrievals (see Services). s may be closed
// already. Close the new client on its own.
func (s *Services) NewClient() *Services { return s.b.newClient() }

func (b *backend) newClient() *Services {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.loop == nil {
		b.loop = mainloop.New("ha-embedded")
	}
	b.open++
	c := &Services{b: b, jobs: make(map[jobgraph.JobID]*Election)}
	c.dispatcher = &Election{client: c, kind: dispatcherKind}
	c.resourceManager = &Election{client: c, kind: resourceManagerKind}
	return c
}

// post runs fn on the callback goroutine; b.mu held. Nothing runs once every client closed.
func (b *backend) post(fn func()) {
	if b.loop != nil {
		b.loop.Execute(fn)
	}
}

// JobMasterLeaderElection returns a new handle of the job's election for one contender (one
// JobMaster runner): it leads if nobody does, and the handle's Close removes only that
// contender, so the runner of the next leader session of the job (a Dispatcher that lost and
// regained leadership, a standby client's) started while the old one still closes is granted
// once the old one left. A closed handle takes no contender.
func (s *Services) JobMasterLeaderElection(job jobgraph.JobID) ha.LeaderElection {
	return &Election{client: s, kind: jobMasterKind, job: job, single: true}
}

// JobMasterElection is this client's handle of the job's election with the concrete type (the
// same one every call until it is closed), for tests that revoke or re-grant leadership or
// start contenders themselves; its Close removes every contender started through it.
func (s *Services) JobMasterElection(job jobgraph.JobID) *Election {
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	e, ok := s.jobs[job]
	if !ok {
		e = &Election{client: s, kind: jobMasterKind, job: job}
		s.jobs[job] = e
	}
	return e
}

// JobMasterLeaderRetrieval follows the job's election.
func (s *Services) JobMasterLeaderRetrieval(job jobgraph.JobID) ha.LeaderRetrieval {
	return &retrieval{client: s, kind: jobMasterKind, job: job}
}

// DispatcherLeaderElection returns a new handle of the cluster's Dispatcher election for one
// contender: it leads if nobody does, and the handle's Close removes only that contender, so a
// standby started on another handle (a second Dispatcher runner of the process, or of another
// client) is granted leadership next. A closed handle takes no contender.
func (s *Services) DispatcherLeaderElection() ha.LeaderElection {
	return &Election{client: s, kind: dispatcherKind, single: true}
}

// DispatcherElection is this client's handle of the Dispatcher election with the concrete type
// (the same one every call), for tests that revoke or re-grant the Dispatcher's leadership.
func (s *Services) DispatcherElection() *Election { return s.dispatcher }

// DispatcherLeaderRetrieval follows the Dispatcher's election.
func (s *Services) DispatcherLeaderRetrieval() ha.LeaderRetrieval {
	return &retrieval{client: s, kind: dispatcherKind}
}

// ResourceManagerLeaderElection returns a new handle of the cluster's ResourceManager election
// for one contender, as DispatcherLeaderElection does.
func (s *Services) ResourceManagerLeaderElection() ha.LeaderElection {
	return &Election{client: s, kind: resourceManagerKind, single: true}
}

// ResourceManagerElection is this client's handle of the ResourceManager election with the
// concrete type (the same one every call), for tests that revoke or re-grant its leadership.
func (s *Services) ResourceManagerElection() *Election { return s.resourceManager }

// ResourceManagerLeaderRetrieval follows the ResourceManager's election.
func (s *Services) ResourceManagerLeaderRetrieval() ha.LeaderRetrieval {
	return &retrieval{client: s, kind: resourceManagerKind}
}

// CheckpointRecoveryFactory returns the in-memory factory, shared by every client, that keeps
// every job's checkpoints and counter for the backend's life
// (checkpoint.StandaloneCheckpointRecoveryFactory).
func (s *Services) CheckpointRecoveryFactory() checkpoint.CheckpointRecoveryFactory {
	return s.b.checkpoints
}

// CleanupJobData implements ha.Services: an election forgets itself once unused, so there is
// nothing more to remove.
func (s *Services) CleanupJobData(ctx context.Context, job jobgraph.JobID) error { return nil }

func (s *Services) ExecutionPlanStore() ha.ExecutionPlanStore { return s.b.plans }
func (s *Services) JobResultStore() ha.JobResultStore         { return s.b.results }

// Close closes this client: every contender started through its election handles is removed (a
// leader among them revoked, the next contender granted) and every listener of its retrievals
// stopped. The stores keep their data for the other clients. The Close of the last open client
// delivers the pending callbacks and ends the callback goroutine. Closing twice is harmless.
func (s *Services) Close() error {
	b := s.b
	b.mu.Lock()
	if s.closed {
		b.mu.Unlock()
		return nil
	}
	s.closed = true
	b.dispatcher.removeLocked(b, func(o *Election) bool { return o.client == s }, s)
	b.resourceManager.removeLocked(b, func(o *Election) bool { return o.client == s }, s)
	for _, e := range b.elections {
		e.removeLocked(b, func(o *Election) bool { return o.client == s }, s)
	}
	clear(s.jobs)
	b.open--
	var last *mainloop.Loop
	if b.open == 0 {
		last, b.loop = b.loop, nil
	}
	b.mu.Unlock()
	if last != nil {
		last.Close() // outside b.mu: a callback may call into the Services
	}
	return nil
}

type electionKind uint8

const (
	dispatcherKind electionKind = iota
	resourceManagerKind
	jobMasterKind
)

// electionLocked returns the shared election of kind (and job); b.mu held. A job's election is
// made if create, else nil when nobody uses it.
func (b *backend) electionLocked(kind electionKind, job jobgraph.JobID, create bool) *election {
	switch kind {
	case dispatcherKind:
		return b.dispatcher
	case resourceManagerKind:
		return b.resourceManager
	}
	e := b.elections[job]
	if e == nil && create {
		e = &election{job: job, isJob: true}
		b.elections[job] = e
	}
	return e
}

// Election is one client's handle of an in-memory leader election (the Dispatcher's, the
// ResourceManager's or a job's JobMaster election, shared by every client of the backend). The
// first contender is granted leadership at once with a new session; later contenders, of any
// client, wait in the order they started. Close removes the contenders started through this
// handle only, so a contender started after Close — or another handle's — leads next. The
// handles DispatcherLeaderElection, ResourceManagerLeaderElection and JobMasterLeaderElection
// return take one contender and none after Close; the test hooks' (DispatcherElection,
// ResourceManagerElection, JobMasterElection) take several.
type Election struct {
	client *Services
	kind   electionKind
	job    jobgraph.JobID // of a JobMaster election

	// Of a handle for one contender; started and closed guarded by client.b.mu.
	single, started, closed bool
}

// election is the state of one election, shared by every client; guarded by backend.mu.
type election struct {
	job   jobgraph.JobID
	isJob bool

	contenders []contenderEntry // in start order; the leader, if any, is contenders[0]
	leader     ha.LeaderContender
	session    ha.SessionID // current leader session; zero when nobody leads
	address    string       // confirmed address of the current session
	confirmed  bool
	listeners  []*retrieval
}

// contenderEntry is a started contender and the handle it was started through.
type contenderEntry struct {
	handle    *Election
	contender ha.LeaderContender
}

// Start adds contender; it is granted leadership at once if nobody leads. Errors: the contender
// was started on this election already (through any client), or the client is closed.
func (e *Election) Start(contender ha.LeaderContender) error {
	b := e.client.b
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case e.client.closed:
		return fmt.Errorf("ha/embedded: Start on a closed Services")
	case e.single && e.closed:
		return fmt.Errorf("ha/embedded: Start on a closed election")
	case e.single && e.started:
		return fmt.Errorf("ha/embedded: a second contender started on one election handle")
	}
	st := b.electionLocked(e.kind, e.job, true)
	if slices.ContainsFunc(st.contenders, func(c contenderEntry) bool { return c.contender == contender }) {
		return fmt.Errorf("ha/embedded: contender started twice")
	}
	st.contenders = append(st.contenders, contenderEntry{e, contender})
	e.started = true
	if e.kind == jobMasterKind && !e.single && e.client.jobs[e.job] == nil {
		e.client.jobs[e.job] = e // a test hook's handle started again after its Close
	}
	if st.leader == nil {
		st.grantLocked(b)
	}
	return nil
}

func (st *election) grantLocked(b *backend) {
	if len(st.contenders) == 0 {
		return
	}
	st.leader = st.contenders[0].contender
	st.session = ha.NewSessionID()
	st.confirmed = false
	c, s := st.leader, st.session
	b.post(func() { c.GrantLeadership(s) })
}

// ConfirmLeadership publishes address for session if it is the current one.
func (e *Election) ConfirmLeadership(session ha.SessionID, address string) {
	b := e.client.b
	b.mu.Lock()
	defer b.mu.Unlock()
	st := b.electionLocked(e.kind, e.job, false)
	if st == nil || st.leader == nil || session != st.session {
		return
	}
	st.address, st.confirmed = address, true
	st.notifyLocked(b)
}

func (st *election) notifyLocked(b *backend) {
	addr, s := "", ha.SessionID{}
	if st.confirmed {
		addr, s = st.address, st.session
	}
	for _, r := range st.listeners {
		l := r.listener
		b.post(func() { l.NotifyLeaderAddress(addr, s) })
	}
}

// HasLeadership reports whether session is the election's current leader session.
func (e *Election) HasLeadership(session ha.SessionID) bool {
	b := e.client.b
	b.mu.Lock()
	defer b.mu.Unlock()
	st := b.electionLocked(e.kind, e.job, false)
	return st != nil && st.leader != nil && session == st.session
}

// Close removes every contender started through this handle; a leader among them is revoked and
// the next waiting contender granted. A JobMaster election's handle is dropped by its client, so
// the next JobMasterElection call returns a new one.
func (e *Election) Close() error {
	b := e.client.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if st := b.electionLocked(e.kind, e.job, false); st != nil {
		st.removeLocked(b, func(o *Election) bool { return o == e }, nil)
	}
	if e.kind == jobMasterKind && e.client.jobs[e.job] == e {
		delete(e.client.jobs, e.job)
	}
	e.closed = true
	return nil
}

// removeLocked removes the contenders whose handle is matched by drop and, if of is not nil, the
// listeners of of's retrievals; a removed leader is revoked and the next contender granted. A
// job's election nobody uses any more is dropped.
func (st *election) removeLocked(b *backend, drop func(*Election) bool, of *Services) {
	leaderDropped := st.leader != nil && drop(st.contenders[0].handle)
	st.contenders = slices.DeleteFunc(st.contenders, func(c contenderEntry) bool { return drop(c.handle) })
	if of != nil {
		st.listeners = slices.DeleteFunc(st.listeners, func(r *retrieval) bool { return r.client == of })
	}
	if leaderDropped {
		st.revokeLocked(b)
		st.grantLocked(b)
	}
	st.forgetIfUnusedLocked(b)
}

// forgetIfUnusedLocked drops a job's election once it has no contender and no listener left; a
// later call for the same job starts a fresh election.
func (st *election) forgetIfUnusedLocked(b *backend) {
	if st.isJob && len(st.contenders) == 0 && len(st.listeners) == 0 && b.elections[st.job] == st {
		delete(b.elections, st.job)
	}
}

// Revoke takes leadership from the election's current leader (of whichever client) and grants it
// again to the first waiting contender — the same one, it being first — with a new session. It
// simulates a leader change in tests.
func (e *Election) Revoke() {
	b := e.client.b
	b.mu.Lock()
	defer b.mu.Unlock()
	st := b.electionLocked(e.kind, e.job, false)
	if st == nil {
		return
	}
	st.revokeLocked(b)
	st.grantLocked(b)
}

// RevokeAll is a test hook: it revokes every election this client's contenders lead (the
// Dispatcher's, the ResourceManager's, each job's JobMaster election) and grants each again at
// once, with a new session, to its first contender — the one just revoked — as Election.Revoke
// does for one election. It simulates the client's process losing and regaining leadership of
// everything it leads; the other clients' leaders keep theirs. Callbacks are delivered on the
// backend's callback goroutine (each revocation before its grant); RevokeAll does not wait for
// them. A closed client leads nothing, so RevokeAll on it does nothing. Safe for concurrent use.
func (s *Services) RevokeAll() {
	b := s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	all := []*election{b.dispatcher, b.resourceManager}
	jobs := slices.Collect(maps.Values(b.elections))
	// In a fixed order (by JobID), so the callbacks of a run are reproducible.
	slices.SortFunc(jobs, func(x, y *election) int { return slices.Compare(x.job[:], y.job[:]) })
	for _, st := range append(all, jobs...) {
		if st.leader != nil && st.contenders[0].handle.client == s {
			st.revokeLocked(b)
			st.grantLocked(b)
		}
	}
}

func (st *election) revokeLocked(b *backend) {
	if st.leader == nil {
		return
	}
	c := st.leader
	st.leader, st.session, st.confirmed, st.address = nil, ha.SessionID{}, false, ""
	b.post(c.RevokeLeadership)
	st.notifyLocked(b)
}

// retrieval is one LeaderRetrieval of a client.
type retrieval struct {
	client   *Services
	kind     electionKind
	job      jobgraph.JobID
	listener ha.LeaderRetrievalListener
}

// Start adds listener; it learns the confirmed leader at once if there is one. An error once the
// client is closed or if the retrieval was started already.
func (r *retrieval) Start(listener ha.LeaderRetrievalListener) error {
	b := r.client.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if r.client.closed {
		return fmt.Errorf("ha/embedded: LeaderRetrieval.Start on a closed Services")
	}
	if r.listener != nil {
		return fmt.Errorf("ha/embedded: LeaderRetrieval started twice")
	}
	st := b.electionLocked(r.kind, r.job, true)
	r.listener = listener
	st.listeners = append(st.listeners, r)
	if st.confirmed {
		addr, s := st.address, st.session
		b.post(func() { listener.NotifyLeaderAddress(addr, s) })
	}
	return nil
}

// Stop removes the listener; nothing more is delivered to it that Stop did not precede.
func (r *retrieval) Stop() error {
	b := r.client.b
	b.mu.Lock()
	defer b.mu.Unlock()
	st := b.electionLocked(r.kind, r.job, false)
	if st == nil {
		r.listener = nil
		return nil
	}
	if i := slices.Index(st.listeners, r); i >= 0 {
		st.listeners = slices.Delete(st.listeners, i, i+1)
	}
	r.listener = nil // it may be started again
	st.forgetIfUnusedLocked(b)
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

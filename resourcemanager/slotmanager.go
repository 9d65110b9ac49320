package resourcemanager

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/rpc"
)

// SlotRequest is one slot the slot manager wants allocated: the TaskExecutor owning Slot is to
// allocate it for Job under Allocation and offer it to the JobMaster at JobMasterAddress, fenced by
// JobMasterID. Profile is the requirement the slot serves (not the slot's own profile), as Flink
// passes it to TaskExecutorGateway.requestSlot.
type SlotRequest struct {
	Slot             rpc.SlotID
	Job              jobgraph.JobID
	Allocation       jobgraph.AllocationID
	Profile          jobgraph.ResourceProfile
	JobMasterAddress string
	JobMasterID      jobgraph.JobMasterID
}

// SlotAllocator carries out the slot manager's side effects. RequestSlot is called on the slot
// manager's goroutine and must not block: it starts the request and later reports its outcome
// with SlotManager.CompleteAllocation, on the same goroutine as every other SlotManager call.
type SlotAllocator interface {
	RequestSlot(req SlotRequest)
}

// SlotAllocatorFunc adapts a function to SlotAllocator.
type SlotAllocatorFunc func(req SlotRequest)

// RequestSlot calls f(req).
func (f SlotAllocatorFunc) RequestSlot(req SlotRequest) { f(req) }

// DefaultRequirementCheckDelay is the default of slotmanager.requirement-check.delay (Flink's
// ResourceManagerOptions.REQUIREMENTS_CHECK_DELAY): see SlotManagerConfig.RequirementCheckDelay.
const DefaultRequirementCheckDelay = 50 * time.Millisecond

// Timers runs fn on the slot manager's goroutine d from now; cancel stops it if it has not run yet
// and reports whether it did. The ResourceManager passes its main loop (mainloop.Loop.Schedule).
type Timers interface {
	Schedule(d time.Duration, fn func()) (cancel func() bool)
}

// SlotManagerConfig configures a SlotManager made by NewSlotManagerWithConfig.
type SlotManagerConfig struct {
	// Allocator carries out the slot requests. Required.
	Allocator SlotAllocator
	// Logger receives the slot manager's logs; nil means slog.Default().
	Logger *slog.Logger
	// RequirementCheckDelay is the least time between two rounds of slot requests for one job
	// that loses slots: a job that was sent slot requests less than this long ago and loses a
	// slot it was sent since its JobMaster's last declaration (its JobMaster declined the offer
	// and the TaskExecutor freed it, say, or its TaskExecutor is gone; not a slot a slot report
	// gave it) is matched again once the delay since its last round has passed, by
	// one timer shared by all such jobs, unless its JobMaster declares its requirements again
	// first (that is new information, not a repeat: it is matched at once); every other match is
	// made at once. Option
	// slotmanager.requirement-check.delay, default 50 ms; zero means the default. A negative
	// value never holds a job back, as Flink does for a delay of 0 or less.
	//
	// The delay is what keeps a ResourceManager and a JobMaster that disagree from spinning: a
	// JobMaster that still counts a lost TaskExecutor's slots declines every slot offered to it,
	// the TaskExecutor frees the slot, and a slot manager matching at once requests it again at
	// the same instant, without end. With the delay each such round takes one delay of time.
	//
	// Where we differ: Flink's FineGrainedSlotManager and DeclarativeSlotManager
	// (checkResourceRequirementsWithDelay) delay every check by the delay, for every job. That
	// bounds the rounds too, but caps a cluster that hands a slot from one job to the next at one
	// job per delay (20 jobs/s for jobs run one after another, or a backlog draining through one
	// slot); holding back only the job that was just served keeps a new job's first slots, and a
	// freed slot's next job, at once.
	RequirementCheckDelay time.Duration
	// Timers runs the release of held-back jobs; required unless RequirementCheckDelay is
	// negative.
	Timers Timers
	// IsBlockedTaskExecutor, if set, names the TaskExecutors whose free slots are not matched
	// (blocklisted: see ResourceManager.AddNewBlockedNodes); their pending and allocated slots
	// are left alone. Whoever unblocks one calls CheckResourceRequirements. Flink:
	// BlockedTaskManagerChecker.isBlockedTaskManager.
	IsBlockedTaskExecutor func(jobgraph.ResourceID) bool
	// Now reads the clock the delay is measured on; nil means time.Now.
	Now func() time.Time
}

// JobMasterInfo is what the slot manager knows of a job's JobMaster: its fencing token, its
// ResourceID and the address slots are offered at.
type JobMasterInfo struct {
	ID         jobgraph.JobMasterID
	ResourceID jobgraph.ResourceID
	Address    string
}

// SlotState is the slot manager's view of one TaskExecutor slot. Flink: SlotState.
type SlotState int

const (
	// SlotFree: nobody holds the slot; it can be requested.
	SlotFree SlotState = iota
	// SlotPending: the slot manager asked the TaskExecutor for it and awaits the answer.
	SlotPending
	// SlotAllocated: the TaskExecutor confirmed the allocation, or reported it.
	SlotAllocated
)

func (s SlotState) String() string {
	switch s {
	case SlotFree:
		return "FREE"
	case SlotPending:
		return "PENDING"
	case SlotAllocated:
		return "ALLOCATED"
	}
	return fmt.Sprintf("SlotState(%d)", int(s))
}

// SlotInfo describes one tracked slot (see SlotManager.Slots).
type SlotInfo struct {
	SlotID  rpc.SlotID
	Profile jobgraph.ResourceProfile
	State   SlotState
	// Job and Allocation are zero for a free slot. A slot learned from a slot report may have a
	// zero Allocation.
	Job        jobgraph.JobID
	Allocation jobgraph.AllocationID
}

type slot struct {
	SlotInfo
	te *taskExecutor
	// round is the job's round of requests (job.servedSeq) that requested the slot; 0 while free,
	// and for a slot a slot report gave the job. Only losing a slot sent after the JobMaster's
	// last declaration can hold the job back: a slot a stale report restored and a fresh one
	// frees again is the view being corrected, not a declined offer.
	round uint64
	// changed is SlotManager.changes when the slot manager last moved the slot on its own
	// knowledge: requested it, or heard its TaskExecutor answer the request or free it. A slot
	// changed after its TaskExecutor's last report was applied (taskExecutor.reported) is
	// contested: the next report may have been taken before that change (see reconcile).
	changed uint64
}

type taskExecutor struct {
	id    jobgraph.ResourceID
	slots []*slot // by SlotNumber
	byNum map[int]*slot
	// reported is SlotManager.changes when the TaskExecutor's last slot report (or its
	// registration's) was applied.
	reported uint64
}

type job struct {
	id           jobgraph.JobID
	jobMaster    JobMasterInfo
	target       string                    // where slots are offered: the declared TargetAddress, else jobMaster.Address
	requirements []rpc.ResourceRequirement // normalized
	seq          uint64                    // registration order
	lack         []int                     // per requirement line, the slots it still lacks (missing)
	// served is when the job was last sent slot requests (zero: never, or not since its
	// JobMaster changed). heldUntil is nonzero while the job lacks slots but is held back until
	// then (served + the requirement-check delay); a held job waits in no queue.
	served, heldUntil time.Time
	// servedSeq and declaredSeq order the job's last round of requests and its JobMaster's last
	// declaration (SlotManager.events): a declaration after the round is the JobMaster's answer
	// to what changed, and its next round is no mere repeat.
	servedSeq, declaredSeq uint64
	listed                 bool // in SlotManager.held
	lostSlot               bool // a slot it was sent was just taken from it; the next refresh decides on a hold
	// waiting holds the job's entry in the wait queue of each requirement profile it lacks.
	waiting map[jobgraph.ResourceProfile]*waitEntry
}

// SlotManager matches the resource requirements jobs declare with the slots of registered
// TaskExecutors and asks, through its SlotAllocator, for each matched slot to be allocated to its
// job. It is Flink's DeclarativeSlotManager (with DefaultSlotTracker and DefaultResourceTracker)
// for a fixed set of TaskExecutors: it never starts new workers.
//
// A SlotManager is a plain state machine: no locks, no goroutines, no I/O. Drive it from one
// goroutine (the ResourceManager's main loop); its one timer, which releases the jobs held back by
// the requirement-check delay, fires there too (SlotManagerConfig.Timers). Every call that can
// make a slot free or a requirement unmet runs the matching again (CheckResourceRequirements),
// except CompleteAllocation, whose caller decides when to retry.
//
// A slot event costs the same however many jobs wait: jobs that lack slots wait in one queue per
// requirement profile, ordered by registration, and a matching round only looks at the head of
// each queue whose profile a free slot can serve (Flink's DefaultResourceTracker scans every job
// instead).
//
// Matching is deterministic: jobs in registration order; each job's requirements in
// compareProfiles order (specific profiles, larger first, UNKNOWN last); for each missing slot the
// first free slot whose profile equals the requirement's, else the first free slot whose profile
// IsMatching it, TaskExecutors in registration order and slots by SlotNumber. A job's slots that
// are pending or allocated count towards its requirements; requirements going down never take a
// slot back (the JobMaster frees what it does not need).
type SlotManager struct {
	allocator SlotAllocator
	log       *slog.Logger
	isBlocked func(jobgraph.ResourceID) bool // nil: none is

	checkDelay time.Duration // < 0: no job is held back
	timers     Timers
	now        func() time.Time
	held       []*job    // jobs held back by the delay (some may have been released since)
	events     uint64    // counts rounds and declarations, for job.servedSeq and declaredSeq
	changes    uint64    // counts the slot changes of requests, their answers and freed-slot notices (slot.changed)
	releaseAt  time.Time // when the release timer fires; zero when none is scheduled
	cancelTime func() bool
	// spare is the free pool of the last matching round, kept for the next one with its map
	// and slices; nil while a round uses it.
	spare *freePool

	taskExecutors []*taskExecutor // registration order
	teByID        map[jobgraph.ResourceID]*taskExecutor

	jobByID  map[jobgraph.JobID]*job
	nextSeq  uint64
	waiting  map[jobgraph.ResourceProfile]*waitQueue             // jobs lacking slots of a requirement profile
	acquired map[jobgraph.JobID]map[jobgraph.ResourceProfile]int // pending+allocated slots by slot profile

	numSlots, numPending, numAllocated int
}

// NewSlotManager returns an empty slot manager that requests slots through allocator and never
// holds a job back, with no timer: NewSlotManagerWithConfig with a negative
// RequirementCheckDelay, for driving the matching core by hand. A nil logger means
// slog.Default().
func NewSlotManager(allocator SlotAllocator, logger *slog.Logger) *SlotManager {
	return newSlotManager(SlotManagerConfig{Allocator: allocator, Logger: logger, RequirementCheckDelay: -1})
}

// NewSlotManagerWithConfig returns an empty slot manager. It fails without cfg.Allocator, and
// without cfg.Timers unless cfg.RequirementCheckDelay is negative.
func NewSlotManagerWithConfig(cfg SlotManagerConfig) (*SlotManager, error) {
	if cfg.Allocator == nil {
		return nil, errors.New("resourcemanager: SlotManagerConfig.Allocator is required")
	}
	if cfg.RequirementCheckDelay == 0 {
		cfg.RequirementCheckDelay = DefaultRequirementCheckDelay
	}
	if cfg.RequirementCheckDelay > 0 && cfg.Timers == nil {
		return nil, errors.New("resourcemanager: SlotManagerConfig.Timers is required for a requirement-check delay (slotmanager.requirement-check.delay)")
	}
	return newSlotManager(cfg), nil
}

func newSlotManager(cfg SlotManagerConfig) *SlotManager {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &SlotManager{
		allocator:  cfg.Allocator,
		log:        cfg.Logger,
		isBlocked:  cfg.IsBlockedTaskExecutor,
		checkDelay: cfg.RequirementCheckDelay,
		timers:     cfg.Timers,
		now:        cfg.Now,
		teByID:     make(map[jobgraph.ResourceID]*taskExecutor),
		jobByID:    make(map[jobgraph.JobID]*job),
		waiting:    make(map[jobgraph.ResourceProfile]*waitQueue),
		acquired:   make(map[jobgraph.JobID]map[jobgraph.ResourceProfile]int),
	}
}

// Suspend forgets every TaskExecutor, slot, job and requirement and cancels the release timer
// of held-back jobs: what a ResourceManager that lost leadership does, so the next leader session
// starts from what its TaskExecutors and JobMasters register and report afresh. Answers to slot
// requests made before are ignored afterwards (CompleteAllocation finds no pending slot). The
// SlotManager may be used again at once. Flink: DeclarativeSlotManager.suspend.
func (m *SlotManager) Suspend() {
	if m.cancelTime != nil {
		m.cancelTime()
	}
	m.held, m.releaseAt, m.cancelTime = nil, time.Time{}, nil
	m.taskExecutors = nil
	m.teByID = make(map[jobgraph.ResourceID]*taskExecutor)
	m.jobByID = make(map[jobgraph.JobID]*job)
	m.waiting = make(map[jobgraph.ResourceProfile]*waitQueue)
	m.acquired = make(map[jobgraph.JobID]map[jobgraph.ResourceProfile]int)
	m.numSlots, m.numPending, m.numAllocated = 0, 0, 0
}

// ---------------------------------------------------------------------------------------------
// TaskExecutors and their slots

// RegisterTaskExecutor adds a TaskExecutor with the slots of its initial report and matches
// requirements against them. If the TaskExecutor is registered already, the report is applied as
// by ReportSlotStatus and RegisterTaskExecutor returns false.
func (m *SlotManager) RegisterTaskExecutor(id jobgraph.ResourceID, report rpc.SlotReport) bool {
	if te, ok := m.teByID[id]; ok {
		m.log.Debug("TaskExecutor was already registered; applying its slot report", "taskExecutor", id)
		m.applyReport(te, report)
		m.CheckResourceRequirements()
		return false
	}
	te := &taskExecutor{id: id, byNum: make(map[int]*slot)}
	m.taskExecutors = append(m.taskExecutors, te)
	m.teByID[id] = te
	m.applyReport(te, report)
	m.CheckResourceRequirements()
	return true
}

// UnregisterTaskExecutor removes a TaskExecutor and all its slots. The requirements its pending
// and allocated slots served become unmet again and are matched with other slots at once (after
// the requirement-check delay for a job served less than that long ago). It
// returns false for an unknown TaskExecutor.
func (m *SlotManager) UnregisterTaskExecutor(id jobgraph.ResourceID) bool {
	te, ok := m.teByID[id]
	if !ok {
		return false
	}
	for _, s := range te.slots {
		m.removeSlot(s)
	}
	delete(m.teByID, id)
	m.taskExecutors = slices.DeleteFunc(m.taskExecutors, func(x *taskExecutor) bool { return x == te })
	m.log.Debug("unregistered TaskExecutor", "taskExecutor", id)
	m.CheckResourceRequirements()
	return true
}

// ReportSlotStatus replaces the view of a TaskExecutor's slots with its report, the source of
// truth: reported slots not known yet are added, known slots not reported are removed, and each
// slot's state follows the report, except that a slot reported free while a request for it is
// still pending stays pending (the TaskExecutor has not seen the request yet; its answer will
// settle the slot), and that a slot requested, answered or freed (FreeSlot) since the
// TaskExecutor's previous report was applied keeps its state unless the report confirms its
// pending request (the report may predate that change: see reconcile). The caller must apply a
// TaskExecutor's reports in the order it took them, each taken after the previous one was
// applied, as the TaskExecutor's heartbeats do. It returns false, changing nothing, for an
// unknown TaskExecutor.
func (m *SlotManager) ReportSlotStatus(id jobgraph.ResourceID, report rpc.SlotReport) bool {
	te, ok := m.teByID[id]
	if !ok {
		return false
	}
	m.applyReport(te, report)
	m.CheckResourceRequirements()
	return true
}

// FreeSlot marks a slot free again after its TaskExecutor freed allocation in it (Flink:
// ResourceManagerGateway.notifySlotAvailable) and matches requirements again. It changes nothing,
// and returns false, when the slot is unknown, already free, or now belongs to another
// allocation (the notice is stale). A zero allocation frees an allocated slot whatever its
// allocation, but never a pending one.
func (m *SlotManager) FreeSlot(id rpc.SlotID, allocation jobgraph.AllocationID) bool {
	s := m.slot(id)
	if s == nil || s.State == SlotFree {
		return false
	}
	same := allocation == s.Allocation
	if s.State == SlotAllocated && (allocation.IsZero() || s.Allocation.IsZero()) {
		same = true
	}
	if !same {
		m.log.Debug("ignoring stale slot-available notice", "slot", id, "allocation", allocation, "current", s.Allocation)
		return false
	}
	if m.log.Enabled(context.Background(), slog.LevelDebug) { // no arguments made unless logged
		m.log.Debug("slot freed", "slot", id, "job", s.Job, "allocation", s.Allocation)
	}
	m.release(s)
	m.touch(s)
	m.CheckResourceRequirements()
	return true
}

// CompleteAllocation records the answer to a SlotRequest: on success the pending slot becomes
// allocated; on failure it is free again. Answers for slots no longer pending under that
// allocation (freed, removed, or settled by a slot report meanwhile) are ignored. It reports
// whether a failure freed the slot: the caller should then run CheckResourceRequirements again
// (the job is not held back by the requirement-check delay for that request)
// (Flink checks again with the requirement-check delay; the ResourceManager waits
// Config.SlotRequestRetryDelay).
func (m *SlotManager) CompleteAllocation(id rpc.SlotID, allocation jobgraph.AllocationID, err error) (retry bool) {
	s := m.slot(id)
	if s == nil || s.State != SlotPending || s.Allocation != allocation {
		m.log.Debug("ignoring answer to an outdated slot request", "slot", id, "allocation", allocation, "error", err)
		return false
	}
	m.touch(s)
	if err == nil {
		s.State = SlotAllocated
		m.numPending--
		m.numAllocated++
		if m.log.Enabled(context.Background(), slog.LevelDebug) { // no arguments made unless logged
			m.log.Debug("slot allocated", "slot", id, "job", s.Job, "allocation", allocation)
		}
		return false
	}
	m.log.Warn("slot request failed", "slot", id, "job", s.Job, "allocation", allocation, "error", err)
	if j, ok := m.jobByID[s.Job]; ok {
		// Not held back by the requirement-check delay: the caller's retry decides when it is
		// matched again (or any event before that, as for a job never served).
		j.served = time.Time{}
	}
	m.release(s)
	return true
}

// ---------------------------------------------------------------------------------------------
// Jobs and their requirements

// RegisterJob records the JobMaster of job. A job registered for the first time is appended to
// the matching order. A registration with another JobMasterID replaces the earlier JobMaster (a
// new leader) and clears the job's requirements until the new one declares its own; the job keeps
// its place in the order and the slots it holds.
func (m *SlotManager) RegisterJob(id jobgraph.JobID, jm JobMasterInfo) {
	j, ok := m.jobByID[id]
	if !ok {
		m.nextSeq++
		j = &job{id: id, jobMaster: jm, target: jm.Address, seq: m.nextSeq}
		m.jobByID[id] = j
		return
	}
	if j.jobMaster.ID != jm.ID || j.target == j.jobMaster.Address {
		j.target = jm.Address
	}
	if j.jobMaster.ID != jm.ID {
		j.requirements = nil
		j.served = time.Time{} // the new leader's first requests are no second round
		m.refresh(j)
	}
	j.jobMaster = jm
}

// JobMaster returns what RegisterJob recorded for job.
func (m *SlotManager) JobMaster(id jobgraph.JobID) (JobMasterInfo, bool) {
	j, ok := m.jobByID[id]
	if !ok {
		return JobMasterInfo{}, false
	}
	return j.jobMaster, true
}

// UnregisterJob clears job's requirements and forgets its JobMaster. Its pending and allocated
// slots stay with it until the TaskExecutors free them, as in Flink. It returns false for an
// unknown job.
func (m *SlotManager) UnregisterJob(id jobgraph.JobID) bool {
	j, ok := m.jobByID[id]
	if !ok {
		return false
	}
	delete(m.jobByID, id)
	j.requirements = nil
	m.refresh(j)
	return true
}

// DeclareRequirements replaces the requirements of a registered job and matches them. Lines of the
// same profile add up; lines of count 0 are dropped. targetAddress, when not empty, is where the
// job's slots are offered from now on (Flink takes it from ResourceRequirements); otherwise the
// registered JobMaster address is used. Errors: ErrJobNotRegistered, ErrInvalidRequirements.
func (m *SlotManager) DeclareRequirements(id jobgraph.JobID, reqs []rpc.ResourceRequirement, targetAddress string) error {
	j, ok := m.jobByID[id]
	if !ok {
		return fmt.Errorf("%w: %s", ErrJobNotRegistered, id)
	}
	norm, err := normalizeRequirements(reqs)
	if err != nil {
		return err
	}
	j.requirements = norm
	// The JobMaster's answer: a job held back since its last round is matched at once.
	m.events++
	j.declaredSeq, j.heldUntil = m.events, time.Time{}
	m.refresh(j)
	if targetAddress != "" {
		j.target = targetAddress
	} else {
		j.target = j.jobMaster.Address
	}
	if m.log.Enabled(context.Background(), slog.LevelDebug) { // no arguments made unless logged
		m.log.Debug("resource requirements declared", "job", id, "requirements", norm)
	}
	m.CheckResourceRequirements()
	return nil
}

// Requirements returns job's declared requirements, one line per profile in matching order, or
// nil for an unknown job or one with none.
func (m *SlotManager) Requirements(id jobgraph.JobID) []rpc.ResourceRequirement {
	j, ok := m.jobByID[id]
	if !ok || len(j.requirements) == 0 {
		return nil
	}
	return slices.Clone(j.requirements)
}

// MissingResources returns what job's pending and allocated slots do not cover of its
// requirements, in matching order; nil when nothing is missing.
func (m *SlotManager) MissingResources(id jobgraph.JobID) []rpc.ResourceRequirement {
	j, ok := m.jobByID[id]
	if !ok {
		return nil
	}
	var out []rpc.ResourceRequirement
	for i, n := range j.lack {
		if n > 0 {
			out = append(out, rpc.ResourceRequirement{Profile: j.requirements[i].Profile, Count: n})
		}
	}
	return out
}

// ---------------------------------------------------------------------------------------------
// Matching

// missing returns, per requirement line of j, how many slots it still lacks.
func (m *SlotManager) missing(j *job) []int {
	got := fulfilled(j.requirements, m.acquired[j.id])
	for i, r := range j.requirements {
		got[i] = r.Count - got[i]
	}
	return got
}

// CheckResourceRequirements matches the missing requirements of waiting jobs with free slots
// and requests each match through the SlotAllocator. Requirements no free slot can serve wait for
// the next call; a job held back by the requirement-check delay waits for its release. Its cost
// grows with the free slots, the distinct profiles and the matches made, not with the number of
// waiting jobs. Flink: DeclarativeSlotManager.checkResourceRequirements.
func (m *SlotManager) CheckResourceRequirements() {
	if len(m.waiting) == 0 || m.numSlots == m.numPending+m.numAllocated {
		return
	}
	pool := m.freePool()
	defer func() { m.spare = pool }()
	for {
		j := m.nextServable(pool)
		if j == nil {
			return
		}
		m.serve(j, pool)
	}
}

// hold keeps j out of the wait queues until the requirement-check delay since it was last
// served has passed, when a slot it was sent since its JobMaster's last declaration was just
// taken from it (freed, reported free, or lost with its TaskExecutor; see slot.round) less than
// a delay after it was served and its JobMaster has declared nothing since: the round trip that,
// at once, could repeat without end. A job never served,
// served at least a delay ago, or whose JobMaster declared since, is not held.
func (m *SlotManager) hold(j *job) {
	if m.checkDelay < 0 || j.served.IsZero() || j.declaredSeq > j.servedSeq {
		return
	}
	until := j.served.Add(m.checkDelay)
	if !m.now().Before(until) {
		return
	}
	if !j.listed {
		m.held, j.listed = append(m.held, j), true
	}
	j.heldUntil = until
	if m.releaseAt.IsZero() || until.Before(m.releaseAt) {
		if m.cancelTime != nil {
			m.cancelTime()
		}
		m.releaseAt = until
		m.cancelTime = m.timers.Schedule(until.Sub(m.now()), m.releaseHeld)
	}
}

// isHeld reports whether j is held back now, and forgets a hold whose time has passed.
func (m *SlotManager) isHeld(j *job) bool {
	if j.heldUntil.IsZero() {
		return false
	}
	if !m.now().Before(j.heldUntil) {
		j.heldUntil = time.Time{}
		return false
	}
	return true
}

// releaseHeld runs when the release timer fires: the held jobs whose delay has passed wait in their
// queues again and are matched; the timer is set again for the next one still held.
func (m *SlotManager) releaseHeld() {
	m.releaseAt, m.cancelTime = time.Time{}, nil
	now := m.now()
	var next time.Time
	kept := m.held[:0]
	var due []*job
	for _, j := range m.held {
		switch {
		case j.heldUntil.IsZero() || m.jobByID[j.id] != j:
			j.listed = false // released by a refresh meanwhile, or gone
		case !now.Before(j.heldUntil):
			j.listed = false
			due = append(due, j)
		default:
			kept = append(kept, j)
			if next.IsZero() || j.heldUntil.Before(next) {
				next = j.heldUntil
			}
		}
	}
	clear(m.held[len(kept):])
	m.held = kept
	if !next.IsZero() {
		m.releaseAt = next
		m.cancelTime = m.timers.Schedule(next.Sub(now), m.releaseHeld)
	}
	for _, j := range due {
		m.refresh(j) // back into its queues: its delay has passed
	}
	m.CheckResourceRequirements()
}

// nextServable returns the first job in registration order that lacks a slot some free slot of
// pool can serve, or nil. Only queue heads are looked at: a queue whose head cannot be served
// cannot serve anyone behind it (they lack the same profile).
func (m *SlotManager) nextServable(pool *freePool) *job {
	var next *job
	for profile, q := range m.waiting {
		if h := q.head(); (next == nil || h.seq < next.seq) && pool.has(profile) {
			next = h
		}
	}
	return next
}

// serve gives j, line by line in matching order, as many free slots of pool as each line lacks.
// Each slot taken is requested at once; the job's lack (and its place in the wait queues) follows
// as the slot is occupied. Called only when pool can serve at least one line, so it always takes
// a slot.
func (m *SlotManager) serve(j *job, pool *freePool) {
	if m.checkDelay >= 0 {
		m.events++
		j.served, j.servedSeq = m.now(), m.events
	}
	lack := slices.Clone(j.lack)
	for i, n := range lack {
		profile := j.requirements[i].Profile
		for ; n > 0; n-- {
			s := pool.take(profile)
			if s == nil {
				break
			}
			m.allocate(s, j, profile)
		}
	}
}

// refresh recomputes what j lacks after its requirements or its acquired slots changed, and
// puts it in (or takes it out of) the wait queue of each requirement profile accordingly.
func (m *SlotManager) refresh(j *job) {
	if len(j.requirements) == 0 {
		j.lack = nil
	} else {
		j.lack = m.missing(j)
	}
	lacking := make(map[jobgraph.ResourceProfile]bool, len(j.lack))
	for i, n := range j.lack {
		if n > 0 {
			lacking[j.requirements[i].Profile] = true
		}
	}
	if len(lacking) == 0 {
		j.heldUntil = time.Time{}
	} else {
		if j.lostSlot {
			m.hold(j)
		}
		if m.isHeld(j) {
			clear(lacking) // held back: out of every queue until released
		}
	}
	j.lostSlot = false
	for profile, e := range j.waiting {
		if !lacking[profile] {
			q := m.waiting[profile]
			q.remove(e)
			delete(j.waiting, profile)
			if q.len() == 0 {
				delete(m.waiting, profile)
			}
		}
	}
	for profile := range lacking {
		if _, ok := j.waiting[profile]; ok {
			continue
		}
		q := m.waiting[profile]
		if q == nil {
			q = &waitQueue{}
			m.waiting[profile] = q
		}
		if j.waiting == nil {
			j.waiting = make(map[jobgraph.ResourceProfile]*waitEntry)
		}
		j.waiting[profile] = q.push(j)
	}
}

// refreshJob refreshes the registered job id, if any, after its acquired slots changed.
func (m *SlotManager) refreshJob(id jobgraph.JobID) {
	if j, ok := m.jobByID[id]; ok {
		m.refresh(j)
	}
}

// freePool holds the free slots of one matching round, grouped by profile, each group in
// matching order (TaskExecutor registration order, then SlotNumber). Reused from round to round
// (SlotManager.spare): groups may hold empty groups of profiles no free slot has now.
type freePool struct {
	profiles []jobgraph.ResourceProfile // distinct, with free slots, in compareProfiles order
	groups   map[jobgraph.ResourceProfile][]freeSlot
}

type freeSlot struct {
	s     *slot
	order int
}

// freePool returns the free pool of a new round: the spare one emptied (its slices kept), or a
// new one when a round is under way.
func (m *SlotManager) freePool() *freePool {
	p := m.spare
	m.spare = nil
	if p == nil {
		p = &freePool{groups: make(map[jobgraph.ResourceProfile][]freeSlot)}
	} else {
		for prof, g := range p.groups {
			clear(g) // drop the slot pointers
			p.groups[prof] = g[:0]
		}
		p.profiles = p.profiles[:0]
	}
	order := 0
	for _, te := range m.taskExecutors {
		if m.isBlocked != nil && m.isBlocked(te.id) {
			order += len(te.slots)
			continue
		}
		for _, s := range te.slots {
			order++
			if s.State != SlotFree {
				continue
			}
			if len(p.groups[s.Profile]) == 0 {
				p.profiles = append(p.profiles, s.Profile)
			}
			p.groups[s.Profile] = append(p.groups[s.Profile], freeSlot{s, order})
		}
	}
	slices.SortFunc(p.profiles, compareProfiles)
	return p
}

// has reports whether take(required) would return a slot.
func (p *freePool) has(required jobgraph.ResourceProfile) bool {
	if len(p.groups[required]) > 0 {
		return true
	}
	for _, prof := range p.profiles {
		if len(p.groups[prof]) > 0 && prof.IsMatching(required) {
			return true
		}
	}
	return false
}

// take removes and returns the free slot for a requirement of profile required: the first one of
// exactly that profile, else the first one (in matching order) whose profile IsMatching it; nil if
// none matches.
func (p *freePool) take(required jobgraph.ResourceProfile) *slot {
	best := jobgraph.ResourceProfile{}
	found := false
	if g := p.groups[required]; len(g) > 0 {
		best, found = required, true
	} else {
		bestOrder := 0
		for _, prof := range p.profiles {
			g := p.groups[prof]
			if len(g) == 0 || !prof.IsMatching(required) {
				continue
			}
			if !found || g[0].order < bestOrder {
				best, bestOrder, found = prof, g[0].order, true
			}
		}
	}
	if !found {
		return nil
	}
	g := p.groups[best]
	p.groups[best] = g[1:]
	return g[0].s
}

func (m *SlotManager) allocate(s *slot, j *job, required jobgraph.ResourceProfile) {
	alloc := jobgraph.NewAllocationID()
	m.occupy(s, SlotPending, j.id, alloc)
	s.round = j.servedSeq
	m.touch(s)
	if m.log.Enabled(context.Background(), slog.LevelDebug) { // no arguments made unless logged
		m.log.Debug("requesting slot", "slot", s.SlotID, "job", j.id, "allocation", alloc, "profile", required)
	}
	m.allocator.RequestSlot(SlotRequest{
		Slot:             s.SlotID,
		Job:              j.id,
		Allocation:       alloc,
		Profile:          required,
		JobMasterAddress: j.target,
		JobMasterID:      j.jobMaster.ID,
	})
}

// ---------------------------------------------------------------------------------------------
// Slot bookkeeping

func (m *SlotManager) slot(id rpc.SlotID) *slot {
	te, ok := m.teByID[id.ResourceID]
	if !ok {
		return nil
	}
	return te.byNum[id.SlotNumber]
}

// touch records that the slot manager just moved s on what it asked or was told of s itself (a
// request, its answer, a freed-slot notice), not on a slot report.
func (m *SlotManager) touch(s *slot) {
	m.changes++
	s.changed = m.changes
}

// occupy moves a free slot to state (pending or allocated) for job under allocation.
func (m *SlotManager) occupy(s *slot, state SlotState, id jobgraph.JobID, allocation jobgraph.AllocationID) {
	if s.State != SlotFree || state == SlotFree {
		panic(fmt.Sprintf("resourcemanager: occupy slot %v in state %v as %v", s.SlotID, s.State, state))
	}
	s.State, s.Job, s.Allocation = state, id, allocation
	if state == SlotPending {
		m.numPending++
	} else {
		m.numAllocated++
	}
	a := m.acquired[id]
	if a == nil {
		a = make(map[jobgraph.ResourceProfile]int)
		m.acquired[id] = a
	}
	a[s.Profile]++
	m.refreshJob(id)
}

// release makes a pending or allocated slot free.
func (m *SlotManager) release(s *slot) {
	switch s.State {
	case SlotFree:
		return
	case SlotPending:
		m.numPending--
	case SlotAllocated:
		m.numAllocated--
	}
	a := m.acquired[s.Job]
	if a[s.Profile]--; a[s.Profile] == 0 {
		delete(a, s.Profile)
		if len(a) == 0 {
			delete(m.acquired, s.Job)
		}
	}
	id, round := s.Job, s.round
	s.State, s.Job, s.Allocation, s.round = SlotFree, jobgraph.JobID{}, jobgraph.AllocationID{}, 0
	if j, ok := m.jobByID[id]; ok && round != 0 && round > j.declaredSeq {
		// A slot sent since the JobMaster's last declaration: refresh holds the job back if
		// it now lacks slots.
		j.lostSlot = true
	}
	m.refreshJob(id)
}

func (m *SlotManager) removeSlot(s *slot) {
	m.release(s)
	m.numSlots--
	delete(s.te.byNum, s.SlotID.SlotNumber)
}

// applyReport makes te's slots what report says; see ReportSlotStatus.
func (m *SlotManager) applyReport(te *taskExecutor, report rpc.SlotReport) {
	reported := make(map[int]rpc.SlotStatus, len(report.Slots))
	for _, st := range report.Slots {
		if st.SlotID.ResourceID != "" && st.SlotID.ResourceID != te.id {
			m.log.Warn("slot report names a slot of another TaskExecutor; ignoring it", "taskExecutor", te.id, "slot", st.SlotID)
			continue
		}
		reported[st.SlotID.SlotNumber] = st
	}
	kept := te.slots[:0]
	for _, s := range te.slots {
		if _, ok := reported[s.SlotID.SlotNumber]; ok {
			kept = append(kept, s)
		} else {
			m.removeSlot(s)
		}
	}
	te.slots = kept
	for num, st := range reported {
		s, ok := te.byNum[num]
		if !ok {
			s = &slot{SlotInfo: SlotInfo{SlotID: rpc.SlotID{ResourceID: te.id, SlotNumber: num}, Profile: st.ResourceProfile}, te: te}
			te.byNum[num] = s
			te.slots = append(te.slots, s)
			m.numSlots++
		}
		if s.Profile != st.ResourceProfile {
			// The profile counts towards the job's acquired resources; re-enter the slot under the new one.
			state, id, alloc := s.State, s.Job, s.Allocation
			m.release(s)
			s.Profile = st.ResourceProfile
			if state != SlotFree {
				m.occupy(s, state, id, alloc)
			}
		}
		m.reconcile(s, st, s.changed > te.reported)
	}
	slices.SortFunc(te.slots, func(a, b *slot) int { return a.SlotID.SlotNumber - b.SlotID.SlotNumber })
	te.reported = m.changes
}

// reconcile moves s to the state a slot report gives for it. Flink: SlotStatusStateReconciler.
//
// A contested slot (changed by a request, its answer or a freed-slot notice since the
// TaskExecutor's previous report was applied) keeps its state unless the report confirms its
// pending request: the report may have been taken before that change, since a report, the
// answer to a RequestSlot and a freed-slot notice reach the main loop on goroutines of their
// own, in any order. Applied, such a report would free a slot whose allocation was just
// confirmed (and the next request for it would fail as occupied), or give back to its job a slot
// the TaskExecutor had just freed (and the job would count it, short of a slot, until the next
// report). What the slot manager knows of an uncontested slot is no newer than the report: the
// TaskExecutor takes a report only once its previous one was answered, after the slot manager
// applied it, so all it heard before that happened on the TaskExecutor before the report. The
// next report settles a contested slot if a notice was lost. Flink's DefaultSlotStatusSyncer
// has no such guard; it relies on its RPC system delivering a TaskExecutor's messages in order.
func (m *SlotManager) reconcile(s *slot, st rpc.SlotStatus, contested bool) {
	if contested && !(s.State == SlotPending && s.Job == st.JobID && s.Allocation == st.AllocationID) {
		if (s.Job != st.JobID || s.Allocation != st.AllocationID) && m.log.Enabled(context.Background(), slog.LevelDebug) {
			m.log.Debug("slot report may predate the slot's last change; keeping the slot as it is", "slot", s.SlotID, "state", s.State, "allocation", s.Allocation, "reportedAllocation", st.AllocationID)
		}
		return
	}
	if st.JobID.IsZero() && st.AllocationID.IsZero() { // reported free
		if s.State == SlotAllocated {
			m.release(s)
		}
		// A pending slot stays pending: the TaskExecutor may not have seen the request yet.
		return
	}
	switch s.State {
	case SlotPending:
		if s.Job == st.JobID && s.Allocation == st.AllocationID {
			s.State = SlotAllocated
			m.numPending--
			m.numAllocated++
			return
		}
	case SlotAllocated:
		if s.Job == st.JobID && s.Allocation == st.AllocationID {
			return
		}
	}
	m.release(s)
	m.occupy(s, SlotAllocated, st.JobID, st.AllocationID)
}

// ---------------------------------------------------------------------------------------------
// Observation

// NumRegisteredTaskExecutors returns how many TaskExecutors are registered.
func (m *SlotManager) NumRegisteredTaskExecutors() int { return len(m.taskExecutors) }

// NumJobs returns how many jobs have a JobMaster registered.
func (m *SlotManager) NumJobs() int { return len(m.jobByID) }

// NumRegisteredSlots returns how many slots the registered TaskExecutors have.
func (m *SlotManager) NumRegisteredSlots() int { return m.numSlots }

// NumFreeSlots returns how many slots are free.
func (m *SlotManager) NumFreeSlots() int { return m.numSlots - m.numPending - m.numAllocated }

// NumPendingSlots returns how many slots have a request in flight.
func (m *SlotManager) NumPendingSlots() int { return m.numPending }

// NumAllocatedSlots returns how many slots are allocated (confirmed or reported by their
// TaskExecutor); pending ones are not counted.
func (m *SlotManager) NumAllocatedSlots() int { return m.numAllocated }

// Slots lists every tracked slot: TaskExecutors in registration order, slots by SlotNumber.
func (m *SlotManager) Slots() []SlotInfo {
	out := make([]SlotInfo, 0, m.numSlots)
	for _, te := range m.taskExecutors {
		for _, s := range te.slots {
			out = append(out, s.SlotInfo)
		}
	}
	return out
}

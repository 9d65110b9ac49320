package resourcemanager

import (
	"fmt"
	"log/slog"
	"sync"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/ha"
)

// jobLeaders follows the leader of every job that has a JobMaster registered, through the job's
// ha.LeaderRetrieval, so that RegisterJobMaster can refuse a JobMaster of a session that is no
// longer, or is not, the job's leader. Flink: JobLeaderIdService.
//
// Its state is guarded by mu, not owned by the main loop: the retrieval's listener may be called
// on any goroutine, and what it learns must be visible to the very next registration (a
// registration of the new leader that follows its grant must already see the old session as
// lost). Start and Stop of a retrieval may do I/O, so they never run on the main loop and never
// under mu (a listener called from inside Start takes mu).
type jobLeaders struct {
	services ha.Services
	log      *slog.Logger
	// lostLeadership is told, outside mu, of each session seen losing leadership of job (Flink:
	// JobLeaderIdActions.jobLeaderLostLeadership). It must not block.
	lostLeadership func(job jobgraph.JobID, old jobgraph.JobMasterID)
	// fatal hears a retrieval's error (Flink: JobLeaderIdActions.handleError, which the
	// ResourceManager makes fatal). It must not block.
	fatal func(err error)

	mu     sync.Mutex
	jobs   map[jobgraph.JobID]*jobLeader
	closed bool // forgetAll ran: nothing is followed any more
}

// jobLeader is what the retrieval of one job said so far.
type jobLeader struct {
	retrieval ha.LeaderRetrieval
	// leader is the session of the confirmed leader; zero while none is confirmed.
	leader jobgraph.JobMasterID
	// lost holds the sessions seen as the confirmed leader that have lost leadership since.
	// Sessions are never reused, so one lost stays lost.
	lost map[jobgraph.JobMasterID]bool
}

func newJobLeaders(services ha.Services, log *slog.Logger, lostLeadership func(jobgraph.JobID, jobgraph.JobMasterID), fatal func(error)) *jobLeaders {
	return &jobLeaders{services: services, log: log, lostLeadership: lostLeadership, fatal: fatal, jobs: make(map[jobgraph.JobID]*jobLeader)}
}

// follow starts following job's leader unless it is followed already. Off the loop. It fails
// when the retrieval cannot start, and with ErrClosed after forgetAll.
func (l *jobLeaders) follow(job jobgraph.JobID) error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return errClosed
	}
	if _, ok := l.jobs[job]; ok {
		l.mu.Unlock()
		return nil
	}
	jl := &jobLeader{retrieval: l.services.JobMasterLeaderRetrieval(job), lost: make(map[jobgraph.JobMasterID]bool)}
	l.jobs[job] = jl
	l.mu.Unlock()
	if err := jl.retrieval.Start(&jobLeaderListener{leaders: l, job: job, jl: jl}); err != nil {
		l.mu.Lock()
		if l.jobs[job] == jl {
			delete(l.jobs, job)
		}
		l.mu.Unlock()
		return fmt.Errorf("resourcemanager: follow the leader of job %s: %w", job, err)
	}
	return nil
}

// stale reports whether token is a session that must not register as job's JobMaster while
// registered is the job's registered JobMaster (zero if none): a session seen losing leadership,
// or any other session than the confirmed leader while the confirmed leader is the one
// registered. With no confirmed leader known, only lost sessions are stale: a new leader
// registers before its leadership is confirmed. It returns the session expected.
func (l *jobLeaders) stale(job jobgraph.JobID, token, registered jobgraph.JobMasterID) (expected jobgraph.JobMasterID, isStale bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	jl := l.jobs[job]
	if jl == nil {
		return jobgraph.JobMasterID{}, false
	}
	if jl.lost[token] {
		return jl.leader, true
	}
	if !jl.leader.IsZero() && token != jl.leader && registered == jl.leader {
		return jl.leader, true
	}
	return jobgraph.JobMasterID{}, false
}

// forget stops following job's leader (its JobMaster is gone). The retrieval is stopped on a
// goroutine of run's (it may do I/O).
func (l *jobLeaders) forget(job jobgraph.JobID, run func(func())) {
	l.mu.Lock()
	jl := l.jobs[job]
	delete(l.jobs, job)
	l.mu.Unlock()
	if jl != nil {
		run(func() { l.stop(job, jl) })
	}
}

// forgetJobs stops following every job's leader (the ResourceManager lost leadership and with
// it every JobMaster), each retrieval stopped on a goroutine of run's; jobs are followed again
// as their JobMasters register with the next session.
func (l *jobLeaders) forgetJobs(run func(func())) {
	l.mu.Lock()
	jobs := l.jobs
	l.jobs = make(map[jobgraph.JobID]*jobLeader)
	l.mu.Unlock()
	for job, jl := range jobs {
		run(func() { l.stop(job, jl) })
	}
}

// forgetAll stops following every job; for Close.
func (l *jobLeaders) forgetAll() {
	l.mu.Lock()
	jobs := l.jobs
	l.jobs, l.closed = make(map[jobgraph.JobID]*jobLeader), true
	l.mu.Unlock()
	for job, jl := range jobs {
		l.stop(job, jl)
	}
}

func (l *jobLeaders) stop(job jobgraph.JobID, jl *jobLeader) {
	if err := jl.retrieval.Stop(); err != nil {
		l.log.Warn("stopping the leader retrieval of a job failed", "job", job, "err", err)
	}
}

type jobLeaderListener struct {
	leaders *jobLeaders
	job     jobgraph.JobID
	jl      *jobLeader
}

// NotifyLeaderAddress records the job's confirmed leader; an empty address means it has none.
func (n *jobLeaderListener) NotifyLeaderAddress(address string, session ha.SessionID) {
	next := jobgraph.JobMasterID{}
	if address != "" {
		next = jobgraph.JobMasterID(session)
	}
	n.leaders.mu.Lock()
	jl := n.jl
	old := jl.leader
	lost := !old.IsZero() && old != next
	if lost {
		jl.lost[old] = true
	}
	jl.leader = next
	followed := n.leaders.jobs[n.job] == jl
	n.leaders.mu.Unlock()
	if lost && followed {
		n.leaders.lostLeadership(n.job, old)
	}
}

// HandleError is fatal: the ResourceManager can no longer tell the job's leader sessions apart
// (Flink: ResourceManager's JobLeaderIdActionsImpl.handleError calls onFatalError).
func (n *jobLeaderListener) HandleError(err error) {
	n.leaders.fatal(fmt.Errorf("resourcemanager: the leader retrieval of job %s failed: %w", n.job, err))
}

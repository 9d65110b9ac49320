// Package ha holds the high-availability plug points: leader election and retrieval, the
// ExecutionPlanStore (Flink's JobGraphStore) and the JobResultStore, bundled as Services.
// Implementations live below it: ha/embedded (in-memory, leadership granted at once) is the
// default. Flink: org.apache.flink.runtime.highavailability.HighAvailabilityServices.
package ha

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"github.com/jobgraph/jobgraph"
)

// ErrNotFound is returned by stores for an entry they do not hold.
var ErrNotFound = errors.New("ha: not found")

// ErrAlreadyExists is returned by JobResultStore.CreateDirty for a job that has an entry.
var ErrAlreadyExists = errors.New("ha: already exists")

func init() {
	jobgraph.RegisterErrorCode("ha.not-found", ErrNotFound)
	jobgraph.RegisterErrorCode("ha.already-exists", ErrAlreadyExists)
}

// SessionID is a leader session: granted with leadership, confirmed with the leader's address,
// and used as the fencing token of the session (a JobMasterID is a JobMaster's SessionID).
type SessionID [16]byte

// NewSessionID returns a random SessionID.
func NewSessionID() SessionID { return SessionID(uuid.New()) }

func (s SessionID) String() string { return uuid.UUID(s).String() }

// LeaderContender takes part in a leader election. Grant and Revoke calls for one contender
// never overlap and come in order; they may come on any goroutine, so a contender posts them to
// its own main loop. Flink: org.apache.flink.runtime.leaderelection.LeaderContender.
type LeaderContender interface {
	GrantLeadership(session SessionID)
	RevokeLeadership()
	HandleError(err error)
}

// LeaderElection is one component's election (one per job for JobMasters).
// Flink: org.apache.flink.runtime.leaderelection.LeaderElection.
type LeaderElection interface {
	// Start registers the contender; it may be granted leadership at once.
	Start(contender LeaderContender) error
	// ConfirmLeadership publishes address as the leader's for session, if session is current.
	ConfirmLeadership(session SessionID, address string)
	// HasLeadership reports whether session is the current leader session.
	HasLeadership(session SessionID) bool
	// Close stops taking part; a current leader is revoked first.
	Close() error
}

// LeaderRetrievalListener learns who leads. Flink: LeaderRetrievalListener.
type LeaderRetrievalListener interface {
	// NotifyLeaderAddress gives the confirmed leader; an empty address means no leader now.
	NotifyLeaderAddress(address string, session SessionID)
	HandleError(err error)
}

// LeaderRetrieval follows one component's leader. Flink: LeaderRetrievalService.
type LeaderRetrieval interface {
	Start(listener LeaderRetrievalListener) error
	Stop() error
}

// ExecutionPlanStore persists submitted JobGraphs until their job is globally terminated, so a
// new Dispatcher leader can recover them. Flink: ExecutionPlanStore (formerly JobGraphStore).
// Implementations are safe for concurrent use, and keep their own copy: changing a graph after
// Put, or one Get returned, never changes what is stored. ha/hatest checks implementations.
type ExecutionPlanStore interface {
	// Put stores g (replacing an earlier version under the same JobID).
	Put(ctx context.Context, g *jobgraph.JobGraph) error
	// Get returns the stored graph, or an error wrapping ErrNotFound.
	Get(ctx context.Context, id jobgraph.JobID) (*jobgraph.JobGraph, error)
	// Remove deletes the graph; removing a missing one is not an error.
	Remove(ctx context.Context, id jobgraph.JobID) error
	// JobIDs lists the stored jobs in ascending order (of the ID's bytes, which is also the
	// order of their String form).
	JobIDs(ctx context.Context) ([]jobgraph.JobID, error)
}

// JobResultEntry is a stored JobResult and whether its job's cleanup has completed.
type JobResultEntry struct {
	Result jobgraph.JobResult `json:"result"`
	Clean  bool               `json:"clean"`
}

// JobResultStore records the results of globally terminated jobs: dirty when written, clean once
// the job's HA data has been cleaned up. A job with an entry is never run again.
// Flink: org.apache.flink.runtime.highavailability.JobResultStore. Safe for concurrent use;
// like the ExecutionPlanStore it keeps its own copy of each result.
type JobResultStore interface {
	// CreateDirty records a result; an error wrapping ErrAlreadyExists if the job has an entry.
	CreateDirty(ctx context.Context, result jobgraph.JobResult) error
	// MarkClean marks the job's entry clean; an error wrapping ErrNotFound if it has none.
	MarkClean(ctx context.Context, id jobgraph.JobID) error
	// Get returns the job's entry, or an error wrapping ErrNotFound.
	Get(ctx context.Context, id jobgraph.JobID) (JobResultEntry, error)
	// DirtyResults lists the results whose cleanup has not completed.
	DirtyResults(ctx context.Context) ([]jobgraph.JobResult, error)
}

// Services bundles what HA needs. Flink: HighAvailabilityServices.
type Services interface {
	// JobMasterLeaderElection and JobMasterLeaderRetrieval serve one job's JobMaster election.
	JobMasterLeaderElection(job jobgraph.JobID) LeaderElection
	JobMasterLeaderRetrieval(job jobgraph.JobID) LeaderRetrieval
	ExecutionPlanStore() ExecutionPlanStore
	JobResultStore() JobResultStore
	// Close releases the services' resources (not the persisted data).
	Close() error
}

// Package ha holds the high-availability plug points: leader election and retrieval of the
// Dispatcher, the ResourceManager and each job's JobMaster, the ExecutionPlanStore (Flink's
// JobGraphStore), the JobResultStore and the CheckpointRecoveryFactory, bundled as Services.
// Implementations live below it: ha/embedded (in-memory, leadership granted at once) is the
// default. Flink: org.apache.flink.runtime.highavailability.HighAvailabilityServices.
//
// # Leadership and fencing
//
// An implementation whose clients live in several processes (ha/file, ha/etcd) elects one client
// — one JobManager process — as the leader of every component at once, as Flink's
// DefaultLeaderElectionService does since 1.15: while the client leads, every contender started
// on any of its elections (Dispatcher, ResourceManager, each job's JobMaster) is granted
// leadership with the client's one session ID, and all are revoked when the client loses it. Such
// an implementation refuses the writes of a client that does not lead — ExecutionPlanStore Put
// and Remove, JobResultStore CreateDirty and MarkClean, the checkpoint stores' and counters'
// writes, CleanupJobData when it has something to remove (with nothing, it returns nil) — with an error wrapping ErrNotLeader, checked in the same step as the write where the
// backend allows (etcd: one transaction on the leader key's revision), so a deposed leader that
// still runs can change nothing. ha/embedded has one process by construction; it elects each
// component on its own and never refuses a write.
package ha

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/internal/randid"
)

// ErrNotFound is returned by stores for an entry they do not hold.
var ErrNotFound = errors.New("ha: not found")

// ErrAlreadyExists is returned by JobResultStore.CreateDirty for a job that has an entry.
var ErrAlreadyExists = errors.New("ha: already exists")

// ErrNotLeader is matched by the error of a store write refused because the client that made it
// does not hold the leadership the store is fenced by (see "Leadership and fencing").
var ErrNotLeader = errors.New("ha: not the leader")

// ErrUnrecoverable is matched by a store error that retrying cannot fix (the store's data is
// corrupt, the backend refuses the write for good): a caller that would retry gives up at once
// and treats it as fatal where Flink does (the Dispatcher: a JobResultStore entry it cannot
// write, see dispatcher.Config.FatalErrorHandler). A store wraps it with %w.
var ErrUnrecoverable = errors.New("ha: unrecoverable store error")

func init() {
	jobgraph.RegisterErrorCode("ha.unrecoverable", ErrUnrecoverable)
	jobgraph.RegisterErrorCode("ha.not-found", ErrNotFound)
	jobgraph.RegisterErrorCode("ha.already-exists", ErrAlreadyExists)
	jobgraph.RegisterErrorCode("ha.not-leader", ErrNotLeader)
}

// SessionID is a leader session: granted with leadership, confirmed with the leader's address,
// and used as the fencing token of the session (a JobMasterID is a JobMaster's SessionID).
type SessionID [16]byte

// NewSessionID returns a random SessionID.
func NewSessionID() SessionID { return SessionID(randid.NewUUID()) }

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

// Services bundles what HA needs: one client of an HA backend (one per JobManager process). Safe
// for concurrent use. Flink: HighAvailabilityServices.
type Services interface {
	// DispatcherLeaderElection and DispatcherLeaderRetrieval serve the cluster's Dispatcher
	// election (Flink: getDispatcherLeaderElection, getDispatcherLeaderRetriever).
	DispatcherLeaderElection() LeaderElection
	DispatcherLeaderRetrieval() LeaderRetrieval
	// ResourceManagerLeaderElection and ResourceManagerLeaderRetrieval serve the cluster's
	// ResourceManager election; TaskExecutors and JobMasters follow the retrieval.
	ResourceManagerLeaderElection() LeaderElection
	ResourceManagerLeaderRetrieval() LeaderRetrieval
	// JobMasterLeaderElection and JobMasterLeaderRetrieval serve one job's JobMaster election.
	JobMasterLeaderElection(job jobgraph.JobID) LeaderElection
	JobMasterLeaderRetrieval(job jobgraph.JobID) LeaderRetrieval
	ExecutionPlanStore() ExecutionPlanStore
	JobResultStore() JobResultStore
	// CheckpointRecoveryFactory gives each job its CompletedCheckpointStore and
	// CheckpointIDCounter, the same ones (or ones over the same storage) for every JobMaster of
	// the job on any client of the backend. Flink: getCheckpointRecoveryFactory.
	CheckpointRecoveryFactory() checkpoint.CheckpointRecoveryFactory
	// CleanupJobData removes what the backend keeps for a globally terminated job apart from its
	// plan, result and checkpoints (its JobMaster election's leader data, say); the Dispatcher
	// calls it in the job's global cleanup, and again if it failed. Removing nothing is not an
	// error. Flink: HighAvailabilityServices.globalCleanupAsync.
	CleanupJobData(ctx context.Context, job jobgraph.JobID) error
	// Close releases this client's resources (not the persisted data); a leadership it holds
	// ends, so another client may lead.
	Close() error
}

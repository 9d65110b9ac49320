// Package etcd is the ha.Services over an etcd cluster: leader election with
// go.etcd.io/etcd/client/v3/concurrency (a Session's lease and an Election), the leader
// information, plans, job results, checkpoint metadata and checkpoint ID counters as etcd keys,
// and every write fenced by the leader key in the same transaction. It is its own Go module
// (github.com/jobgraph/jobgraph/ha/etcd), so the core module needs no etcd dependency. Flink:
// the ZooKeeper and Kubernetes HA services (ZooKeeperLeaderElectionDriver,
// KubernetesLeaderElectionDriver, the state handle stores under them) behind
// DefaultLeaderElectionService.
//
// # Leadership
//
// One Services is one client — one JobManager process — and it leads every component at once,
// as Flink's DefaultLeaderElectionService does since 1.15 (see ha's "Leadership and fencing").
// While at least one contender is started on any of its elections (the Dispatcher's, the
// ResourceManager's, a job's JobMaster's), the client campaigns: a new lease of
// Options.SessionTTL (a concurrency.Session), and concurrency.Election.Campaign on
// <prefix>/leader/election with a new session ID (a UUID) as its value. Once elected, every
// contender is granted that one session ID, in the order the contenders were started: the first
// started on each component (a later one on the same component waits until the earlier leaves).
// Callbacks run on one goroutine of the Services, in the order they were caused, so those of one
// contender never overlap. A campaign request that fails (etcd unreachable) is tried again
// after 500 ms; it is not reported to the contenders.
//
// The leadership (a term) ends when the lease is lost — it expired, it was revoked, or the
// election key was deleted (the client watches its key, so a revocation is noticed at once, not
// at the next keep-alive) — when the client's last contender leaves (it resigns and revokes its
// lease, as Flink closes its driver when the last contender is removed), or on Close. Every
// granted contender is then revoked; after a loss with contenders left, the client campaigns
// again with a new lease and a new session ID.
//
// ConfirmLeadership publishes {"address": ..., "session": ...} at
// <prefix>/leader/info/<component> — "dispatcher", "resourcemanager" or "jobmaster/<jobID>" —
// attached to the term's lease and fenced, on a writer goroutine of the Services (a contender's
// main loop never waits on etcd). A retrieval follows one shared watch of <prefix>/leader/ and
// reports a component's address only while its session is the value of the current election
// leader's key; otherwise, and when there is none, an empty address.
//
// # Keys and fencing
//
// Below Options.Prefix (default DefaultPrefix, "/jobgraph/default"):
//
//	leader/election/<lease>        the campaigns (concurrency.Election); value: session ID
//	leader/info/<component>        confirmed leader information (JSON), on the term's lease
//	plans/<jobID>                  the JobGraph's JSON form (jobgraph.Decode reads it)
//	results/<jobID>                ha.JobResultEntry as JSON: {"result": ..., "clean": bool}
//	checkpoints/<jobID>/<id>       a CompletedCheckpoint's JSON; id zero-padded to 20 digits
//	checkpoint-counter/<jobID>     the next checkpoint ID, in decimal
//
// Every write is one transaction If(CreateRevision(<this term's election key>) == <its
// revision>): plan Put and Remove, CreateDirty (which also requires the key absent:
// ha.ErrAlreadyExists), MarkClean (a compare-and-swap on the entry's revision; ha.ErrNotFound
// for a missing entry), the checkpoint store's Add (the new snapshot and the deletion of the
// subsumed ones in one step) and Shutdown(true), the counter's compare-and-swap, CleanupJobData
// and the leader information. A refused fence, or a client that does not lead, is an error
// wrapping ha.ErrNotLeader, and nothing changed. The key exists only while its lease does and is
// the oldest campaign key only while its client leads, so a deposed leader that still runs — its
// lease expired during a pause, say — can change nothing. The fence is the client's, not a
// contender's: a JobMaster revoked in one term whose write reaches etcd after the same client
// leads again passes it; its own session (the JobMasterID it is fenced by) covers that case.
//
// Reads (Get, JobIDs, DirtyResults, the factory's recovery) are linearizable etcd reads and are
// not fenced. Plan and result calls take the caller's context; the checkpoint store's and
// counter's calls, which have none, are bounded by Options.RequestTimeout.
//
// # Where we differ from Flink
//
// Flink rewrites leader information it finds changed or deleted while it leads; here it is
// written once per confirmation. Flink's ZooKeeper stores keep checkpoint metadata in a
// filesystem and a pointer in ZooKeeper; here the metadata (state handles, which hold small
// state inline) is the etcd value, within etcd's request size limit (1.5 MiB by default).
package etcd

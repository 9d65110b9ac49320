package ha

import (
	"errors"
	"sync"
)

// NoSession is the zero SessionID: the session a leader retrieval reports when it knows the
// leader's address but not its session (StandaloneLeaderRetrieval). A TaskExecutor or JobMaster
// following such a retrieval registers with whatever ResourceManager answers at the address and
// takes the ResourceManagerID it answers with as the session's fencing token. Flink:
// HighAvailabilityServices.DEFAULT_LEADER_ID.
var NoSession SessionID

// StandaloneLeaderRetrieval is a LeaderRetrieval of a fixed address: Start tells the listener of
// the leader at the address with NoSession, once, on Start's goroutine; nothing changes after.
// For a cluster without HA services shared with the retrieving process: a TaskExecutor given
// the JobManager's ResourceManager address (jobmanager.rpc.address). Flink:
// StandaloneLeaderRetrievalService.
type StandaloneLeaderRetrieval struct {
	address string
	mu      sync.Mutex
	started bool
}

// NewStandaloneLeaderRetrieval returns a retrieval of the leader at address.
func NewStandaloneLeaderRetrieval(address string) *StandaloneLeaderRetrieval {
	return &StandaloneLeaderRetrieval{address: address}
}

// Start tells listener the fixed address with NoSession. A second Start is an error, as for
// every LeaderRetrieval.
func (r *StandaloneLeaderRetrieval) Start(listener LeaderRetrievalListener) error {
	r.mu.Lock()
	if r.started {
		r.mu.Unlock()
		return errors.New("ha: StandaloneLeaderRetrieval started twice")
	}
	r.started = true
	r.mu.Unlock()
	listener.NotifyLeaderAddress(r.address, NoSession)
	return nil
}

// Stop does nothing: the address never changes.
func (r *StandaloneLeaderRetrieval) Stop() error { return nil }

package file_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/ha"
	"github.com/jobgraph/jobgraph/ha/file"
	"github.com/jobgraph/jobgraph/ha/hatest"
)

// testPoll is the poll interval of the tests' clients: short, so waits for a retrieval or a
// standby's grant are short; the code paths are the default's.
const testPoll = 10 * time.Millisecond

// grantSignal is a contender that only signals its grants.
type grantSignal struct{ granted chan ha.SessionID }

func newGrantSignal() *grantSignal                    { return &grantSignal{granted: make(chan ha.SessionID, 4)} }
func (g *grantSignal) GrantLeadership(s ha.SessionID) { g.granted <- s }
func (g *grantSignal) RevokeLeadership()              {}
func (g *grantSignal) HandleError(error)              {}

// leadingServices opens a client over dir and makes it lead, with a contender on its Dispatcher
// election (the stores' writes are fenced by the client's leadership). It returns the session.
func leadingServices(t *testing.T, dir string) (*file.Services, ha.SessionID) {
	t.Helper()
	s, err := file.New(file.Options{Dir: dir, PollInterval: testPoll})
	require.NoError(t, err)
	g := newGrantSignal()
	require.NoError(t, s.DispatcherLeaderElection().Start(g))
	select {
	case session := <-g.granted:
		return s, session
	case <-time.After(hatest.Timeout):
		_ = s.Close()
		t.Fatalf("the only client over %s was not granted within %v", dir, hatest.Timeout)
		panic("unreachable")
	}
}

// clusterServices is leadingServices for a MiniCluster: its probe contends on the JobMaster
// election of a job that never runs (the client's one session is what any of its elections is
// granted), so the Dispatcher's and the ResourceManager's elections stay free for the cluster's
// own contenders; a probe holding the Dispatcher election kept the cluster's Dispatcher from
// ever leading.
func clusterServices(t *testing.T, dir string) *file.Services {
	t.Helper()
	s, err := file.New(file.Options{Dir: dir, PollInterval: testPoll})
	require.NoError(t, err)
	g := newGrantSignal()
	require.NoError(t, s.JobMasterLeaderElection(jobgraph.NewJobID()).Start(g))
	select {
	case <-g.granted:
		return s
	case <-time.After(hatest.Timeout):
		_ = s.Close()
		t.Fatalf("the only client over %s was not granted within %v", dir, hatest.Timeout)
		panic("unreachable")
	}
}

// newClient opens a client over dir with the tests' poll interval.
func newClient(t *testing.T, dir string) ha.Services {
	t.Helper()
	s, err := file.New(file.Options{Dir: dir, PollInterval: testPoll})
	require.NoError(t, err)
	return s
}

func TestConformance(t *testing.T) {
	hatest.TestServices(t, func(t *testing.T) ha.Services { return newClient(t, t.TempDir()) })
}

// The suite also runs with each case in a synctest bubble, although ha/file does real file I/O:
// none of it blocks for long (every flock is non-blocking, and a file write or fsync returns on
// its own), and every goroutine of a client waits on a channel or a ticker otherwise, so the
// bubble's clock advances only when they are all idle, and Close ends them all.
func TestConformanceInBubble(t *testing.T) {
	hatest.TestServicesInBubble(t, func(t *testing.T) ha.Services { return newClient(t, t.TempDir()) })
}

func sharedBackend(t *testing.T) func(t *testing.T) ha.Services {
	dir := t.TempDir()
	return func(t *testing.T) ha.Services { return newClient(t, dir) }
}

func TestSharedConformance(t *testing.T) {
	hatest.TestSharedServices(t, hatest.SharedOptions{OneLeaderPerClient: true}, sharedBackend)
}

func TestSharedConformanceInBubble(t *testing.T) {
	hatest.TestSharedServicesInBubble(t, hatest.SharedOptions{OneLeaderPerClient: true}, sharedBackend)
}

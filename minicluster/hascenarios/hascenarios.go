// Package hascenarios runs issue 12's high-availability scenarios — Dispatcher leadership and job
// recovery, the JobManagerRunner under leader changes, a whole MiniCluster failing over, and
// exactly-once cleanup — on any ha.Services implementation. hatest checks an implementation's
// contracts one by one; this suite checks that the Dispatcher, the JobMaster runners and the
// MiniCluster built on it behave as Flink's do when leadership moves. Run it from the
// implementation's tests, as ha/embedded and ha/file do in this module and ha/etcd does in its own:
//
//	func TestHAScenarios(t *testing.T) {
//		hascenarios.Run(t, hascenarios.Backend{
//			Name: "mine",
//			New: func(t *testing.T) func(t *testing.T) ha.Services {
//				dir := t.TempDir() // one backend per scenario
//				return func(t *testing.T) ha.Services { return myha.Open(dir) } // one client per call
//			},
//			Revoke:             func(t *testing.T, s ha.Services) { s.(*myha.Services).DropLeadership() },
//			OneLeaderPerClient: true,
//		})
//	}
//
// Each scenario is a subtest named after the wording. A scenario that needs what a
// backend does not offer says so in its doc and is not run for it (Applies); none is skipped for a
// backend it applies to.
package hascenarios

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/jobgraph/jobgraph/ha"
)

// Backend is the HA implementation under test.
type Backend struct {
	// Name names the backend in messages ("embedded", "file", "etcd").
	Name string
	// New makes a fresh backend for one scenario and returns an opener of its clients: each call
	// of open is one more client of that backend, as one more JobManager process would open. The
	// suite closes every client it opened when the scenario ends (and those it closes on purpose
	// earlier, as a process that exits). New and open are called on the scenario's goroutine,
	// inside its bubble when InBubble. Required.
	New func(t *testing.T) (open func(t *testing.T) ha.Services)
	// Revoke makes client s lose, now, the leadership of everything it leads, as a lost lock,
	// lease or session would: every contender granted on s is revoked. The contenders still
	// started on s stay in the race and may be granted again with a new session, by s itself
	// when no other client contends (ha/embedded re-grants at once; ha/file at its next poll;
	// ha/etcd when its new campaign wins). Required.
	Revoke func(t *testing.T, s ha.Services)
	// OneLeaderPerClient: as hatest.SharedOptions — the backend elects one client that leads
	// every component with one session (ha/file, ha/etcd), and refuses the writes of a client
	// that does not lead; false for ha/embedded, whose components are elected one by one.
	OneLeaderPerClient bool
	// InBubble runs each scenario inside a testing/synctest bubble, so time is virtual and
	// synctest.Wait settles the cluster: only for backends whose goroutines all end when their
	// clients close and whose I/O never blocks for long (ha/embedded, ha/file). Otherwise the
	// scenarios run in real time and wait for each expected event for at most Timeout.
	InBubble bool
	// RegrantDelay, in a bubble: how long (virtual time) after Revoke the backend grants the
	// revoked client again when no other client contends, and the longest a standby waits
	// once the leader's client gave its leadership up — 0 for ha/embedded (at once), the poll
	// interval for ha/file. Scenarios compute the exact instants they assert from it; in real
	// time it is not used (the scenarios assert the order of events and the outcome there).
	RegrantDelay time.Duration
	// RetrievalDelay, in a bubble: the longest a leader retrieval takes to report a new
	// leader's confirmed address — 0 for ha/embedded, the poll interval for ha/file (its
	// retrievals read the leader files at their own pace). A new ResourceManager leader's
	// TaskExecutors register once their retrieval reports it, so a new JobMaster has its slots
	// at most RegrantDelay + RetrievalDelay after a revocation. Not used in real time.
	RetrievalDelay time.Duration
}

// Timeout bounds every wait for an expected event in real time (and in virtual time in a bubble).
const Timeout = 20 * time.Second

// scenario is one case of the suite. Each group of scenarios is a slice in its own file.
type scenario struct {
	name string
	// applies says whether the scenario applies to b; nil means to every backend.
	applies func(b Backend) bool
	run     func(e *Env)
}

// Env is what one scenario sees: its test, the backend and the clients it opened.
type Env struct {
	T       *testing.T
	Backend Backend
	open    func(t *testing.T) ha.Services
	clients []ha.Services // opened and not closed yet
}

// Open opens one more client of the scenario's backend (one more JobManager process); the suite
// closes it when the scenario ends unless Exit closed it before.
func (e *Env) Open() ha.Services {
	c := e.open(e.T)
	e.clients = append(e.clients, c)
	return c
}

// Exit closes client c now, as its process exiting would, and fails the test if Close does.
func (e *Env) Exit(c ha.Services) {
	e.T.Helper()
	for i, o := range e.clients {
		if o == c {
			e.clients = append(e.clients[:i], e.clients[i+1:]...)
			if err := c.Close(); err != nil {
				e.T.Fatalf("closing a %s client: %v", e.Backend.Name, err)
			}
			return
		}
	}
	e.T.Fatalf("Exit of a client this scenario did not open or closed already")
}

// Revoke makes client c lose the leadership of everything it leads now (Backend.Revoke).
func (e *Env) Revoke(c ha.Services) {
	e.T.Helper()
	e.Backend.Revoke(e.T, c)
}

// Await waits until cond holds and fails the test naming what if it does not within Timeout.
// In a bubble it settles the cluster first and then lets virtual time go on a millisecond at a
// time between checks (a backend's poll or an etcd campaign is what it waits for), so the
// instant it returns at is the first millisecond cond held; in real time it checks with a short
// backoff (1 ms doubling to 50 ms). cond runs on the scenario's goroutine and must not block for
// long (a RequestJobStatus with a short context is fine).
func (e *Env) Await(what string, cond func() bool) {
	e.T.Helper()
	deadline := time.Now().Add(Timeout)
	step := time.Millisecond
	for {
		e.Settle()
		if cond() {
			return
		}
		if !time.Now().Before(deadline) {
			e.T.Fatalf("%s: not within %v on %s", what, Timeout, e.Backend.Name)
		}
		time.Sleep(step)
		if !e.Backend.InBubble && step < 50*time.Millisecond {
			step *= 2
		}
	}
}

// InBubble says whether the scenario runs in a synctest bubble.
func (e *Env) InBubble() bool { return e.Backend.InBubble }

// Settle lets the cluster settle: synctest.Wait in a bubble, nothing in real time (where a
// scenario waits for the event it expects instead).
func (e *Env) Settle() {
	if e.Backend.InBubble {
		synctest.Wait()
	}
}

// Run runs every scenario that applies to b, one subtest each.
func Run(t *testing.T, b Backend) {
	if b.New == nil || b.Revoke == nil {
		t.Fatalf("hascenarios: Backend %q needs New and Revoke", b.Name)
	}
	groups := [][]scenario{dispatcherScenarios, runnerScenarios, miniClusterScenarios, cleanupScenarios}
	for _, g := range groups {
		for _, sc := range g {
			if sc.applies != nil && !sc.applies(b) {
				continue
			}
			t.Run(sc.name, func(t *testing.T) {
				if b.InBubble {
					synctest.Test(t, func(t *testing.T) { runOne(t, b, sc) })
					return
				}
				runOne(t, b, sc)
			})
		}
	}
}

func runOne(t *testing.T, b Backend, sc scenario) {
	e := &Env{T: t, Backend: b, open: b.New(t)}
	t.Cleanup(func() {
		for _, c := range e.clients {
			if err := c.Close(); err != nil {
				t.Errorf("closing a %s client: %v", b.Name, err)
			}
		}
	})
	sc.run(e)
}

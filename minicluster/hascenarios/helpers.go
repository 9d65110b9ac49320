package hascenarios

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/minicluster"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

// counting is a stateful task that counts, one a millisecond, until canceled; its state is the
// count, emitted downstream. Each attempt that starts reports "<subtask>#<attempt> <-
// <checkpoint>" (0: nothing restored) on restored; closing failNow fails subtask 0 once.
type counting struct {
	restored chan string
	failNow  chan struct{} // closed: the running attempt of subtask 0 fails, once
	failed   atomic.Bool
}

func newCounting() *counting {
	return &counting{restored: make(chan string, 64), failNow: make(chan struct{})}
}

var errInjected = errors.New("hascenarios: injected failure")

// registry registers the tasks "count" and "discard" (the counting job's) and "noop".
func (c *counting) registry() *taskexecutor.Registry {
	reg := taskexecutor.NewRegistry()
	reg.Register("noop", func(context.Context, taskexecutor.Environment) error { return nil })
	reg.Register("count", func(ctx context.Context, env taskexecutor.Environment) error {
		info := env.Info()
		var n int64
		var from checkpoint.CheckpointID
		if id, st, ok := env.RestoredState(); ok && !st.IsEmpty() {
			from = id
			n, _ = strconv.ParseInt(string(st.Data), 10, 64)
		}
		env.SetCheckpointHandler(counter{&n})
		c.restored <- fmt.Sprintf("%d#%d <- %d", info.SubtaskIndex, info.AttemptNumber, from)
		fail := c.failNow
		for {
			select {
			case <-ctx.Done(): // canceled at once, so its slot is freed at once
				return ctx.Err()
			case <-fail:
				if info.SubtaskIndex == 0 && c.failed.CompareAndSwap(false, true) {
					return errInjected
				}
				fail = nil
				continue
			case <-time.After(time.Millisecond):
			}
			// A source takes its snapshots inside Emit.
			if err := env.Output(0).Emit(ctx, 0, n); err != nil {
				return err
			}
			n++
		}
	})
	reg.Register("discard", func(ctx context.Context, env taskexecutor.Environment) error {
		for {
			_, err := env.Input(0).Next(ctx)
			if errors.Is(err, io.EOF) { // the source stopped with a savepoint
				return nil
			}
			if err != nil {
				return err
			}
		}
	})
	return reg
}

// counter is a source's state: how many records it emitted.
type counter struct{ n *int64 }

func (c counter) SnapshotState(context.Context, checkpoint.CheckpointID) (checkpoint.StateHandle, error) {
	return checkpoint.StateHandle{Data: strconv.AppendInt(nil, *c.n, 10), Size: 8}, nil
}
func (counter) NotifyCheckpointComplete(context.Context, checkpoint.CheckpointID) error { return nil }
func (counter) NotifyCheckpointAborted(context.Context, checkpoint.CheckpointID)        {}

// countingJob is count(p) –POINTWISE→ discard(p), in p slots (one slot sharing group),
// checkpointed only when asked (TriggerCheckpoint): the interval is an hour.
func countingJob(p int) *jobgraph.JobGraph {
	g := jobgraph.New("counting", jobgraph.Streaming)
	src := g.AddVertex("count", "count", p)
	sink := g.AddVertex("discard", "discard", p)
	g.Connect(src, sink, jobgraph.Pointwise, jobgraph.PipelinedBounded)
	g.Checkpointing = jobgraph.CheckpointingSettings{Interval: time.Hour}
	return g
}

// drainStrings returns what ch holds now.
func drainStrings(ch chan string) []string {
	var out []string
	for {
		select {
		case s := <-ch:
			out = append(out, s)
		default:
			return out
		}
	}
}

// receive returns the next n values from ch, failing the test with what if they do not come
// within Timeout (in a bubble: virtual time, so they are received at the instant they are sent).
func receive[V any](e *Env, ch <-chan V, n int, what string) []V {
	e.T.Helper()
	timeout := time.NewTimer(Timeout)
	defer timeout.Stop()
	out := make([]V, 0, n)
	for len(out) < n {
		select {
		case v := <-ch:
			out = append(out, v)
		case <-timeout.C:
			e.T.Fatalf("%s: %d of %d within %v on %s (got %v)", what, len(out), n, Timeout, e.Backend.Name, out)
		}
	}
	return out
}

// checkpoints triggers n checkpoints of the job and returns their IDs.
func (e *Env) checkpoints(mc *minicluster.MiniCluster, job jobgraph.JobID, n int) []checkpoint.CheckpointID {
	e.T.Helper()
	var ids []checkpoint.CheckpointID
	for range n {
		time.Sleep(10 * time.Millisecond) // the count moves on between checkpoints (not a wait)
		id, err := mc.TriggerCheckpoint(context.Background(), job)
		require.NoError(e.T, err)
		ids = append(ids, id)
	}
	return ids
}

// start makes and starts a MiniCluster, closed when the scenario ends (before its clients).
func (e *Env) start(cfg minicluster.Config) *minicluster.MiniCluster {
	e.T.Helper()
	mc, err := minicluster.New(cfg)
	require.NoError(e.T, err)
	require.NoError(e.T, mc.Start(context.Background()))
	e.T.Cleanup(func() { require.NoError(e.T, mc.Close()) })
	return mc
}

// jobStatus is the job's status as mc answers it (waiting for a leader, up to Timeout).
func (e *Env) jobStatus(mc *minicluster.MiniCluster, id jobgraph.JobID) jobgraph.JobStatus {
	e.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	st, err := mc.RequestJobStatus(ctx, id)
	require.NoError(e.T, err)
	return st
}

// shortWait is how long a scenario lets a call that must block run before it counts it as
// blocked: a virtual second in a bubble, 200 ms in real time (a negative check; nothing waits
// on it for an event).
func (e *Env) shortWait() time.Duration {
	if e.Backend.InBubble {
		return time.Second
	}
	return 200 * time.Millisecond
}

// statusLog records the job status transitions with their time since begin (virtual in a
// bubble) and signals each on seen.
type statusLog struct {
	mu    sync.Mutex
	begin time.Time
	log   []string
	seen  chan jobgraph.JobStatus
}

func newStatusLog() *statusLog {
	return &statusLog{begin: time.Now(), seen: make(chan jobgraph.JobStatus, 1024)}
}

func (l *statusLog) listen(_ jobgraph.JobID, st jobgraph.JobStatus, at time.Time) {
	l.mu.Lock()
	l.log = append(l.log, st.String()+" at "+at.Sub(l.begin).String())
	l.mu.Unlock()
	l.seen <- st
}

// get returns the transitions with their instants.
func (l *statusLog) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.log...)
}

// statuses returns the transitions without their instants (what real time can assert).
func (l *statusLog) statuses() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, s := range l.log {
		for i := range len(s) {
			if s[i] == ' ' {
				s = s[:i]
				break
			}
		}
		out = append(out, s)
	}
	return out
}

// await waits until the log saw st (again: each call consumes signals up to the first st).
func (l *statusLog) await(e *Env, st jobgraph.JobStatus) {
	e.T.Helper()
	timeout := time.NewTimer(Timeout)
	defer timeout.Stop()
	for {
		select {
		case s := <-l.seen:
			if s == st {
				return
			}
		case <-timeout.C:
			e.T.Fatalf("no %v within %v on %s: %v", st, Timeout, e.Backend.Name, l.get())
		}
	}
}

// at moves the bubble's virtual clock to begin+d and waits until every goroutine of the cluster
// has done what that instant asks of it. Only in a bubble.
func at(begin time.Time, d time.Duration) {
	if wait := d - time.Since(begin); wait > 0 {
		time.Sleep(wait)
	}
	synctest.Wait()
}

// withoutRegrantedCycle returns log without the one extra JobMaster of the revoked leader's
// runner a backend with per-component elections may start: when Revoke re-grants the job's
// JobMaster election at once (ha/embedded), the old session's runner can be granted again
// before the old Dispatcher session closes it, so it starts one more JobMaster, which the close
// ends soon after — right after L1's SUSPENDED and before L2's INITIALIZING come its
// INITIALIZING and, as far as it got, CREATED and RUNNING, and SUSPENDED when the close found it
// past INITIALIZING or CREATED (a close in CREATED suspends it from there: INITIALIZING, CREATED,
// SUSPENDED); never beside another JobMaster. Flink's runner does the same with per-component elections. With one leader per
// client the whole client is revoked before any grant, so there ok is false if log has one;
// it is false too for more than one. ran reports whether the extra JobMaster got to RUNNING
// (so it may have started task attempts). Entries are "STATUS" or "STATUS at d".
func withoutRegrantedCycle(log []string, oneLeaderPerClient bool) (out []string, removed, ran, ok bool) {
	status := func(i int) string {
		if i >= len(log) {
			return ""
		}
		st, _, _ := strings.Cut(log[i], " ")
		return st
	}
	// The extra JobMaster's possible transitions, longest first.
	cycles := [][]string{
		{"INITIALIZING", "CREATED", "RUNNING", "SUSPENDED"},
		{"INITIALIZING", "CREATED", "SUSPENDED"},
		{"INITIALIZING", "CREATED", "RUNNING"},
		{"INITIALIZING", "SUSPENDED"},
		{"INITIALIZING", "CREATED"},
		{"INITIALIZING"},
	}
	for i := range log {
		if status(i) != "SUSPENDED" {
			continue
		}
		for _, cycle := range cycles {
			k := len(cycle)
			match := status(i+1+k) == "INITIALIZING" // L2's first
			for j := 0; match && j < k; j++ {
				match = status(i+1+j) == cycle[j]
			}
			if !match {
				continue
			}
			out = append(append([]string(nil), log[:i+1]...), log[i+1+k:]...)
			if _, again, _, _ := withoutRegrantedCycle(out, oneLeaderPerClient); again {
				return log, true, true, false
			}
			return out, true, slices.Contains(cycle, "RUNNING"), !oneLeaderPerClient
		}
	}
	return log, false, false, true
}

// statusesAfterRevoke asserts got equals want up to the one extra JobMaster
// withoutRegrantedCycle allows, and reports whether that JobMaster got to RUNNING.
func (e *Env) statusesAfterRevoke(want, got []string) (extraRan bool) {
	e.T.Helper()
	trimmed, _, ran, ok := withoutRegrantedCycle(got, e.Backend.OneLeaderPerClient)
	if !ok {
		e.T.Errorf("status transitions on %s: an extra JobMaster where none may run: %v", e.Backend.Name, got)
	}
	if !assertEqual(e, want, trimmed) {
		e.T.Logf("as logged: %v", got)
	}
	return ran
}

// attemptsAfterRevoke asserts that the task attempts started after a revocation, got (what
// was received, then everything ch still holds once the cluster settled), are L2's, want, in
// any order, plus — only if the revoked runner's extra JobMaster ran (extraRan) — at most one
// more copy of each (its attempts restore what L2's restore).
func (e *Env) attemptsAfterRevoke(ch chan string, got, want []string, extraRan bool) {
	e.T.Helper()
	e.Settle()
	all := append(append([]string(nil), got...), drainStrings(ch)...)
	count := map[string]int{}
	for _, a := range all {
		count[a]++
	}
	most := 1
	if extraRan {
		most = 2
	}
	for _, w := range want {
		if count[w] < 1 || count[w] > most {
			e.T.Errorf("task attempts after the revocation on %s: %v, want %v once each (at most %d times)", e.Backend.Name, all, want, most)
			return
		}
		count[w] = 0
	}
	for a, n := range count {
		if n > 0 {
			e.T.Errorf("task attempt %q after the revocation on %s, beyond L2's %v", a, e.Backend.Name, want)
		}
	}
}

func assertEqual(e *Env, want, got []string) bool {
	e.T.Helper()
	return assert.Equal(e.T, want, got)
}

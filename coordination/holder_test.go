package coordination_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/coordination"
	"github.com/jobgraph/jobgraph/internal/mainloop"
)

// fakeLoop queues what the Holder posts; the test runs it with run.
type fakeLoop struct {
	mu     sync.Mutex
	queue  []func()
	closed bool
}

func (l *fakeLoop) Execute(fn func()) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	l.queue = append(l.queue, fn)
	return true
}

// run runs everything queued, including what that queues, in order.
func (l *fakeLoop) run() {
	for {
		l.mu.Lock()
		if len(l.queue) == 0 {
			l.mu.Unlock()
			return
		}
		fn := l.queue[0]
		l.queue = l.queue[1:]
		l.mu.Unlock()
		fn()
	}
}

func (l *fakeLoop) pending() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.queue)
}

// sent is one call of HolderConfig.Send.
type sent struct {
	attempt jobgraph.ExecutionAttemptID
	event   string
	ack     func(error)
}

// logCoordinator records every call as a line; hooks let a test act inside a call.
type logCoordinator struct {
	ctx      coordination.Context
	log      []string
	gateways map[int]coordination.SubtaskGateway
	errs     map[string]error // method name → the error it returns

	onEvent      func(subtask, attempt int, event []byte)
	onReady      func(subtask, attempt int, g coordination.SubtaskGateway)
	onCheckpoint func(id int64, result func([]byte, error))
}

func (c *logCoordinator) logf(format string, args ...any) error {
	c.log = append(c.log, fmt.Sprintf(format, args...))
	return nil
}

func (c *logCoordinator) err(method string) error { return c.errs[method] }

func (c *logCoordinator) Start() error { c.logf("Start"); return c.err("Start") }
func (c *logCoordinator) Close() error { c.logf("Close"); return c.err("Close") }
func (c *logCoordinator) HandleEventFromOperator(subtask, attempt int, event []byte) error {
	c.logf("Event %d/%d %s", subtask, attempt, event)
	if c.onEvent != nil {
		c.onEvent(subtask, attempt, event)
	}
	return c.err("HandleEventFromOperator")
}
func (c *logCoordinator) CheckpointCoordinator(id int64, result func([]byte, error)) {
	c.logf("Checkpoint %d", id)
	if c.onCheckpoint != nil {
		c.onCheckpoint(id, result)
	}
}
func (c *logCoordinator) NotifyCheckpointComplete(id int64) { c.logf("Complete %d", id) }
func (c *logCoordinator) NotifyCheckpointAborted(id int64)  { c.logf("Aborted %d", id) }
func (c *logCoordinator) ResetToCheckpoint(id int64, state []byte) error {
	c.logf("Reset %d %q", id, state)
	return c.err("ResetToCheckpoint")
}
func (c *logCoordinator) SubtaskReset(subtask int, id int64) error {
	c.logf("SubtaskReset %d %d", subtask, id)
	return c.err("SubtaskReset")
}
func (c *logCoordinator) ExecutionAttemptFailed(subtask, attempt int, reason error) error {
	c.logf("Failed %d/%d %v", subtask, attempt, reason)
	return c.err("ExecutionAttemptFailed")
}
func (c *logCoordinator) ExecutionAttemptReady(subtask, attempt int, g coordination.SubtaskGateway) error {
	c.logf("Ready %d/%d", subtask, attempt)
	c.gateways[subtask] = g
	if c.onReady != nil {
		c.onReady(subtask, attempt, g)
	}
	return c.err("ExecutionAttemptReady")
}

var (
	testJob    = jobgraph.JobID{0xa}
	testVertex = jobgraph.JobVertexID{0xb}
	testGraph  = jobgraph.ExecutionGraphID{0xc}
)

func attemptOf(subtask, attempt int) jobgraph.ExecutionAttemptID {
	return jobgraph.ExecutionAttemptID{
		ExecutionGraphID:  testGraph,
		ExecutionVertexID: jobgraph.ExecutionVertexID{JobVertexID: testVertex, Subtask: subtask},
		AttemptNumber:     attempt,
	}
}

// rig is a Holder over a logCoordinator with a fake loop, Send, FailJob and FailAttempt.
type rig struct {
	t            *testing.T
	loop         *fakeLoop
	h            *coordination.Holder
	c            *logCoordinator
	sends        []sent
	failedJob    []error
	failedAttmpt []string
}

func newRig(t *testing.T, parallelism int) *rig {
	t.Helper()
	r := &rig{t: t, loop: &fakeLoop{}}
	reg := coordination.NewRegistry()
	require.NoError(t, reg.Register("log", coordination.ProviderFunc(func(ctx coordination.Context) (coordination.OperatorCoordinator, error) {
		r.c = &logCoordinator{ctx: ctx, gateways: map[int]coordination.SubtaskGateway{}, errs: map[string]error{}}
		return r.c, nil
	})))
	h, err := coordination.NewHolder(coordination.HolderConfig{
		JobID: testJob, VertexID: testVertex, Name: "log", Registry: reg,
		Config: []byte("cfg"), Parallelism: parallelism,
		Execute: r.loop.Execute,
		Send: func(a jobgraph.ExecutionAttemptID, event []byte, ack func(error)) {
			r.sends = append(r.sends, sent{a, string(event), ack})
		},
		FailJob: func(cause error) { r.failedJob = append(r.failedJob, cause) },
		FailAttempt: func(a jobgraph.ExecutionAttemptID, cause error) {
			r.failedAttmpt = append(r.failedAttmpt, fmt.Sprintf("%d/%d", a.ExecutionVertexID.Subtask, a.AttemptNumber))
		},
	})
	require.NoError(t, err)
	r.h = h
	return r
}

// sentEvents lists the Send calls as "subtask/attempt event".
func (r *rig) sentEvents() []string {
	out := make([]string, 0, len(r.sends))
	for _, s := range r.sends {
		out = append(out, fmt.Sprintf("%d/%d %s", s.attempt.ExecutionVertexID.Subtask, s.attempt.AttemptNumber, s.event))
	}
	return out
}

// ackAll acks every Send not acked yet with nil, in order, and runs the loop.
func (r *rig) ackAll() {
	for _, s := range r.sends {
		if s.ack != nil {
			s.ack(nil)
		}
	}
	r.loop.run()
}

// send makes the coordinator send event to subtask's gateway and records the ack as
// "event:<err>" in acks.
func (r *rig) send(acks *[]string, subtask int, event string) {
	r.c.gateways[subtask].SendEvent([]byte(event), func(err error) {
		*acks = append(*acks, fmt.Sprintf("%s:%v", event, err))
	})
}

func (r *rig) ready(subtask, attempt int) {
	r.t.Helper()
	require.NoError(r.t, r.h.ExecutionAttemptReady(attemptOf(subtask, attempt)))
}

// checkpointResult records the checkpoint results the Holder gives.
type checkpointResult struct{ got []string }

func (c *checkpointResult) fn(id int) func([]byte, error) {
	return func(state []byte, err error) { c.got = append(c.got, fmt.Sprintf("%d %q %v", id, state, err)) }
}

func TestNewHolderCreatesTheCoordinatorWithItsContext(t *testing.T) {
	r := newRig(t, 3)
	assert.Equal(t, testJob, r.c.ctx.JobID())
	assert.Equal(t, testVertex, r.c.ctx.VertexID())
	assert.Equal(t, []byte("cfg"), r.c.ctx.Config())
	assert.Equal(t, 3, r.c.ctx.CurrentParallelism())
	assert.Equal(t, testVertex, r.h.VertexID())
	assert.Equal(t, "log", r.h.Name())
	assert.Empty(t, r.c.log, "creating calls no method")
	require.NoError(t, r.h.Start())
	assert.ErrorContains(t, r.h.Start(), `coordinator "log" of vertex `+testVertex.String()+" started twice")
	assert.Equal(t, []string{"Start"}, r.c.log)
}

func TestNewHolderRefusesUnknownNamesAndBadConfig(t *testing.T) {
	l := &fakeLoop{}
	base := coordination.HolderConfig{
		VertexID: testVertex, Name: "enumerator", Registry: coordination.NewRegistry(), Parallelism: 1,
		Execute: l.Execute, Send: func(jobgraph.ExecutionAttemptID, []byte, func(error)) {}, FailJob: func(error) {},
	}
	_, err := coordination.NewHolder(base)
	require.ErrorIs(t, err, coordination.ErrUnknownCoordinator)
	assert.ErrorContains(t, err, `"enumerator" (vertex `+testVertex.String()+")")

	noRegistry := base
	noRegistry.Registry = nil
	_, err = coordination.NewHolder(noRegistry)
	require.ErrorIs(t, err, coordination.ErrUnknownCoordinator)
	assert.EqualError(t, err, `coordination: no operator coordinator registered under this name: "enumerator" (vertex `+
		testVertex.String()+"; no coordination.Registry is configured)")

	zero := base
	zero.Parallelism = 0
	_, err = coordination.NewHolder(zero)
	assert.ErrorContains(t, err, "parallelism 0, want at least 1")

	noSend := base
	noSend.Send = nil
	_, err = coordination.NewHolder(noSend)
	assert.ErrorContains(t, err, "HolderConfig needs Execute, Send and FailJob")
}

// TestHolderGatewaysPerAttempt: each ready attempt gets its own gateway; sends reach Send with the
// attempt's ID; acks run on the loop, not inside SendEvent; a replaced or failed attempt's gateway
// acks ErrGatewayClosed and sends nothing; repeated and stale readiness does nothing.
func TestHolderGatewaysPerAttempt(t *testing.T) {
	r := newRig(t, 2)
	require.NoError(t, r.h.Start())
	r.ready(0, 0)
	r.ready(0, 0) // RUNNING after INITIALIZING
	r.ready(1, 0)
	g00 := r.c.gateways[0]
	assert.Equal(t, 0, g00.Subtask())
	assert.Equal(t, 0, g00.Attempt())

	var acks []string
	r.send(&acks, 0, "a")
	r.send(&acks, 1, "b")
	assert.Equal(t, []string{"0/0 a", "1/0 b"}, r.sentEvents())
	r.sends[0].ack(nil)
	r.sends[1].ack(errors.New("transport down"))
	assert.Empty(t, acks, "acks run on the loop, not in the ack's caller")
	r.loop.run()
	assert.Equal(t, []string{"a:<nil>", "b:transport down"}, acks)
	assert.Equal(t, []string{"1/0"}, r.failedAttmpt, "a lost event fails the still-current attempt")

	// Attempt 1 of subtask 0 replaces attempt 0 (its failure not seen yet).
	r.ready(0, 1)
	g01 := r.c.gateways[0]
	assert.Equal(t, 1, g01.Attempt())
	acks = nil
	g00.SendEvent([]byte("stale"), func(err error) { acks = append(acks, fmt.Sprintf("stale:%v", err)) })
	r.loop.run()
	require.Len(t, acks, 1)
	assert.Equal(t, "stale:coordination: subtask gateway closed: its attempt failed or was replaced: attempt "+
		attemptOf(0, 0).String()+` (coordinator "log")`, acks[0])
	assert.Len(t, r.sends, 2, "a closed gateway sends nothing")

	// Attempt 0's failure arrives late: passed on, attempt 1's gateway stays open.
	cause := errors.New("boom")
	require.NoError(t, r.h.ExecutionAttemptFailed(attemptOf(0, 0), cause))
	r.ready(0, 0) // stale readiness
	r.send(&acks, 0, "c")
	assert.Equal(t, []string{"0/0 a", "1/0 b", "0/1 c"}, r.sentEvents())

	// Attempt 1 fails: its gateway closes; a ready for it again does nothing.
	require.NoError(t, r.h.ExecutionAttemptFailed(attemptOf(0, 1), nil))
	r.ready(0, 1)
	acks = nil
	g01.SendEvent([]byte("late"), func(err error) {
		acks = append(acks, fmt.Sprintf("late:%v", errors.Is(err, coordination.ErrGatewayClosed)))
	})
	r.loop.run()
	assert.Equal(t, []string{"late:true"}, acks)
	r.ready(0, 2)
	assert.Equal(t, []string{
		"Start", "Ready 0/0", "Ready 1/0", "Ready 0/1", "Failed 0/0 boom", "Failed 0/1 <nil>", "Ready 0/2",
	}, r.c.log)

	err := r.h.ExecutionAttemptReady(jobgraph.ExecutionAttemptID{ExecutionVertexID: jobgraph.ExecutionVertexID{JobVertexID: jobgraph.JobVertexID{9}}})
	assert.ErrorContains(t, err, "is not of vertex "+testVertex.String())
	err = r.h.ExecutionAttemptFailed(attemptOf(2, 0), nil)
	assert.ErrorContains(t, err, "subtask 2 outside vertex "+testVertex.String()+"'s parallelism 2")
}

// TestHolderDeliversOnlyEventsOfTheCurrentAttempt: events of an attempt not ready yet, replaced or
// failed are dropped before the coordinator with ErrNotCurrentAttempt.
func TestHolderDeliversOnlyEventsOfTheCurrentAttempt(t *testing.T) {
	r := newRig(t, 2)
	require.NoError(t, r.h.Start())
	err := r.h.HandleEventFromOperator(attemptOf(0, 0), []byte("early"))
	require.ErrorIs(t, err, coordination.ErrNotCurrentAttempt)
	assert.ErrorContains(t, err, attemptOf(0, 0).String())

	r.ready(0, 0)
	require.NoError(t, r.h.HandleEventFromOperator(attemptOf(0, 0), []byte("hello")))
	r.ready(0, 1)
	require.ErrorIs(t, r.h.HandleEventFromOperator(attemptOf(0, 0), []byte("outdated")), coordination.ErrNotCurrentAttempt)
	require.NoError(t, r.h.HandleEventFromOperator(attemptOf(0, 1), []byte("current")))
	require.NoError(t, r.h.ExecutionAttemptFailed(attemptOf(0, 1), nil))
	require.ErrorIs(t, r.h.HandleEventFromOperator(attemptOf(0, 1), []byte("after-failure")), coordination.ErrNotCurrentAttempt)
	assert.ErrorContains(t, r.h.HandleEventFromOperator(attemptOf(5, 0), nil), "subtask 5 outside")

	assert.Equal(t, []string{"Start", "Ready 0/0", "Event 0/0 hello", "Ready 0/1", "Event 0/1 current", "Failed 0/1 <nil>"}, r.c.log)
	assert.Empty(t, r.failedJob)
}

// TestHolderValveHoldsEventsFromTheResultUntilBarrierInjection: the events the coordinator sends
// from its checkpoint result on (even in the same call) are held per subtask in order, and go out
// in that order after AfterSourceBarrierInjection; the result comes only once the event sent
// before it was acknowledged.
func TestHolderValveHoldsEventsFromTheResultUntilBarrierInjection(t *testing.T) {
	r := newRig(t, 2)
	require.NoError(t, r.h.Start())
	r.ready(0, 0)
	r.ready(1, 0)
	var acks []string
	r.send(&acks, 0, "before")
	r.c.onCheckpoint = func(id int64, result func([]byte, error)) {
		r.send(&acks, 1, "in-call-before-result")
		result([]byte("state-1"), nil)
		r.send(&acks, 0, "in-call-after-result")
		r.send(&acks, 1, "x")
	}
	var res checkpointResult
	r.h.CheckpointCoordinator(1, res.fn(1))
	assert.Equal(t, []string{"0/0 before", "1/0 in-call-before-result"}, r.sentEvents())
	r.loop.run()
	assert.Empty(t, res.got, "the result waits for the events sent before it")
	r.send(&acks, 0, "y")
	r.sends[0].ack(nil)
	r.loop.run()
	assert.Empty(t, res.got)
	r.sends[1].ack(nil)
	r.loop.run()
	assert.Equal(t, []string{`1 "state-1" <nil>`}, res.got)
	assert.Equal(t, []string{"0/0 before", "1/0 in-call-before-result"}, r.sentEvents(), "held until the barrier injection")

	r.h.AfterSourceBarrierInjection(1)
	assert.Equal(t, []string{"0/0 before", "1/0 in-call-before-result", "0/0 in-call-after-result", "1/0 x", "0/0 y"}, r.sentEvents())
	r.send(&acks, 1, "after")
	assert.Equal(t, "1/0 after", r.sentEvents()[5], "the valve is open again")
	r.ackAll()
	assert.Equal(t, []string{"before:<nil>", "in-call-before-result:<nil>", "in-call-after-result:<nil>", "x:<nil>", "y:<nil>", "after:<nil>"}, acks)
	r.h.NotifyCheckpointComplete(1)
	assert.Equal(t, "Complete 1", r.c.log[len(r.c.log)-1])
}

// TestHolderValveClosesForAResultFromAnotherGoroutine: a result given off the loop closes the
// valve for every send the loop makes after it, before the posted processing runs.
func TestHolderValveClosesForAResultFromAnotherGoroutine(t *testing.T) {
	r := newRig(t, 1)
	require.NoError(t, r.h.Start())
	r.ready(0, 0)
	var result func([]byte, error)
	r.c.onCheckpoint = func(_ int64, res func([]byte, error)) { result = res }
	var res checkpointResult
	r.h.CheckpointCoordinator(7, res.fn(7))
	var acks []string
	r.send(&acks, 0, "open")
	done := make(chan struct{})
	go func() { result([]byte("s"), nil); close(done) }()
	<-done
	r.send(&acks, 0, "held") // before the loop ran the posted processing
	assert.Equal(t, []string{"0/0 open"}, r.sentEvents())
	r.ackAll()
	assert.Equal(t, []string{`7 "s" <nil>`}, res.got)
	r.h.AfterSourceBarrierInjection(7)
	assert.Equal(t, []string{"0/0 open", "0/0 held"}, r.sentEvents())
}

// TestHolderCheckpointFailsWhenAnEarlierEventIsLost: an event sent before the result that is not
// acknowledged fails the checkpoint (ErrEventLost) and its still-current attempt.
func TestHolderCheckpointFailsWhenAnEarlierEventIsLost(t *testing.T) {
	r := newRig(t, 1)
	require.NoError(t, r.h.Start())
	r.ready(0, 0)
	var acks []string
	r.send(&acks, 0, "split-1")
	r.c.onCheckpoint = func(_ int64, result func([]byte, error)) { result([]byte("s"), nil) }
	var res checkpointResult
	r.h.CheckpointCoordinator(3, res.fn(3))
	r.loop.run()
	r.sends[0].ack(errors.New("connection reset"))
	r.loop.run()
	require.Len(t, res.got, 1)
	assert.Equal(t, `3 "" coordination: an event from the operator coordinator to a task was lost before checkpoint 3 (coordinator "log" of vertex `+
		testVertex.String()+"): connection reset", res.got[0])
	assert.Equal(t, []string{"0/0"}, r.failedAttmpt)
	assert.Equal(t, []string{"split-1:connection reset"}, acks)
}

// TestHolderCheckpointErrorsAndAborts: the coordinator's error becomes the result; a result after
// AbortCurrentTriggering is ErrCheckpointAborted and closes nothing; aborting releases held
// events; an ID not above the last is refused.
func TestHolderCheckpointErrorsAndAborts(t *testing.T) {
	r := newRig(t, 1)
	require.NoError(t, r.h.Start())
	r.ready(0, 0)
	var res checkpointResult
	r.c.onCheckpoint = func(_ int64, result func([]byte, error)) { result(nil, errors.New("no snapshot")) }
	r.h.CheckpointCoordinator(1, res.fn(1))
	r.loop.run()
	require.Len(t, res.got, 1)
	assert.Equal(t, `1 "" operator coordinator "log" of vertex `+testVertex.String()+": CheckpointCoordinator: no snapshot", res.got[0])
	assert.Empty(t, r.failedJob, "a failed coordinator checkpoint declines the checkpoint, it does not fail the job")

	// Aborted before the coordinator answered.
	var late func([]byte, error)
	r.c.onCheckpoint = func(_ int64, result func([]byte, error)) { late = result }
	res.got = nil
	r.h.CheckpointCoordinator(2, res.fn(2))
	r.h.AbortCurrentTriggering()
	late([]byte("late"), nil)
	r.loop.run()
	require.Len(t, res.got, 1)
	assert.Contains(t, res.got[0], "coordination: checkpoint aborted before the coordinator's state was taken: checkpoint 2")
	var acks []string
	r.send(&acks, 0, "not-held")
	assert.Equal(t, []string{"0/0 not-held"}, r.sentEvents())

	// Aborted after the result: the held events go out.
	r.c.onCheckpoint = func(_ int64, result func([]byte, error)) { result([]byte("s3"), nil) }
	res.got = nil
	r.ackAll()
	r.h.CheckpointCoordinator(3, res.fn(3))
	r.loop.run()
	assert.Equal(t, []string{`3 "s3" <nil>`}, res.got)
	r.send(&acks, 0, "held")
	assert.Len(t, r.sends, 1)
	r.h.AbortCurrentTriggering()
	assert.Equal(t, []string{"0/0 not-held", "0/0 held"}, r.sentEvents())

	res.got = nil
	r.h.CheckpointCoordinator(3, res.fn(3))
	r.loop.run()
	require.Len(t, res.got, 1)
	assert.Contains(t, res.got[0], "checkpoint 3 is not newer than checkpoint 3")
	assert.Equal(t, []string{"Start", "Ready 0/0", "Checkpoint 1", "Checkpoint 2", "Checkpoint 3"}, r.c.log)
}

// TestHolderValveWithOverlappingCheckpoints: events held since checkpoint 1's result wait for 1's
// barrier injection only, and checkpoint 2's result waits for them to be acknowledged (its state
// counts them delivered); events held since 2's result wait for both injections, in either order.
func TestHolderValveWithOverlappingCheckpoints(t *testing.T) {
	t.Run("events under 1", func(t *testing.T) {
		r := newRig(t, 1)
		require.NoError(t, r.h.Start())
		r.ready(0, 0)
		r.c.onCheckpoint = func(id int64, result func([]byte, error)) { result([]byte(fmt.Sprint(id)), nil) }
		var res checkpointResult
		var acks []string
		r.h.CheckpointCoordinator(1, res.fn(1))
		r.send(&acks, 0, "a")
		r.h.CheckpointCoordinator(2, res.fn(2))
		r.send(&acks, 0, "b")
		r.loop.run()
		assert.Equal(t, []string{`1 "1" <nil>`}, res.got, "2 waits for a, held under 1")
		assert.Empty(t, r.sends)
		r.h.AfterSourceBarrierInjection(1)
		assert.Equal(t, []string{"0/0 a"}, r.sentEvents())
		r.ackAll()
		assert.Equal(t, []string{`1 "1" <nil>`, `2 "2" <nil>`}, res.got)
		r.h.AfterSourceBarrierInjection(2)
		assert.Equal(t, []string{"0/0 a", "0/0 b"}, r.sentEvents())
	})
	for _, firstOpen := range []checkpoint.CheckpointID{1, 2} {
		t.Run(fmt.Sprint("events under 2, open ", firstOpen, " first"), func(t *testing.T) {
			r := newRig(t, 1)
			require.NoError(t, r.h.Start())
			r.ready(0, 0)
			r.c.onCheckpoint = func(id int64, result func([]byte, error)) { result([]byte(fmt.Sprint(id)), nil) }
			var res checkpointResult
			var acks []string
			r.h.CheckpointCoordinator(1, res.fn(1))
			r.h.CheckpointCoordinator(2, res.fn(2))
			r.send(&acks, 0, "b")
			r.send(&acks, 0, "c")
			r.loop.run()
			assert.Equal(t, []string{`1 "1" <nil>`, `2 "2" <nil>`}, res.got)
			r.h.AfterSourceBarrierInjection(firstOpen)
			assert.Empty(t, r.sends, "still held by the other checkpoint")
			r.h.AfterSourceBarrierInjection(3 - firstOpen)
			assert.Equal(t, []string{"0/0 b", "0/0 c"}, r.sentEvents())
		})
	}
}

// TestHolderHeldEventsOfAFailedAttempt: held events of an attempt that fails are acked
// ErrGatewayClosed and never sent; the other subtasks' go out in order.
func TestHolderHeldEventsOfAFailedAttempt(t *testing.T) {
	r := newRig(t, 2)
	require.NoError(t, r.h.Start())
	r.ready(0, 0)
	r.ready(1, 0)
	r.c.onCheckpoint = func(_ int64, result func([]byte, error)) { result(nil, nil) }
	var res checkpointResult
	r.h.CheckpointCoordinator(1, res.fn(1))
	r.loop.run()
	assert.Equal(t, []string{`1 "" <nil>`}, res.got)
	var acks []string
	for i, ev := range []string{"p", "q", "r", "s"} {
		r.c.gateways[i%2].SendEvent([]byte(ev), func(err error) {
			acks = append(acks, fmt.Sprintf("%s:%v", ev, errors.Is(err, coordination.ErrGatewayClosed)))
		})
	}
	require.NoError(t, r.h.ExecutionAttemptFailed(attemptOf(0, 0), errors.New("lost")))
	r.loop.run()
	assert.Equal(t, []string{"p:true", "r:true"}, acks)
	r.h.AfterSourceBarrierInjection(1)
	assert.Equal(t, []string{"1/0 q", "1/0 s"}, r.sentEvents())
	assert.Empty(t, r.failedAttmpt, "a failed attempt is not failed again")
}

// TestHolderCoordinatorErrorsFailTheJobOnceUntilReset: each method's error fails the job with a
// *CoordinatorError naming the method; later failures are ignored until ResetToCheckpoint, whose
// own error is returned instead; Context.FailJob from another goroutine fails it on the loop.
func TestHolderCoordinatorErrorsFailTheJobOnceUntilReset(t *testing.T) {
	r := newRig(t, 1)
	boom := errors.New("boom")
	r.c.errs["Start"] = boom
	err := r.h.Start()
	require.ErrorIs(t, err, boom)
	var ce *coordination.CoordinatorError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "Start", ce.Method)
	require.Len(t, r.failedJob, 1)
	assert.EqualError(t, r.failedJob[0], `operator coordinator "log" of vertex `+testVertex.String()+": Start: boom")

	r.c.errs["ExecutionAttemptReady"] = errors.New("ready failed")
	r.ready(0, 0)
	assert.Len(t, r.failedJob, 1, "failed already: ignored until a reset")

	require.NoError(t, r.h.ResetToCheckpoint(checkpoint.NoCheckpoint, nil))
	r.c.errs["HandleEventFromOperator"] = errors.New("bad event")
	require.NoError(t, r.h.HandleEventFromOperator(attemptOf(0, 0), []byte("e")), "delivered: the coordinator's error is the job's")
	require.Len(t, r.failedJob, 2)
	assert.EqualError(t, r.failedJob[1], `operator coordinator "log" of vertex `+testVertex.String()+": HandleEventFromOperator: bad event")

	r.c.errs["ResetToCheckpoint"] = errors.New("corrupt state")
	err = r.h.ResetToCheckpoint(4, []byte("x"))
	assert.EqualError(t, err, `operator coordinator "log" of vertex `+testVertex.String()+": ResetToCheckpoint: corrupt state")
	r.c.errs["SubtaskReset"] = errors.New("unknown checkpoint")
	assert.EqualError(t, r.h.SubtaskReset(0, 4), `operator coordinator "log" of vertex `+testVertex.String()+": SubtaskReset: unknown checkpoint")
	assert.Len(t, r.failedJob, 2, "reset errors are the scheduler's to handle")

	// Context.FailJob from another goroutine, after the reset made failing possible again.
	r.c.errs = map[string]error{}
	require.NoError(t, r.h.ResetToCheckpoint(5, nil))
	done := make(chan struct{})
	go func() { r.c.ctx.FailJob(errors.New("enumerator broke")); close(done) }()
	<-done
	assert.Len(t, r.failedJob, 2, "FailJob runs on the loop")
	r.loop.run()
	require.Len(t, r.failedJob, 3)
	assert.EqualError(t, r.failedJob[2], `operator coordinator "log" of vertex `+testVertex.String()+" failed the job: enumerator broke")
	require.ErrorAs(t, r.failedJob[2], &ce)
	assert.Equal(t, "FailJob", ce.Method)
}

// TestHolderPassesCheckpointCallsThroughWithIDs: ResetToCheckpoint, SubtaskReset and the
// notifications reach the coordinator with the same IDs (NoCheckpoint as -1).
func TestHolderPassesCheckpointCallsThroughWithIDs(t *testing.T) {
	r := newRig(t, 2)
	require.NoError(t, r.h.ResetToCheckpoint(12, []byte("st")))
	require.NoError(t, r.h.Start())
	require.NoError(t, r.h.SubtaskReset(1, 12))
	require.NoError(t, r.h.SubtaskReset(0, checkpoint.NoCheckpoint))
	r.h.NotifyCheckpointComplete(13)
	r.h.NotifyCheckpointAborted(14)
	require.NoError(t, r.h.ResetToCheckpoint(checkpoint.NoCheckpoint, nil))
	assert.ErrorContains(t, r.h.SubtaskReset(2, 12), "SubtaskReset of subtask 2, parallelism 2")
	assert.Equal(t, []string{`Reset 12 "st"`, "Start", "SubtaskReset 1 12", "SubtaskReset 0 -1", "Complete 13", "Aborted 14", `Reset -1 ""`}, r.c.log)
}

// TestHolderResetAbortsCheckpointsUnderWay: a reset releases the held events and answers a result
// still waiting with ErrCheckpointAborted.
func TestHolderResetAbortsCheckpointsUnderWay(t *testing.T) {
	r := newRig(t, 1)
	require.NoError(t, r.h.Start())
	r.ready(0, 0)
	var acks []string
	r.send(&acks, 0, "unacked")
	r.c.onCheckpoint = func(_ int64, result func([]byte, error)) { result([]byte("s"), nil) }
	var res checkpointResult
	r.h.CheckpointCoordinator(1, res.fn(1))
	r.loop.run()
	r.send(&acks, 0, "held")
	require.NoError(t, r.h.ResetToCheckpoint(checkpoint.NoCheckpoint, nil))
	r.loop.run()
	require.Len(t, res.got, 1)
	assert.Contains(t, res.got[0], "checkpoint aborted before the coordinator's state was taken: checkpoint 1")
	assert.Equal(t, []string{"0/0 unacked", "0/0 held"}, r.sentEvents())
	r.ackAll()
	assert.Len(t, res.got, 1, "the result is given once")
}

// TestHolderClose: Close closes the coordinator once and returns its error; afterwards acks,
// checkpoint results, RunInMainThread functions and FailJob do nothing, and methods call nothing.
func TestHolderClose(t *testing.T) {
	r := newRig(t, 1)
	require.NoError(t, r.h.Start())
	r.ready(0, 0)
	var acks []string
	r.send(&acks, 0, "in-flight")
	var pendingResult func([]byte, error)
	r.c.onCheckpoint = func(_ int64, result func([]byte, error)) { pendingResult = result }
	var res checkpointResult
	r.h.CheckpointCoordinator(1, res.fn(1))
	ran := false
	r.c.ctx.RunInMainThread(func() { ran = true })
	r.c.ctx.FailJob(errors.New("too late"))
	r.c.errs["Close"] = errors.New("close failed")

	err := r.h.Close()
	assert.EqualError(t, err, `operator coordinator "log" of vertex `+testVertex.String()+": Close: close failed")
	require.NoError(t, r.h.Close(), "a second Close does nothing")
	r.sends[0].ack(nil)
	pendingResult([]byte("s"), nil)
	r.c.ctx.RunInMainThread(func() { ran = true })
	r.loop.run()
	assert.False(t, ran)
	assert.Empty(t, acks)
	assert.Empty(t, res.got)
	assert.Empty(t, r.failedJob)

	require.ErrorIs(t, r.h.HandleEventFromOperator(attemptOf(0, 0), nil), coordination.ErrHolderClosed)
	require.ErrorIs(t, r.h.Start(), coordination.ErrHolderClosed)
	require.ErrorIs(t, r.h.ResetToCheckpoint(1, nil), coordination.ErrHolderClosed)
	require.ErrorIs(t, r.h.SubtaskReset(0, 1), coordination.ErrHolderClosed)
	require.NoError(t, r.h.ExecutionAttemptReady(attemptOf(0, 1)))
	require.NoError(t, r.h.ExecutionAttemptFailed(attemptOf(0, 1), nil))
	r.h.NotifyCheckpointComplete(1)
	r.h.NotifyCheckpointAborted(1)
	r.h.AfterSourceBarrierInjection(1)
	r.h.AbortCurrentTriggering()
	r.h.CheckpointCoordinator(2, res.fn(2))
	r.loop.run()
	require.Len(t, res.got, 1)
	assert.Contains(t, res.got[0], "coordination: operator coordinator closed")
	assert.Equal(t, []string{"Start", "Ready 0/0", "Checkpoint 1", "Close"}, r.c.log)
	assert.Zero(t, r.loop.pending())
}

// TestHolderOnARealLoop drives a Holder on a mainloop.Loop from other goroutines, as the
// JobMaster does: RunInMainThread, a result and acks from goroutines of the coordinator's own.
func TestHolderOnARealLoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		loop := mainloop.New("holder-test")
		defer loop.Close()
		var (
			c       *logCoordinator
			sends   []string
			results []string
		)
		reg := coordination.NewRegistry()
		require.NoError(t, reg.Register("log", coordination.ProviderFunc(func(ctx coordination.Context) (coordination.OperatorCoordinator, error) {
			c = &logCoordinator{ctx: ctx, gateways: map[int]coordination.SubtaskGateway{}, errs: map[string]error{}}
			return c, nil
		})))
		var h *coordination.Holder
		call := func(fn func()) { require.NoError(t, loop.Call(t.Context(), func() error { fn(); return nil })) }
		call(func() {
			var err error
			h, err = coordination.NewHolder(coordination.HolderConfig{
				VertexID: testVertex, Name: "log", Registry: reg, Parallelism: 1, Execute: loop.Execute,
				Send: func(a jobgraph.ExecutionAttemptID, event []byte, ack func(error)) {
					sends = append(sends, string(event))
					go ack(nil) // the transport answers on its own goroutine
				},
				FailJob: func(error) {},
			})
			require.NoError(t, err)
			c.onEvent = func(subtask, _ int, event []byte) {
				g := c.gateways[subtask]
				go c.ctx.RunInMainThread(func() { // work done off the loop comes back
					g.SendEvent(append([]byte("ack-"), event...), func(err error) { results = append(results, fmt.Sprint("acked ", err)) })
				})
			}
			c.onCheckpoint = func(id int64, result func([]byte, error)) { go result([]byte("state"), nil) }
			require.NoError(t, h.Start())
			require.NoError(t, h.ExecutionAttemptReady(attemptOf(0, 0)))
			require.NoError(t, h.HandleEventFromOperator(attemptOf(0, 0), []byte("hello")))
		})
		synctest.Wait()
		call(func() {
			h.CheckpointCoordinator(1, func(state []byte, err error) { results = append(results, fmt.Sprintf("checkpoint %s %v", state, err)) })
		})
		synctest.Wait()
		call(func() {
			h.AfterSourceBarrierInjection(1)
			require.NoError(t, h.Close())
		})
		assert.Equal(t, []string{"ack-hello"}, sends)
		assert.Equal(t, []string{"acked <nil>", "checkpoint state <nil>"}, results)
	})
}

// echoBench answers every event with reply through the sender's gateway, and counts the acks.
type echoBench struct {
	gateway coordination.SubtaskGateway
	reply   []byte
	acked   int
	ack     func(error)
}

func (c *echoBench) Start() error { return nil }
func (c *echoBench) Close() error { return nil }
func (c *echoBench) HandleEventFromOperator(int, int, []byte) error {
	c.gateway.SendEvent(c.reply, c.ack)
	return nil
}
func (c *echoBench) CheckpointCoordinator(_ int64, result func([]byte, error)) { result(nil, nil) }
func (c *echoBench) NotifyCheckpointComplete(int64)                            {}
func (c *echoBench) NotifyCheckpointAborted(int64)                             {}
func (c *echoBench) ResetToCheckpoint(int64, []byte) error                     { return nil }
func (c *echoBench) SubtaskReset(int, int64) error                             { return nil }
func (c *echoBench) ExecutionAttemptFailed(int, int, error) error              { return nil }
func (c *echoBench) ExecutionAttemptReady(_, _ int, g coordination.SubtaskGateway) error {
	c.gateway = g
	return nil
}

// BenchmarkHolderEventRoundTrip measures one event through the Holder both ways: an event from
// the current attempt reaches the coordinator, which answers it through its gateway; Send acks it
// at once, and the ack runs on the (fake) loop.
func BenchmarkHolderEventRoundTrip(b *testing.B) {
	loop := &fakeLoop{}
	c := &echoBench{reply: []byte("ack")}
	c.ack = func(error) { c.acked++ }
	reg := coordination.NewRegistry()
	if err := reg.Register("echo", coordination.ProviderFunc(func(coordination.Context) (coordination.OperatorCoordinator, error) {
		return c, nil
	})); err != nil {
		b.Fatal(err)
	}
	h, err := coordination.NewHolder(coordination.HolderConfig{
		VertexID: testVertex, Name: "echo", Registry: reg, Parallelism: 1, Execute: loop.Execute,
		Send:    func(_ jobgraph.ExecutionAttemptID, _ []byte, ack func(error)) { ack(nil) },
		FailJob: func(error) {},
	})
	if err != nil {
		b.Fatal(err)
	}
	if err := h.Start(); err != nil {
		b.Fatal(err)
	}
	a := attemptOf(0, 0)
	if err := h.ExecutionAttemptReady(a); err != nil {
		b.Fatal(err)
	}
	event := []byte("hello")
	n := 0
	b.ReportAllocs()
	for b.Loop() {
		if err := h.HandleEventFromOperator(a, event); err != nil {
			b.Fatal(err)
		}
		loop.run()
		n++
	}
	if c.acked != n {
		b.Fatalf("%d acks for %d events", c.acked, n)
	}
}

// A coordinator is the host's code: a panic in one of its methods, in its checkpoint call or in
// a function it runs with RunInMainThread fails the job (with a *CoordinatorError wrapping a
// *jobgraph.PanicError that names the coordinator), as Flink's OperatorCoordinatorHolder fails
// the job on a coordinator's exception, instead of reaching the JobMaster's loop (which would be
// fatal for the whole cluster).
func TestHolderCoordinatorPanicsFailTheJob(t *testing.T) {
	r := newRig(t, 1)
	require.NoError(t, r.h.Start())
	r.ready(0, 0)
	r.c.onEvent = func(subtask, attempt int, event []byte) { panic("enumerator: split index out of range") }
	require.NoError(t, r.h.HandleEventFromOperator(attemptOf(0, 0), []byte("e")), "delivered: the panic is the job's")
	require.Len(t, r.failedJob, 1)
	var ce *coordination.CoordinatorError
	require.ErrorAs(t, r.failedJob[0], &ce)
	assert.Equal(t, "HandleEventFromOperator", ce.Method)
	var pe *jobgraph.PanicError
	require.ErrorAs(t, r.failedJob[0], &pe)
	assert.Equal(t, `coordinator "log" of vertex `+testVertex.String(), pe.Endpoint)
	assert.Equal(t, "enumerator: split index out of range", pe.Value)
	assert.Contains(t, string(pe.Stack), "TestHolderCoordinatorPanicsFailTheJob")
	assert.EqualError(t, r.failedJob[0], `operator coordinator "log" of vertex `+testVertex.String()+`: HandleEventFromOperator: coordinator "log" of vertex `+testVertex.String()+": panic: enumerator: split index out of range")

	// The checkpoint call panics: its result is that error, and the job fails (after a reset).
	require.NoError(t, r.h.ResetToCheckpoint(checkpoint.NoCheckpoint, nil))
	r.c.onCheckpoint = func(id int64, result func([]byte, error)) { panic("snapshot: nil enumerator") }
	res := &checkpointResult{}
	r.h.CheckpointCoordinator(7, func(state []byte, err error) { res.got = append(res.got, fmt.Sprintf("%q %v", state, err)) })
	r.loop.run()
	require.Len(t, r.failedJob, 2)
	require.ErrorAs(t, r.failedJob[1], &ce)
	assert.Equal(t, "CheckpointCoordinator", ce.Method)
	require.Len(t, res.got, 1)
	assert.Contains(t, res.got[0], "panic: snapshot: nil enumerator")

	// RunInMainThread's function panics.
	require.NoError(t, r.h.ResetToCheckpoint(checkpoint.NoCheckpoint, nil))
	r.c.ctx.RunInMainThread(func() { panic(errors.New("assignment table corrupt")) })
	r.loop.run()
	require.Len(t, r.failedJob, 3)
	require.ErrorAs(t, r.failedJob[2], &ce)
	assert.Equal(t, "RunInMainThread", ce.Method)
	require.ErrorAs(t, r.failedJob[2], &pe)
	assert.EqualError(t, pe.Unwrap(), "assignment table corrupt", "an error the function panicked with is unwrapped")
}

package taskexecutor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/rpc"
)

// eventLog records what a test task's handlers saw, in order.
type eventLog struct {
	mu  sync.Mutex
	log []string
}

func (l *eventLog) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.log = append(l.log, s)
}

func (l *eventLog) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.log)
}

// eventTask starts one task of code fn on a fresh TaskExecutor, deployed with
// HasOperatorCoordinator, and waits until it runs.
func eventTask(t *testing.T, fn Invokable) (*cluster, *TaskExecutor, jobgraph.ExecutionAttemptID) {
	t.Helper()
	c := newCluster(t)
	c.reg.Register("events", fn)
	te := c.startTE(1, 1)
	c.allocate(te, 0, allocID(1))
	synctest.Wait()
	d := tdd(1, 0, "events", allocID(1))
	d.HasOperatorCoordinator = true
	require.NoError(t, te.SubmitTask(ctx, jmToken(1), d))
	synctest.Wait()
	require.Equal(t, []jobgraph.ExecutionState{jobgraph.ExecutionStateInitializing, jobgraph.ExecutionStateRunning}, c.jm.statesOf(d.ExecutionAttemptID))
	return c, te, d.ExecutionAttemptID
}

// sendAside sends event to attempt on a goroutine of its own and returns where its answer goes.
func sendAside(te *TaskExecutor, attempt jobgraph.ExecutionAttemptID, event string) <-chan error {
	answer := make(chan error, 1)
	go func() { answer <- te.SendOperatorEventToTask(ctx, jmToken(1), attempt, []byte(event)) }()
	return answer
}

// Events that reach the task before it set its handler are kept, in order, and handed to the
// handler once it is set, in its next Yield; each call returns once its event was handled.
func TestOperatorEventsBeforeTheHandlerAreKept(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ready := make(chan struct{})
		var seen eventLog
		_, te, attempt := eventTask(t, func(ctx context.Context, env Environment) error {
			<-ready
			env.SetOperatorEventHandler(func(event []byte) error {
				seen.add(string(event))
				return nil
			})
			for {
				if err := env.Yield(ctx); err != nil {
					return err
				}
			}
		})
		var answers []<-chan error
		for _, ev := range []string{"a", "b", "c"} {
			answers = append(answers, sendAside(te, attempt, ev))
			synctest.Wait() // each queued before the next is sent
		}
		for i, a := range answers {
			select {
			case err := <-a:
				t.Fatalf("event %d answered before the task had a handler: %v", i, err)
			default:
			}
		}
		close(ready)
		synctest.Wait()
		assert.Equal(t, []string{"a", "b", "c"}, seen.get())
		for i, a := range answers {
			require.NoError(t, <-a, "event %d", i)
		}
		require.NoError(t, te.SendOperatorEventToTask(ctx, jmToken(1), attempt, []byte("d")))
		assert.Equal(t, []string{"a", "b", "c", "d"}, seen.get(), "a later event is handled once, after them")
	})
}

// Yield runs the mail queued (or, with none, waits for some and runs it) and returns nil; it
// returns ctx's error at ctx's deadline, and the task's stop error once it is stopped.
func TestYieldRunsMailOrReturnsCtxsError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		stop := newTaskStop(context.Background())
		env := newEnvironment(stop, TaskInfo{TaskName: "t (1/1)"})
		var seen []string
		env.SetOperatorEventHandler(func(event []byte) error { seen = append(seen, string(event)); return nil })
		answered := make(chan error, 3)
		post := func(ev string) {
			require.True(t, env.cp.mail.post(mail{kind: mailEvent, event: []byte(ev), done: func(err error) { answered <- err }}))
		}

		post("queued")
		require.NoError(t, env.Yield(ctx))
		assert.Equal(t, []string{"queued"}, seen, "the queued mail ran at once")
		require.NoError(t, <-answered)

		start := time.Now()
		go func() {
			time.Sleep(2 * time.Second)
			post("later")
		}()
		require.NoError(t, env.Yield(ctx))
		assert.Equal(t, 2*time.Second, time.Since(start), "it waited for the mail")
		assert.Equal(t, []string{"queued", "later"}, seen)
		require.NoError(t, <-answered)

		start = time.Now()
		tctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		require.ErrorIs(t, env.Yield(tctx), context.DeadlineExceeded)
		assert.Equal(t, time.Second, time.Since(start), "it returned at ctx's deadline")

		stop.stop(errors.New("canceled"))
		require.ErrorIs(t, env.Yield(ctx), context.Canceled, "a stopped task's Yield returns at once")
		assert.Equal(t, []string{"queued", "later"}, seen)
	})
}

// An event, a checkpoint trigger and another event run in the order they were posted: the
// snapshot sees the first event's effect and not the second's.
func TestOperatorEventsRunInOrderWithCheckpointTriggers(t *testing.T) {
	env := newEnvironment(notStopped, TaskInfo{TaskName: "src (1/1)", CheckpointingEnabled: true, ExecutionAttemptID: attemptID(1, 0, 0)})
	r, h := &recordingReporter{}, &countingHandler{}
	env.cp.reporter = r
	env.SetCheckpointHandler(h)
	env.SetOperatorEventHandler(func(event []byte) error {
		h.count++ // the state counts the events handled
		h.note("event " + string(event))
		return nil
	})
	noAnswer := func(error) {}
	env.cp.mail.post(mail{kind: mailEvent, event: []byte("e1"), done: noAnswer})
	env.cp.mail.post(mail{kind: mailTrigger, barrier: *barrier(1)})
	env.cp.mail.post(mail{kind: mailEvent, event: []byte("e2"), done: noAnswer})
	require.NoError(t, env.Yield(ctx))
	assert.Equal(t, []string{"event e1", "snapshot 1 at 1", "event e2"}, h.events())
	require.Len(t, r.acks, 1)
	assert.Equal(t, checkpoint.AcknowledgeCheckpoint{Attempt: attemptID(1, 0, 0), CheckpointID: 1, State: checkpoint.StateHandle{Data: []byte("1")}}, r.acks[0])
}

// SendEventToCoordinator of a vertex without a coordinator is an error naming the task; with
// one, the events reach the JobMaster in order with the task's token and attempt. A failed
// delivery fails the task, unless the JobMaster answered that the attempt does not run.
func TestSendEventToCoordinator(t *testing.T) {
	env := newEnvironment(notStopped, TaskInfo{TaskName: "map (2/4)", VertexName: "map"})
	err := env.SendEventToCoordinator([]byte("x"))
	require.ErrorIs(t, err, ErrNoOperatorCoordinator)
	require.ErrorIs(t, err, rpc.ErrNoOperatorCoordinator)
	assert.EqualError(t, err, `map (2/4): cannot send an operator event from vertex "map": the vertex has no operator coordinator`)

	synctest.Test(t, func(t *testing.T) {
		send := make(chan string)
		c, _, attempt := eventTask(t, func(ctx context.Context, env Environment) error {
			for {
				select {
				case ev := <-send:
					buf := []byte(ev)
					if err := env.SendEventToCoordinator(buf); err != nil {
						return err
					}
					buf[0] = '!' // the task's buffer is its own again
				case <-ctx.Done():
					return ctx.Err()
				}
			}
		})
		send <- "r1"
		send <- "r2"
		synctest.Wait()
		c.jm.mu.Lock()
		assert.Equal(t, []eventCall{{jmToken(1), attempt, "r1"}, {jmToken(1), attempt, "r2"}}, c.jm.events)
		c.jm.eventErr = fmt.Errorf("job 1: operator event dropped: %w", rpc.ErrTaskNotRunning)
		c.jm.mu.Unlock()
		send <- "dropped"
		synctest.Wait()
		assert.Equal(t, []jobgraph.ExecutionState{jobgraph.ExecutionStateInitializing, jobgraph.ExecutionStateRunning},
			c.jm.statesOf(attempt), "an event the JobMaster dropped as outdated does not fail the task")

		c.jm.mu.Lock()
		c.jm.eventErr = errors.New("the coordinator is unreachable")
		c.jm.mu.Unlock()
		send <- "lost"
		synctest.Wait()
		last := c.jm.lastState(t, attempt)
		assert.Equal(t, jobgraph.ExecutionStateFailed, last.State.State)
		assert.EqualError(t, last.State.Failure.Err(), "v1 (1/2): sending an operator event to the coordinator failed: the coordinator is unreachable")
		c.jm.mu.Lock()
		assert.Len(t, c.jm.events, 4)
		c.jm.mu.Unlock()
	})
}

// A task that ends before it handled an event (it never set a handler) answers the event's
// call with an error matching rpc.ErrTaskNotRunning; an event for the ended attempt is refused
// the same way. A handler that panics fails the task and answers the panic.
func TestOperatorEventsOfAnEndingTaskAreAnswered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		finish := make(chan struct{})
		c, te, attempt := eventTask(t, func(ctx context.Context, env Environment) error {
			<-finish
			return nil
		})
		answer := sendAside(te, attempt, "never handled")
		synctest.Wait()
		close(finish)
		synctest.Wait()
		assert.Equal(t, []jobgraph.ExecutionState{jobgraph.ExecutionStateInitializing, jobgraph.ExecutionStateRunning, jobgraph.ExecutionStateFinished},
			c.jm.statesOf(attempt))
		err := <-answer
		require.ErrorIs(t, err, rpc.ErrTaskNotRunning)
		require.ErrorIs(t, err, ErrTaskNotFound)
		assert.EqualError(t, err, "v1 (1/2) ended before it handled the operator event: task not found (execution attempt not running)")
		err = te.SendOperatorEventToTask(ctx, jmToken(1), attempt, []byte("late"))
		require.ErrorIs(t, err, rpc.ErrTaskNotRunning)
		assert.EqualError(t, err, fmt.Sprintf("TaskExecutor te-1: cannot deliver an operator event to execution %s: task not found (execution attempt not running)", attempt))
	})
	synctest.Test(t, func(t *testing.T) {
		c, te, attempt := eventTask(t, func(ctx context.Context, env Environment) error {
			env.SetOperatorEventHandler(func([]byte) error { panic("boom") })
			for {
				if err := env.Yield(ctx); err != nil {
					return err
				}
			}
		})
		err := te.SendOperatorEventToTask(ctx, jmToken(1), attempt, []byte("p"))
		require.ErrorContains(t, err, "v1 (1/2): operator event handler: panicked: boom")
		synctest.Wait()
		last := c.jm.lastState(t, attempt)
		assert.Equal(t, jobgraph.ExecutionStateFailed, last.State.State)
		assert.ErrorContains(t, last.State.Failure.Err(), "v1 (1/2): operator event handler: panicked: boom")
	})
}

// The mailbox's close makes the error it answers operator events with only when it holds one:
// a task that ended with checkpoint mail only, or none, never formats it; one with an event
// queued and one held answers both with the same error.
func TestMailboxCloseMakesItsErrorOnlyForAnEvent(t *testing.T) {
	asked := 0
	endedErr := errors.New("ended")
	ended := func() error { asked++; return endedErr }
	m := newMailbox(make(chan struct{}, 1))
	require.True(t, m.post(mail{kind: mailConfirm}))
	m.close(ended)
	assert.Equal(t, 0, asked, "no event: no error made")
	assert.False(t, m.post(mail{kind: mailConfirm}), "closed")

	var answers []error
	answer := func(err error) { answers = append(answers, err) }
	m = newMailbox(make(chan struct{}, 1))
	m.held = []mail{{kind: mailEvent, done: answer}}
	require.True(t, m.post(mail{kind: mailEvent, done: answer}))
	m.close(ended)
	assert.Equal(t, 1, asked)
	assert.Equal(t, []error{endedErr, endedErr}, answers)
}

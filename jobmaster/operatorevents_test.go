package jobmaster_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/coordination"
	"github.com/jobgraph/jobgraph/jobmaster"
	"github.com/jobgraph/jobgraph/rpc"
)

// startCoordinated runs ckJob with an operator coordinator on src: its four tasks on one fake
// TaskExecutor, all RUNNING at 0 s.
func startCoordinated(t *testing.T) (*hbEnv, *hbTE) {
	t.Helper()
	g := ckJob()
	g.Vertices[0].WithOperatorCoordinator("enumerator", []byte("cfg"))
	reg := coordination.NewRegistry()
	require.NoError(t, reg.Register("enumerator", coordination.ProviderFunc(func(coordination.Context) (coordination.OperatorCoordinator, error) {
		return silentCoordinator{}, nil
	})))
	e := newHBEnvFor(t, jobmaster.Config{OperatorCoordinators: reg}, g)
	te := e.addTE("te-1")
	e.offer(te, 0, "A")
	e.offer(te, 1, "B")
	require.Len(t, te.snapshot().submits, 4)
	for _, tdd := range te.snapshot().submits {
		assert.Equal(t, tdd.VertexName == "src", tdd.HasOperatorCoordinator, tdd.TaskName)
	}
	for _, name := range ckTasks {
		e.report(te, name, jobgraph.ExecutionStateRunning)
	}
	return e, te
}

// A task's event reaches the handler with its vertex, subtask and attempt, once the handler is
// installed, fenced by token, only from a current INITIALIZING or RUNNING attempt of a vertex
// with a coordinator; the JobMaster copies the event.
func TestOperatorEventsReachTheCoordinatorOfTheCurrentAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, te := startCoordinated(t)
		src1, src2, sink1 := e.attempt(te, "src (1/2)"), e.attempt(te, "src (2/2)"), e.attempt(te, "sink (1/2)")

		err := e.gw.SendOperatorEventToCoordinator(e.ctx, e.token, src2, []byte("early"))
		require.NoError(t, err, "the JobMaster's own handler takes it (its coordinator ignores it)")

		var mu sync.Mutex
		var got []string
		var kept [][]byte
		jobmaster.SetOperatorEventHandler(e.jm, func(v jobgraph.JobVertexID, subtask int, a jobgraph.ExecutionAttemptID, event []byte) error {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, fmt.Sprintf("%v/%d %v %s", v == e.g.Vertices[0].ID, subtask, a, event))
			kept = append(kept, event)
			if string(event) == "bad" {
				return fmt.Errorf("refused: %w", rpc.ErrNoOperatorCoordinator)
			}
			return nil
		})
		buf := []byte("e1")
		require.NoError(t, e.gw.SendOperatorEventToCoordinator(e.ctx, e.token, src2, buf))
		buf[0] = 'X' // the caller's buffer is its own again
		require.NoError(t, e.gw.SendOperatorEventToCoordinator(e.ctx, e.token, src1, []byte("e2")))
		require.ErrorIs(t, e.gw.SendOperatorEventToCoordinator(e.ctx, e.token, src1, []byte("bad")), rpc.ErrNoOperatorCoordinator,
			"the handler's answer is the call's")

		err = e.gw.SendOperatorEventToCoordinator(e.ctx, e.token, sink1, []byte("sink"))
		require.ErrorIs(t, err, rpc.ErrNoOperatorCoordinator, "sink names no coordinator")
		assert.NotErrorIs(t, err, rpc.ErrTaskNotRunning)
		stale := jobgraph.NewJobMasterID()
		require.ErrorIs(t, e.gw.SendOperatorEventToCoordinator(e.ctx, stale, src1, []byte("stale")), rpc.ErrFencingTokenMismatch)
		unknown := src1
		unknown.AttemptNumber = 5
		require.ErrorIs(t, e.gw.SendOperatorEventToCoordinator(e.ctx, e.token, unknown, []byte("unknown")), rpc.ErrTaskNotRunning)

		e.report(te, "src (1/2)", jobgraph.ExecutionStateFailed)
		err = e.gw.SendOperatorEventToCoordinator(e.ctx, e.token, src1, []byte("after failure"))
		require.ErrorIs(t, err, rpc.ErrTaskNotRunning, "a FAILED attempt's events are dropped")
		assert.NotErrorIs(t, err, rpc.ErrNoOperatorCoordinator)

		mu.Lock()
		defer mu.Unlock()
		assert.Equal(t, []string{
			fmt.Sprintf("true/1 %v e1", src2),
			fmt.Sprintf("true/0 %v e2", src1),
			fmt.Sprintf("true/0 %v bad", src1),
		}, got)
		assert.Equal(t, "e1", string(kept[0]), "the JobMaster handed the handler a copy")

		e.jm.Close()
		require.ErrorIs(t, e.gw.SendOperatorEventToCoordinator(e.ctx, e.token, src2, []byte("closed")), jobmaster.ErrClosed)
	})
}

// Events to a task go to its TaskExecutor one after another, and the checkpoint trigger the loop
// queued after them waits behind them; an event that waits for its task holds up neither the
// outbox (the CancelTask of a failover goes out meanwhile) nor the acks of other events. Each
// ack comes on the loop with the call's outcome.
func TestOperatorEventsToATaskExecutorKeepOrderWithCheckpointCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, te := startCoordinated(t)
		src1 := e.attempt(te, "src (1/2)")
		gate := make(chan struct{})
		te.set(func(f *hbTE) { f.eventGate = gate })

		var mu sync.Mutex
		var acks []string
		ack := func(i int, err error) {
			mu.Lock()
			defer mu.Unlock()
			acks = append(acks, fmt.Sprintf("%d: %v @%v", i, err, time.Since(e.start)))
		}
		advance(50 * time.Millisecond)
		jobmaster.SendOperatorEventsToTasks(e.jm, src1, [][]byte{[]byte("a"), []byte("b")}, ack)
		synctest.Wait()
		assert.Equal(t, []string{"event a src (1/2)#0 @50ms"}, te.snapshot().ckCalls, "b waits behind a, which waits for its task")

		advance(50 * time.Millisecond) // the checkpoint's triggers are queued behind the events
		assert.Equal(t, []string{"event a src (1/2)#0 @50ms"}, te.snapshot().ckCalls)

		e.report(te, "sink (2/2)", jobgraph.ExecutionStateFailed) // a region failover: cancel src (2/2)
		assert.Equal(t, []string{"src (2/2)#0 @100ms"}, te.snapshot().cancels, "the outbox is not held up by the waiting event")

		advance(50 * time.Millisecond)
		close(gate)
		synctest.Wait()
		assert.Equal(t, []string{
			"event a src (1/2)#0 @50ms",
			"event b src (1/2)#0 @150ms",
			"trigger 1 src (1/2)#0 @150ms",
			"trigger 1 src (2/2)#0 @150ms",
		}, te.snapshot().ckCalls[:4])
		mu.Lock()
		assert.Equal(t, []string{"0: <nil> @150ms", "1: <nil> @150ms"}, acks)
		acks = nil
		mu.Unlock()

		// The TaskExecutor's answer is the ack's; an attempt not deployed is acked at once.
		refused := errors.New("the handler refused")
		te.set(func(f *hbTE) { f.eventErr = refused })
		jobmaster.SendOperatorEventsToTasks(e.jm, src1, [][]byte{[]byte("c")}, ack)
		unknown := src1
		unknown.AttemptNumber = 7
		var unknownErr error
		jobmaster.SendOperatorEventsToTasks(e.jm, unknown, [][]byte{[]byte("d")}, func(_ int, err error) { unknownErr = err })
		synctest.Wait()
		mu.Lock()
		assert.Equal(t, []string{"0: the handler refused @150ms"}, acks)
		mu.Unlock()
		require.ErrorIs(t, unknownErr, rpc.ErrTaskNotRunning)
	})
}

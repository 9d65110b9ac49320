package coordination_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/coordination"
)

// fakeContext is a Context whose RunInMainThread queues fn for the test to run.
type fakeContext struct {
	vertex jobgraph.JobVertexID
	config []byte
	p      int
	queued []func()
	failed []error
}

func (c *fakeContext) JobID() jobgraph.JobID          { return jobgraph.JobID{1} }
func (c *fakeContext) VertexID() jobgraph.JobVertexID { return c.vertex }
func (c *fakeContext) Config() []byte                 { return c.config }
func (c *fakeContext) CurrentParallelism() int        { return c.p }
func (c *fakeContext) RunInMainThread(fn func())      { c.queued = append(c.queued, fn) }
func (c *fakeContext) FailJob(cause error)            { c.failed = append(c.failed, cause) }

// fakeGateway records what is sent to one attempt.
type fakeGateway struct {
	subtask, attempt int
	sent             []string
}

func (g *fakeGateway) Subtask() int { return g.subtask }
func (g *fakeGateway) Attempt() int { return g.attempt }
func (g *fakeGateway) SendEvent(event []byte, ack func(error)) {
	g.sent = append(g.sent, string(event))
	if ack != nil {
		ack(nil)
	}
}

// splitCoordinator is a minimal split enumerator written only against the interface: it hands
// the next unassigned split to a subtask that sends "request", checkpoints the splits not yet
// handed out, and takes back a reset subtask's splits handed out after the checkpoint it goes
// back to. It is the shape the FLIP-27 source built on this package will have.
type splitCoordinator struct {
	ctx        coordination.Context
	started    bool
	closed     bool
	unassigned []string
	gateways   map[int]coordination.SubtaskGateway
	// sinceCheckpoint[id] are the (subtask, split) handed out after checkpoint id was taken;
	// sinceCheckpoint[NoCheckpoint] those since the start.
	sinceCheckpoint map[int64][]assignment
	checkpoints     []int64
	completed       []int64
}

type assignment struct {
	subtask int
	split   string
}

func newSplitCoordinator(ctx coordination.Context) (coordination.OperatorCoordinator, error) {
	if len(ctx.Config()) == 0 {
		return nil, errors.New("no splits configured")
	}
	c := &splitCoordinator{ctx: ctx, gateways: map[int]coordination.SubtaskGateway{},
		sinceCheckpoint: map[int64][]assignment{coordination.NoCheckpoint: nil}}
	c.unassigned = strings.Split(string(ctx.Config()), ",")
	return c, nil
}

func (c *splitCoordinator) Start() error { c.started = true; return nil }
func (c *splitCoordinator) Close() error { c.closed = true; return nil }

func (c *splitCoordinator) HandleEventFromOperator(subtask, attempt int, event []byte) error {
	if string(event) != "request" {
		return fmt.Errorf("subtask %d: unknown event %q", subtask, event)
	}
	g, ok := c.gateways[subtask]
	if !ok || g.Attempt() != attempt {
		return fmt.Errorf("subtask %d attempt %d is not ready", subtask, attempt)
	}
	if len(c.unassigned) == 0 {
		g.SendEvent([]byte("no-more-splits"), nil)
		return nil
	}
	split := c.unassigned[0]
	c.unassigned = c.unassigned[1:]
	for id := range c.sinceCheckpoint {
		c.sinceCheckpoint[id] = append(c.sinceCheckpoint[id], assignment{subtask, split})
	}
	g.SendEvent([]byte(split), nil)
	return nil
}

func (c *splitCoordinator) CheckpointCoordinator(id int64, result func([]byte, error)) {
	c.checkpoints = append(c.checkpoints, id)
	c.sinceCheckpoint[id] = nil
	state := []byte(strings.Join(c.unassigned, ","))
	c.ctx.RunInMainThread(func() { result(state, nil) }) // answers later, as an async snapshot would
}

func (c *splitCoordinator) NotifyCheckpointComplete(id int64) { c.completed = append(c.completed, id) }
func (c *splitCoordinator) NotifyCheckpointAborted(id int64)  { delete(c.sinceCheckpoint, id) }

func (c *splitCoordinator) ResetToCheckpoint(id int64, state []byte) error {
	c.unassigned = nil
	if len(state) > 0 {
		c.unassigned = strings.Split(string(state), ",")
	}
	c.sinceCheckpoint = map[int64][]assignment{id: nil}
	return nil
}

func (c *splitCoordinator) SubtaskReset(subtask int, id int64) error {
	lost, ok := c.sinceCheckpoint[id]
	if !ok {
		return fmt.Errorf("subtask %d reset to unknown checkpoint %d", subtask, id)
	}
	var back []string
	for _, a := range lost {
		if a.subtask == subtask {
			back = append(back, a.split)
		}
	}
	c.unassigned = append(back, c.unassigned...)
	for cp, as := range c.sinceCheckpoint {
		kept := as[:0:0]
		for _, a := range as {
			if a.subtask != subtask {
				kept = append(kept, a)
			}
		}
		c.sinceCheckpoint[cp] = kept
	}
	return nil
}

func (c *splitCoordinator) ExecutionAttemptFailed(subtask, attempt int, _ error) error {
	if g, ok := c.gateways[subtask]; ok && g.Attempt() == attempt {
		delete(c.gateways, subtask)
	}
	return nil
}

func (c *splitCoordinator) ExecutionAttemptReady(subtask, attempt int, g coordination.SubtaskGateway) error {
	c.gateways[subtask] = g
	return nil
}

func runQueued(ctx *fakeContext) {
	for len(ctx.queued) > 0 {
		fn := ctx.queued[0]
		ctx.queued = ctx.queued[1:]
		fn()
	}
}

// TestSplitCoordinatorThroughTheInterface drives a coordinator only through the interface in
// the order the runtime will: hand-outs on request, a checkpoint answered asynchronously, a
// region restart of one subtask returning its splits handed out after that checkpoint, a stale
// attempt refused, and a global restore from the checkpoint's state.
func TestSplitCoordinatorThroughTheInterface(t *testing.T) {
	reg := coordination.NewRegistry()
	require.NoError(t, reg.Register("splits", coordination.ProviderFunc(newSplitCoordinator)))
	ctx := &fakeContext{vertex: jobgraph.JobVertexID{7}, config: []byte("a,b,c,d,e"), p: 2}
	oc, err := reg.Create("splits", ctx)
	require.NoError(t, err)
	require.NoError(t, oc.Start())

	g0, g1 := &fakeGateway{subtask: 0}, &fakeGateway{subtask: 1}
	require.NoError(t, oc.ExecutionAttemptReady(0, 0, g0))
	require.NoError(t, oc.ExecutionAttemptReady(1, 0, g1))
	require.NoError(t, oc.HandleEventFromOperator(0, 0, []byte("request")))
	require.NoError(t, oc.HandleEventFromOperator(1, 0, []byte("request")))

	var state []byte
	calls := 0
	oc.CheckpointCoordinator(1, func(s []byte, err error) { calls++; state = s; require.NoError(t, err) })
	assert.Equal(t, 0, calls, "the result comes back through RunInMainThread, not inside the call")
	runQueued(ctx)
	assert.Equal(t, 1, calls)
	assert.Equal(t, "c,d,e", string(state))
	oc.NotifyCheckpointComplete(1)

	require.NoError(t, oc.HandleEventFromOperator(1, 0, []byte("request"))) // c to subtask 1
	require.NoError(t, oc.HandleEventFromOperator(0, 0, []byte("request"))) // d to subtask 0
	assert.Equal(t, []string{"a", "d"}, g0.sent)
	assert.Equal(t, []string{"b", "c"}, g1.sent)

	// A region restart of subtask 1 back to checkpoint 1: c returns (b is in the checkpoint's
	// task state), the failed attempt is forgotten and the next one gets c first.
	require.NoError(t, oc.ExecutionAttemptFailed(1, 0, errors.New("boom")))
	require.NoError(t, oc.SubtaskReset(1, 1))
	assert.Error(t, oc.HandleEventFromOperator(1, 0, []byte("request")), "the failed attempt has no gateway")
	g1b := &fakeGateway{subtask: 1, attempt: 1}
	require.NoError(t, oc.ExecutionAttemptReady(1, 1, g1b))
	require.NoError(t, oc.HandleEventFromOperator(1, 1, []byte("request")))
	require.NoError(t, oc.HandleEventFromOperator(1, 1, []byte("request")))
	require.NoError(t, oc.HandleEventFromOperator(1, 1, []byte("request")))
	assert.Equal(t, []string{"c", "e", "no-more-splits"}, g1b.sent)
	assert.Equal(t, []string{"b", "c"}, g1.sent, "nothing more reaches the failed attempt")

	// A global failover restores checkpoint 1's state: c, d and e are to be handed out again.
	require.NoError(t, oc.ResetToCheckpoint(1, state))
	g0b := &fakeGateway{subtask: 0, attempt: 1}
	require.NoError(t, oc.ExecutionAttemptReady(0, 1, g0b))
	for range 4 {
		require.NoError(t, oc.HandleEventFromOperator(0, 1, []byte("request")))
	}
	assert.Equal(t, []string{"c", "d", "e", "no-more-splits"}, g0b.sent)

	sc := oc.(*splitCoordinator)
	assert.Equal(t, []int64{1}, sc.checkpoints)
	assert.Equal(t, []int64{1}, sc.completed)
	require.NoError(t, oc.Close())
	assert.True(t, sc.started)
	assert.True(t, sc.closed)
	assert.Empty(t, ctx.failed)
}

func TestRegistryRegisterRefusesBadRegistrationsAndKeepsTheFirst(t *testing.T) {
	reg := coordination.NewRegistry()
	first := coordination.ProviderFunc(newSplitCoordinator)
	require.NoError(t, reg.Register("b", first))
	require.NoError(t, reg.Register("a", first))

	err := reg.Register("", first)
	assert.ErrorIs(t, err, coordination.ErrInvalidRegistration)
	assert.EqualError(t, err, "coordination: invalid registration: empty coordinator name")

	err = reg.Register("c", nil)
	assert.ErrorIs(t, err, coordination.ErrInvalidRegistration)
	assert.EqualError(t, err, `coordination: invalid registration: nil Provider for coordinator "c"`)

	second := coordination.ProviderFunc(func(coordination.Context) (coordination.OperatorCoordinator, error) {
		return nil, errors.New("second")
	})
	err = reg.Register("b", second)
	assert.ErrorIs(t, err, coordination.ErrInvalidRegistration)
	assert.EqualError(t, err, `coordination: invalid registration: coordinator "b" registered twice`)

	assert.Equal(t, []string{"a", "b"}, reg.Names())
	_, err = reg.Create("b", &fakeContext{config: []byte("x"), p: 1})
	assert.NoError(t, err, "the first Provider under b stays")
	_, ok := reg.Lookup("c")
	assert.False(t, ok)
}

func TestRegistryCreateErrorsNameTheCoordinatorAndVertex(t *testing.T) {
	reg := coordination.NewRegistry()
	require.NoError(t, reg.Register("splits", coordination.ProviderFunc(newSplitCoordinator)))
	require.NoError(t, reg.Register("nil", coordination.ProviderFunc(func(coordination.Context) (coordination.OperatorCoordinator, error) {
		return nil, nil
	})))
	ctx := &fakeContext{vertex: jobgraph.JobVertexID{0xab}, p: 1}
	vid := ctx.vertex.String()

	_, err := reg.Create("missing", ctx)
	assert.ErrorIs(t, err, coordination.ErrUnknownCoordinator)
	assert.EqualError(t, err, `coordination: no operator coordinator registered under this name: "missing" (vertex `+vid+`)`)

	_, err = reg.Create("splits", ctx) // no Config: the Provider refuses
	assert.EqualError(t, err, `coordination: creating coordinator "splits" of vertex `+vid+`: no splits configured`)

	_, err = reg.Create("nil", ctx)
	assert.EqualError(t, err, `coordination: Provider of coordinator "nil" of vertex `+vid+` returned no coordinator`)
}

func TestRegistryIsSafeForConcurrentUse(t *testing.T) {
	reg := coordination.NewRegistry()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			assert.NoError(t, reg.Register(fmt.Sprintf("c%d", i), coordination.ProviderFunc(newSplitCoordinator)))
			_, _ = reg.Lookup("c0")
			_ = reg.Names()
		})
	}
	wg.Wait()
	assert.Equal(t, []string{"c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7"}, reg.Names())
}

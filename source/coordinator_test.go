package source_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/coordination"
	"github.com/jobgraph/jobgraph/source"
)

// fakeContext is a coordination.Context whose RunInMainThread queues fn for the test to run.
type fakeContext struct {
	config []byte
	p      int
	queued []func()
	failed []error
}

func (c *fakeContext) JobID() jobgraph.JobID          { return jobgraph.JobID{1} }
func (c *fakeContext) VertexID() jobgraph.JobVertexID { return jobgraph.JobVertexID{2} }
func (c *fakeContext) Config() []byte                 { return c.config }
func (c *fakeContext) CurrentParallelism() int        { return c.p }
func (c *fakeContext) RunInMainThread(fn func())      { c.queued = append(c.queued, fn) }
func (c *fakeContext) FailJob(cause error)            { c.failed = append(c.failed, cause) }

func (c *fakeContext) runQueued() {
	q := c.queued
	c.queued = nil
	for _, fn := range q {
		fn()
	}
}

// fakeGateway records the events sent to one attempt.
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

// take returns and forgets what was sent.
func (g *fakeGateway) take() []string {
	s := g.sent
	g.sent = nil
	return s
}

const request = `{"type":"RequestSplit"}`

func splits(ids ...string) []source.Split {
	out := make([]source.Split, len(ids))
	for i, id := range ids {
		out[i] = source.Split{ID: id, Payload: []byte("p-" + id)}
	}
	return out
}

// add is the AddSplits event of splits with the payload splits() gives them.
func add(ids ...string) string {
	b, err := json.Marshal(struct {
		Type   string         `json:"type"`
		Splits []source.Split `json:"splits"`
	}{"AddSplits", splits(ids...)})
	if err != nil {
		panic(err)
	}
	return string(b)
}

const noMore = `{"type":"NoMoreSplits"}`

// newStatic creates and starts a static-split coordinator of parallelism p over ids, with a
// ready gateway (attempt 0) per subtask.
func newStatic(t *testing.T, p int, ids ...string) (*fakeContext, coordination.OperatorCoordinator, []*fakeGateway) {
	t.Helper()
	cfg, err := source.EncodeStaticSplits(splits(ids...))
	require.NoError(t, err)
	ctx := &fakeContext{config: cfg, p: p}
	c, err := source.StaticSplitsProvider().Create(ctx)
	require.NoError(t, err)
	require.NoError(t, c.Start())
	gws := make([]*fakeGateway, p)
	for i := range gws {
		gws[i] = &fakeGateway{subtask: i}
		require.NoError(t, c.ExecutionAttemptReady(i, 0, gws[i]))
	}
	return ctx, c, gws
}

func TestStaticSplitsHandedOutOnRequestInOrder(t *testing.T) {
	_, c, gws := newStatic(t, 2, "a", "b", "c")
	require.NoError(t, c.HandleEventFromOperator(1, 0, []byte(request)))
	require.NoError(t, c.HandleEventFromOperator(0, 0, []byte(request)))
	require.NoError(t, c.HandleEventFromOperator(1, 0, []byte(request)))
	require.NoError(t, c.HandleEventFromOperator(1, 0, []byte(request)))
	require.NoError(t, c.HandleEventFromOperator(0, 0, []byte(request)))
	assert.Equal(t, []string{add("b"), noMore}, gws[0].take())
	assert.Equal(t, []string{add("a"), add("c"), noMore}, gws[1].take())
}

func TestSubtaskResetReturnsTheSplitsGivenAfterTheCheckpoint(t *testing.T) {
	ctx, c, gws := newStatic(t, 2, "a", "b", "c", "d", "e", "f")
	req := func(subtask int) { require.NoError(t, c.HandleEventFromOperator(subtask, 0, []byte(request))) }
	var states [][]byte
	checkpoint := func(id int64) {
		c.CheckpointCoordinator(id, func(state []byte, err error) {
			require.NoError(t, err)
			states = append(states, state)
		})
	}
	req(0) // a → 0
	req(1) // b → 1
	checkpoint(1)
	req(0) // c → 0
	checkpoint(2)
	req(0) // d → 0
	req(1) // e → 1
	assert.Equal(t, []string{add("a"), add("c"), add("d")}, gws[0].take())
	assert.Equal(t, []string{add("b"), add("e")}, gws[1].take())
	// The coordinator's state is the splits not handed out yet, at each checkpoint.
	assert.Equal(t, []string{
		`{"version":1,"enumerator":"` + b64(`{"splits":[{"id":"c","payload":"cC1j"},{"id":"d","payload":"cC1k"},{"id":"e","payload":"cC1l"},{"id":"f","payload":"cC1m"}]}`) + `"}`,
		`{"version":1,"enumerator":"` + b64(`{"splits":[{"id":"d","payload":"cC1k"},{"id":"e","payload":"cC1l"},{"id":"f","payload":"cC1m"}]}`) + `"}`,
	}, []string{string(states[0]), string(states[1])})

	// Subtask 0 fails and is reset to checkpoint 1: c and d (given after 1) come back, a does
	// not (its reader state at 1 has it). They are handed out first, in the order given.
	require.NoError(t, c.ExecutionAttemptFailed(0, 0, errors.New("boom")))
	require.NoError(t, c.SubtaskReset(0, 1))
	req(1)
	assert.Equal(t, []string{add("c")}, gws[1].take())
	gw0 := &fakeGateway{subtask: 0, attempt: 1}
	require.NoError(t, c.ExecutionAttemptReady(0, 1, gw0))
	require.NoError(t, c.HandleEventFromOperator(0, 1, []byte(request)))
	assert.Equal(t, []string{add("d")}, gw0.take())

	// Checkpoint 2 completes: the assignments up to it are forgotten, so a reset of subtask 1 to
	// checkpoint 2 returns only what it got since: e (after 2) and c (after the reset, after 2).
	c.NotifyCheckpointComplete(2)
	require.NoError(t, c.SubtaskReset(1, 2))
	req(1)
	req(1)
	req(1)
	req(1)
	assert.Equal(t, []string{add("e"), add("c"), add("f"), noMore}, gws[1].take())

	// A reset with no checkpoint returns everything the tracker still has for the subtask: d
	// (after checkpoint 2 — it was given after 1, to the new attempt).
	require.NoError(t, c.SubtaskReset(0, coordination.NoCheckpoint))
	require.NoError(t, c.HandleEventFromOperator(0, 1, []byte(request)))
	require.NoError(t, c.HandleEventFromOperator(0, 1, []byte(request)))
	assert.Equal(t, []string{add("d"), noMore}, gw0.take())
	assert.Empty(t, ctx.failed)
	require.NoError(t, c.Close())
}

func TestResetToCheckpointRestoresTheEnumerator(t *testing.T) {
	_, c, gws := newStatic(t, 1, "a", "b", "c")
	require.NoError(t, c.HandleEventFromOperator(0, 0, []byte(request)))
	var state []byte
	c.CheckpointCoordinator(5, func(s []byte, err error) { require.NoError(t, err); state = s })
	require.NoError(t, c.HandleEventFromOperator(0, 0, []byte(request)))
	assert.Equal(t, []string{add("a"), add("b")}, gws[0].take())

	// A global failover to checkpoint 5: b is unassigned again; a is the reader's.
	require.NoError(t, c.ExecutionAttemptFailed(0, 0, nil))
	require.NoError(t, c.ResetToCheckpoint(5, state))
	gw := &fakeGateway{attempt: 1}
	require.NoError(t, c.ExecutionAttemptReady(0, 1, gw))
	for range 3 {
		require.NoError(t, c.HandleEventFromOperator(0, 1, []byte(request)))
	}
	assert.Equal(t, []string{add("b"), add("c"), noMore}, gw.take())
	// The reset forgot the assignments before it: a subtask reset to 5 gets b and c back, no a.
	require.NoError(t, c.SubtaskReset(0, 5))
	for range 3 {
		require.NoError(t, c.HandleEventFromOperator(0, 1, []byte(request)))
	}
	assert.Equal(t, []string{add("b"), add("c"), noMore}, gw.take())

	// A reset to no checkpoint starts from the configured splits.
	require.NoError(t, c.ResetToCheckpoint(coordination.NoCheckpoint, nil))
	for range 4 {
		require.NoError(t, c.HandleEventFromOperator(0, 1, []byte(request)))
	}
	assert.Equal(t, []string{add("a"), add("b"), add("c"), noMore}, gw.take())

	// A new coordinator restored before Start (a new JobMaster restoring checkpoint 5).
	cfg, err := source.EncodeStaticSplits(splits("a", "b", "c"))
	require.NoError(t, err)
	c2, err := source.StaticSplitsProvider().Create(&fakeContext{config: cfg, p: 1})
	require.NoError(t, err)
	require.NoError(t, c2.ResetToCheckpoint(5, state))
	require.NoError(t, c2.Start())
	gw2 := &fakeGateway{}
	require.NoError(t, c2.ExecutionAttemptReady(0, 0, gw2))
	for range 3 {
		require.NoError(t, c2.HandleEventFromOperator(0, 0, []byte(request)))
	}
	assert.Equal(t, []string{add("b"), add("c"), noMore}, gw2.take())
}

func TestResetToCheckpointRefusesForeignState(t *testing.T) {
	_, c, gws := newStatic(t, 1, "a", "b")
	err := c.ResetToCheckpoint(3, []byte(`{"version":2,"enumerator":null}`))
	assert.ErrorIs(t, err, source.ErrInvalidState)
	assert.EqualError(t, err, "source: invalid coordinator state of vertex "+jobgraph.JobVertexID{2}.String()+" in checkpoint 3: version 2, want 1")
	assert.ErrorIs(t, c.ResetToCheckpoint(3, []byte(`not json`)), source.ErrInvalidState)
	// Nothing changed: the enumerator goes on where it was.
	require.NoError(t, c.HandleEventFromOperator(0, 0, []byte(request)))
	assert.Equal(t, []string{add("a")}, gws[0].take())
}

func TestRequestBeforeTheGatewayWaitsForIt(t *testing.T) {
	cfg, err := source.EncodeStaticSplits(splits("a", "b"))
	require.NoError(t, err)
	c, err := source.StaticSplitsProvider().Create(&fakeContext{config: cfg, p: 2})
	require.NoError(t, err)
	require.NoError(t, c.Start())
	require.NoError(t, c.HandleEventFromOperator(1, 3, []byte(request)))
	require.NoError(t, c.HandleEventFromOperator(0, 0, []byte(request)))
	// Attempt 2's gateway does not answer attempt 3's request; attempt 3's does.
	gw2 := &fakeGateway{subtask: 1, attempt: 2}
	require.NoError(t, c.ExecutionAttemptReady(1, 2, gw2))
	assert.Empty(t, gw2.take())
	require.NoError(t, c.HandleEventFromOperator(1, 3, []byte(request)))
	gw3 := &fakeGateway{subtask: 1, attempt: 3}
	require.NoError(t, c.ExecutionAttemptReady(1, 3, gw3))
	assert.Equal(t, []string{add("a")}, gw3.take())
	// Subtask 0's attempt 0 failed before its gateway came: its request is dropped.
	require.NoError(t, c.ExecutionAttemptFailed(0, 0, nil))
	gw0 := &fakeGateway{subtask: 0, attempt: 1}
	require.NoError(t, c.ExecutionAttemptReady(0, 1, gw0))
	assert.Empty(t, gw0.take())
}

func TestInvalidEventsAndConfigs(t *testing.T) {
	_, c, gws := newStatic(t, 2, "a")
	err := c.HandleEventFromOperator(0, 0, []byte(`{"type":"AddSplits"}`))
	assert.ErrorIs(t, err, source.ErrInvalidEvent)
	assert.EqualError(t, err, `source: invalid event: "AddSplits" from subtask 0: a source coordinator handles only RequestSplit`)
	assert.ErrorIs(t, c.HandleEventFromOperator(0, 0, []byte(`{`)), source.ErrInvalidEvent)
	assert.EqualError(t, c.HandleEventFromOperator(2, 0, []byte(request)), `source: invalid event: RequestSplit from subtask 2 of parallelism 2`)
	assert.Empty(t, gws[0].take())

	_, err = source.EncodeStaticSplits([]source.Split{{ID: "x"}, {ID: "x"}})
	assert.EqualError(t, err, `source: split ID "x" appears twice`)
	_, err = source.EncodeStaticSplits([]source.Split{{ID: "x"}, {}})
	assert.EqualError(t, err, `source: split 1 has an empty ID`)
	_, err = source.StaticSplitsProvider().Create(&fakeContext{config: []byte(`{"splits":[{"id":"x"},{"id":"x"}]}`), p: 1})
	assert.EqualError(t, err, `source: split ID "x" appears twice`)
	_, err = source.StaticSplitsProvider().Create(&fakeContext{config: nil, p: 1})
	assert.ErrorContains(t, err, "source: the OperatorCoordinatorConfig is no StaticSplitsConfig JSON")

	// A listing that fails fails the coordinator's Start, naming the vertex.
	lc, err := source.SplitListProvider(func(coordination.Context) ([]source.Split, error) { return nil, errors.New("disk gone") }).Create(&fakeContext{p: 1})
	require.NoError(t, err)
	assert.EqualError(t, lc.Start(), "source: creating the split enumerator of vertex "+jobgraph.JobVertexID{2}.String()+
		": source: listing the splits of vertex "+jobgraph.JobVertexID{2}.String()+": disk gone")
}

func TestSplitListProviderListsOnFreshStartsOnly(t *testing.T) {
	var lists int
	p := source.SplitListProvider(func(ctx coordination.Context) ([]source.Split, error) {
		lists++
		var out []source.Split
		for i := range ctx.CurrentParallelism() + 1 {
			out = append(out, source.Split{ID: fmt.Sprint("s", i)})
		}
		return out, nil
	})
	c, err := p.Create(&fakeContext{p: 2})
	require.NoError(t, err)
	require.NoError(t, c.Start())
	gw := &fakeGateway{}
	require.NoError(t, c.ExecutionAttemptReady(0, 0, gw))
	require.NoError(t, c.HandleEventFromOperator(0, 0, []byte(request)))
	var state []byte
	c.CheckpointCoordinator(1, func(s []byte, err error) { state = s })
	require.NoError(t, c.ResetToCheckpoint(1, state))
	require.NoError(t, c.ResetToCheckpoint(coordination.NoCheckpoint, nil))
	for range 4 {
		require.NoError(t, c.HandleEventFromOperator(0, 0, []byte(request)))
	}
	assert.Equal(t, []string{`{"type":"AddSplits","splits":[{"id":"s0"}]}`,
		`{"type":"AddSplits","splits":[{"id":"s0"}]}`, `{"type":"AddSplits","splits":[{"id":"s1"}]}`,
		`{"type":"AddSplits","splits":[{"id":"s2"}]}`, noMore}, gw.take())
	assert.Equal(t, 2, lists, "the start and the reset to no checkpoint list; the restore does not")
}

// pushEnumerator assigns a split to every reader when it registers, later on the loop, and
// checks the context's guards.
type pushEnumerator struct {
	ctx     source.SplitEnumeratorContext
	next    int
	log     []string
	blocked error
}

func (e *pushEnumerator) Start() error { return nil }
func (e *pushEnumerator) AddReader(subtask int) error {
	e.log = append(e.log, fmt.Sprint("reader ", subtask, " ", e.ctx.RegisteredReaders()))
	e.ctx.RunInCoordinatorThread(func() {
		e.next++
		e.blocked = e.ctx.AssignSplits(subtask, source.Split{ID: fmt.Sprint("push-", e.next)})
	})
	return nil
}
func (e *pushEnumerator) HandleSplitRequest(subtask int) error {
	return e.ctx.SignalNoMoreSplits(subtask)
}
func (e *pushEnumerator) AddSplitsBack(s []source.Split, subtask int) error {
	e.log = append(e.log, fmt.Sprint("back ", subtask, " ", len(s)))
	return nil
}
func (e *pushEnumerator) SnapshotState(int64) ([]byte, error)  { return nil, errors.New("no state") }
func (e *pushEnumerator) NotifyCheckpointComplete(int64) error { return errors.New("late") }
func (e *pushEnumerator) Close() error                         { e.log = append(e.log, "closed"); return nil }

func TestCustomEnumeratorThroughTheContext(t *testing.T) {
	var enums []*pushEnumerator
	ctx := &fakeContext{p: 2}
	c, err := source.NewProvider(func(ectx source.SplitEnumeratorContext, restored []byte) (source.SplitEnumerator, error) {
		e := &pushEnumerator{ctx: ectx}
		enums = append(enums, e)
		return e, nil
	}).Create(ctx)
	require.NoError(t, err)
	require.NoError(t, c.Start())
	gw1 := &fakeGateway{subtask: 1, attempt: 4}
	require.NoError(t, c.ExecutionAttemptReady(1, 4, gw1))
	ctx.runQueued()
	assert.Equal(t, []string{`{"type":"AddSplits","splits":[{"id":"push-1"}]}`}, gw1.take())

	// A checkpoint the enumerator cannot snapshot is declined with its error.
	var declined error
	c.CheckpointCoordinator(7, func(_ []byte, err error) { declined = err })
	assert.EqualError(t, declined, "source: snapshotting the split enumerator of vertex "+jobgraph.JobVertexID{2}.String()+" for checkpoint 7: no state")
	// An error of its completion notification fails the job.
	c.NotifyCheckpointComplete(7)
	require.Len(t, ctx.failed, 1)
	assert.ErrorContains(t, ctx.failed[0], "checkpoint 7 complete: late")

	// Work queued by a replaced enumerator is dropped; the new one gets the registered readers.
	require.NoError(t, c.ExecutionAttemptReady(0, 0, &fakeGateway{}))
	require.NoError(t, c.ResetToCheckpoint(coordination.NoCheckpoint, nil))
	ctx.runQueued()
	require.Len(t, enums, 2)
	assert.Equal(t, []string{"reader 1 map[1:4]", "reader 0 map[0:0 1:4]", "closed"}, enums[0].log)
	assert.Equal(t, []string{"reader 0 map[0:0 1:4]", "reader 1 map[0:0 1:4]"}, enums[1].log)
	assert.Equal(t, []string{`{"type":"AddSplits","splits":[{"id":"push-2"}]}`}, gw1.take(), "only the new enumerator's")

	// Reset subtask 1: push-2 comes back; push-1, given before the global reset, does not.
	require.NoError(t, c.SubtaskReset(1, coordination.NoCheckpoint))
	assert.Equal(t, "back 1 1", enums[1].log[2])
	require.NoError(t, c.ExecutionAttemptFailed(1, 4, nil))
	require.NoError(t, c.HandleEventFromOperator(0, 0, []byte(request)))
	require.NoError(t, c.Close())
	ctx.RunInMainThread(func() {})
	enums[1].ctx.RunInCoordinatorThread(func() { t.Error("ran after Close") })
	ctx.runQueued()
	assert.EqualError(t, enums[1].ctx.AssignSplits(0, source.Split{ID: "x"}), "source: the split enumerator was replaced or closed")
	assert.EqualError(t, enums[1].ctx.AssignSplits(0), "source: assigning no splits to subtask 0")
}

func b64(s string) string {
	b, _ := json.Marshal([]byte(s))
	return string(b[1 : len(b)-1])
}

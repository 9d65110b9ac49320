// Package rpctest is the conformance suite every rpc.Service implementation must pass: connecting
// to a registered endpoint and calling it with plain-data messages, fencing-token mismatches that
// still match rpc.ErrFencingTokenMismatch on the caller's side, an endpoint's error that says its
// recipient is unreachable (rpc.IsUnreachable, which heartbeats count toward
// heartbeat.rpc-failure-threshold) staying so on the caller's side while a timeout or a plain
// error does not become one, unknown and taken addresses (nothing registered at an address is
// unreachable too: rpc.ErrUnknownAddress and rpc.IsUnreachable, as a call to a stopped endpoint
// is in Flink), an endpoint unregistered while a call to it is in flight, operator events in both directions
// (their bytes, attempt and token intact, a stale token refused), concurrent calls, and a closed
// Service.
// Run it from the implementation's tests:
//
//	func TestConformance(t *testing.T) {
//		rpctest.TestService(t, func(t *testing.T) rpc.Service { return mytransport.New(...) })
//	}
//
// Each case gets a fresh Service from newService and closes it when it ends (newService must
// not). The suite registers its own endpoints, a Probe implementing rpc.JobMasterGateway and a
// TaskProbe implementing rpc.TaskExecutorGateway, so a Service that hands out client stubs must
// serve those gateways. TestService runs in real time and
// suits implementations that do real I/O; one that does none can use TestServiceInBubble, which
// runs each case inside its own testing/synctest bubble. No case sleeps: each waits for what it
// expects for at most Timeout.
package rpctest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
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

// Timeout bounds every wait of the suite (virtual time in a bubble).
const Timeout = 10 * time.Second

// TestService runs the conformance suite, one subtest per case, in real time.
func TestService(t *testing.T, newService func(t *testing.T) rpc.Service) {
	run(t, newService, false)
}

// TestServiceInBubble runs the conformance suite with each case inside a testing/synctest bubble.
// Only for implementations whose goroutines all end when the Service is closed and that do no
// real I/O.
func TestServiceInBubble(t *testing.T, newService func(t *testing.T) rpc.Service) {
	run(t, newService, true)
}

var cases = []struct {
	name string
	run  func(t *testing.T, s rpc.Service)
}{
	{"Connect/CallsReachTheEndpointWithTheirMessages", connectAndCall},
	{"Connect/AnotherGatewayTypeIsRefused", connectWrongType},
	{"Fencing/StaleTokenMatchesErrFencingTokenMismatch", fencingMismatch},
	{"Failure/SentinelsSurviveTheTrip", failureSentinels},
	{"Failure/UnreachableStaysUnreachable", failureUnreachable},
	{"Address/UnknownTakenAndUnregistered", addresses},
	{"Address/UnregisteredIsUnreachable", unregisteredUnreachable},
	{"Address/UnregisteredMidCall", unregisteredMidCall},
	{"OperatorEvents/CrossIntactAndStaleTokensAreRefused", operatorEvents},
	{"ConcurrentCalls", concurrentCalls},
	{"Close/RegisterAndLookupFail", closedService},
}

func run(t *testing.T, newService func(t *testing.T) rpc.Service, inBubble bool) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := func(t *testing.T) {
				s := newService(t)
				require.NotNil(t, s, "newService returned nil")
				t.Cleanup(func() { assert.NoError(t, s.Close(), "Service.Close") })
				c.run(t, s)
			}
			if inBubble {
				synctest.Test(t, body)
			} else {
				body(t)
			}
		})
	}
}

// Probe is the endpoint the suite registers: a JobMaster gateway that records what reaches it.
// Its fenced methods refuse any token but Token with an *rpc.FencingError and record nothing then.
// OfferSlots blocks until Release is closed (or its ctx ends) when Release is set.
type Probe struct {
	Token   jobgraph.JobMasterID
	Release chan struct{}
	Entered chan struct{} // closed when a blocking OfferSlots has begun

	mu     sync.Mutex
	states []rpc.TaskExecutionState
	fails  []*jobgraph.ErrorInfo
	events []OperatorEvent
	hbErr  error
}

// SetHeartbeatError makes HeartbeatFromResourceManager answer err (nil: succeed).
func (p *Probe) SetHeartbeatError(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hbErr = err
}

// States returns the TaskExecutionStates received, in arrival order.
func (p *Probe) States() []rpc.TaskExecutionState {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]rpc.TaskExecutionState(nil), p.states...)
}

func (p *Probe) fence(token jobgraph.JobMasterID) error {
	if token != p.Token {
		return &rpc.FencingError{Endpoint: "rpctest probe", Expected: p.Token.String(), Got: token.String()}
	}
	return nil
}

func (p *Probe) UpdateTaskExecutionState(_ context.Context, token jobgraph.JobMasterID, state rpc.TaskExecutionState) (bool, error) {
	if err := p.fence(token); err != nil {
		return false, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.states = append(p.states, state)
	return true, nil
}

func (p *Probe) RegisterTaskExecutor(_ context.Context, token jobgraph.JobMasterID, _ rpc.TaskExecutorRegistration) error {
	return p.fence(token)
}

func (p *Probe) OfferSlots(ctx context.Context, token jobgraph.JobMasterID, _ jobgraph.ResourceID, offers []rpc.SlotOffer) ([]rpc.SlotOffer, error) {
	if err := p.fence(token); err != nil {
		return nil, err
	}
	if p.Release != nil {
		close(p.Entered)
		select {
		case <-p.Release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return offers, nil
}

func (p *Probe) FailSlot(_ context.Context, token jobgraph.JobMasterID, _ jobgraph.ResourceID, _ jobgraph.AllocationID, cause *jobgraph.ErrorInfo) error {
	if err := p.fence(token); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fails = append(p.fails, cause)
	return nil
}

// DisconnectTaskExecutor answers with cause.Err(), so the caller sees what arrived as an error.
func (p *Probe) DisconnectTaskExecutor(_ context.Context, token jobgraph.JobMasterID, _ jobgraph.ResourceID, cause *jobgraph.ErrorInfo) error {
	if err := p.fence(token); err != nil {
		return err
	}
	return cause.Err()
}

func (p *Probe) DisconnectResourceManager(_ context.Context, token jobgraph.JobMasterID, _ jobgraph.ResourceManagerID, _ *jobgraph.ErrorInfo) error {
	return p.fence(token)
}

func (p *Probe) HeartbeatFromTaskExecutor(context.Context, jobgraph.ResourceID, rpc.AllocatedSlotReport) error {
	return nil
}

func (p *Probe) HeartbeatFromResourceManager(context.Context, jobgraph.ResourceID) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.hbErr
}

func (p *Probe) AcknowledgeCheckpoint(_ context.Context, token jobgraph.JobMasterID, _ jobgraph.JobID, _ checkpoint.AcknowledgeCheckpoint) error {
	return p.fence(token)
}

func (p *Probe) DeclineCheckpoint(_ context.Context, token jobgraph.JobMasterID, _ jobgraph.JobID, _ checkpoint.DeclineCheckpoint) error {
	return p.fence(token)
}

// SendOperatorEventToCoordinator records the event; an attempt whose AttemptNumber is
// NotRunningAttempt is answered with an error wrapping rpc.ErrTaskNotRunning, recording nothing.
func (p *Probe) SendOperatorEventToCoordinator(_ context.Context, token jobgraph.JobMasterID, attempt jobgraph.ExecutionAttemptID, event []byte) error {
	if err := p.fence(token); err != nil {
		return err
	}
	if attempt.AttemptNumber == NotRunningAttempt {
		return fmt.Errorf("rpctest probe: execution %s: %w", attempt, rpc.ErrTaskNotRunning)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.events = append(p.events, OperatorEvent{Token: token, Attempt: attempt, Event: bytes.Clone(event)})
	return nil
}

// OperatorEvents returns the operator events received, in arrival order.
func (p *Probe) OperatorEvents() []OperatorEvent {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]OperatorEvent(nil), p.events...)
}

// NotRunningAttempt is the attempt number the probes answer operator events for with an error
// wrapping rpc.ErrTaskNotRunning.
const NotRunningAttempt = 99

// OperatorEvent is an operator event a probe received.
type OperatorEvent struct {
	Token   jobgraph.JobMasterID
	Attempt jobgraph.ExecutionAttemptID
	Event   []byte
}

var _ rpc.JobMasterGateway = (*Probe)(nil)

// TaskProbe is the TaskExecutor endpoint the suite registers: it records the operator events
// SendOperatorEventToTask brings, fenced as Probe's calls are; an event reading "refuse" is
// answered with the error "rpctest: the handler refused the event" and an attempt numbered
// NotRunningAttempt with one wrapping rpc.ErrTaskNotRunning. Only SendOperatorEventToTask may be
// called: the other methods belong to the embedded (nil) gateway.
type TaskProbe struct {
	rpc.TaskExecutorGateway
	// Events records as a Probe does; its Token is the TaskProbe's.
	Events Probe
}

// SendOperatorEventToTask implements rpc.TaskExecutorGateway.
func (p *TaskProbe) SendOperatorEventToTask(ctx context.Context, token jobgraph.JobMasterID, attempt jobgraph.ExecutionAttemptID, event []byte) error {
	if string(event) == "refuse" {
		if err := p.Events.fence(token); err != nil {
			return err
		}
		return errors.New("rpctest: the handler refused the event")
	}
	return p.Events.SendOperatorEventToCoordinator(ctx, token, attempt, event)
}

// ctx bounds a case's calls by Timeout.
func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(t.Context(), Timeout)
	t.Cleanup(cancel)
	return c
}

func register(t *testing.T, s rpc.Service, address string) *Probe {
	t.Helper()
	p := &Probe{Token: jobgraph.NewJobMasterID()}
	require.NoError(t, s.Register(address, p))
	return p
}

func failedState() rpc.TaskExecutionState {
	return rpc.TaskExecutionState{
		ExecutionAttemptID: jobgraph.ExecutionAttemptID{ExecutionGraphID: jobgraph.NewExecutionGraphID(),
			ExecutionVertexID: jobgraph.ExecutionVertexID{JobVertexID: jobgraph.NewJobVertexID(), Subtask: 2}, AttemptNumber: 1},
		State:   jobgraph.ExecutionStateFailed,
		Failure: rpc.Failure(fmt.Errorf("reading input: %w", &rpc.HeartbeatTimeoutError{Target: "TaskExecutor te-9", Timeout: 50 * time.Second})),
	}
}

func connectAndCall(t *testing.T, s rpc.Service) {
	c := ctx(t)
	p := register(t, s, "jobmaster-a")
	gw, err := rpc.Connect[rpc.JobMasterGateway](c, s, "jobmaster-a")
	require.NoError(t, err)
	state := failedState()
	applied, err := gw.UpdateTaskExecutionState(c, p.Token, state)
	require.NoError(t, err)
	assert.True(t, applied, "the endpoint's answer comes back")
	assert.Equal(t, []rpc.TaskExecutionState{state}, p.States(), "the message arrives whole")

	offers := []rpc.SlotOffer{{AllocationID: jobgraph.NewAllocationID(), SlotIndex: 1, ResourceProfile: jobgraph.ResourceProfile{CPUCores: 0.5}}}
	accepted, err := gw.OfferSlots(c, p.Token, "te-1", offers)
	require.NoError(t, err)
	assert.Equal(t, offers, accepted)
}

func connectWrongType(t *testing.T, s rpc.Service) {
	register(t, s, "jobmaster-a")
	_, err := rpc.Connect[rpc.DispatcherGateway](ctx(t), s, "jobmaster-a")
	require.Error(t, err, "a JobMaster is no DispatcherGateway")
	assert.NotErrorIs(t, err, rpc.ErrUnknownAddress, "the address is known")
}

func fencingMismatch(t *testing.T, s rpc.Service) {
	c := ctx(t)
	p := register(t, s, "jobmaster-a")
	gw, err := rpc.Connect[rpc.JobMasterGateway](c, s, "jobmaster-a")
	require.NoError(t, err)
	stale := jobgraph.NewJobMasterID()
	applied, err := gw.UpdateTaskExecutionState(c, stale, failedState())
	require.ErrorIs(t, err, rpc.ErrFencingTokenMismatch, "matched on the caller's side")
	assert.False(t, applied)
	assert.ErrorContains(t, err, stale.String(), "the message names the stale token")
	assert.Empty(t, p.States(), "a stale call changes nothing")
	require.ErrorIs(t, gw.FailSlot(c, stale, "te-1", jobgraph.NewAllocationID(), nil), rpc.ErrFencingTokenMismatch)
	p.mu.Lock()
	assert.Empty(t, p.fails)
	p.mu.Unlock()
}

func failureSentinels(t *testing.T, s rpc.Service) {
	c := ctx(t)
	p := register(t, s, "jobmaster-a")
	gw, err := rpc.Connect[rpc.JobMasterGateway](c, s, "jobmaster-a")
	require.NoError(t, err)
	cause := rpc.Failure(fmt.Errorf("lost: %w", &rpc.HeartbeatTimeoutError{Target: "TaskExecutor te-1", Timeout: time.Minute}))
	require.NoError(t, gw.FailSlot(c, p.Token, "te-1", jobgraph.NewAllocationID(), cause))
	p.mu.Lock()
	require.Len(t, p.fails, 1)
	got := p.fails[0]
	p.mu.Unlock()
	assert.Equal(t, cause, got, "the ErrorInfo arrives whole")
	assert.ErrorIs(t, got.Err(), rpc.ErrHeartbeatTimeout, "and still matches the sentinel")

	// An error the endpoint answers with crosses back the same way.
	err = gw.DisconnectTaskExecutor(c, p.Token, "te-1", rpc.Failure(fmt.Errorf("gone: %w", rpc.ErrUnknownAddress)))
	require.ErrorIs(t, err, rpc.ErrUnknownAddress)
	assert.EqualError(t, err, "gone: rpc: no endpoint at address")
}

// gone is an endpoint's error for a recipient that is gone (rpc.UnreachableError), as a killed
// TaskExecutor answers.
type gone struct{}

func (gone) Error() string     { return "the recipient is gone" }
func (gone) Unreachable() bool { return true }

func failureUnreachable(t *testing.T, s rpc.Service) {
	c := ctx(t)
	p := register(t, s, "jobmaster-a")
	gw, err := rpc.Connect[rpc.JobMasterGateway](c, s, "jobmaster-a")
	require.NoError(t, err)
	for _, tc := range []struct {
		err         error
		unreachable bool
	}{
		{fmt.Errorf("TaskExecutor te-1: %w", gone{}), true},
		{fmt.Errorf("its own wait: %w", context.DeadlineExceeded), false},
		{errors.New("refused"), false},
		{nil, false},
	} {
		p.SetHeartbeatError(tc.err)
		err := gw.HeartbeatFromResourceManager(c, "rm-1")
		assert.Equal(t, tc.unreachable, rpc.IsUnreachable(err), "%v", tc.err)
		if tc.err != nil {
			assert.EqualError(t, err, tc.err.Error())
		} else {
			assert.NoError(t, err)
		}
	}
}

// addresses: an address nothing is registered under fails with rpc.ErrUnknownAddress, which is
// unreachable (rpc.IsUnreachable): nobody there answers.
func addresses(t *testing.T, s rpc.Service) {
	c := ctx(t)
	_, err := s.Lookup(c, "nowhere")
	require.ErrorIs(t, err, rpc.ErrUnknownAddress)
	assert.True(t, rpc.IsUnreachable(err), "nothing at the address: unreachable (%v)", err)
	_, err = rpc.Connect[rpc.JobMasterGateway](c, s, "nowhere")
	require.ErrorIs(t, err, rpc.ErrUnknownAddress)
	assert.True(t, rpc.IsUnreachable(err), "nothing at the address: unreachable (%v)", err)

	p := register(t, s, "jobmaster-a")
	err = s.Register("jobmaster-a", &Probe{})
	require.Error(t, err, "the address is taken")
	gw, err := rpc.Connect[rpc.JobMasterGateway](c, s, "jobmaster-a")
	require.NoError(t, err)
	_, err = gw.UpdateTaskExecutionState(c, p.Token, failedState())
	require.NoError(t, err, "the first endpoint still answers")

	s.Unregister("jobmaster-a")
	s.Unregister("jobmaster-a") // twice: a no-op
	s.Unregister("never-registered")
	_, err = s.Lookup(c, "jobmaster-a")
	require.ErrorIs(t, err, rpc.ErrUnknownAddress, "gone once unregistered")
	assert.True(t, rpc.IsUnreachable(err), "gone once unregistered: unreachable (%v)", err)

	next := register(t, s, "jobmaster-a")
	gw, err = rpc.Connect[rpc.JobMasterGateway](c, s, "jobmaster-a")
	require.NoError(t, err)
	_, err = gw.UpdateTaskExecutionState(c, next.Token, failedState())
	require.NoError(t, err, "the address can be taken again")
	assert.Len(t, next.States(), 1)
	assert.Len(t, p.States(), 1, "the old endpoint got nothing more")
}

// unregisteredUnreachable: a gateway handed out before its endpoint was unregistered either still
// reaches the endpoint (the in-process Service hands out the endpoint itself, which answers for
// itself: a closed endpoint's own error) or fails as a call to an address nothing is registered
// under does: rpc.ErrUnknownAddress and unreachable, so heartbeats to it count toward
// heartbeat.rpc-failure-threshold. Flink: an RPC to a stopped endpoint's terminated actor fails
// with RecipientUnreachableException.
func unregisteredUnreachable(t *testing.T, s rpc.Service) {
	c := ctx(t)
	p := register(t, s, "jobmaster-a")
	gw, err := rpc.Connect[rpc.JobMasterGateway](c, s, "jobmaster-a")
	require.NoError(t, err)
	require.NoError(t, gw.HeartbeatFromResourceManager(c, "rm-1"))
	s.Unregister("jobmaster-a")
	for i := range 2 {
		err = gw.HeartbeatFromResourceManager(c, "rm-1")
		if err != nil {
			require.ErrorIs(t, err, rpc.ErrUnknownAddress, "call %d after the unregistration", i)
			assert.True(t, rpc.IsUnreachable(err), "call %d after the unregistration: unreachable (%v)", i, err)
		}
		_, err = gw.UpdateTaskExecutionState(c, p.Token, failedState())
		if err != nil {
			require.ErrorIs(t, err, rpc.ErrUnknownAddress, "call %d after the unregistration", i)
			assert.True(t, rpc.IsUnreachable(err), "call %d after the unregistration: unreachable (%v)", i, err)
		}
	}
}

func unregisteredMidCall(t *testing.T, s rpc.Service) {
	c := ctx(t)
	p := &Probe{Token: jobgraph.NewJobMasterID(), Release: make(chan struct{}), Entered: make(chan struct{})}
	require.NoError(t, s.Register("jobmaster-a", p))
	gw, err := rpc.Connect[rpc.JobMasterGateway](c, s, "jobmaster-a")
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		_, err := gw.OfferSlots(c, p.Token, "te-1", []rpc.SlotOffer{{AllocationID: jobgraph.NewAllocationID()}})
		done <- err
	}()
	select {
	case <-p.Entered:
	case <-c.Done():
		t.Fatal("the call never reached the endpoint")
	}
	s.Unregister("jobmaster-a")
	_, err = s.Lookup(c, "jobmaster-a")
	require.ErrorIs(t, err, rpc.ErrUnknownAddress, "new lookups fail at once, with the call still in flight")
	assert.True(t, rpc.IsUnreachable(err), "and are unreachable (%v)", err)
	close(p.Release)
	select {
	case <-done: // the endpoint's answer or an error: either way the call returned
	case <-c.Done():
		t.Fatal("a call in flight when its endpoint was unregistered never returned")
	}
}

func operatorEvents(t *testing.T, s rpc.Service) {
	c := ctx(t)
	jm := register(t, s, "jobmaster-a")
	te := &TaskProbe{Events: Probe{Token: jobgraph.NewJobMasterID()}}
	require.NoError(t, s.Register("taskexecutor-a", te))
	jmGW, err := rpc.Connect[rpc.JobMasterGateway](c, s, "jobmaster-a")
	require.NoError(t, err)
	teGW, err := rpc.Connect[rpc.TaskExecutorGateway](c, s, "taskexecutor-a")
	require.NoError(t, err)
	attempt := failedState().ExecutionAttemptID
	event := []byte{0, 1, 2, 0xff, 'e'}

	// Task → coordinator, and coordinator → task: the bytes, the attempt and the token arrive whole.
	require.NoError(t, jmGW.SendOperatorEventToCoordinator(c, jm.Token, attempt, event))
	require.NoError(t, teGW.SendOperatorEventToTask(c, te.Events.Token, attempt, event))
	assert.Equal(t, []OperatorEvent{{Token: jm.Token, Attempt: attempt, Event: []byte{0, 1, 2, 0xff, 'e'}}}, jm.OperatorEvents())
	assert.Equal(t, []OperatorEvent{{Token: te.Events.Token, Attempt: attempt, Event: []byte{0, 1, 2, 0xff, 'e'}}}, te.Events.OperatorEvents())

	// A stale token is refused on both, matched on the caller's side, and nothing is recorded.
	stale := jobgraph.NewJobMasterID()
	err = jmGW.SendOperatorEventToCoordinator(c, stale, attempt, []byte("stale"))
	require.ErrorIs(t, err, rpc.ErrFencingTokenMismatch)
	assert.ErrorContains(t, err, stale.String())
	require.ErrorIs(t, teGW.SendOperatorEventToTask(c, stale, attempt, []byte("stale")), rpc.ErrFencingTokenMismatch)

	// The endpoints' answers cross back: the not-running sentinel, and a handler's error text.
	notRunning := attempt
	notRunning.AttemptNumber = NotRunningAttempt
	require.ErrorIs(t, jmGW.SendOperatorEventToCoordinator(c, jm.Token, notRunning, event), rpc.ErrTaskNotRunning)
	require.ErrorIs(t, teGW.SendOperatorEventToTask(c, te.Events.Token, notRunning, event), rpc.ErrTaskNotRunning)
	assert.EqualError(t, teGW.SendOperatorEventToTask(c, te.Events.Token, attempt, []byte("refuse")), "rpctest: the handler refused the event")
	assert.Len(t, jm.OperatorEvents(), 1, "nothing more was recorded")
	assert.Len(t, te.Events.OperatorEvents(), 1, "nothing more was recorded")
}

func concurrentCalls(t *testing.T, s rpc.Service) {
	c := ctx(t)
	const endpoints, callers, calls = 3, 8, 25
	probes := make([]*Probe, endpoints)
	for i := range probes {
		probes[i] = register(t, s, fmt.Sprintf("jobmaster-%d", i))
	}
	var wg sync.WaitGroup
	errs := make(chan error, endpoints*callers*calls)
	for i, p := range probes {
		for range callers {
			wg.Go(func() {
				gw, err := rpc.Connect[rpc.JobMasterGateway](c, s, fmt.Sprintf("jobmaster-%d", i))
				if err != nil {
					errs <- err
					return
				}
				for range calls {
					if _, err := gw.UpdateTaskExecutionState(c, p.Token, rpc.TaskExecutionState{State: jobgraph.ExecutionStateRunning}); err != nil {
						errs <- err
					}
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	require.NoError(t, errors.Join(all...))
	for i, p := range probes {
		assert.Len(t, p.States(), callers*calls, "endpoint %d got every call exactly once", i)
	}
}

func closedService(t *testing.T, s rpc.Service) {
	c := ctx(t)
	register(t, s, "jobmaster-a")
	require.NoError(t, s.Close())
	_, err := s.Lookup(c, "jobmaster-a")
	require.ErrorIs(t, err, rpc.ErrServiceClosed)
	assert.ErrorIs(t, err, rpc.ErrClosed)
	err = s.Register("jobmaster-b", &Probe{})
	require.ErrorIs(t, err, rpc.ErrServiceClosed)
	_, err = rpc.Connect[rpc.JobMasterGateway](c, s, "jobmaster-a")
	require.ErrorIs(t, err, rpc.ErrServiceClosed)
	s.Unregister("jobmaster-a") // harmless after Close
}

package scheduler

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/executiongraph"
	"github.com/jobgraph/jobgraph/rpc"
	"github.com/jobgraph/jobgraph/slotpool"
)

const te1, te2 jobgraph.ResourceID = "taskexecutor-1", "taskexecutor-2"

// A single vertex without edges is one pipelined region per subtask (Flink's
// SchedulingPipelinedRegionComputeUtil), and each region is its own bulk: a subtask deploys as
// soon as its own slot is there. (The issue asked for 0 tasks after 1 of 4 slots here; that
// would need the four subtasks in one bulk, which neither Flink nor the region strategy does.
// TestBulkDeploysOnlyWhenAllItsSlotsArrived checks the 0-then-4 bulk rule on a region of 4.)
func TestOneVertexParallelism4DeploysEachRegionWhenItsSlotArrives(t *testing.T) {
	g := jobgraph.New("one", jobgraph.Streaming)
	g.AddVertex("v", "noop", 4)
	h := newHarness(t, g, Config{})
	h.s.StartScheduling()
	assert.Equal(t, 4, h.pool.NumPendingRequests())
	assert.Empty(t, h.deployer.deployed)

	require.Equal(t, 1, h.offer(te1, 1))
	assert.Equal(t, []string{"v (1/4)"}, h.deployer.deployedNames())

	require.Equal(t, 3, h.offer(te2, 3))
	assert.Equal(t, []string{"v (1/4)", "v (2/4)", "v (3/4)", "v (4/4)"}, h.deployer.deployedNames())
	assert.Equal(t, 0, h.pool.NumPendingRequests())
}

// One bulk (a region of 4 subtasks in 4 slot sharing groups) deploys only once every one of its
// slots is there. Flink: DefaultExecutionDeployer waits for all slot assignments of the bulk.
func TestBulkDeploysOnlyWhenAllItsSlotsArrived(t *testing.T) {
	g := jobgraph.New("bulk", jobgraph.Streaming)
	// Every subtask in a slot of its own (no slot sharing): the slot counts below are per subtask.
	a := g.AddVertex("a", "noop", 2).WithoutSlotSharingGroup()
	b := g.AddVertex("b", "noop", 2).WithoutSlotSharingGroup()
	g.Connect(a, b, jobgraph.AllToAll, jobgraph.PipelinedBounded)
	h := newHarness(t, g, Config{})
	h.s.StartScheduling()
	assert.Equal(t, 4, h.pool.NumPendingRequests())
	assert.Equal(t, map[jobgraph.ExecutionState]int{jobgraph.ExecutionStateScheduled: 4}, h.countStates())

	require.Equal(t, 1, h.offer(te1, 1))
	assert.Empty(t, h.deployer.deployed, "0 of 4 tasks deployed after 1 of 4 slots")
	require.Equal(t, 3, h.offer(te2, 3))
	assert.Equal(t, []string{"a (1/2)", "a (2/2)", "b (1/2)", "b (2/2)"}, h.deployer.deployedNames())
	assert.Equal(t, map[jobgraph.ExecutionState]int{jobgraph.ExecutionStateDeploying: 4}, h.countStates())
}

// Slot sharing: subtask k of every vertex in one slot sharing group shares one slot, whose
// profile is the sum of the members' profiles.
func TestSlotSharingGroupsShareOneSlotPerSubtaskIndex(t *testing.T) {
	g := jobgraph.New("sharing", jobgraph.Streaming)
	cpu1 := jobgraph.ResourceProfile{CPUCores: 1}
	a := g.AddVertex("a", "noop", 2).WithSlotSharingGroup("default").WithResources(cpu1)
	b := g.AddVertex("b", "noop", 3).WithSlotSharingGroup("default").WithResources(cpu1)
	g.Connect(a, b, jobgraph.AllToAll, jobgraph.PipelinedBounded)
	h := newHarness(t, g, Config{})
	h.s.StartScheduling()
	assert.Equal(t, []rpc.ResourceRequirement{
		{Profile: cpu1, Count: 1},                                  // group 2: b2 alone
		{Profile: jobgraph.ResourceProfile{CPUCores: 2}, Count: 2}, // groups 0, 1: a and b
	}, h.pool.Requirements())

	offers := []rpc.SlotOffer{
		{AllocationID: jobgraph.NewAllocationID(), SlotIndex: 0, ResourceProfile: jobgraph.ResourceProfile{CPUCores: 2}},
		{AllocationID: jobgraph.NewAllocationID(), SlotIndex: 1, ResourceProfile: jobgraph.ResourceProfile{CPUCores: 2}},
		{AllocationID: jobgraph.NewAllocationID(), SlotIndex: 2, ResourceProfile: jobgraph.ResourceProfile{CPUCores: 2}},
	}
	require.Len(t, h.pool.OfferSlots(te1, offers), 3)
	require.Len(t, h.deployer.deployed, 5)
	slotOf := map[string]jobgraph.AllocationID{}
	for _, d := range h.deployer.deployed {
		slotOf[d.tdd.TaskName] = d.slot.AllocationID
		assert.Equal(t, d.slot.AllocationID, d.tdd.AllocationID)
	}
	assert.Equal(t, slotOf["a (1/2)"], slotOf["b (1/3)"])
	assert.Equal(t, slotOf["a (2/2)"], slotOf["b (2/3)"])
	assert.NotEqual(t, slotOf["a (1/2)"], slotOf["a (2/2)"])
	assert.NotEqual(t, slotOf["b (3/3)"], slotOf["a (1/2)"])
	assert.NotEqual(t, slotOf["b (3/3)"], slotOf["a (2/2)"])
	assert.Equal(t, 3, h.pool.NumAllocatedSlots())
}

// The region strategy through the whole scheduler: source(2) –POINTWISE PIPELINED_BOUNDED→
// map(2) –ALL_TO_ALL BLOCKING→ sink(2). The sinks are deployed once both maps finished; the
// shared slot of a finished region goes back to the pool and is reused.
func TestRegionSchedulingEndToEnd(t *testing.T) {
	g := threeStage(2, jobgraph.Pointwise, jobgraph.PipelinedBounded, jobgraph.AllToAll, jobgraph.Blocking)
	for _, v := range g.Vertices {
		v.SlotSharingGroup = "default"
	}
	h := newHarness(t, g, Config{})
	h.s.StartScheduling()
	require.Equal(t, 2, h.offer(te1, 2))
	assert.Equal(t, []string{"source (1/2)", "map (1/2)", "source (2/2)", "map (2/2)"}, h.deployer.deployedNames())
	h.runDeployed()

	h.finish("source", 0)
	h.finish("source", 1)
	h.finish("map", 0)
	assert.Len(t, h.deployer.deployed, 4)
	assert.Equal(t, 1, h.pool.NumAllocatedSlots(), "region 0 finished: its shared slot went back")
	h.finish("map", 1)
	assert.Equal(t, []string{"sink (1/2)", "sink (2/2)"}, h.deployer.deployedNames()[4:])
	assert.Equal(t, 2, h.pool.NumAllocatedSlots(), "the sinks got the two free slots")
	assert.Equal(t, 0, h.pool.NumPendingRequests())

	h.runDeployed()
	h.finish("sink", 0)
	assert.Empty(t, h.deployer.released, "sink1's region still reads the maps' partitions")
	h.finish("sink", 1)
	assert.Equal(t, jobgraph.JobStatusFinished, h.s.JobStatus())
	// Both map partitions are released once both sink regions finished, in one call for te1.
	require.Len(t, h.deployer.released, 1)
	assert.Equal(t, te1, h.deployer.released[0].location)
	mapResult := g.VertexByName("map").Results[0].ID
	assert.Equal(t, []rpc.ResultPartitionID{
		{PartitionID: jobgraph.IntermediateResultPartitionID{IntermediateDataSetID: mapResult, PartitionIndex: 0}, ProducerID: h.exec("map", 0).AttemptID()},
		{PartitionID: jobgraph.IntermediateResultPartitionID{IntermediateDataSetID: mapResult, PartitionIndex: 1}, ProducerID: h.exec("map", 1).AttemptID()},
	}, h.deployer.released[0].partitions)
	assert.Equal(t, 0, h.pool.NumAllocatedSlots())
	assert.Empty(t, h.pool.Requirements())
	require.Len(t, h.terminal, 1)
	assert.NoError(t, h.terminal[0].cause)
	assert.Equal(t, jobgraph.JobStatusFinished, h.terminal[0].archived.Status)
}

// Interpretation of the issue's "P(2) –POINTWISE BLOCKING→ C(2), C0 already scheduled, then P0
// FINISHED: only C1 is newly scheduled": P0 FINISHED schedules C0; a repeated FINISHED
// notification for P0 (as a late or duplicated event would bring) schedules nothing, because C0 is
// already scheduled; P1 FINISHED then schedules exactly C1. This is what Flink's strategies
// guarantee with scheduledRegions / scheduledVertices (and what
// PipelinedRegionSchedulingStrategyTest.testScheduleBlockingDownstreamTaskIndividually checks:
// one finished producer schedules one consumer). The job then runs to FINISHED and every
// execution is deployed exactly once. Both strategies.
func TestAlreadyScheduledConsumerIsNotScheduledAgain(t *testing.T) {
	for _, strategy := range []string{StrategyRegion, StrategyVertexwise} {
		t.Run(strategy, func(t *testing.T) {
			g := jobgraph.New("pc", jobgraph.Batch)
			p := g.AddVertex("P", "noop", 2)
			c := g.AddVertex("C", "noop", 2)
			g.Connect(p, c, jobgraph.Pointwise, jobgraph.Blocking)
			h := newHarness(t, g, Config{SchedulingStrategy: strategy})
			h.s.StartScheduling()
			require.Equal(t, 2, h.offer(te1, 2))
			assert.Equal(t, []string{"P (1/2)", "P (2/2)"}, h.deployer.deployedNames())
			h.runDeployed()

			h.finish("P", 0)
			assert.Equal(t, []string{"C (1/2)"}, h.deployer.deployedNames()[2:])

			p0 := h.exec("P", 0).Vertex()
			h.s.strategy.OnExecutionStateChange(p0, jobgraph.ExecutionStateFinished)
			assert.Len(t, h.deployer.deployed, 3, "C0 is already scheduled")

			h.finish("P", 1)
			assert.Equal(t, []string{"C (2/2)"}, h.deployer.deployedNames()[3:], "only C1 is newly scheduled")

			h.runDeployed()
			h.finish("C", 0)
			h.finish("C", 1)
			assert.Equal(t, jobgraph.JobStatusFinished, h.s.JobStatus())
			seen := map[jobgraph.ExecutionAttemptID]int{}
			for _, d := range h.deployer.deployed {
				seen[d.tdd.ExecutionAttemptID]++
			}
			assert.Len(t, seen, 4)
			for a, n := range seen {
				assert.Equal(t, 1, n, "%v deployed %d times", a, n)
			}
		})
	}
}

// Vertex-wise through the scheduler: the number of vertices scheduled, cumulatively, as in
// Flink's VertexwiseSchedulingStrategyTest.testOnExecutionStateChangeToFinished.
func TestVertexwiseSchedulingCounts(t *testing.T) {
	g := threeStage(2, jobgraph.Pointwise, jobgraph.Blocking, jobgraph.AllToAll, jobgraph.Blocking)
	h := newHarness(t, g, Config{SchedulingStrategy: StrategyVertexwise})
	scheduled := func() int {
		n := 0
		for _, states := range h.states {
			if len(states) > 0 && states[0] == jobgraph.ExecutionStateScheduled {
				n++
			}
		}
		return n
	}
	h.s.StartScheduling()
	assert.Equal(t, 2, scheduled())
	require.Equal(t, 2, h.offer(te1, 2)) // finished vertices give their slot to the next ones
	h.runDeployed()
	for _, step := range []struct {
		name string
		i    int
		want int
	}{{"source", 0, 3}, {"source", 1, 4}, {"map", 0, 4}, {"map", 1, 6}} {
		h.finish(step.name, step.i)
		assert.Equal(t, step.want, scheduled(), "after %s%d finished", step.name, step.i)
		h.runDeployed()
	}
	h.finish("sink", 0)
	h.finish("sink", 1)
	assert.Equal(t, jobgraph.JobStatusFinished, h.s.JobStatus())
}

var errBoom = errors.New("boom")

// errBoom travels in TaskExecutionState as a host's own sentinel does: under a registered code.
func init() { jobgraph.RegisterErrorCode("scheduler-test.boom", errBoom) }

// A task failure with no restart strategy fails the job with the task's error as root cause;
// the other executions are canceled and the slots go back.
func TestTaskFailureFailsJob(t *testing.T) {
	g := jobgraph.New("fail", jobgraph.Streaming)
	a := g.AddVertex("a", "noop", 2).WithSlotSharingGroup("default")
	b := g.AddVertex("b", "noop", 2).WithSlotSharingGroup("default")
	g.Connect(a, b, jobgraph.Pointwise, jobgraph.PipelinedBounded)
	h := newHarness(t, g, Config{})
	h.s.StartScheduling()
	h.offer(te1, 2)
	h.runDeployed()
	assert.Equal(t, 2, h.pool.NumAllocatedSlots())

	require.True(t, h.s.UpdateTaskExecutionState(rpc.TaskExecutionState{
		ExecutionAttemptID: h.exec("a", 0).AttemptID(), State: jobgraph.ExecutionStateFailed, Failure: rpc.Failure(errBoom),
	}))
	assert.Equal(t, jobgraph.JobStatusFailing, h.s.JobStatus())
	assert.Equal(t, map[jobgraph.ExecutionState]int{jobgraph.ExecutionStateFailed: 1, jobgraph.ExecutionStateCanceling: 3}, h.countStates())
	require.Len(t, h.deployer.canceled, 3)
	assert.Equal(t, cancelCall{h.exec("b", 0).AttemptID(), te1}, h.deployer.canceled[1])

	for _, n := range []struct {
		name string
		i    int
	}{{"a", 1}, {"b", 0}, {"b", 1}} {
		assert.Equal(t, jobgraph.JobStatusFailing, h.s.JobStatus())
		require.True(t, h.report(n.name, n.i, jobgraph.ExecutionStateCanceled))
	}
	assert.Equal(t, jobgraph.JobStatusFailed, h.s.JobStatus())
	assert.Equal(t, []jobgraph.JobStatus{jobgraph.JobStatusCreated, jobgraph.JobStatusRunning, jobgraph.JobStatusFailing, jobgraph.JobStatusFailed}, h.statusList())

	cause := h.s.RootCause()
	require.ErrorIs(t, cause, errBoom)
	assert.EqualError(t, cause, "task a (1/2) (attempt 0) on taskexecutor-1 failed: boom")
	require.Len(t, h.terminal, 1)
	assert.Same(t, cause, h.terminal[0].cause)
	assert.Equal(t, jobgraph.JobStatusFailed, h.terminal[0].archived.Status)
	assert.Equal(t, cause.Error(), h.terminal[0].archived.FailureCause.Message)
	assert.Equal(t, 0, h.pool.NumAllocatedSlots())
	assert.Equal(t, 2, h.pool.NumFreeSlots(), "given back to the pool, which returns them after slot.idle.timeout")
	assert.Empty(t, h.pool.Requirements())

	// Reports after the end are not applied.
	assert.False(t, h.report("a", 1, jobgraph.ExecutionStateFinished))
	h.timers.Advance(slotpool.DefaultIdleSlotTimeout)
	assert.Len(t, h.returned, 2)
}

// TaskDeploymentDescriptor contents: subpartition counts and indexes per distribution pattern.
func TestTaskDeploymentDescriptors(t *testing.T) {
	type gate struct {
		partitions []int
		sub        int
	}
	for _, tc := range []struct {
		name      string
		pattern   jobgraph.DistributionPattern
		p, c      int
		producers []int  // NumberOfSubpartitions per producer subtask
		consumers []gate // per consumer subtask
	}{
		{"ALL_TO_ALL 2→3", jobgraph.AllToAll, 2, 3, []int{3, 3}, []gate{
			{[]int{0, 1}, 0}, {[]int{0, 1}, 1}, {[]int{0, 1}, 2},
		}},
		{"POINTWISE 2→4", jobgraph.Pointwise, 2, 4, []int{2, 2}, []gate{
			{[]int{0}, 0}, {[]int{0}, 1}, {[]int{1}, 0}, {[]int{1}, 1},
		}},
		{"POINTWISE 4→2", jobgraph.Pointwise, 4, 2, []int{1, 1, 1, 1}, []gate{
			{[]int{0, 1}, 0}, {[]int{2, 3}, 0},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := jobgraph.New("tdd", jobgraph.Streaming)
			prod := g.AddVertex("prod", "produce", tc.p).WithMaxParallelism(64)
			cons := g.AddVertex("cons", "consume", tc.c).WithConfig([]byte("cfg"))
			g.Connect(prod, cons, tc.pattern, jobgraph.PipelinedBounded)
			ds := prod.Results[0].ID
			h := newHarness(t, g, Config{})
			h.s.StartScheduling()
			h.offer(te1, tc.p+tc.c)
			require.Len(t, h.deployer.deployed, tc.p+tc.c)

			byName := map[string]rpc.TaskDeploymentDescriptor{}
			for _, d := range h.deployer.deployed {
				byName[d.tdd.TaskName] = d.tdd
			}
			for i, n := range tc.producers {
				e := h.exec("prod", i)
				tdd := byName[e.Vertex().Name()]
				assert.Equal(t, rpc.TaskDeploymentDescriptor{
					JobID:              g.JobID,
					JobName:            g.Name,
					ExecutionAttemptID: e.AttemptID(),
					AllocationID:       e.AllocationID,
					TaskName:           e.Vertex().Name(),
					VertexName:         "prod",
					Invokable:          "produce",
					SubtaskIndex:       i,
					Parallelism:        tc.p,
					MaxParallelism:     64,
					ProducedPartitions: []rpc.ResultPartitionDeploymentDescriptor{{
						ResultPartitionID: rpc.ResultPartitionID{
							PartitionID: jobgraph.IntermediateResultPartitionID{IntermediateDataSetID: ds, PartitionIndex: i},
							ProducerID:  e.AttemptID(),
						},
						ResultType:            jobgraph.PipelinedBounded,
						NumberOfSubpartitions: n,
					}},
					HasCheckpointCoordinator: true, // a streaming job: its tasks take part in savepoints
				}, tdd)
			}
			for i, want := range tc.consumers {
				e := h.exec("cons", i)
				tdd := byName[e.Vertex().Name()]
				assert.Equal(t, e.AttemptID(), tdd.ExecutionAttemptID)
				assert.Equal(t, []byte("cfg"), tdd.Config)
				assert.Equal(t, i, tdd.SubtaskIndex)
				assert.Equal(t, tc.c, tdd.Parallelism)
				assert.Empty(t, tdd.ProducedPartitions)
				var parts []rpc.ResultPartitionID
				for _, p := range want.partitions {
					parts = append(parts, rpc.ResultPartitionID{
						PartitionID: jobgraph.IntermediateResultPartitionID{IntermediateDataSetID: ds, PartitionIndex: p},
						ProducerID:  h.exec("prod", p).AttemptID(),
					})
				}
				assert.Equal(t, []rpc.InputGateDeploymentDescriptor{{
					DataSetID:                 ds,
					ResultType:                jobgraph.PipelinedBounded,
					Partitions:                parts,
					ConsumedSubpartitionIndex: want.sub,
				}}, tdd.InputGates, "consumer %d", i)
			}
		})
	}
}

// Cancel with nothing deployed ends CANCELED at once and withdraws the slot requests.
func TestCancelWithNothingDeployed(t *testing.T) {
	g := jobgraph.New("cancel", jobgraph.Streaming)
	g.AddVertex("v", "noop", 2)

	t.Run("scheduled", func(t *testing.T) {
		h := newHarness(t, g, Config{})
		h.s.StartScheduling()
		assert.Equal(t, 2, h.pool.NumPendingRequests())
		h.s.Cancel()
		assert.Equal(t, jobgraph.JobStatusCanceled, h.s.JobStatus())
		assert.Equal(t, []jobgraph.JobStatus{jobgraph.JobStatusCreated, jobgraph.JobStatusRunning, jobgraph.JobStatusCancelling, jobgraph.JobStatusCanceled}, h.statusList())
		assert.Equal(t, map[jobgraph.ExecutionState]int{jobgraph.ExecutionStateCanceled: 2}, h.countStates())
		assert.Equal(t, 0, h.pool.NumPendingRequests())
		assert.Empty(t, h.pool.Requirements())
		assert.Empty(t, h.deployer.canceled)
		require.Len(t, h.terminal, 1)
		assert.NoError(t, h.terminal[0].cause)
		// A slot offered now is not taken, and nothing is deployed.
		assert.Equal(t, 0, h.offer(te1, 1))
		assert.Empty(t, h.deployer.deployed)
	})
	t.Run("before StartScheduling", func(t *testing.T) {
		h := newHarness(t, g, Config{})
		h.s.Cancel()
		assert.Equal(t, []jobgraph.JobStatus{jobgraph.JobStatusCreated, jobgraph.JobStatusCancelling, jobgraph.JobStatusCanceled}, h.statusList())
		h.s.StartScheduling()
		assert.Equal(t, jobgraph.JobStatusCanceled, h.s.JobStatus())
		assert.Equal(t, 0, h.pool.NumPendingRequests())
	})
}

// Cancel with running tasks stays CANCELLING until every task reported CANCELED.
func TestCancelWithRunningTasks(t *testing.T) {
	g := jobgraph.New("cancel", jobgraph.Streaming)
	g.AddVertex("v", "noop", 2)
	h := newHarness(t, g, Config{})
	h.s.StartScheduling()
	h.offer(te1, 2)
	h.runDeployed()

	h.s.Cancel()
	assert.Equal(t, jobgraph.JobStatusCancelling, h.s.JobStatus())
	assert.Equal(t, []cancelCall{{h.exec("v", 0).AttemptID(), te1}, {h.exec("v", 1).AttemptID(), te1}}, h.deployer.canceled)
	h.s.Cancel() // again: nothing new
	assert.Len(t, h.deployer.canceled, 2)

	require.True(t, h.report("v", 0, jobgraph.ExecutionStateCanceled))
	assert.Equal(t, jobgraph.JobStatusCancelling, h.s.JobStatus())
	assert.Equal(t, 1, h.pool.NumAllocatedSlots())
	// A task that finished before the cancel reached it counts as canceled, as in Flink.
	require.True(t, h.report("v", 1, jobgraph.ExecutionStateFinished))
	assert.Equal(t, jobgraph.JobStatusCanceled, h.s.JobStatus())
	assert.Equal(t, map[jobgraph.ExecutionState]int{jobgraph.ExecutionStateCanceled: 2}, h.countStates())
	assert.Equal(t, 0, h.pool.NumAllocatedSlots())
	require.Len(t, h.terminal, 1)
	assert.Equal(t, jobgraph.JobStatusCanceled, h.terminal[0].archived.Status)
	assert.Equal(t, []jobgraph.ExecutionState{
		jobgraph.ExecutionStateScheduled, jobgraph.ExecutionStateDeploying, jobgraph.ExecutionStateInitializing,
		jobgraph.ExecutionStateRunning, jobgraph.ExecutionStateCanceling, jobgraph.ExecutionStateCanceled,
	}, h.states[h.exec("v", 0).AttemptID()])
}

// No slot within slot.request.timeout: the job fails with a NoResourceAvailable root cause and
// holds no slot.
func TestSlotRequestTimeoutFailsJob(t *testing.T) {
	g := jobgraph.New("starved", jobgraph.Streaming)
	// Every subtask in a slot of its own (no slot sharing): the slot counts below are per subtask.
	a := g.AddVertex("a", "noop", 2).WithoutSlotSharingGroup()
	b := g.AddVertex("b", "noop", 2).WithoutSlotSharingGroup()
	g.Connect(a, b, jobgraph.Pointwise, jobgraph.PipelinedBounded)
	h := newHarness(t, g, Config{SlotRequestTimeout: 10 * time.Second})
	h.s.StartScheduling()
	require.Equal(t, 4, h.pool.NumPendingRequests())

	h.timers.Advance(10*time.Second - time.Nanosecond)
	assert.Equal(t, jobgraph.JobStatusRunning, h.s.JobStatus())
	h.timers.Advance(time.Nanosecond)
	assert.Equal(t, jobgraph.JobStatusFailed, h.s.JobStatus())
	cause := h.s.RootCause()
	require.ErrorIs(t, cause, slotpool.ErrNoResourceAvailable)
	var nra *slotpool.NoResourceAvailableError
	require.ErrorAs(t, cause, &nra)
	assert.Equal(t, 10*time.Second, nra.Timeout)
	assert.Contains(t, cause.Error(), "could not allocate a slot for task a (1/2) (attempt 0)")
	assert.Equal(t, 0, h.pool.NumAllocatedSlots())
	assert.Equal(t, 0, h.pool.NumPendingRequests())
	assert.Empty(t, h.pool.Requirements())
	assert.Equal(t, map[jobgraph.ExecutionState]int{jobgraph.ExecutionStateFailed: 1, jobgraph.ExecutionStateCanceled: 3}, h.countStates())
	require.Len(t, h.terminal, 1)
	assert.ErrorIs(t, h.terminal[0].cause, slotpool.ErrNoResourceAvailable)
	// The status changes are stamped with the virtual clock.
	assert.Equal(t, h.timers.Now(), h.statuses[len(h.statuses)-1].at)
}

// The JobStatusListener sees CREATED (reported by New, when the ExecutionGraph is built), then
// RUNNING and FINISHED for a trivial job.
func TestJobStatusListenerTrivialJob(t *testing.T) {
	g := jobgraph.New("trivial", jobgraph.Batch)
	g.AddVertex("v", "noop", 1)
	h := newHarness(t, g, Config{})
	assert.Equal(t, []jobgraph.JobStatus{jobgraph.JobStatusCreated}, h.statusList())
	h.s.StartScheduling()
	h.offer(te1, 1)
	require.Len(t, h.deployer.deployed, 1)
	// FINISHED straight from DEPLOYING walks through INITIALIZING and RUNNING.
	require.True(t, h.report("v", 0, jobgraph.ExecutionStateFinished))
	assert.Equal(t, []jobgraph.JobStatus{jobgraph.JobStatusCreated, jobgraph.JobStatusRunning, jobgraph.JobStatusFinished}, h.statusList())
	assert.True(t, h.s.Done())
	require.Len(t, h.terminal, 1)
	assert.Nil(t, h.terminal[0].cause)
	assert.Equal(t, jobgraph.ExecutionStateFinished, h.terminal[0].archived.JobVertices[0].Subtasks[0].State)
	assert.Equal(t, te1, h.terminal[0].archived.JobVertices[0].Subtasks[0].Location)
}

func TestUpdateTaskExecutionStateForUnknownAttempt(t *testing.T) {
	g := jobgraph.New("unknown", jobgraph.Batch)
	g.AddVertex("v", "noop", 1)
	h := newHarness(t, g, Config{})
	h.s.StartScheduling()
	h.offer(te1, 1)
	current := h.exec("v", 0).AttemptID()

	otherGraph := current
	otherGraph.ExecutionGraphID = jobgraph.NewExecutionGraphID()
	nextAttempt := current
	nextAttempt.AttemptNumber = 1
	unknownVertex := current
	unknownVertex.ExecutionVertexID.JobVertexID = jobgraph.NewJobVertexID()
	badSubtask := current
	badSubtask.ExecutionVertexID.Subtask = 7
	for _, id := range []jobgraph.ExecutionAttemptID{{}, otherGraph, nextAttempt, unknownVertex, badSubtask} {
		assert.False(t, h.s.UpdateTaskExecutionState(rpc.TaskExecutionState{ExecutionAttemptID: id, State: jobgraph.ExecutionStateRunning}), "%v", id)
	}
	assert.Equal(t, jobgraph.ExecutionStateDeploying, h.exec("v", 0).State())
	assert.True(t, h.s.UpdateTaskExecutionState(rpc.TaskExecutionState{ExecutionAttemptID: current, State: jobgraph.ExecutionStateRunning}))
	assert.True(t, h.s.UpdateTaskExecutionState(rpc.TaskExecutionState{ExecutionAttemptID: current, State: jobgraph.ExecutionStateFinished}))
	// Terminal: Flink forgets the attempt.
	assert.False(t, h.s.UpdateTaskExecutionState(rpc.TaskExecutionState{ExecutionAttemptID: current, State: jobgraph.ExecutionStateFinished}))
}

// Suspend: SUSPENDED at once, tasks canceled without waiting, slots back, later reports ignored.
func TestSuspend(t *testing.T) {
	g := jobgraph.New("suspend", jobgraph.Streaming)
	g.AddVertex("v", "noop", 3)
	h := newHarness(t, g, Config{})
	h.s.StartScheduling()
	h.offer(te1, 2) // v2 stays SCHEDULED
	h.runDeployed()
	cause := errors.New("leadership lost")

	h.s.Suspend(cause)
	assert.Equal(t, jobgraph.JobStatusSuspended, h.s.JobStatus())
	assert.Same(t, cause, h.s.RootCause())
	assert.Equal(t, map[jobgraph.ExecutionState]int{jobgraph.ExecutionStateCanceled: 3}, h.countStates())
	assert.Len(t, h.deployer.canceled, 2)
	assert.Equal(t, 0, h.pool.NumAllocatedSlots())
	assert.Equal(t, 0, h.pool.NumPendingRequests())
	assert.Empty(t, h.terminal, "OnTerminal is for globally terminal statuses")

	assert.False(t, h.report("v", 0, jobgraph.ExecutionStateCanceled))
	h.s.Cancel()
	h.s.HandleGlobalFailure(errBoom)
	assert.Equal(t, jobgraph.JobStatusSuspended, h.s.JobStatus())
	assert.Equal(t, []jobgraph.JobStatus{jobgraph.JobStatusCreated, jobgraph.JobStatusRunning, jobgraph.JobStatusSuspended}, h.statusList())
}

func TestHandleGlobalFailure(t *testing.T) {
	g := jobgraph.New("global", jobgraph.Streaming)
	g.AddVertex("v", "noop", 2)
	h := newHarness(t, g, Config{})
	h.s.StartScheduling()
	h.offer(te1, 2)
	h.runDeployed()
	h.s.HandleGlobalFailure(errBoom)
	assert.Equal(t, jobgraph.JobStatusFailing, h.s.JobStatus())
	h.s.HandleGlobalFailure(errors.New("second")) // the first root cause stays
	require.True(t, h.report("v", 0, jobgraph.ExecutionStateCanceled))
	// A task that fails while being canceled counts as canceled, as in Flink.
	require.True(t, h.s.UpdateTaskExecutionState(rpc.TaskExecutionState{ExecutionAttemptID: h.exec("v", 1).AttemptID(), State: jobgraph.ExecutionStateFailed, Failure: rpc.Failure(errors.New("interrupted"))}))
	assert.Equal(t, jobgraph.JobStatusFailed, h.s.JobStatus())
	assert.Same(t, errBoom, h.s.RootCause())
	assert.Equal(t, map[jobgraph.ExecutionState]int{jobgraph.ExecutionStateCanceled: 2}, h.countStates())
}

// A failed SubmitTask fails the execution (and cancels it remotely in case it started).
func TestDeployFailure(t *testing.T) {
	g := jobgraph.New("deploy", jobgraph.Streaming)
	g.AddVertex("v", "noop", 1)
	h := newHarness(t, g, Config{})
	h.s.StartScheduling()
	h.offer(te1, 1)
	attempt := h.exec("v", 0).AttemptID()
	rpcErr := errors.New("connection refused")
	h.s.OnDeployFailed(attempt, rpcErr)
	assert.Equal(t, jobgraph.JobStatusFailed, h.s.JobStatus())
	require.ErrorIs(t, h.s.RootCause(), rpcErr)
	assert.EqualError(t, h.s.RootCause(), "could not deploy task v (1/1) (attempt 0) to taskexecutor-1: connection refused")
	assert.Equal(t, []cancelCall{{attempt, te1}}, h.deployer.canceled)
	h.s.OnDeployFailed(attempt, rpcErr) // ignored
	assert.Len(t, h.terminal, 1)
}

// A slot the pool takes away (its TaskExecutor is gone) fails the tasks in it.
func TestLostSlotFailsItsTasks(t *testing.T) {
	g := jobgraph.New("lost", jobgraph.Streaming)
	g.AddVertex("v", "noop", 2)
	h := newHarness(t, g, Config{})
	h.s.StartScheduling()
	h.offer(te1, 1)
	h.offer(te2, 1)
	h.runDeployed()
	gone := errors.New("heartbeat timeout")
	h.pool.ReleaseSlots(te2, gone)
	assert.Equal(t, jobgraph.JobStatusFailing, h.s.JobStatus())
	require.ErrorIs(t, h.s.RootCause(), gone)
	assert.Contains(t, h.s.RootCause().Error(), "task v (2/2) (attempt 0) lost its slot")
	require.True(t, h.report("v", 0, jobgraph.ExecutionStateCanceled))
	assert.Equal(t, jobgraph.JobStatusFailed, h.s.JobStatus())
}

func TestNewErrors(t *testing.T) {
	pool, err := slotpool.New(slotpool.Config{Timers: newFakeTimers()})
	require.NoError(t, err)
	g := jobgraph.New("bad", jobgraph.Batch) // no vertices
	_, err = New(g, FromSlotPool(pool), &fakeDeployer{}, Config{})
	require.ErrorIs(t, err, jobgraph.ErrInvalidJobGraph)
	var ve *jobgraph.ValidationError
	require.ErrorAs(t, err, &ve)

	g.AddVertex("v", "noop", 1)
	_, err = New(g, FromSlotPool(pool), &fakeDeployer{}, Config{SchedulingStrategy: "eager"})
	require.ErrorIs(t, err, ErrUnknownStrategy)
	_, err = New(g, nil, &fakeDeployer{}, Config{})
	require.Error(t, err)
	_, err = New(g, FromSlotPool(pool), nil, Config{})
	require.Error(t, err)
	s, err := New(g, FromSlotPool(pool), &fakeDeployer{}, Config{GraphOptions: []executiongraph.Option{executiongraph.WithExecutionGraphID(jobgraph.ExecutionGraphID{1})}})
	require.NoError(t, err)
	assert.Equal(t, jobgraph.ExecutionGraphID{1}, s.ExecutionGraph().ID())
	assert.Equal(t, jobgraph.JobStatusCreated, s.JobStatus())
	assert.Equal(t, g.JobID, s.JobID())
	assert.Equal(t, jobgraph.JobStatusCreated, s.Archive().Status)
}

// A slot freed by a failing task is not handed to another bulk before the failure handling
// cancels that bulk: nothing is deployed only to be canceled right away.
func TestFailedTaskSlotIsNotReusedByACanceledBulk(t *testing.T) {
	g := jobgraph.New("reuse", jobgraph.Streaming)
	g.AddVertex("v", "noop", 2)
	h := newHarness(t, g, Config{})
	h.s.StartScheduling()
	h.offer(te1, 1)
	require.Equal(t, []string{"v (1/2)"}, h.deployer.deployedNames())
	require.True(t, h.s.UpdateTaskExecutionState(rpc.TaskExecutionState{ExecutionAttemptID: h.exec("v", 0).AttemptID(), State: jobgraph.ExecutionStateFailed, Failure: rpc.Failure(errBoom)}))
	assert.Equal(t, jobgraph.JobStatusFailed, h.s.JobStatus())
	assert.Len(t, h.deployer.deployed, 1)
	assert.Empty(t, h.deployer.canceled)
	assert.Equal(t, map[jobgraph.ExecutionState]int{jobgraph.ExecutionStateFailed: 1, jobgraph.ExecutionStateCanceled: 1}, h.countStates())
	assert.Equal(t, 0, h.pool.NumAllocatedSlots())
	assert.Equal(t, 0, h.pool.NumPendingRequests())
}

// Partitions still tracked when the job ends are released then, per location.
func TestPartitionsLeftAreReleasedAtTheEnd(t *testing.T) {
	g := jobgraph.New("leftovers", jobgraph.Batch)
	a := g.AddVertex("a", "noop", 1)
	b := g.AddVertex("b", "noop", 1)
	g.Connect(a, b, jobgraph.Pointwise, jobgraph.Blocking)
	h := newHarness(t, g, Config{})
	h.s.StartScheduling()
	h.offer(te1, 1)
	h.finish("a", 0)
	require.Equal(t, []string{"a (1/1)", "b (1/1)"}, h.deployer.deployedNames())
	assert.Equal(t, te1, h.deployer.deployed[1].slot.TaskExecutor, "b reuses a's slot")
	assert.Empty(t, h.deployer.released)
	require.True(t, h.s.UpdateTaskExecutionState(rpc.TaskExecutionState{ExecutionAttemptID: h.exec("b", 0).AttemptID(), State: jobgraph.ExecutionStateFailed, Failure: rpc.Failure(errBoom)}))
	assert.Equal(t, jobgraph.JobStatusFailed, h.s.JobStatus())
	assert.Equal(t, []releaseCall{{te1, []rpc.ResultPartitionID{{
		PartitionID: jobgraph.IntermediateResultPartitionID{IntermediateDataSetID: a.Results[0].ID},
		ProducerID:  h.exec("a", 0).AttemptID(),
	}}}}, h.deployer.released)
}

// Reports the scheduler did not expect.
func TestUnexpectedReports(t *testing.T) {
	g := jobgraph.New("odd", jobgraph.Streaming)
	g.AddVertex("v", "noop", 1)

	t.Run("unsolicited CANCELED fails the task", func(t *testing.T) {
		h := newHarness(t, g, Config{})
		h.s.StartScheduling()
		h.offer(te1, 1)
		h.runDeployed()
		require.True(t, h.report("v", 0, jobgraph.ExecutionStateCanceled))
		assert.Equal(t, jobgraph.JobStatusFailed, h.s.JobStatus())
		assert.EqualError(t, h.s.RootCause(), "task v (1/1) (attempt 0) on taskexecutor-1 was canceled without a cancel request")
	})
	t.Run("illegal state is refused and fails the task", func(t *testing.T) {
		h := newHarness(t, g, Config{})
		h.s.StartScheduling()
		h.offer(te1, 1)
		assert.False(t, h.report("v", 0, jobgraph.ExecutionStateScheduled))
		assert.Equal(t, jobgraph.JobStatusFailed, h.s.JobStatus())
		assert.EqualError(t, h.s.RootCause(), "task v (1/1) (attempt 0): TaskExecutor sent an illegal state update SCHEDULED")
		assert.Len(t, h.deployer.canceled, 1)
	})
	t.Run("RUNNING while canceling is ignored", func(t *testing.T) {
		h := newHarness(t, g, Config{})
		h.s.StartScheduling()
		h.offer(te1, 1)
		h.s.Cancel()
		assert.True(t, h.report("v", 0, jobgraph.ExecutionStateRunning))
		assert.Equal(t, jobgraph.ExecutionStateCanceling, h.exec("v", 0).State())
		assert.True(t, h.report("v", 0, jobgraph.ExecutionStateCanceled))
		assert.Equal(t, jobgraph.JobStatusCanceled, h.s.JobStatus())
	})
	t.Run("FAILED without an error value keeps the text", func(t *testing.T) {
		h := newHarness(t, g, Config{})
		h.s.StartScheduling()
		h.offer(te1, 1)
		require.True(t, h.s.UpdateTaskExecutionState(rpc.TaskExecutionState{ExecutionAttemptID: h.exec("v", 0).AttemptID(), State: jobgraph.ExecutionStateFailed, Failure: &jobgraph.ErrorInfo{Message: "out of memory"}}))
		assert.EqualError(t, h.s.RootCause(), "task v (1/1) (attempt 0) on taskexecutor-1 failed: out of memory")
	})
}

// manualStrategy schedules nothing by itself; the test hands the scheduler bulks directly, as
// Flink's TestSchedulingStrategy does.
type manualStrategy struct{}

func (manualStrategy) StartScheduling()                               {}
func (manualStrategy) RestartTasks([]*executiongraph.ExecutionVertex) {}
func (manualStrategy) OnExecutionStateChange(*executiongraph.ExecutionVertex, jobgraph.ExecutionState) {
}
func (manualStrategy) OnPartitionConsumable(*executiongraph.IntermediateResultPartition) {}

// The scenario, as Flink's DefaultSchedulerTest.deployTasksOnlyWhenAllSlotRequestsAreFulfilled
// states it: one vertex of parallelism 4, all 4 subtasks scheduled as ONE bulk (Flink's test uses a
// strategy that schedules them together; the pipelined-region strategy would make each subtask its
// own bulk, see TestOneVertexParallelism4DeploysEachRegionWhenItsSlotArrives): after 1 of 4 slots is
// offered, 0 tasks are deployed; after all 4, 4 are.
func TestDeployTasksOnlyWhenAllSlotRequestsOfTheBulkAreFulfilled(t *testing.T) {
	g := jobgraph.New("one", jobgraph.Streaming)
	v := g.AddVertex("v", "noop", 4)
	h := newHarness(t, g, Config{})
	h.s.strategy = manualStrategy{}
	h.s.StartScheduling()
	jv := h.s.ExecutionGraph().JobVertex(v.ID)
	schedulerOps{h.s}.AllocateSlotsAndDeploy(slices.Collect(jv.Vertices()))
	assert.Equal(t, 4, h.pool.NumPendingRequests())

	require.Equal(t, 1, h.offer(te1, 1))
	assert.Empty(t, h.deployer.deployed, "0 of 4 tasks deployed after 1 of 4 slots")
	require.Equal(t, 3, h.offer(te2, 3))
	assert.Equal(t, []string{"v (1/4)", "v (2/4)", "v (3/4)", "v (4/4)"}, h.deployer.deployedNames())
}

package source_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/coordination"
	"github.com/jobgraph/jobgraph/ha/embedded"
	"github.com/jobgraph/jobgraph/minicluster"
	"github.com/jobgraph/jobgraph/source"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

// recordingCoordinator is a source coordinator that logs the restores it gets and can fail the
// job once, after a checkpoint completed.
type recordingCoordinator struct {
	coordination.OperatorCoordinator
	s *checkpointScenario
	n int // which coordinator of the job: one per JobMaster, 0 the first
}

// log records what happened to the coordinator, in s.resets and in its own s.logs[n].
func (c recordingCoordinator) log(what string) {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	c.s.resets = append(c.s.resets, what)
	c.s.logs[c.n] = append(c.s.logs[c.n], what)
}

func (c recordingCoordinator) Start() error {
	c.log("start")
	return c.OperatorCoordinator.Start()
}

func (c recordingCoordinator) NotifyCheckpointComplete(id int64) {
	c.OperatorCoordinator.NotifyCheckpointComplete(id)
	// The checkpoint as the JobMaster stored it (the job's CompletedCheckpointStore, which the
	// job's end discards).
	store, err := c.s.mc.HA().CheckpointRecoveryFactory().CreateRecoveredCompletedCheckpointStore(c.s.job, 0)
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	c.s.completed = append(c.s.completed, id)
	if err != nil {
		c.s.errs = append(c.s.errs, err)
	} else if cp, ok := store.Latest(); ok && int64(cp.CheckpointID) == id {
		c.s.checkpoints[id] = cp
	} else {
		c.s.errs = append(c.s.errs, fmt.Errorf("checkpoint %d complete, the store's latest is %v", id, cp.CheckpointID))
	}
	if id != c.s.failAfter || c.s.failed {
		return
	}
	switch c.s.failure {
	case globalFailure:
		c.s.failed = true
		c.s.ctx.FailJob(errors.New("injected global failure"))
	case leaderChange:
		c.s.failed = true
		// Every leadership of the cluster's HA services is revoked and granted again: the
		// Dispatcher recovers the job and its new JobMaster restores the latest checkpoint.
		go c.s.mc.HA().(*embedded.Services).RevokeAll()
	}
}

func (c recordingCoordinator) ResetToCheckpoint(id int64, state []byte) error {
	c.log(fmt.Sprintf("reset to %d", id))
	c.s.mu.Lock()
	c.s.resetState = state
	c.s.mu.Unlock()
	return c.OperatorCoordinator.ResetToCheckpoint(id, state)
}

func (c recordingCoordinator) SubtaskReset(subtask int, id int64) error {
	c.log(fmt.Sprintf("subtask %d reset to %d", subtask, id))
	return c.OperatorCoordinator.SubtaskReset(subtask, id)
}

// failure is how checkpointScenario fails.
type failure int

const (
	globalFailure failure = iota // the coordinator fails the job globally
	readerFailure                // reader 1 fails: a region restart
	leaderChange                 // the JobMaster loses its leadership; the next one takes over
)

// checkpointScenario is a STREAMING job: reader (2, the split source: 20 splits of 5 records,
// 10 ms a record) –ALL_TO_ALL PIPELINED→ sink (1, its state the records it got), checkpoints
// every 100 ms.
type checkpointScenario struct {
	failure   failure
	failAfter int64 // once this checkpoint completed

	ctx coordination.Context
	mc  *minicluster.MiniCluster
	job jobgraph.JobID

	mu          sync.Mutex
	errs        []error
	checkpoints map[int64]checkpoint.CompletedCheckpoint // the completed ones, by ID
	completed   []int64
	failed      bool
	resets      []string   // what happened to the job's coordinators
	logs        [][]string // the same per coordinator, in the order they were created
	resetState  []byte
	final       []string // the sink's records when it finished
}

const (
	scenarioSplits  = 20
	scenarioRecords = 5
)

func (s *checkpointScenario) run(t *testing.T) (*jobgraph.JobGraph, *jobgraph.JobResult) {
	reg := taskexecutor.NewRegistry()
	reg.Register("reader", func(ctx context.Context, env taskexecutor.Environment) error {
		info := env.Info()
		return source.ReadSplits(ctx, env, func(ctx context.Context, sp *source.Split) error {
			for ; sp.Position < scenarioRecords; sp.Position++ {
				if err := sleep(ctx, 10*time.Millisecond); err != nil {
					return err
				}
				s.mu.Lock()
				fail := s.failure == readerFailure && !s.failed && info.SubtaskIndex == 1 && slices.Contains(s.completed, s.failAfter)
				if fail {
					s.failed = true
				}
				s.mu.Unlock()
				if fail {
					return errors.New("injected reader failure")
				}
				if err := env.Output(0).Emit(ctx, 0, fmt.Sprintf("%s/%d", sp.ID, sp.Position)); err != nil {
					return err
				}
			}
			return nil
		})
	})
	reg.Register("sink", func(ctx context.Context, env taskexecutor.Environment) error {
		h := &listState{}
		if _, st, ok := env.RestoredState(); ok && len(st.Data) > 0 {
			if err := json.Unmarshal(st.Data, &h.records); err != nil {
				return err
			}
		}
		env.SetCheckpointHandler(h)
		for {
			r, err := env.Input(0).Next(ctx)
			if errors.Is(err, io.EOF) {
				s.mu.Lock()
				s.final = slices.Clone(h.records)
				s.mu.Unlock()
				return nil
			}
			if err != nil {
				return err
			}
			h.records = append(h.records, r.(string))
		}
	})
	coords := coordination.NewRegistry()
	splits := make([]source.Split, scenarioSplits)
	for i := range splits {
		splits[i] = source.Split{ID: fmt.Sprintf("s%02d", i)}
	}
	require.NoError(t, coords.Register("splits", coordination.ProviderFunc(func(ctx coordination.Context) (coordination.OperatorCoordinator, error) {
		s.ctx = ctx
		c, err := source.SplitListProvider(func(coordination.Context) ([]source.Split, error) { return splits, nil }).Create(ctx)
		s.mu.Lock()
		defer s.mu.Unlock()
		s.logs = append(s.logs, nil)
		return recordingCoordinator{c, s, len(s.logs) - 1}, err
	})))
	s.mc = startCluster(t, 3, reg, coords)
	s.checkpoints = map[int64]checkpoint.CompletedCheckpoint{}
	g := jobgraph.New("checkpointed-splits", jobgraph.Streaming)
	s.job = g.JobID
	r := g.AddVertex("reader", "reader", 2)
	r.OperatorCoordinator = "splits"
	g.Connect(r, g.AddVertex("sink", "sink", 1), jobgraph.AllToAll, jobgraph.PipelinedBounded)
	g.Checkpointing = jobgraph.CheckpointingSettings{Interval: 100 * time.Millisecond, NumRetained: 100}
	g.RestartStrategy = jobgraph.FixedDelayRestart(1, 0)
	res, err := s.mc.Run(context.Background(), g)
	require.NoError(t, err)
	return g, res
}

// listState is the sink's state: the records it got, as JSON.
type listState struct{ records []string }

func (h *listState) SnapshotState(context.Context, checkpoint.CheckpointID) (checkpoint.StateHandle, error) {
	b, err := json.Marshal(h.records)
	return checkpoint.StateHandle{Data: b, Size: int64(len(b))}, err
}
func (h *listState) NotifyCheckpointComplete(context.Context, checkpoint.CheckpointID) error {
	return nil
}
func (h *listState) NotifyCheckpointAborted(context.Context, checkpoint.CheckpointID) {}

// allRecords are the job's records, sorted.
func allRecords() []string {
	var out []string
	for i := range scenarioSplits {
		for k := range scenarioRecords {
			out = append(out, fmt.Sprintf("s%02d/%d", i, k))
		}
	}
	sort.Strings(out)
	return out
}

// checkConsistent asserts that cp accounts for every split exactly once: not handed out yet
// (the coordinator's state), or in exactly one reader's state at position p with exactly its
// records below p in the sink's state, or read to its end with all its records in the sink's
// state; and that the sink's state holds no record twice.
func checkConsistent(t *testing.T, cp checkpoint.CompletedCheckpoint, reader, sink jobgraph.JobVertexID) {
	t.Helper()
	require.Len(t, cp.CoordinatorStates, 1)
	assert.Equal(t, reader, cp.CoordinatorStates[0].JobVertexID)
	var cs struct{ Enumerator []byte }
	require.NoError(t, json.Unmarshal(cp.CoordinatorStates[0].State, &cs))
	var enum source.StaticSplitsConfig
	require.NoError(t, json.Unmarshal(cs.Enumerator, &enum))

	where := map[string]string{} // split → where the checkpoint has it
	for _, sp := range enum.Splits {
		where[sp.ID] = "unassigned"
	}
	positions := map[string]int64{}
	var sinkRecords []string
	for _, st := range cp.TaskStates {
		switch st.JobVertexID {
		case reader:
			for _, el := range st.State.OperatorState[source.ReaderStateName].Elements {
				var sp source.Split
				require.NoError(t, json.Unmarshal(el, &sp))
				assert.NotContains(t, where, sp.ID, "split %s twice in checkpoint %d", sp.ID, cp.CheckpointID)
				where[sp.ID] = fmt.Sprintf("reader %d", st.Subtask)
				positions[sp.ID] = sp.Position
			}
		case sink:
			if len(st.State.Data) > 0 {
				require.NoError(t, json.Unmarshal(st.State.Data, &sinkRecords))
			}
		}
	}
	got := map[string][]int64{}
	for _, r := range sinkRecords {
		id, pos, _ := strings.Cut(r, "/")
		k, err := strconv.ParseInt(pos, 10, 64)
		require.NoError(t, err, r)
		got[id] = append(got[id], k)
	}
	for i := range scenarioSplits {
		id := fmt.Sprintf("s%02d", i)
		var want []int64
		switch w := where[id]; {
		case w == "unassigned":
		case w != "":
			for k := range positions[id] {
				want = append(want, k)
			}
		default: // read to its end before the checkpoint
			for k := range int64(scenarioRecords) {
				want = append(want, k)
			}
		}
		assert.Equal(t, want, got[id], "split %s (%s) in checkpoint %d", id, where[id], cp.CheckpointID)
	}
}

// A checkpoint with a coordinator: the split enumerator's state is part of each completed
// checkpoint, consistent with the readers' and the sink's states (every split exactly once),
// and after a failover the coordinator is restored with the tasks, from the same checkpoint:
//   - global: the job fails globally once checkpoint 3 completed; the coordinator gets
//     ResetToCheckpoint(3) with exactly the state checkpoint 3 holds for it;
//   - region: reader 1 fails once checkpoint 3 completed; the region (both readers and the sink,
//     joined by the pipelined edge) restarts from checkpoint 3 and the coordinator gets
//     SubtaskReset(0, 3) and SubtaskReset(1, 3), so the splits handed out after 3 go out again;
//   - new JobMaster: the cluster's leaderships are revoked once checkpoint 3 completed; the job's
//     next JobMaster creates its coordinator, which gets ResetToCheckpoint(3) with checkpoint 3's
//     state before it starts.
//
// Either way the sink finishes with every record of every split exactly once.
func TestCoordinatorStateIsCheckpointedAndRestoredWithTheTasks(t *testing.T) {
	for _, tc := range []struct {
		name    string
		failure failure
		resets  []string
	}{
		{"global failover", globalFailure, []string{"start", "reset to 3"}},
		{"region failover", readerFailure, []string{"start", "subtask 0 reset to 3", "subtask 1 reset to 3"}},
		// The new JobMaster's coordinator is restored before it starts (see below).
		{"new JobMaster", leaderChange, []string{"start", "reset to 3", "start"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := &checkpointScenario{failure: tc.failure, failAfter: 3}
				g, res := s.run(t)
				require.Equal(t, jobgraph.JobStatusFinished, res.Status, "%v", res.RootCause)
				reader, sink := g.VertexByName("reader").ID, g.VertexByName("sink").ID

				s.mu.Lock()
				defer s.mu.Unlock()
				assert.Equal(t, allRecords(), sorted(s.final), "every record exactly once")
				require.Empty(t, s.errs)
				t.Logf("completed checkpoints %v, restores %v", s.completed, s.resets)
				if tc.failure == leaderChange {
					// RevokeAll revokes the Dispatcher's leadership and the job's at once:
					// depending on which grant is handled first, the job's runner under the old
					// Dispatcher may create a JobMaster (and its coordinator, reset to 3) that is
					// closed again, started or not, when the new Dispatcher recovers the job and
					// runs its own. Every coordinator after the first is reset to 3 before it
					// starts; the last one runs the job to its end.
					require.GreaterOrEqual(t, len(s.logs), 2, "%v", s.logs)
					assert.Equal(t, []string{"start"}, s.logs[0])
					for _, l := range s.logs[1 : len(s.logs)-1] {
						assert.Contains(t, [][]string{{"reset to 3"}, {"reset to 3", "start"}}, l, "%v", s.logs)
					}
					assert.Equal(t, tc.resets[1:], s.logs[len(s.logs)-1], "%v", s.logs)
				} else {
					assert.Equal(t, tc.resets, s.resets)
				}
				if tc.failure != readerFailure {
					require.Contains(t, s.checkpoints, int64(3))
					assert.Equal(t, s.checkpoints[3].CoordinatorStates[0].State, s.resetState, "the state checkpoint 3 holds")
				}
				// Checkpoints 1–3 before the failure, and more after it.
				require.Greater(t, len(s.checkpoints), 3)
				for _, id := range slices.Sorted(maps.Keys(s.checkpoints)) {
					checkConsistent(t, s.checkpoints[id], reader, sink)
				}
			})
		})
	}
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	sort.Strings(out)
	return out
}

package file_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/checkpoint/checkpointtest"
	"github.com/jobgraph/jobgraph/ha"
	"github.com/jobgraph/jobgraph/ha/file"
)

// The child process's part of TestLeaderProcessKilledStandbyTakesOver, run by re-executing the
// test binary with these variables set (as os/exec's own tests do).
const (
	childDirEnv  = "HA_FILE_TEST_CHILD_DIR"
	childJobsEnv = "HA_FILE_TEST_CHILD_JOBS" // plan1,plan2,dirty,clean: the JobIDs to write
	readyPrefix  = "CHILD-READY "
)

// TestChildLeader is not a test on its own: in the child it leads, writes, says so on stdout
// and waits to be killed; in the parent it returns at once.
func TestChildLeader(t *testing.T) {
	dir := os.Getenv(childDirEnv)
	if dir == "" {
		return
	}
	ids := strings.Split(os.Getenv(childJobsEnv), ",")
	job := func(i int) jobgraph.JobID {
		id, err := jobgraph.ParseJobID(ids[i])
		if err != nil {
			panic(err)
		}
		return id
	}
	ctx := context.Background()
	s, err := file.New(file.Options{Dir: dir, PollInterval: testPoll})
	require.NoError(t, err)
	c := newContender()
	e := s.DispatcherLeaderElection()
	require.NoError(t, e.Start(c))
	session := awaitGrant(t, c)
	jm := newContender()
	require.NoError(t, s.JobMasterLeaderElection(job(0)).Start(jm))
	require.Equal(t, session, awaitGrant(t, jm))

	for i, name := range []string{"plan one", "plan two"} {
		g := jobgraph.New(name, jobgraph.Streaming)
		g.JobID = job(i)
		g.AddVertex("v", "noop", 2)
		require.NoError(t, s.ExecutionPlanStore().Put(ctx, g))
	}
	require.NoError(t, s.JobResultStore().CreateDirty(ctx, jobgraph.JobResult{JobID: job(2), Name: "dirty", Status: jobgraph.JobStatusCanceled}))
	require.NoError(t, s.JobResultStore().CreateDirty(ctx, jobgraph.JobResult{JobID: job(3), Name: "clean", Status: jobgraph.JobStatusFinished}))
	require.NoError(t, s.JobResultStore().MarkClean(ctx, job(3)))
	store, err := s.CheckpointRecoveryFactory().CreateRecoveredCompletedCheckpointStore(job(0), 2)
	require.NoError(t, err)
	counter, err := s.CheckpointRecoveryFactory().CreateCheckpointIDCounter(job(0))
	require.NoError(t, err)
	for range 3 {
		id, err := counter.GetAndIncrement()
		require.NoError(t, err)
		_, err = store.Add(checkpointtest.Sample(id, checkpoint.Checkpoint))
		require.NoError(t, err)
	}

	// Confirm, and wait until the own retrieval reads it back: the leader file is written.
	l := newListener()
	require.NoError(t, s.DispatcherLeaderRetrieval().Start(l))
	e.ConfirmLeadership(session, "child/dispatcher")
	for got := await(t, l.leaders, "the child's own leader file"); got.address == ""; got = await(t, l.leaders, "the child's own leader file") {
	}
	fmt.Printf("%s%s\n", readyPrefix, session)
	select {} // until SIGKILL
}

// A client in another process leads and writes plans, results, checkpoints and its leader file;
// it is SIGKILLed; the kernel releases its lock, and the client in this process, a standby until
// then, is granted with a new session and recovers everything the child wrote. Its retrieval
// reported the child's address, then no leader, then its own: never the dead child's again.
func TestLeaderProcessKilledStandbyTakesOver(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	ctx := context.Background()
	dir := t.TempDir()
	jobs := []jobgraph.JobID{jobgraph.NewJobID(), jobgraph.NewJobID(), jobgraph.NewJobID(), jobgraph.NewJobID()}
	var idList []string
	for _, j := range jobs {
		idList = append(idList, j.String())
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestChildLeader$", "-test.count=1")
	cmd.Env = append(os.Environ(), childDirEnv+"="+dir, childJobsEnv+"="+strings.Join(idList, ","))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	killed := false
	t.Cleanup(func() {
		if !killed {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})

	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if line, ok := strings.CutPrefix(sc.Text(), readyPrefix); ok {
				ready <- line
			}
		}
		close(ready)
	}()
	var childSession ha.SessionID
	select {
	case line, ok := <-ready:
		require.True(t, ok, "the child exited before it was ready")
		u, err := uuid.Parse(line)
		require.NoError(t, err)
		childSession = ha.SessionID(u)
	case <-time.After(30 * time.Second):
		t.Fatal("the child was not ready within 30 s")
	}

	s := open(t, dir)
	l := newListener()
	r := s.DispatcherLeaderRetrieval()
	require.NoError(t, r.Start(l))
	t.Cleanup(func() { assert.NoError(t, r.Stop()) })
	assert.Equal(t, leader{"child/dispatcher", childSession}, await(t, l.leaders, "the child as leader"))
	c := newContender()
	e := s.DispatcherLeaderElection()
	require.NoError(t, e.Start(c))
	g := jobgraph.New("standby's", jobgraph.Batch)
	g.AddVertex("v", "noop", 1)
	assert.ErrorIs(t, s.ExecutionPlanStore().Put(ctx, g), ha.ErrNotLeader, "the standby may not write while the child leads")

	require.NoError(t, cmd.Process.Kill())
	killed = true
	_ = cmd.Wait() // "signal: killed"
	session := awaitGrant(t, c)
	assert.NotEqual(t, childSession, session)
	assert.Equal(t, leader{"", ha.SessionID{}}, await(t, l.leaders, "no leader once the child died"))
	e.ConfirmLeadership(session, "parent/dispatcher")
	assert.Equal(t, leader{"parent/dispatcher", session}, await(t, l.leaders, "the standby as leader"))

	ids, err := s.ExecutionPlanStore().JobIDs(ctx)
	require.NoError(t, err)
	assert.ElementsMatch(t, jobs[:2], ids)
	for i, name := range []string{"plan one", "plan two"} {
		got, err := s.ExecutionPlanStore().Get(ctx, jobs[i])
		require.NoError(t, err)
		assert.Equal(t, name, got.Name)
		assert.Equal(t, 2, got.Vertices[0].Parallelism)
	}
	dirty, err := s.JobResultStore().DirtyResults(ctx)
	require.NoError(t, err)
	assert.Equal(t, []jobgraph.JobResult{{JobID: jobs[2], Name: "dirty", Status: jobgraph.JobStatusCanceled}}, dirty)
	entry, err := s.JobResultStore().Get(ctx, jobs[3])
	require.NoError(t, err)
	assert.Equal(t, ha.JobResultEntry{Result: jobgraph.JobResult{JobID: jobs[3], Name: "clean", Status: jobgraph.JobStatusFinished}, Clean: true}, entry)
	store, err := s.CheckpointRecoveryFactory().CreateRecoveredCompletedCheckpointStore(jobs[0], 2)
	require.NoError(t, err)
	// The child's Sample has the child's random JobID and vertex ID: compare the rest.
	var recovered []checkpoint.CheckpointID
	for _, cp := range store.All() {
		recovered = append(recovered, cp.CheckpointID)
		want := checkpointtest.Sample(cp.CheckpointID, checkpoint.Checkpoint)
		require.Len(t, cp.TaskStates, 2)
		assert.Equal(t, want.TaskStates[1].State, cp.TaskStates[1].State)
		assert.Equal(t, want.CompletionTimestamp, cp.CompletionTimestamp)
	}
	assert.Equal(t, []checkpoint.CheckpointID{2, 3}, recovered, "the two retained checkpoints")
	counter, err := s.CheckpointRecoveryFactory().CreateCheckpointIDCounter(jobs[0])
	require.NoError(t, err)
	next, err := counter.GetAndIncrement()
	require.NoError(t, err)
	assert.Equal(t, checkpoint.CheckpointID(4), next)
	_, err = store.Add(checkpointtest.Sample(4, checkpoint.Checkpoint))
	require.NoError(t, err, "the new leader writes")
	require.NoError(t, s.ExecutionPlanStore().Put(ctx, g), "the new leader writes")
	assert.Empty(t, l.errs)
	assert.Empty(t, c.errs)
	require.NoError(t, e.Close())
}

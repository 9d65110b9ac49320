package rest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
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
	"github.com/jobgraph/jobgraph/minicluster"
	"github.com/jobgraph/jobgraph/rest"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

// counter is the state of the "count" task: how many records it emitted; its snapshots are kept
// by checkpoint ID, and what a restored task found is sent on restored.
type counter struct {
	mu        sync.Mutex
	snapshots map[checkpoint.CheckpointID]int64
	restored  chan string
}

type counterHandler struct {
	c *counter
	n *int64
}

func (h counterHandler) SnapshotState(_ context.Context, id checkpoint.CheckpointID) (checkpoint.StateHandle, error) {
	h.c.mu.Lock()
	h.c.snapshots[id] = *h.n
	h.c.mu.Unlock()
	return checkpoint.StateHandle{Data: strconv.AppendInt(nil, *h.n, 10), Size: 8}, nil
}

func (counterHandler) NotifyCheckpointComplete(context.Context, checkpoint.CheckpointID) error {
	return nil
}
func (counterHandler) NotifyCheckpointAborted(context.Context, checkpoint.CheckpointID) {}

// register adds "count": a source that emits a record every 10 ms, counting them, its count its
// state; restored, it goes on from the restored count and reports "<checkpoint ID> <count>".
func (c *counter) register(reg *taskexecutor.Registry) {
	reg.Register("count", func(ctx context.Context, env taskexecutor.Environment) error {
		var n int64
		if id, st, ok := env.RestoredState(); ok {
			n, _ = strconv.ParseInt(string(st.Data), 10, 64)
			c.restored <- fmt.Sprintf("%d %d", id, n)
		}
		env.SetCheckpointHandler(counterHandler{c: c, n: &n})
		for {
			time.Sleep(10 * time.Millisecond)
			if err := env.Output(0).Emit(ctx, 0, n); err != nil {
				return stopped(err)
			}
			n++
		}
	})
}

func countingJob() *jobgraph.JobGraph {
	g := jobgraph.New("counting", jobgraph.Streaming)
	src := g.AddVertex("count", "count", 1)
	sink := g.AddVertex("sink", "sink", 1)
	g.Connect(src, sink, jobgraph.Pointwise, jobgraph.PipelinedBounded)
	g.Checkpointing = jobgraph.CheckpointingSettings{Interval: time.Hour}
	return g
}

// trigger POSTs body to target and returns the trigger ID of the 202 answer.
func trigger(t *testing.T, h http.Handler, target, body string) string {
	t.Helper()
	status, resp := do(h, http.MethodPost, target, body)
	require.Equal(t, http.StatusAccepted, status, "%s", resp)
	var tr map[string]string
	require.NoError(t, json.Unmarshal(resp, &tr))
	require.Len(t, tr["request-id"], 32, "%s", resp)
	require.Len(t, tr, 1)
	return tr["request-id"]
}

// A savepoint through REST: the trigger answers a request-id, the operation is IN_PROGRESS until
// the source next emits (10 ms later, virtual time), then COMPLETED with the savepoint's
// location; a new job submitted with that path restores it (its source restores the count the
// savepoint holds). The same client triggerId again starts nothing. A trigger on a FINISHED job
// is accepted and fails with a failure-cause saying why.
func TestSavepointThroughREST(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &counter{snapshots: map[checkpoint.CheckpointID]int64{}, restored: make(chan string, 1)}
		reg := registry()
		c.register(reg)
		mc := startCluster(t, minicluster.Config{Registry: reg})
		h := newHandler(t, rest.Config{Dispatcher: mc})
		ctx := context.Background()
		dir := t.TempDir()

		g := countingJob()
		require.NoError(t, mc.SubmitJob(ctx, g))
		time.Sleep(time.Second) // 100 records
		synctest.Wait()
		u := "/jobs/" + g.JobID.String()

		id := trigger(t, h, u+"/savepoints", `{"target-directory":`+quote(dir)+`,"cancel-job":false}`)
		_, v := getJSON(t, h, u+"/savepoints/"+id)
		assert.Equal(t, obj{"status": obj{"id": "IN_PROGRESS"}}, v)

		time.Sleep(100 * time.Millisecond)
		synctest.Wait()
		status, v := getJSON(t, h, u+"/savepoints/"+id)
		require.Equal(t, http.StatusOK, status)
		assert.Equal(t, sorted("status", "operation"), keys(v))
		assert.Equal(t, obj{"id": "COMPLETED"}, path(v, "status"))
		assert.Equal(t, sorted("location"), keys(path(v, "operation")))
		location := path(v, "operation", "location").(string)
		assert.True(t, strings.HasPrefix(location, dir+"/savepoint-"+g.JobID.String()[:6]+"-"), location)
		_, err := checkpoint.LoadSavepoint(location)
		require.NoError(t, err, "the location is a savepoint")

		_, v = getJSON(t, h, u+"/checkpoints")
		sp := path(v, "latest", "savepoint")
		assert.Equal(t, location, path(sp, "external_path"))
		assert.Equal(t, "SAVEPOINT", path(sp, "checkpoint_type"))
		spID := checkpoint.CheckpointID(num(path(sp, "id")))
		c.mu.Lock()
		held := c.snapshots[spID]
		c.mu.Unlock()
		assert.Equal(t, int64(100), held, "100 records emitted in the first second")

		// The same client trigger ID twice: one operation, one savepoint.
		const client = "0123456789abcdef0123456789abcdef"
		assert.Equal(t, client, trigger(t, h, u+"/savepoints", `{"target-directory":`+quote(dir)+`,"triggerId":"`+client+`"}`))
		assert.Equal(t, client, trigger(t, h, u+"/savepoints", `{"target-directory":`+quote(dir)+`,"triggerId":"`+client+`"}`))
		time.Sleep(100 * time.Millisecond)
		synctest.Wait()
		_, v = getJSON(t, h, u+"/savepoints/"+client)
		assert.Equal(t, obj{"id": "COMPLETED"}, path(v, "status"))
		_, v = getJSON(t, h, u+"/checkpoints")
		assert.Equal(t, 2.0, path(v, "counts", "total"), "two savepoints: the first, and one for the client's trigger ID")

		require.NoError(t, mc.CancelJob(ctx, g.JobID))
		_, err = mc.RequestJobResult(ctx, g.JobID)
		require.NoError(t, err)

		// A new job from the first savepoint restores its count.
		// (The same vertex IDs — Flink's operator uids — under a new JobID.)
		restoredJob, err := g.Clone()
		require.NoError(t, err)
		restoredJob.JobID = jobgraph.NewJobID()
		restoredJob.SavepointRestore = jobgraph.SavepointRestoreSettings{Path: location}
		status, body := do(h, http.MethodPost, "/jobs", encode(t, restoredJob))
		require.Equal(t, http.StatusAccepted, status, "%s", body)
		select {
		case got := <-c.restored:
			assert.Equal(t, fmt.Sprintf("%d %d", spID, held), got)
		case <-time.After(time.Minute):
			t.Fatal("the new job did not restore the savepoint within a minute")
		}
		synctest.Wait()
		_, v = getJSON(t, h, "/jobs/"+restoredJob.JobID.String()+"/checkpoints")
		assert.Equal(t, obj{"id": float64(spID), "restore_timestamp": float64(time.Now().UnixMilli()), "is_savepoint": true, "external_path": location},
			path(v, "latest", "restored"))

		// A savepoint of a FINISHED job: accepted, then a failure.
		done := jobgraph.New("done", jobgraph.Streaming)
		done.AddVertex("v", "finish", 1)
		_, err = mc.Run(ctx, done)
		require.NoError(t, err)
		du := "/jobs/" + done.JobID.String()
		id = trigger(t, h, du+"/savepoints", `{"target-directory":`+quote(dir)+`}`)
		synctest.Wait()
		_, v = getJSON(t, h, du+"/savepoints/"+id)
		assert.Equal(t, obj{"id": "COMPLETED"}, path(v, "status"))
		assert.Equal(t, obj{"failure-cause": obj{"class": "scheduler.job-not-running",
			"stack-trace": "dispatcher: job " + done.JobID.String() + ": savepoint: job is not RUNNING (it ended FINISHED)"}}, path(v, "operation"))

		// Unknown job, unknown and malformed trigger IDs, a malformed body.
		status, v = getJSON(t, h, "/jobs/"+jobgraph.NewJobID().String()+"/savepoints/"+id)
		assert.Equal(t, http.StatusNotFound, status)
		assert.Equal(t, sorted("errors"), keys(v))
		status, body = do(h, http.MethodPost, "/jobs/"+jobgraph.NewJobID().String()+"/savepoints", `{}`)
		assert.Equal(t, http.StatusNotFound, status, "%s", body)
		status, _ = getJSON(t, h, du+"/savepoints/ffffffffffffffffffffffffffffffff")
		assert.Equal(t, http.StatusNotFound, status)
		status, _ = getJSON(t, h, du+"/savepoints/xyz")
		assert.Equal(t, http.StatusBadRequest, status)
		status, body = do(h, http.MethodPost, du+"/savepoints", `{"target-directory": 7}`)
		assert.Equal(t, http.StatusBadRequest, status)
		assert.Contains(t, string(body), "Bad request, the body is not a SavepointTriggerRequestBody: json: cannot unmarshal number")
		status, _ = do(h, http.MethodPost, du+"/savepoints", `{"triggerId":"nope"}`)
		assert.Equal(t, http.StatusBadRequest, status)
	})
}

// POST /jobs/:jobid/stop: stop-with-savepoint as an asynchronous operation; COMPLETED with the
// location once the job is FINISHED; "drain" is refused and changes nothing.
func TestStopWithSavepointThroughREST(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &counter{snapshots: map[checkpoint.CheckpointID]int64{}, restored: make(chan string, 1)}
		reg := registry()
		c.register(reg)
		mc := startCluster(t, minicluster.Config{Registry: reg})
		h := newHandler(t, rest.Config{Dispatcher: mc})
		ctx := context.Background()
		dir := t.TempDir()
		g := countingJob()
		require.NoError(t, mc.SubmitJob(ctx, g))
		synctest.Wait()
		u := "/jobs/" + g.JobID.String()

		status, body := do(h, http.MethodPost, u+"/stop", `{"targetDirectory":`+quote(dir)+`,"drain":true}`)
		assert.Equal(t, http.StatusBadRequest, status)
		assert.Contains(t, string(body), `\"drain\" is not supported`)
		synctest.Wait()
		st, _ := mc.RequestJobStatus(ctx, g.JobID)
		require.Equal(t, jobgraph.JobStatusRunning, st)

		id := trigger(t, h, u+"/stop", `{"targetDirectory":`+quote(dir)+`}`)
		_, v := getJSON(t, h, u+"/savepoints/"+id)
		assert.Equal(t, obj{"status": obj{"id": "IN_PROGRESS"}}, v)
		time.Sleep(100 * time.Millisecond)
		synctest.Wait()
		_, v = getJSON(t, h, u+"/savepoints/"+id)
		assert.Equal(t, obj{"id": "COMPLETED"}, path(v, "status"))
		location, _ := path(v, "operation", "location").(string)
		assert.True(t, strings.HasPrefix(location, dir+"/savepoint-"), "%v", v)
		res, err := mc.RequestJobResult(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusFinished, res.Status)
		_, v = getJSON(t, h, u+"/checkpoints")
		assert.Equal(t, "SYNC_SAVEPOINT", path(v, "latest", "savepoint", "checkpoint_type"))
	})
}

// The result of a completed operation stays readable for rest.async.store-duration, then 404.
func TestOperationResultExpires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mc := startCluster(t, minicluster.Config{})
		h := newHandler(t, rest.Config{Dispatcher: mc, AsyncOperationStoreDuration: time.Minute})
		done := jobgraph.New("done", jobgraph.Streaming)
		done.AddVertex("v", "finish", 1)
		_, err := mc.Run(context.Background(), done)
		require.NoError(t, err)
		u := "/jobs/" + done.JobID.String()
		id := trigger(t, h, u+"/savepoints", `{}`)
		synctest.Wait()
		time.Sleep(time.Minute - time.Millisecond)
		status, _ := getJSON(t, h, u+"/savepoints/"+id)
		assert.Equal(t, http.StatusOK, status)
		time.Sleep(time.Millisecond)
		status, _ = getJSON(t, h, u+"/savepoints/"+id)
		assert.Equal(t, http.StatusNotFound, status)
	})
}

// Close cancels the context of an operation still running and waits for its goroutine (goleak
// checks nothing stays behind); the operation's result is ctx's error, and a trigger after Close
// answers 503. A "block" task never reaches its mailbox, so its savepoint never completes.
func TestCloseEndsOperationsInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mc := startCluster(t, minicluster.Config{})
		h, err := rest.New(rest.Config{Dispatcher: mc})
		require.NoError(t, err)
		g := blockJob("stuck")
		require.NoError(t, mc.SubmitJob(context.Background(), g))
		synctest.Wait()
		u := "/jobs/" + g.JobID.String()
		id := trigger(t, h, u+"/savepoints", `{"target-directory":`+quote(t.TempDir())+`}`)
		time.Sleep(time.Second)
		_, v := getJSON(t, h, u+"/savepoints/"+id)
		require.Equal(t, obj{"status": obj{"id": "IN_PROGRESS"}}, v)

		require.NoError(t, h.Close())
		_, v = getJSON(t, h, u+"/savepoints/"+id)
		assert.Equal(t, obj{"id": "COMPLETED"}, path(v, "status"))
		assert.Equal(t, "context canceled", path(v, "operation", "failure-cause", "stack-trace"))
		status, body := do(h, http.MethodPost, u+"/savepoints", `{}`)
		assert.Equal(t, http.StatusServiceUnavailable, status)
		assert.JSONEq(t, `{"errors":["rest: the REST handler is closed"]}`, string(body))
		require.NoError(t, h.Close(), "Close twice")
	})
}

package dispatcher_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/dispatcher"
	"github.com/jobgraph/jobgraph/executiongraph"
	"github.com/jobgraph/jobgraph/ha"
	"github.com/jobgraph/jobgraph/ha/embedded"
	"github.com/jobgraph/jobgraph/jobmaster"
)

// fakeRunner is a host's own JobManagerRunner: it records the calls the Dispatcher makes and
// ends CANCELED when canceled.
type fakeRunner struct {
	g    *jobgraph.JobGraph
	done chan struct{}

	mu     sync.Mutex
	calls  []string
	status jobgraph.JobStatus
}

var _ jobmaster.JobManagerRunner = (*fakeRunner)(nil)

func (r *fakeRunner) record(call string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, call)
}

func (r *fakeRunner) snapshot() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.calls...)
}

func (r *fakeRunner) Start() error {
	r.record("Start")
	r.mu.Lock()
	r.status = jobgraph.JobStatusRunning
	r.mu.Unlock()
	return nil
}
func (r *fakeRunner) JobID() jobgraph.JobID { return r.g.JobID }
func (r *fakeRunner) Done() <-chan struct{} { return r.done }
func (r *fakeRunner) Result() jobmaster.Result {
	<-r.done
	return jobmaster.Result{Archived: executiongraph.NewSparseArchivedExecutionGraph(r.g.JobID, r.g.Name, r.g.Type, jobgraph.JobStatusCanceled, nil, time.Unix(1, 0), time.Unix(1, 0))}
}
func (r *fakeRunner) Cancel(context.Context) error {
	r.record("Cancel")
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.status != jobgraph.JobStatusCanceled {
		r.status = jobgraph.JobStatusCanceled
		close(r.done)
	}
	return nil
}
func (r *fakeRunner) RequestJobStatus(context.Context) (jobgraph.JobStatus, error) {
	r.record("RequestJobStatus")
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.status, nil
}
func (r *fakeRunner) RequestJob(context.Context) (*executiongraph.ArchivedExecutionGraph, error) {
	r.record("RequestJob")
	return executiongraph.NewSparseArchivedExecutionGraph(r.g.JobID, r.g.Name, r.g.Type, jobgraph.JobStatusRunning, nil, time.Unix(1, 0), time.Unix(1, 0)), nil
}
func (r *fakeRunner) Close() { r.record("Close") }

// A host substitutes its own JobManagerRunner through Config.JobManagerRunnerFactory: the
// Dispatcher builds one per job with its HA services, starts it, asks it for status, the graph
// and cancellation, and archives the result it reports.
func TestDispatcherUsesSubstitutedJobManagerRunner(t *testing.T) {
	services := embedded.New()
	defer services.Close()
	var runner *fakeRunner
	var gotHA ha.Services
	d, err := dispatcher.New(dispatcher.Config{HA: services, JobManagerRunnerFactory: func(g *jobgraph.JobGraph, s ha.Services) (jobmaster.JobManagerRunner, error) {
		gotHA = s
		runner = &fakeRunner{g: g, done: make(chan struct{}), status: jobgraph.JobStatusCreated}
		return runner, nil
	}})
	require.NoError(t, err)
	defer d.Close()
	ctx := context.Background()
	g := graph("host runner")
	require.NoError(t, d.SubmitJob(ctx, g))
	require.NotNil(t, runner)
	assert.Same(t, services, gotHA)
	assert.Equal(t, g.JobID, runner.g.JobID)

	st, err := d.RequestJobStatus(ctx, g.JobID)
	require.NoError(t, err)
	assert.Equal(t, jobgraph.JobStatusRunning, st)
	a, err := d.RequestJob(ctx, g.JobID)
	require.NoError(t, err)
	assert.Equal(t, jobgraph.JobStatusRunning, a.Status)
	require.NoError(t, d.CancelJob(ctx, g.JobID))
	res, err := d.RequestJobResult(ctx, g.JobID)
	require.NoError(t, err)
	assert.Equal(t, jobgraph.JobStatusCanceled, res.Status)
	assert.Equal(t, []string{"Start", "RequestJobStatus", "RequestJob", "Cancel", "Close"}, runner.snapshot())
}

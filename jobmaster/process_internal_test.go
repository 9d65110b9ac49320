package jobmaster

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/executiongraph"
)

// unscheduledJobMaster is a JobMaster double whose Close is all a process calls here.
type unscheduledJobMaster struct {
	JobMaster
	done chan struct{}
}

func (j *unscheduledJobMaster) Done() <-chan struct{}                         { return j.done }
func (j *unscheduledJobMaster) Close() *executiongraph.ArchivedExecutionGraph { return nil }

// deferredFactory implements DeferredStartFactory; its startScheduling records what the process had
// published when it was called.
type deferredFactory struct {
	JobMasterServiceFactory
	p       *ServiceProcess
	jm      *unscheduledJobMaster
	created chan struct{} // closed when CreateUnscheduled returns
	seen    chan JobMaster
}

func (f *deferredFactory) CreateUnscheduled(ctx context.Context, token jobgraph.JobMasterID) (JobMaster, func(), error) {
	defer close(f.created)
	return f.jm, func() { f.seen <- f.p.JobMaster() }, nil
}

type noCallbacks struct{ created chan JobMaster }

func (c noCallbacks) processCreated(p *ServiceProcess, svc JobMaster) { c.created <- svc }
func (noCallbacks) processDone(*ServiceProcess, Result)               {}

// The process publishes a JobMaster before its scheduling starts: at the start of scheduling,
// which is when the job goes RUNNING and its tasks may start, the process already answers with
// that JobMaster, so its runner never answers INITIALIZING for a job that moved on (the
// ExampleRunner flake under load).
func TestProcessPublishesTheJobMasterBeforeSchedulingStarts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &deferredFactory{jm: &unscheduledJobMaster{done: make(chan struct{})},
			created: make(chan struct{}), seen: make(chan JobMaster, 1)}
		cb := noCallbacks{created: make(chan JobMaster, 1)}
		p := &ServiceProcess{factory: f, callbacks: cb, started: time.Now(), exited: make(chan struct{})}
		p.ctx, p.cancel = context.WithCancel(context.Background())
		f.p = p
		go p.run()
		<-f.created
		require.Same(t, f.jm, <-f.seen, "scheduling started before the process published its JobMaster")
		assert.Same(t, f.jm, <-cb.created)
		p.Close()
	})
}

// A process closed while its JobMaster was being created closes that JobMaster without ever
// starting its scheduling.
func TestProcessClosedDuringCreationNeverStartsScheduling(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &deferredFactory{jm: &unscheduledJobMaster{done: make(chan struct{})},
			created: make(chan struct{}), seen: make(chan JobMaster, 1)}
		cb := noCallbacks{created: make(chan JobMaster, 1)}
		p := &ServiceProcess{factory: f, callbacks: cb, started: time.Now(), exited: make(chan struct{})}
		p.ctx, p.cancel = context.WithCancel(context.Background())
		f.p = p
		p.cancel() // closed before Create returns
		go p.run()
		p.Close()
		synctest.Wait()
		assert.Empty(t, f.seen, "no scheduling started")
		assert.Empty(t, cb.created, "no JobMaster reported")
		assert.Same(t, f.jm, p.JobMaster(), "the JobMaster is kept for Close")
	})
}

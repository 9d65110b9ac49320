package jobmaster

import (
	"context"
	"sync"
	"time"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/executiongraph"
)

// processCallbacks receive a process's events, on its goroutine; the runner posts them to its main
// loop (and confirms leadership once the JobMaster is created).
type processCallbacks interface {
	processCreated(p *ServiceProcess, svc JobMaster)
	processDone(p *ServiceProcess, res Result)
}

// ServiceProcess runs the JobMaster of one leader session: it creates it through the factory (off
// every main loop, on its runner's session operation after the JobResultStore read), reports it
// once created, and reports the job's result once the JobMaster is done. Closing the process
// closes the JobMaster, which suspends the job. Flink: DefaultJobMasterServiceProcess.
type ServiceProcess struct {
	token     jobgraph.JobMasterID
	factory   JobMasterServiceFactory
	callbacks processCallbacks
	started   time.Time // when the creation began; written before run

	ctx    context.Context
	cancel context.CancelFunc
	exited chan struct{}

	mu  sync.Mutex
	svc JobMaster
	// created: the runner was told of svc (processCreated): its calls go to svc from then on.
	created bool
	// cancelPending: the job was canceled before created; processCreated cancels svc. Set by
	// the runner at the grant (a cancel before the session) and by createdOrCancel.
	cancelPending bool
}

// newServiceProcess returns the process of one leader session; its runner's session operation
// calls run (and sets started) once the JobResultStore said the job is not done.
func newServiceProcess(factory JobMasterServiceFactory, token jobgraph.JobMasterID, callbacks processCallbacks) *ServiceProcess {
	ctx, cancel := context.WithCancel(context.Background())
	return &ServiceProcess{token: token, factory: factory, callbacks: callbacks,
		ctx: ctx, cancel: cancel, exited: make(chan struct{})}
}

// Token is the JobMasterID of the process's session.
func (p *ServiceProcess) Token() jobgraph.JobMasterID { return p.token }

// DeferredStartFactory is a JobMasterServiceFactory whose JobMasters can be built without
// starting to schedule (the default Factory is one): CreateUnscheduled returns the JobMaster and
// the function that starts its scheduling. The runner's ServiceProcess then publishes the
// JobMaster before its job can move; otherwise a task of the job could start, and the JobMaster
// report RUNNING, while the runner still answered INITIALIZING from a process whose JobMaster it
// did not know yet. A factory that wraps another (cluster.JobManager's does) implements it too,
// or the wrapped one's deferred start is lost. Called off the runner's loop, as Create is.
type DeferredStartFactory interface {
	JobMasterServiceFactory
	CreateUnscheduled(ctx context.Context, token jobgraph.JobMasterID) (jm JobMaster, startScheduling func(), err error)
}

func (p *ServiceProcess) run() {
	defer close(p.exited)
	var svc JobMaster
	var err error
	startScheduling := func() {}
	if f, ok := p.factory.(DeferredStartFactory); ok {
		svc, startScheduling, err = f.CreateUnscheduled(p.ctx, p.token)
	} else {
		svc, err = p.factory.Create(p.ctx, p.token)
	}
	if p.ctx.Err() != nil {
		if err == nil {
			p.setService(svc) // Close closes it; it never schedules
		}
		return
	}
	if err != nil {
		err = initializationError(p.factory.JobID(), err)
		p.callbacks.processDone(p, Result{
			Archived: executiongraph.NewSparseArchivedExecutionGraph(p.factory.JobID(), p.factory.JobName(), p.factory.JobType(), jobgraph.JobStatusFailed, err, p.started, time.Now()),
			Err:      err,
		})
		return
	}
	p.setService(svc)
	startScheduling() // after setService: from here on the runner answers from the JobMaster
	p.callbacks.processCreated(p, svc)
	select {
	case <-svc.Done():
		p.callbacks.processDone(p, svc.Result())
	case <-p.ctx.Done():
	}
}

func (p *ServiceProcess) setService(svc JobMaster) {
	p.mu.Lock()
	p.svc = svc
	p.mu.Unlock()
}

// markCreated marks the JobMaster created and reports whether a cancel came before.
func (p *ServiceProcess) markCreated() (cancel bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.created = true
	return p.cancelPending
}

// createdJobMaster returns the JobMaster once markCreated ran, or nil.
func (p *ServiceProcess) createdJobMaster() JobMaster {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.created {
		return nil
	}
	return p.svc
}

// createdOrCancel returns the JobMaster once markCreated ran; before, it records the cancel for
// markCreated to hand over and returns nil.
func (p *ServiceProcess) createdOrCancel() JobMaster {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.created {
		p.cancelPending = true
		return nil
	}
	return p.svc
}

// JobMaster returns the JobMaster once created, or nil.
func (p *ServiceProcess) JobMaster() JobMaster {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.svc
}

// Close stops creating the JobMaster or closes it, waits for the process's goroutine, and returns
// the archived graph as of the end (nil if no JobMaster was created).
func (p *ServiceProcess) Close() *executiongraph.ArchivedExecutionGraph {
	p.cancel()
	<-p.exited
	if svc := p.JobMaster(); svc != nil {
		return svc.Close()
	}
	return nil
}

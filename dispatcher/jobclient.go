package dispatcher

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jobgraph/jobgraph"
)

// JobClientGateway is what a JobClient calls: StandaloneDispatcher, Runner and
// minicluster.MiniCluster implement it.
type JobClientGateway interface {
	SubmitJob(ctx context.Context, g *jobgraph.JobGraph) error
	RequestJobStatus(ctx context.Context, id jobgraph.JobID) (jobgraph.JobStatus, error)
	RequestJobResult(ctx context.Context, id jobgraph.JobID) (*jobgraph.JobResult, error)
	CancelJob(ctx context.Context, id jobgraph.JobID) error
	ReportJobClientHeartbeat(ctx context.Context, id jobgraph.JobID, expires time.Time) error
}

var (
	_ JobClientGateway = (*StandaloneDispatcher)(nil)
	_ JobClientGateway = (*Runner)(nil)
)

// JobClientOptions configure SubmitAttached. Zero values mean Flink's defaults.
type JobClientOptions struct {
	// ShutdownOnAttachedExit: execution.shutdown-on-attached-exit, default false. When set, the
	// job is submitted with InitialClientHeartbeatTimeout = HeartbeatTimeout and the client
	// heartbeats every HeartbeatInterval until the job ends or Close: once the heartbeats stop
	// for HeartbeatTimeout the Dispatcher cancels the job. When not set the client sends no
	// heartbeat and the job outlives its client, as a detached one (Flink's client starts its
	// heartbeats only with this option).
	ShutdownOnAttachedExit bool
	// HeartbeatInterval: client.heartbeat.interval, default 30 s
	// (DefaultClientHeartbeatInterval). Must be below HeartbeatTimeout.
	HeartbeatInterval time.Duration
	// HeartbeatTimeout: client.heartbeat.timeout, default 180 s (DefaultClientHeartbeatTimeout).
	HeartbeatTimeout time.Duration
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// JobClient is the client of one job submitted attached (SubmitAttached): it waits for the
// job's result, and with ShutdownOnAttachedExit it tells the Dispatcher that it is alive, every
// HeartbeatInterval on a goroutine of its own (the first one interval after the submission; each
// says "alive until now + HeartbeatTimeout"), until the job ends or Close. Its methods are safe
// for concurrent use. Flink: JobClient, with ClientUtils.reportHeartbeatPeriodically.
type JobClient struct {
	gw  JobClientGateway
	id  jobgraph.JobID
	log *slog.Logger

	ctx       context.Context // canceled by Close
	stop      context.CancelFunc
	wg        sync.WaitGroup
	closeOnce sync.Once
}

// SubmitAttached submits a copy of g through gw, attached: with opts.ShutdownOnAttachedExit
// the copy carries InitialClientHeartbeatTimeout = opts.HeartbeatTimeout and the returned
// client heartbeats (see JobClient); the caller's g is not changed. The caller must Close the
// client. Errors: ErrInvalidConfig for a negative interval or timeout, or an interval not below
// the timeout (Flink's ClientUtils checks the same, naming both options); otherwise what
// gw.SubmitJob returns (no client then, and no goroutine). Flink: an attached execute() with
// execution.shutdown-on-attached-exit.
func SubmitAttached(ctx context.Context, gw JobClientGateway, g *jobgraph.JobGraph, opts JobClientOptions) (*JobClient, error) {
	interval := cmp.Or(opts.HeartbeatInterval, DefaultClientHeartbeatInterval)
	timeout := cmp.Or(opts.HeartbeatTimeout, DefaultClientHeartbeatTimeout)
	switch {
	case opts.HeartbeatInterval < 0 || opts.HeartbeatTimeout < 0:
		return nil, fmt.Errorf("%w: the client heartbeat interval (client.heartbeat.interval) %v and timeout (client.heartbeat.timeout) %v must not be negative",
			ErrInvalidConfig, opts.HeartbeatInterval, opts.HeartbeatTimeout)
	case interval >= timeout:
		return nil, fmt.Errorf("%w: the client heartbeat interval (client.heartbeat.interval) %v must be less than the timeout (client.heartbeat.timeout) %v",
			ErrInvalidConfig, interval, timeout)
	}
	if g == nil {
		return nil, gw.SubmitJob(ctx, nil)
	}
	attached := *g // the Dispatcher keeps its own deep copy
	if opts.ShutdownOnAttachedExit {
		attached.InitialClientHeartbeatTimeout = timeout
	}
	if err := gw.SubmitJob(ctx, &attached); err != nil {
		return nil, err
	}
	c := &JobClient{gw: gw, id: g.JobID, log: cmp.Or(opts.Logger, slog.Default())}
	c.ctx, c.stop = context.WithCancel(context.Background())
	if opts.ShutdownOnAttachedExit {
		ended := make(chan struct{})
		c.wg.Go(func() {
			defer close(ended)
			_, _ = gw.RequestJobResult(c.ctx, c.id)
		})
		c.wg.Go(func() { c.heartbeat(interval, timeout, ended) })
	}
	return c, nil
}

// heartbeat reports the client alive every interval until the job ended or Close.
func (c *JobClient) heartbeat(interval, timeout time.Duration, ended <-chan struct{}) {
	c.log.Info("reporting the job client's heartbeats", "job", c.id, "interval", interval, "timeout", timeout)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-ended:
			return
		case <-t.C:
		}
		err := c.gw.ReportJobClientHeartbeat(c.ctx, c.id, time.Now().Add(timeout))
		switch {
		case errors.Is(err, ErrJobNotFound):
			return // the job ended
		case err != nil && c.ctx.Err() == nil:
			c.log.Debug("the job client's heartbeat failed", "job", c.id, "err", err)
		}
	}
}

// JobID is the job's ID.
func (c *JobClient) JobID() jobgraph.JobID { return c.id }

// Result waits for the job's result (see StandaloneDispatcher.RequestJobResult) or ctx's end.
func (c *JobClient) Result(ctx context.Context) (*jobgraph.JobResult, error) {
	return c.gw.RequestJobResult(ctx, c.id)
}

// Status returns the job's current status.
func (c *JobClient) Status(ctx context.Context) (jobgraph.JobStatus, error) {
	return c.gw.RequestJobStatus(ctx, c.id)
}

// Cancel cancels the job (Flink's shutdown hook of an attached client cancels it this way on an
// orderly exit; Close alone leaves it to the heartbeat timeout).
func (c *JobClient) Cancel(ctx context.Context) error { return c.gw.CancelJob(ctx, c.id) }

// Close stops the heartbeats and waits for the client's goroutines; it does not cancel the job:
// a job submitted with ShutdownOnAttachedExit is canceled by the Dispatcher once
// HeartbeatTimeout passed without a heartbeat, any other job runs on. Idempotent; always nil.
func (c *JobClient) Close() error {
	c.closeOnce.Do(c.stop)
	c.wg.Wait()
	return nil
}

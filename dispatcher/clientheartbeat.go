package dispatcher

import (
	"context"
	"fmt"
	"time"

	"github.com/jobgraph/jobgraph"
)

// Flink's defaults for client heartbeats.
const (
	// DefaultClientHeartbeatInterval is client.heartbeat.interval's default (30 s).
	DefaultClientHeartbeatInterval = 30 * time.Second
	// DefaultClientHeartbeatTimeout is client.heartbeat.timeout's default (180 s).
	DefaultClientHeartbeatTimeout = 180 * time.Second
	// DefaultClientAlivenessCheckInterval is $internal.dispatcher.client-aliveness-check.interval's
	// default (1 min).
	DefaultClientAlivenessCheckInterval = time.Minute
)

// ReportJobClientHeartbeat tells the Dispatcher that the client of a running job is alive until
// expires (the client sends now + client.heartbeat.timeout every client.heartbeat.interval; a
// JobClient from SubmitAttached does). A job submitted with a positive
// jobgraph.JobGraph.InitialClientHeartbeatTimeout is watched from the moment its runner started
// (its client expires InitialClientHeartbeatTimeout later unless it heartbeats): every
// Config.ClientAlivenessCheckInterval (1 min) the Dispatcher's loop cancels each watched job
// whose client's expiry has come (expires ≤ now), logging a WARN that names the options, so
// such a job is canceled at the first check at or after its last heartbeat's expiry; a recovered
// job is watched anew from its recovery. A heartbeat for a running job that is not watched (a
// detached one) changes nothing. Errors: an error wrapping ErrJobNotFound when no job of the
// JobID runs (unknown, ended, or still being submitted); ErrClosed; ctx's. Safe from any
// goroutine. Flink: Dispatcher.reportJobClientHeartbeat with initJobClientExpiredTime and
// checkJobClientAliveness. Where we differ: Flink starts a job's expiry at the first check after
// its JobManagerRunner is initialized (its JobMaster exists), ours when the runner started (the
// Dispatcher does not ask its runner from its loop), and Flink records the heartbeat of a job
// that is not watched too (checking it only if the check timer runs for another job).
func (d *StandaloneDispatcher) ReportJobClientHeartbeat(ctx context.Context, id jobgraph.JobID, expires time.Time) error {
	return d.loop.Call(ctx, func() error {
		j, ok := d.jobs[id]
		if !ok || j.runner == nil || j.ended != nil {
			return fmt.Errorf("%w: %s has no running job for its client's heartbeat", ErrJobNotFound, id)
		}
		if _, watched := d.clientExpiry[id]; watched {
			d.clientExpiry[id] = expires
			d.log.Debug("job client heartbeat", "job", id, "expires", expires)
		}
		return nil
	})
}

// watchClient starts watching the client of a job whose runner just started, if the job has a
// client heartbeat timeout; on the loop.
func (d *StandaloneDispatcher) watchClient(id jobgraph.JobID, timeout time.Duration) {
	if timeout <= 0 {
		return
	}
	d.log.Info("watching the job client's heartbeats", "job", id, "timeout", timeout)
	d.clientExpiry[id] = time.Now().Add(timeout)
	if !d.clientCheckArmed {
		d.clientCheckArmed = true
		d.loop.Schedule(d.clientCheckEvery, d.checkClientAliveness)
	}
}

// checkClientAliveness cancels the watched jobs whose client expired and forgets the jobs that
// no longer run; it runs again one interval later while any job is watched. On the loop; the
// cancels run on goroutines Close waits for.
func (d *StandaloneDispatcher) checkClientAliveness() {
	d.clientCheckArmed = false
	if d.closing {
		return
	}
	now := time.Now()
	for id, expires := range d.clientExpiry {
		j, ok := d.jobs[id]
		switch {
		case !ok || j.ended != nil:
			delete(d.clientExpiry, id)
		case !now.Before(expires):
			delete(d.clientExpiry, id)
			d.log.Warn("the job client's heartbeat timed out: canceling the job; adjust client.heartbeat.interval and client.heartbeat.timeout",
				"job", id, "expired", expires)
			runner := j.runner
			d.goWatch(func() {
				if err := runner.Cancel(d.stopped); err != nil {
					d.log.Warn("canceling the job of a timed-out client failed", "job", id, "err", err)
				}
			})
		}
	}
	if len(d.clientExpiry) > 0 {
		d.clientCheckArmed = true
		d.loop.Schedule(d.clientCheckEvery, d.checkClientAliveness)
	}
}

package keyedsum

import (
	"context"
	"sync"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

// The sources of a job with Config.PauseAfter report here, in this process, once they paused:
// a host running the job on an in-process MiniCluster waits for that before it stops the job
// with a savepoint.
var pauses = struct {
	mu   sync.Mutex
	jobs map[jobgraph.JobID]*pausedSources
}{jobs: make(map[jobgraph.JobID]*pausedSources)}

// pausedSources is, per source subtask, the attempt number that paused; changed is closed and
// replaced on every report.
type pausedSources struct {
	attempts map[int]int
	changed  chan struct{}
}

func pausedOf(job jobgraph.JobID) *pausedSources {
	p := pauses.jobs[job]
	if p == nil {
		p = &pausedSources{attempts: make(map[int]int), changed: make(chan struct{})}
		pauses.jobs[job] = p
	}
	return p
}

func reportPaused(info taskexecutor.TaskInfo) {
	pauses.mu.Lock()
	defer pauses.mu.Unlock()
	p := pausedOf(info.JobID)
	p.attempts[info.SubtaskIndex] = max(p.attempts[info.SubtaskIndex], info.AttemptNumber)
	close(p.changed)
	p.changed = make(chan struct{})
}

// WaitSourcesPaused waits until every one of the job's parallelism source subtasks reported that
// it paused (JobOptions.PauseAfter), each in the latest attempt any of them paused in, and returns
// that attempt number. A subtask that is restarted afterwards runs again up to the pause; a
// stop-with-savepoint that fails because of such a restart may wait again and retry. Errors:
// ctx's, when it ends first. Safe for concurrent use; the tasks must run in this process.
func WaitSourcesPaused(ctx context.Context, job jobgraph.JobID, parallelism int) (attempt int, err error) {
	for {
		pauses.mu.Lock()
		p := pausedOf(job)
		latest, all := -1, len(p.attempts) == parallelism
		for _, a := range p.attempts {
			latest = max(latest, a)
		}
		for s := range parallelism {
			if a, ok := p.attempts[s]; !ok || a != latest {
				all = false
			}
		}
		changed := p.changed
		pauses.mu.Unlock()
		if all {
			return latest, nil
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-changed:
		}
	}
}

// ForgetPauses drops what the job's sources reported (call it once the job ended).
func ForgetPauses(job jobgraph.JobID) {
	pauses.mu.Lock()
	defer pauses.mu.Unlock()
	delete(pauses.jobs, job)
}

package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/examples/streaming/keyedsum"
	"github.com/jobgraph/jobgraph/ha"
	"github.com/jobgraph/jobgraph/ha/file"
	"github.com/jobgraph/jobgraph/minicluster"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

// JobID is the application's one job's fixed JobID, the same in every JobManager process (as
// Flink fixes it in HA application mode): the first 16 bytes of the SHA-256 of
// "jobgraph/examples/hafailover".
var JobID = func() jobgraph.JobID {
	sum := sha256.Sum256([]byte("jobgraph/examples/hafailover"))
	var id jobgraph.JobID
	copy(id[:], sum[:16])
	return id
}()

// The events a JobManager process prints, one a line (the parent parses them):
//
//	leader <session>           its Dispatcher was granted the leadership
//	revoked                    … and lost it
//	checkpoint <id> completed  the job's checkpoint <id> is stored in the HA backend
//	restored checkpoint <id>   its JobMaster restored checkpoint <id> (none: "restored nothing")
//	job <status>               the job's status changed in this process
//	result <status>            the application's result; the process then exits
//	result <status> (the job had terminated before this process led)
const (
	evLeader     = "leader "
	evRevoked    = "revoked"
	evCheckpoint = "checkpoint "
	evRestored   = "restored checkpoint "
	evNothing    = "restored nothing"
	evJob        = "job "
	evResult     = "result "

	alreadyTerminated = "(the job had terminated before this process led)"
)

// events prints a JobManager process's events, one line each, whole.
type events struct {
	mu sync.Mutex
	w  io.Writer
	// acks, if set, is read for a line after each completed checkpoint printed (-ack-checkpoints).
	acks *bufio.Reader
}

// awaitAck waits for the parent's go-ahead after a checkpoint: a line on acks. At the end of
// acks (the parent is gone) it waits no more.
func (e *events) awaitAck() {
	if e.acks == nil {
		return
	}
	if _, err := e.acks.ReadString('\n'); err != nil {
		e.acks = nil
	}
}

func (e *events) printf(format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	fmt.Fprintf(e.w, format+"\n", args...)
}

// openHA opens this process's client of the shared backend.
func openHA(o options) (ha.Services, error) {
	switch o.ha {
	case haFile:
		return file.New(file.Options{Dir: o.haDir})
	case haEtcd:
		return openEtcd(o)
	}
	return nil, fmt.Errorf("-ha %q", o.ha)
}

// runJobManager is a JobManager process: a MiniCluster over the shared HA services that runs
// the application (the one job) with RunApplication, and prints its events.
func runJobManager(ctx context.Context, o options, stdin io.Reader, stdout io.Writer) (err error) {
	ev := &events{w: stdout}
	if o.ackCheckpoints {
		ev.acks = bufio.NewReader(stdin)
	}
	g, err := keyedsum.BuildJob(o.jobOptions())
	if err != nil {
		return err
	}
	g.JobID = JobID
	services, err := openHA(o)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, services.Close()) }()

	reg := taskexecutor.NewRegistry()
	keyedsum.Register(reg)
	// The restore is read from the job's checkpoint statistics once it runs here; a job may run
	// as soon as the cluster starts (the Runner recovers it at its grant), before Start returned.
	started := make(chan struct{})
	var ran atomic.Bool // the job ran in this process
	var mc *minicluster.MiniCluster
	var reports sync.WaitGroup
	defer reports.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	onStatus := func(job jobgraph.JobID, status jobgraph.JobStatus, _ time.Time) {
		ev.printf("%s%s", evJob, status)
		if status != jobgraph.JobStatusRunning {
			return
		}
		ran.Store(true)
		reports.Go(func() {
			select {
			case <-started:
			case <-ctx.Done():
				return
			}
			// The JobMaster reports RUNNING from inside its creation, before its runner hands it
			// out: until then RequestJob answers the runner's sparse INITIALIZING graph, which
			// has no checkpoint statistics. Ask again until the JobMaster's own graph answers.
			a, err := mc.RequestJob(ctx, job)
			for err == nil && a.Status == jobgraph.JobStatusInitializing && a.CheckpointStatistics == nil {
				select {
				case <-time.After(5 * time.Millisecond):
				case <-ctx.Done():
					return
				}
				a, err = mc.RequestJob(ctx, job)
			}
			switch {
			case err != nil:
				ev.printf("reading the restored checkpoint: %v", err)
			case a.CheckpointStatistics == nil || a.CheckpointStatistics.Latest.Restored == nil:
				ev.printf("%s", evNothing)
			default:
				ev.printf("%s%d", evRestored, a.CheckpointStatistics.Latest.Restored.ID)
			}
		})
	}
	slots := (o.parallelism + 1) / 2
	mc, err = minicluster.Start(ctx, minicluster.Config{TaskExecutors: 2, SlotsPerTaskExecutor: slots, Registry: reg,
		HA: loggedHA{Services: services, ev: ev}, JobStatusListener: onStatus})
	if err != nil {
		return err
	}
	close(started)
	// RunApplication waits for this process's leadership, runs the job (or finds it recovered,
	// or already terminated), and closes the cluster.
	results, err := mc.RunApplication(ctx, []*jobgraph.JobGraph{g})
	if err != nil {
		return err
	}
	res := results[0]
	if ran.Load() {
		ev.printf("%s%s", evResult, res.Status)
	} else {
		ev.printf("%s%s %s", evResult, res.Status, alreadyTerminated)
	}
	if res.Status != jobgraph.JobStatusFinished {
		return fmt.Errorf("job ended %s: %v", res.Status, res.RootCause)
	}
	return nil
}

// loggedHA is the process's HA services, printing the Dispatcher's leadership changes and each
// checkpoint stored.
type loggedHA struct {
	ha.Services
	ev *events
}

func (h loggedHA) DispatcherLeaderElection() ha.LeaderElection {
	return loggedElection{h.Services.DispatcherLeaderElection(), h.ev}
}

func (h loggedHA) CheckpointRecoveryFactory() checkpoint.CheckpointRecoveryFactory {
	return loggedFactory{h.Services.CheckpointRecoveryFactory(), h.ev}
}

type loggedElection struct {
	ha.LeaderElection
	ev *events
}

func (e loggedElection) Start(c ha.LeaderContender) error {
	return e.LeaderElection.Start(loggedContender{c, e.ev})
}

type loggedContender struct {
	ha.LeaderContender
	ev *events
}

func (c loggedContender) GrantLeadership(s ha.SessionID) {
	c.ev.printf("%s%s", evLeader, s)
	c.LeaderContender.GrantLeadership(s)
}

func (c loggedContender) RevokeLeadership() {
	c.ev.printf("%s", evRevoked)
	c.LeaderContender.RevokeLeadership()
}

type loggedFactory struct {
	checkpoint.CheckpointRecoveryFactory
	ev *events
}

func (f loggedFactory) CreateRecoveredCompletedCheckpointStore(job jobgraph.JobID, maxRetained int) (checkpoint.CompletedCheckpointStore, error) {
	s, err := f.CheckpointRecoveryFactory.CreateRecoveredCompletedCheckpointStore(job, maxRetained)
	if err != nil {
		return nil, err
	}
	return loggedStore{s, f.ev}, nil
}

type loggedStore struct {
	checkpoint.CompletedCheckpointStore
	ev *events
}

func (s loggedStore) Add(cp checkpoint.CompletedCheckpoint) ([]checkpoint.CompletedCheckpoint, error) {
	subsumed, err := s.CompletedCheckpointStore.Add(cp)
	if err == nil {
		// Adds come one at a time (the coordinator stores its checkpoints in order), so the
		// next one cannot be stored while this one waits for its acknowledgement.
		s.ev.printf("%s%d completed", evCheckpoint, cp.CheckpointID)
		s.ev.awaitAck()
	}
	return subsumed, err
}

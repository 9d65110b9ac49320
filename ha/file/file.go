// Package file is the durable ha.Services on one machine: every piece of HA data lives in files
// under one directory, which several processes on the machine (JobManager processes) share; each
// process opens its own client with New. It elects one client as the leader of every component
// through an flock(2) lock file, and a client started over the same directory after a crash (or
// a restart) recovers every plan, dirty result, checkpoint and counter. Linux only in practice:
// it uses syscall.Flock, whose locks belong to the open file description and are released by the
// kernel when the process holding them dies, even by SIGKILL.
//
// There is no Flink class of this name: it is Flink's ZooKeeper/Kubernetes HA services
// (ZooKeeperLeaderElectionHaServices, with DefaultLeaderElectionService) with a directory as the
// coordination service, and Flink's FileSystemJobResultStore for the results.
//
// # Layout
//
// Under Options.Dir (Flink's high-availability.storageDir, with ZooKeeper's node names where
// Flink has them):
//
//	leader/latch                 the lock file: flock'ed by the leading client, holding its
//	                             session ID (ZooKeeper: /leader/latch)
//	leader/dispatcher.json       the Dispatcher leader's confirmed address and session
//	leader/resource_manager.json the ResourceManager leader's
//	leader/<jobID>.json          job <jobID>'s JobMaster's (ZooKeeper: /leader/<component>/
//	                             connection_info, one file here)
//	plans/<jobID>.json           the job's JobGraph in the library's JSON codec (jobgraph.Decode)
//	job-result-store/<jobID>_DIRTY.json  the job's JobResult while its cleanup is pending
//	job-result-store/<jobID>.json        the same file renamed once the job is clean
//	checkpoints/<jobID>/checkpoints/checkpoint-<id>.json   the retained checkpoints' metadata
//	checkpoints/<jobID>/checkpoint-id-counter              the next checkpoint ID
//
// A JobResultStore entry is a JSON object {"result": <the JobResult>, "version": 1}, as Flink's
// FileSystemJobResultStore writes it (whose JobResult JSON differs: ours is jobgraph.JobResult's).
// Unlike Flink's default (job-result-store.delete-on-commit: true) a clean entry is kept, so the
// Dispatcher answers for a finished job after a restart; delete the files to forget them. The
// checkpoint files are checkpoint.FileCheckpointRecoveryFactory's over Dir/checkpoints.
//
// Every write is atomic and durable (internal/durable: temp file, fsync, rename, fsync the
// directory), so a crash leaves the old content or the new. A temp file a crash left behind
// (".<name>.tmp-<random>") is never read as an entry, and never removed by New either: it may be
// another live process's write in progress.
//
// # Leadership
//
// One leadership per client, as Flink's DefaultLeaderElectionService since 1.15 (see ha's
// "Leadership and fencing"): a client campaigns once the first contender is started on any of
// its elections, trying a non-blocking exclusive flock on leader/latch at once and then every
// Options.PollInterval (DefaultPollInterval, 100 ms: the election's own timeout, the longest a
// standby waits after the leader's process died or closed). Once it holds the lock it draws a new
// session ID, writes it into the latch (durably, in place: the latch is never replaced, as the
// lock belongs to its inode), and grants every contender it has — the Dispatcher, the
// ResourceManager, each job's JobMaster — with that one session; a contender started while it
// leads is granted at once. Close revokes them and releases the lock; the kernel releases it when
// the process dies. Two clients in one process exclude each other too (each opens the latch
// itself, and flock locks conflict across open file descriptions). Each election accessor
// returns a new handle for one contender; within a client a component's first open handle is
// granted, later ones wait until those before them are closed (as ha/embedded's handles). A
// client whose last contender leaves gives its leadership up, so another client may lead, and
// draws a new session when it leads again. A client's tries of the lock never overlap its own
// retrievals' probes (below), so a standby alone over the directory takes the lock at its first
// poll after the leader released it; another client's probe (a shared flock held for two reads
// of a few bytes) can still make a try fail, and that standby then waits one more poll.
//
// Leader retrieval reads the component's leader file every PollInterval and reports its address
// only while its session is the latch's and a client holds the lock (a shared flock probe that
// succeeds means nobody leads): a dead leader's file is reported as no leader, and once a
// retrieval has said so, never again — a session the latch named while nobody held the lock is
// over for good, as is the client's own once it stopped leading, since every leadership draws a
// new one. The only way a dead leader's address is reported after another client took the lock
// is a retrieval whose first read falls between the new leader's flock and its write of the
// session (microseconds: a pwrite of 46 bytes, synced after); it reports no leader at its next
// poll.
//
// # Fencing
//
// Every write — ExecutionPlanStore Put and Remove, JobResultStore CreateDirty and MarkClean, the
// checkpoint stores' Add and Shutdown(true), the counters' GetAndIncrement, SetCount and
// Shutdown(true), the leader files, CleanupJobData — fails with an error wrapping ha.ErrNotLeader
// unless the client holds the lock while it writes: each write holds a read lock on the client's
// leadership flag for its whole duration, and the flag is cleared (under the write lock) before
// the flock is released. An flock cannot be taken from a live process, so a client that holds it
// is the only writer: the check and the write need no common transaction (where ha/etcd needs
// one). Reads are never fenced: a standby reads what the leader wrote.
package file

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/ha"
	"github.com/jobgraph/jobgraph/internal/durable"
	"github.com/jobgraph/jobgraph/internal/mainloop"
)

// DefaultPollInterval is Options.PollInterval's default: how often a standby tries the lock and
// a retrieval reads its leader file.
const DefaultPollInterval = 100 * time.Millisecond

// Options configures New.
type Options struct {
	// Dir is the shared directory (created if missing). Required.
	Dir string
	// PollInterval is how often a campaigning client tries the lock and how often retrievals
	// read the leader files; 0 means DefaultPollInterval. The longest a standby takes to notice
	// that the leader is gone.
	PollInterval time.Duration
}

// Directory and file names under Options.Dir.
const (
	leaderDir       = "leader"
	latchFile       = "latch"
	plansDir        = "plans"
	resultsDir      = "job-result-store"
	checkpointsDir  = "checkpoints"
	dispatcherName  = "dispatcher"
	resourceMgrName = "resource_manager"
)

// Services is one client of the shared directory (one per JobManager process). Safe for
// concurrent use; Close it once. Leadership callbacks run on one goroutine of the client, in the
// order they were caused.
type Services struct {
	dir  string
	poll time.Duration

	latch     *os.File       // leader/latch, open for the client's life; flock'ed while leading
	callbacks *mainloop.Loop // delivers every contender and listener callback, in order
	io        *worker        // leader-file writes ConfirmLeadership and revocations queue

	plans       *planStore
	results     *resultStore
	checkpoints *checkpointFactory

	// fence is read-locked by every fenced write for its whole duration and write-locked to
	// change leading, so no write of this client runs once Close cleared leading.
	fence sync.RWMutex

	mu sync.Mutex
	// leading and session are written holding fence (write-locked) and mu; read under either.
	leading bool
	session ha.SessionID
	// former is the session of the client's last leadership once it ended (zero before), so
	// its own retrievals never report it again.
	former ha.SessionID
	closed bool
	// campaignStop is non-nil while the client takes part in the election (campaigning or
	// leading): from the first contender's Start until the last contender left or Close. It is
	// closed to stop the campaign goroutine, which campaigns counts.
	campaignStop chan struct{}
	campaigns    sync.WaitGroup
	components   map[string]*component // the components' elections with a contender, by name
	watcher      *watcher              // polls for the retrievals; nil until the first
	// latchTurn (capacity 1: full while taken) serializes the client's own shared-flock probes
	// of the latch (its retrievals' watcher, while it does not lead) with its tries of the
	// exclusive lock: the kernel refuses LOCK_EX|LOCK_NB while any shared lock is held, so a
	// try that fell inside the client's own probe would lose a whole PollInterval to it (a
	// standby taking over one poll late). A channel, not a mutex: waiting on it is durably
	// blocking in a synctest bubble.
	latchTurn chan struct{}

	// afterAttempt, when set (by tests, before the first contender starts), is called after each
	// try of the lock with whether it was taken.
	afterAttempt func(got bool)
	// afterPoll, when set (by tests, before the first retrieval starts), is called after each
	// poll of the retrievals' watcher.
	afterPoll func()
	// duringProbe, when set (by tests, before the first retrieval starts), is called while the
	// watcher's probe holds its shared lock of the latch.
	duringProbe func()
}

var _ ha.Services = (*Services)(nil)

// New opens a client over o.Dir, creating the directory layout if missing. It takes part in no
// election until a contender is started. Errors: an empty Dir or a negative PollInterval (named
// in the error), or the I/O error of creating the directories or opening the latch.
func New(o Options) (*Services, error) {
	if o.Dir == "" {
		return nil, errors.New("ha/file: Options.Dir is empty")
	}
	if o.PollInterval < 0 {
		return nil, fmt.Errorf("ha/file: Options.PollInterval is %v, negative (0 means %v)", o.PollInterval, DefaultPollInterval)
	}
	if o.PollInterval == 0 {
		o.PollInterval = DefaultPollInterval
	}
	for _, d := range []string{leaderDir, plansDir, resultsDir, checkpointsDir} {
		if err := os.MkdirAll(filepath.Join(o.Dir, d), 0o755); err != nil {
			return nil, fmt.Errorf("ha/file: %w", err)
		}
	}
	if err := durable.SyncDir(o.Dir); err != nil {
		return nil, fmt.Errorf("ha/file: %w", err)
	}
	latch, err := os.OpenFile(filepath.Join(o.Dir, leaderDir, latchFile), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("ha/file: %w", err)
	}
	s := &Services{
		dir:        o.Dir,
		poll:       o.PollInterval,
		latch:      latch,
		callbacks:  mainloop.New("ha-file"),
		io:         newWorker(),
		components: make(map[string]*component),
		latchTurn:  make(chan struct{}, 1),
	}
	s.plans = &planStore{s: s, dir: filepath.Join(o.Dir, plansDir)}
	s.results = &resultStore{s: s, dir: filepath.Join(o.Dir, resultsDir)}
	s.checkpoints = &checkpointFactory{s: s, files: checkpoint.FileCheckpointRecoveryFactory{Dir: filepath.Join(o.Dir, checkpointsDir)}}
	return s, nil
}

// Dir returns Options.Dir.
func (s *Services) Dir() string { return s.dir }

// Session returns the client's leader session and true while it leads (holds the lock).
func (s *Services) Session() (ha.SessionID, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.session, s.leading
}

// notLeader is the error of a fenced write refused: what names the write.
func notLeader(what string) error {
	return fmt.Errorf("ha/file: %s: %w", what, ha.ErrNotLeader)
}

// fenced runs write if the client leads, holding the leadership for write's whole duration;
// otherwise it returns an error wrapping ha.ErrNotLeader naming what.
func (s *Services) fenced(what string, write func() error) error {
	s.fence.RLock()
	defer s.fence.RUnlock()
	if !s.leading {
		return notLeader(what)
	}
	return write()
}

// CheckpointRecoveryFactory returns the factory of every job's checkpoint store and ID counter
// (checkpoint.FileCheckpointRecoveryFactory over Dir/checkpoints), their writes fenced.
func (s *Services) CheckpointRecoveryFactory() checkpoint.CheckpointRecoveryFactory {
	return s.checkpoints
}

// ExecutionPlanStore returns the store of Dir/plans.
func (s *Services) ExecutionPlanStore() ha.ExecutionPlanStore { return s.plans }

// JobResultStore returns the store of Dir/job-result-store.
func (s *Services) JobResultStore() ha.JobResultStore { return s.results }

// CleanupJobData implements ha.Services: it removes the job's JobMaster leader file, and the
// job's checkpoint directories if the checkpoint store and counter left them empty. It runs on
// the client's I/O goroutine, after the leader-file writes and removals queued before it (a
// JobMaster's confirmation still on its way is not written after the cleanup), and waits for
// it, or for ctx. With nothing of the job there it returns nil, leading or not; otherwise it is
// fenced: an error wrapping ha.ErrNotLeader unless the client leads, else the I/O error.
func (s *Services) CleanupJobData(ctx context.Context, job jobgraph.JobID) error {
	done := make(chan error, 1)
	if !s.io.post(func() { done <- s.cleanupJobData(job) }) {
		return s.cleanupJobData(job) // closed: nothing is queued any more
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("ha/file: cleaning up job %s: %w", job, ctx.Err())
	}
}

func (s *Services) cleanupJobData(job jobgraph.JobID) error {
	leaderFile := s.leaderFile(job.String())
	jobDir := filepath.Join(s.dir, checkpointsDir, job.String())
	hasLeaderFile, err := exists(leaderFile)
	if err != nil {
		return fmt.Errorf("ha/file: cleaning up job %s: %w", job, err)
	}
	hasJobDir, err := exists(jobDir)
	if err != nil {
		return fmt.Errorf("ha/file: cleaning up job %s: %w", job, err)
	}
	if !hasLeaderFile && !hasJobDir {
		return nil
	}
	return s.fenced("cleaning up the HA data of job "+job.String(), func() error {
		if err := durable.Remove(leaderFile); err != nil {
			return fmt.Errorf("ha/file: cleaning up job %s: %w", job, err)
		}
		// Empty after the store's and counter's Shutdown(true); left alone otherwise.
		_ = os.Remove(filepath.Join(jobDir, "checkpoints"))
		_ = os.Remove(jobDir)
		return nil
	})
}

// Close ends the client: it stops campaigning and the retrievals, revokes every granted
// contender, writes what ConfirmLeadership and revocations queued, and releases the lock (the
// data stays). Closing twice is harmless. Errors: the I/O error of releasing the lock.
func (s *Services) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	if s.campaignStop != nil {
		close(s.campaignStop)
		s.campaignStop = nil
	}
	w := s.watcher
	s.mu.Unlock()
	s.campaigns.Wait()
	if w != nil {
		w.close()
	}
	s.mu.Lock()
	for _, c := range s.components {
		c.revokeLocked(s)
	}
	s.mu.Unlock()
	s.io.close() // the leader-file removals run while the client still leads
	s.fence.Lock()
	s.mu.Lock()
	wasLeading := s.leading
	if wasLeading {
		s.former = s.session
	}
	s.leading, s.session = false, ha.SessionID{}
	s.mu.Unlock()
	s.fence.Unlock()
	var err error
	if wasLeading {
		err = unlock(s.latch)
	}
	if cerr := s.latch.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("ha/file: closing the latch: %w", cerr)
	}
	s.callbacks.Close()
	return err
}

// leaderFile is the path of a component's leader file.
func (s *Services) leaderFile(component string) string {
	return filepath.Join(s.dir, leaderDir, component+".json")
}

// worker runs queued writes one at a time, in the order queued, on its own goroutine (never a
// main loop: these are I/O).
type worker struct {
	mu      sync.Mutex
	queue   []func()
	closed  bool
	wake    chan struct{}
	stopped chan struct{}
}

func newWorker() *worker {
	w := &worker{wake: make(chan struct{}, 1), stopped: make(chan struct{})}
	go w.run()
	return w
}

func (w *worker) run() {
	defer close(w.stopped)
	for {
		w.mu.Lock()
		for len(w.queue) == 0 && !w.closed {
			w.mu.Unlock()
			<-w.wake
			w.mu.Lock()
		}
		if len(w.queue) == 0 {
			w.mu.Unlock()
			return
		}
		batch := w.queue
		w.queue = nil
		w.mu.Unlock()
		for _, fn := range batch {
			fn()
		}
	}
}

// post queues fn; it reports false, and fn never runs, once the worker is closed.
func (w *worker) post(fn func()) bool {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return false
	}
	w.queue = append(w.queue, fn)
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
	return true
}

// close runs what is queued and waits for the goroutine to end.
func (w *worker) close() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
	<-w.stopped
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/cluster"
	"github.com/jobgraph/jobgraph/coordination"
	"github.com/jobgraph/jobgraph/examples/wordcount/wc"
	"github.com/jobgraph/jobgraph/taskexecutor"
	grpctransport "github.com/jobgraph/jobgraph/transport/grpc"
	"github.com/jobgraph/jobgraph/transport/grpc/netshuffle"
)

// chunkCodecName names the network shuffle's codec of the word count's records (wc.Chunk,
// encoded by chunkCodec): every data set of the job names it, and every TaskExecutor registers
// it beside the task code.
const chunkCodecName = "wordcount.chunk"

// defaultHeartbeatTimeout is -heartbeat-timeout's default (heartbeat.timeout of the example's
// JobManager and TaskExecutors; heartbeat.interval is a fifth of it): short, so a SIGKILLed
// TaskExecutor is noticed within a second and its tasks fail over (Flink's defaults are 50 s
// and 10 s).
const defaultHeartbeatTimeout = time.Second

// resourceIDPrefix starts every TaskExecutor's ResourceID; the rest is the host:port of its
// network shuffle's data server, so the JobManager's ShuffleMaster resolves a producer's data
// address from memory, as netshuffle.ShuffleMaster.Resolve must.
const resourceIDPrefix = "taskexecutor@"

// resolveDataAddress is the JobManager's netshuffle.ShuffleMaster.Resolve.
func resolveDataAddress(id jobgraph.ResourceID) (string, error) {
	addr, ok := strings.CutPrefix(string(id), resourceIDPrefix)
	if !ok || addr == "" {
		return "", fmt.Errorf("TaskExecutor %q names no data address (want %s<host:port>)", id, resourceIDPrefix)
	}
	return addr, nil
}

// buildJob is examples/wordcount's job (wc.BuildJobWith) with its data sets encoded by
// chunkCodecName, one slot-sharing group, and a fixed-delay restart strategy (5 attempts,
// heartbeatTimeout apart) for a lost TaskExecutor.
func buildJob(files []wc.InputFile, parallelism int, out string, top int, heartbeatTimeout time.Duration) (*jobgraph.JobGraph, error) {
	g, err := wc.BuildJobWith(files, wc.JobOptions{Parallelism: parallelism, OutPath: out, Top: top, SkipResult: true})
	if err != nil {
		return nil, err
	}
	for _, v := range g.Vertices {
		v.SlotSharingGroup = "default"
		for _, ds := range v.Results {
			ds.RecordCodec = chunkCodecName
		}
	}
	// A restart before the JobMaster noticed a dead TaskExecutor would deploy onto its slots
	// again, which it still holds: each such restart fails at once and spends an attempt. A
	// killed process is noticed within two heartbeat.interval (heartbeat.rpc-failure-threshold),
	// one that hangs without dying only at heartbeat.timeout: the delay covers both.
	g.RestartStrategy = jobgraph.FixedDelayRestart(5, heartbeatTimeout)
	return g, nil
}

// jobManager is a running JobManager role: its gRPC Service and the cluster.JobManager on it.
type jobManager struct {
	svc *grpctransport.Service
	jm  *cluster.JobManager
}

// startJobManager starts a JobManager (its own ha/embedded: the TaskExecutors find its
// ResourceManager at its fixed address) on a gRPC Service listening on listen (127.0.0.1:0 when
// empty), with the network shuffle's ShuffleMaster and heartbeat.timeout heartbeatTimeout. It
// runs until ctx ends or close. Each configure function may change the configuration before the
// JobManager starts (a benchmark's listeners).
func startJobManager(ctx context.Context, listen string, heartbeatTimeout time.Duration, log *slog.Logger, configure ...func(*cluster.JobManagerConfig)) (*jobManager, error) {
	return startArchivingJobManager(ctx, listen, heartbeatTimeout, nil, log, configure...)
}

// startArchivingJobManager is startJobManager whose globally terminated jobs arch archives (nil:
// none).
func startArchivingJobManager(ctx context.Context, listen string, heartbeatTimeout time.Duration, arch *archiver, log *slog.Logger, configure ...func(*cluster.JobManagerConfig)) (*jobManager, error) {
	svc, err := grpctransport.New(grpctransport.Options{ListenAddress: listen, Logger: log})
	if err != nil {
		return nil, err
	}
	// The word count's source hands its files out through its operator coordinator.
	coordinators := coordination.NewRegistry()
	if err := wc.RegisterCoordinator(coordinators); err != nil {
		return nil, errors.Join(err, svc.Close())
	}
	ready := make(chan *cluster.JobManager, 1)
	var listener func(jobgraph.JobID, jobgraph.JobStatus, time.Time)
	if arch != nil {
		listener = func(job jobgraph.JobID, status jobgraph.JobStatus, _ time.Time) {
			if status.IsGloballyTerminal() {
				arch.archive(ready, job)
			}
		}
	}
	cfg := cluster.JobManagerConfig{
		RPC:                  svc,
		JobStatusListener:    listener,
		OperatorCoordinators: coordinators,
		ShuffleMaster:        &netshuffle.ShuffleMaster{Resolve: resolveDataAddress},
		HeartbeatInterval:    heartbeatTimeout / 5,
		HeartbeatTimeout:     heartbeatTimeout,
		Logger:               log,
	}
	for _, f := range configure {
		f(&cfg)
	}
	jm, err := cluster.RunJobManager(ctx, cfg)
	if err != nil {
		return nil, errors.Join(err, svc.Close())
	}
	ready <- jm
	return &jobManager{svc: svc, jm: jm}, nil
}

// close closes the JobManager, then its Service.
func (j *jobManager) close() error { return errors.Join(j.jm.Close(), j.svc.Close()) }

// registerTaskCode puts the task code every TaskExecutor role runs into reg: the word count's
// (wc.Register). The test binary, which plays the roles too, adds its benchmark's
// (deploy_bench_test.go).
var registerTaskCode = wc.Register

// taskExecutorRole is a running TaskExecutor role: its gRPC Service, its network shuffle and
// the TaskExecutor.
type taskExecutorRole struct {
	svc     *grpctransport.Service
	shuffle *netshuffle.Environment
	te      *cluster.TaskExecutorRunner
}

// startTaskExecutor starts a TaskExecutor with slots slots of the word count's task code, its
// own gRPC Service and network shuffle (both on 127.0.0.1), registering with the
// ResourceManager at rmAddress. It runs until ctx ends or close.
func startTaskExecutor(ctx context.Context, rmAddress string, slots int, heartbeatTimeout time.Duration, log *slog.Logger) (*taskExecutorRole, error) {
	codecs := netshuffle.NewCodecs()
	codecs.Register(chunkCodecName, chunkCodec{})
	shuffle, err := netshuffle.New(netshuffle.Config{Codecs: codecs, Logger: log})
	if err != nil {
		return nil, err
	}
	svc, err := grpctransport.New(grpctransport.Options{Logger: log})
	if err != nil {
		return nil, errors.Join(err, shuffle.Close())
	}
	reg := taskexecutor.NewRegistry()
	registerTaskCode(reg)
	te, err := cluster.RunTaskExecutor(ctx, cluster.TaskExecutorConfig{
		TaskExecutor: taskexecutor.Config{
			ResourceID:        jobgraph.ResourceID(resourceIDPrefix + shuffle.Addr()),
			NumSlots:          slots,
			Registry:          reg,
			RPC:               svc,
			Shuffle:           shuffle,
			Logger:            log,
			HeartbeatInterval: heartbeatTimeout / 5,
			HeartbeatTimeout:  heartbeatTimeout,
		},
		ResourceManagerAddress: rmAddress,
	})
	if err != nil {
		return nil, errors.Join(err, svc.Close(), shuffle.Close())
	}
	return &taskExecutorRole{svc: svc, shuffle: shuffle, te: te}, nil
}

// close closes the TaskExecutor, then its Service and its shuffle.
func (t *taskExecutorRole) close() error {
	return errors.Join(t.te.Close(), t.svc.Close(), t.shuffle.Close())
}

// archivePath is where an archiver writes the job's archive in dir.
func archivePath(dir string, job jobgraph.JobID) string {
	return filepath.Join(dir, job.String()+".json")
}

// archiver writes the ArchivedExecutionGraph of every globally terminated job to
// archivePath(dir, job), as JSON: Flink's jobmanager.archive.fs.dir, where the Dispatcher archives
// each finished job for the HistoryServer (in the REST responses' shapes; here the graph itself).
type archiver struct {
	dir string
	log *slog.Logger

	wg   sync.WaitGroup
	mu   sync.Mutex
	jm   *cluster.JobManager
	errs []error
}

func newArchiver(dir string, log *slog.Logger) *archiver { return &archiver{dir: dir, log: log} }

// archive writes the job's archive on a goroutine of its own, once the job's result is recorded
// (the Dispatcher then answers RequestJob from its archive), taking the JobManager from ready the
// first time. Called from the JobStatusListener (a JobMaster's loop): it does not wait.
func (a *archiver) archive(ready <-chan *cluster.JobManager, job jobgraph.JobID) {
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		a.mu.Lock()
		if a.jm == nil {
			a.jm = <-ready
		}
		jm := a.jm
		a.mu.Unlock()
		if err := a.write(jm, job); err != nil {
			a.log.Error("archiving a job failed", "job", job.String(), "err", err)
			a.mu.Lock()
			a.errs = append(a.errs, err)
			a.mu.Unlock()
		}
	}()
}

func (a *archiver) write(jm *cluster.JobManager, job jobgraph.JobID) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := jm.LeaderDispatcher().RequestJobResult(ctx, job); err != nil {
		return fmt.Errorf("job %s: its result: %w", job, err)
	}
	arc, err := jm.Dispatcher().RequestJob(ctx, job)
	if err != nil {
		return fmt.Errorf("job %s: its graph: %w", job, err)
	}
	b, err := json.MarshalIndent(arc, "", "  ")
	if err != nil {
		return err
	}
	// Atomically: a reader finds the whole archive or none.
	tmp, err := os.CreateTemp(a.dir, ".archive-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(b)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), archivePath(a.dir, job))
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("job %s: writing its archive: %w", job, err)
	}
	return nil
}

// wait waits until every archive begun is written and returns the errors of those that failed.
func (a *archiver) wait() error {
	a.wg.Wait()
	a.mu.Lock()
	defer a.mu.Unlock()
	return errors.Join(a.errs...)
}

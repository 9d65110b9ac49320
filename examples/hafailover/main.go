// Command hafailover runs the examples/streaming job (package keyedsum: checkpointed source
// positions and keyed sums, a two-phase-commit file sink) on a cluster of two JobManager
// processes that share one HA backend, SIGKILLs the leader once a few checkpoints completed
// under it, and lets the standby take the job over from the latest checkpoint and finish it; the
// output is then checked as examples/streaming checks it: exactly once.
//
//	go run . -out /tmp/ha1                   # ha/file: both processes share one directory
//	go run . -ha etcd -kills 3 -out /tmp/ha2 # one real etcd server; the leader killed 3 times
//
// The command starts its own binary twice more as JobManager processes (-role jobmanager; the
// flags below -role are theirs, passed on by the parent). There is no network transport yet, so
// each JobManager process is a whole MiniCluster — a Dispatcher, a ResourceManager and its own
// in-process TaskExecutors — over the shared HA services (ha/file over -ha-dir, or ha/etcd over
// the etcd server the parent starts from go.etcd.io/etcd/server/v3/embed on 127.0.0.1, its data
// in a temporary directory). Only the process that holds the leadership runs jobs (one
// leadership per process, see package ha). Both run the same application — the one job, under a
// fixed JobID — with MiniCluster.RunApplication, as Flink's application mode with HA does: the
// leader submits and runs it; after a kill the new leader recovers it from the
// ExecutionPlanStore and restores the latest completed checkpoint from the
// CheckpointRecoveryFactory, and a process whose submission finds the job already terminated
// (in the JobResultStore) reports that result and exits.
//
// The JobManager processes print one event a line (their leadership, each completed checkpoint,
// the checkpoint a new JobMaster restored, the job's statuses, the result); the parent prints
// them with its clock and acts on them: once -checkpoints checkpoints completed under a leader,
// it SIGKILLs that process, and once the next leader took over it starts a new JobManager
// process as the next standby, -kills times in a row. It then checks, after the job finished:
// every takeover restored a checkpoint no older than the killed leader's latest completed one;
// and the sink's output holds every record once with every key's running sums (keyedsum.Check).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/jobgraph/jobgraph/examples/streaming/keyedsum"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		stop()
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "hafailover:", err)
		os.Exit(1)
	}
}

// The roles of a process: the parent (the default) and a JobManager process.
const (
	roleCluster    = "cluster"
	roleJobManager = "jobmanager"
)

// The HA backends of -ha.
const (
	haFile = "file"
	haEtcd = "etcd"
)

// options are the command line flags.
type options struct {
	role string
	ha   string

	// The job (the same flags as examples/streaming's).
	records, keys      int64
	parallelism        int
	checkpointInterval time.Duration
	rate               float64
	out                string

	// The parent's.
	kills       int
	checkpoints int
	timeout     time.Duration

	// The HA backend's (the parent passes them on).
	haDir          string
	etcdEndpoints  string
	etcdSessionTTL time.Duration

	// A JobManager process's.
	name string
	// ackCheckpoints: after printing each completed checkpoint, wait for a line on stdin (the
	// parent's go-ahead) before the next checkpoint can be stored, so the parent's SIGKILL
	// lands when the printed checkpoint is the latest one stored.
	ackCheckpoints bool
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("hafailover", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.StringVar(&o.role, "role", roleCluster, "cluster: start the JobManager processes and kill their leaders; jobmanager: be one (started by the cluster)")
	fs.StringVar(&o.ha, "ha", haFile, "the HA backend the JobManager processes share: file (ha/file) or etcd (ha/etcd on an etcd server this command starts)")
	fs.Int64Var(&o.records, "records", 200_000, "N: the source emits the integers 1..N")
	fs.Int64Var(&o.keys, "keys", 100, "K: record i has key i mod K")
	fs.IntVar(&o.parallelism, "parallelism", 2, "p: the parallelism of every vertex")
	fs.DurationVar(&o.checkpointInterval, "checkpoint-interval", 100*time.Millisecond, "execution.checkpointing.interval")
	fs.Float64Var(&o.rate, "rate", 20_000, "records per second of all sources together (0: as fast as possible); the job must outlive the kills")
	fs.StringVar(&o.out, "out", "", "the directory the sink writes part-<subtask> into; it must hold no part files (required)")
	fs.IntVar(&o.kills, "kills", 1, "how many times in a row to SIGKILL the leading JobManager process")
	fs.IntVar(&o.checkpoints, "checkpoints", 3, "completed checkpoints under a leader before it is killed")
	fs.DurationVar(&o.timeout, "timeout", 5*time.Minute, "give up after this long")
	fs.StringVar(&o.haDir, "ha-dir", "", "with -ha file: the shared directory (default: a new temporary one, removed at the end)")
	fs.StringVar(&o.etcdEndpoints, "etcd-endpoints", "", "with -ha etcd and -role jobmanager: the etcd server (set by the cluster)")
	fs.DurationVar(&o.etcdSessionTTL, "etcd-session-ttl", 2*time.Second, "with -ha etcd: the TTL of a leader's lease (whole seconds): how long a killed leader's leadership outlives it")
	fs.StringVar(&o.name, "name", "", "with -role jobmanager: the process's name in its output")
	fs.BoolVar(&o.ackCheckpoints, "ack-checkpoints", false, "with -role jobmanager: after each completed checkpoint, wait for a line on stdin (set by the cluster)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	switch {
	case o.role != roleCluster && o.role != roleJobManager:
		return o, fmt.Errorf("-role %q: want %s or %s", o.role, roleCluster, roleJobManager)
	case o.ha != haFile && o.ha != haEtcd:
		return o, fmt.Errorf("-ha %q: want %s or %s", o.ha, haFile, haEtcd)
	case o.out == "":
		return o, errors.New("-out is required")
	case o.records < 1 || o.keys < 1 || o.parallelism < 1:
		return o, errors.New("-records, -keys and -parallelism must be at least 1")
	case o.checkpointInterval <= 0:
		return o, errors.New("-checkpoint-interval must be positive: a takeover restores the latest checkpoint, and exactly-once needs them")
	case o.rate < 0:
		return o, errors.New("-rate must not be negative")
	case o.kills < 0 || o.checkpoints < 1:
		return o, errors.New("-kills must not be negative and -checkpoints must be at least 1")
	case o.timeout <= 0:
		return o, errors.New("-timeout must be positive")
	case o.etcdSessionTTL < time.Second || o.etcdSessionTTL%time.Second != 0:
		return o, fmt.Errorf("-etcd-session-ttl %v: etcd grants leases in whole seconds, at least 1 s", o.etcdSessionTTL)
	case o.role == roleJobManager && o.ha == haFile && o.haDir == "":
		return o, errors.New("-role jobmanager -ha file needs -ha-dir")
	case o.role == roleJobManager && o.ha == haEtcd && o.etcdEndpoints == "":
		return o, errors.New("-role jobmanager -ha etcd needs -etcd-endpoints")
	}
	out, err := filepath.Abs(o.out)
	if err != nil {
		return o, fmt.Errorf("-out: %w", err)
	}
	o.out = out
	if o.haDir != "" {
		if o.haDir, err = filepath.Abs(o.haDir); err != nil {
			return o, fmt.Errorf("-ha-dir: %w", err)
		}
	}
	return o, nil
}

// jobManagerArgs are the flags of a JobManager process named name: the job's and the backend's.
func (o options) jobManagerArgs(name string) []string {
	args := []string{"-role", roleJobManager, "-name", name, "-ha", o.ha, "-ack-checkpoints",
		"-records", fmt.Sprint(o.records), "-keys", fmt.Sprint(o.keys), "-parallelism", fmt.Sprint(o.parallelism),
		"-checkpoint-interval", o.checkpointInterval.String(), "-rate", fmt.Sprint(o.rate), "-out", o.out}
	switch o.ha {
	case haFile:
		args = append(args, "-ha-dir", o.haDir)
	case haEtcd:
		args = append(args, "-etcd-endpoints", o.etcdEndpoints, "-etcd-session-ttl", o.etcdSessionTTL.String())
	}
	return args
}

// run runs the role args ask for, printing to stdout.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	o, err := parseFlags(args, os.Stderr)
	if err != nil {
		return err
	}
	if o.role == roleJobManager {
		return runJobManager(ctx, o, os.Stdin, stdout)
	}
	_, err = runCluster(ctx, o, stdout)
	return err
}

// checkOutDir refuses an output directory that already holds part files: the check reads every
// part file there.
func checkOutDir(dir string) error {
	matches, err := filepath.Glob(filepath.Join(dir, "part-*"))
	if err != nil {
		return err
	}
	if len(matches) > 0 {
		return fmt.Errorf("-out %s already holds part files (%s…): use a new directory", dir, filepath.Base(matches[0]))
	}
	return nil
}

// jobOptions are the job's options, the same in every JobManager process.
func (o options) jobOptions() keyedsum.JobOptions {
	return keyedsum.JobOptions{Records: o.records, Keys: o.keys, Parallelism: o.parallelism, OutDir: o.out,
		CheckpointInterval: o.checkpointInterval, Rate: o.rate}
}

// count spells n things: "1 run", "2 runs".
func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

// field returns the word after prefix in line ("checkpoint 7 completed", "checkpoint ") → "7".
func field(line, prefix string) string {
	rest := strings.TrimPrefix(line, prefix)
	if i := strings.IndexByte(rest, ' '); i >= 0 {
		return rest[:i]
	}
	return rest
}

package keyedsum

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"time"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/checkpoint/keygroup"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

// The job's name, its vertices' names and the names of their task code in a taskexecutor.Registry.
const (
	JobName = "streaming-keyed-sum"

	SourceVertex = "source"
	SumVertex    = "sum"
	SinkVertex   = "sink"

	SourceInvokable = "streaming-source"
	SumInvokable    = "streaming-sum"
	SinkInvokable   = "streaming-sink"
)

// The names of the operator list states the job's tasks keep.
const (
	// SplitsState is the source's list state: one element per split it reads (EncodeSplit).
	SplitsState = "splits"
	// PendingState is the sink's list state: one element per part file with transactions not
	// known to be committed (a pendingFile as JSON).
	PendingState = "pending-transactions"
)

// AccRestoredSums (ListAccumulator[RestoredSums]) is what each sum subtask restored: one element
// per subtask of the current attempts that started from a checkpoint or savepoint.
const AccRestoredSums = "restored-sums"

// RestoredSums is the keyed state one sum subtask started from.
type RestoredSums struct {
	Subtask     int `json:"subtask"`
	Parallelism int `json:"parallelism"`
	// KeyGroups is the range the restored keyed state covers (inclusive, as
	// keygroup.KeyGroupRange) when FromState, else the subtask's own range: the restore gave it
	// no keyed state (none of its key groups held a sum).
	KeyGroups keygroup.KeyGroupRange `json:"keyGroups"`
	FromState bool                   `json:"fromState"`
	// CheckpointID is the checkpoint or savepoint restored.
	CheckpointID int64 `json:"checkpointId"`
	// Sums is the restored running sum of every key the subtask had seen.
	Sums map[int64]int64 `json:"sums"`
}

// Config is every vertex's Config, as JSON. Each vertex reads the fields it needs.
type Config struct {
	// Records is N: the source emits 1..N.
	Records int64 `json:"records"`
	// Keys is K: record i has key i mod K.
	Keys int64 `json:"keys"`
	// Splits is S: split j holds the i with i mod S = j.
	Splits int `json:"splits"`
	// MaxParallelism is the sum vertex's max parallelism (the number of key groups), which the
	// source routes by.
	MaxParallelism int `json:"maxParallelism"`
	// OutDir is where the sink writes its part files.
	OutDir string `json:"outDir,omitempty"`
	// PauseAfter, when positive, makes the sources emit 1..PauseAfter only and then wait
	// (see RunSource).
	PauseAfter int64 `json:"pauseAfter,omitempty"`
	// PauseTick is how often a paused source emits an Idle record, default DefaultPauseTick.
	PauseTick time.Duration `json:"pauseTick,omitempty"`
	// Rate, when positive, is the records per second all sources together emit at most (each
	// subtask its 1/p share), as Flink's DataGen source's rows-per-second; 0 is unlimited.
	Rate float64 `json:"rate,omitempty"`
	// Failures are the failures to inject into this vertex's subtasks.
	Failures []Failure `json:"failures,omitempty"`
}

// DefaultPauseTick is Config.PauseTick's default.
const DefaultPauseTick = time.Millisecond

// Failure is one injected task failure: subtask Subtask of vertex Vertex, in its execution
// attempt Attempt, returns ErrInjectedFailure once it handled AfterRecords records in that attempt
// (the source: emitted; the sum and the sink: received). A task that ends before that does not
// fail.
//
// With AtSnapshot n > 0 it is a declined checkpoint instead: the subtask's n-th snapshot in that
// attempt fails with ErrInjectedDecline, which declines that checkpoint (with
// execution.checkpointing.tolerable-failed-checkpoints 0, the job's default, the job fails over
// from the checkpoint before it) while the other tasks may already have taken theirs.
type Failure struct {
	Vertex       string `json:"vertex"`
	Subtask      int    `json:"subtask"`
	Attempt      int    `json:"attempt"`
	AfterRecords int64  `json:"afterRecords"`
	AtSnapshot   int    `json:"atSnapshot,omitempty"`
}

// ErrInjectedFailure is the failure a Failure injects; ErrInjectedDecline the snapshot failure of
// one with AtSnapshot.
var (
	ErrInjectedFailure = errors.New("injected failure")
	ErrInjectedDecline = errors.New("injected snapshot failure")
)

// JobOptions configure BuildJob.
type JobOptions struct {
	// Records (N ≥ 1), Keys (K ≥ 1), Splits (S ≥ 1; default 8) and Parallelism (p ≥ 1) as in
	// the package doc.
	Records     int64
	Keys        int64
	Splits      int
	Parallelism int
	// MaxParallelism of every vertex (the number of key groups), in [p, 32768]; default 128
	// (Flink's default for p ≤ 85).
	MaxParallelism int
	// OutDir is where the sink writes part-<subtask>. Required.
	OutDir string
	// CheckpointInterval is execution.checkpointing.interval; 0 takes no checkpoints (the sink
	// then writes its lines as they come, with no exactly-once guarantee).
	CheckpointInterval time.Duration
	// Failures to inject (see PlanFailures); the job restarts after each with the fixed-delay
	// restart strategy, RestartAttempts attempts (default len(Failures)) RestartDelay apart.
	Failures        []Failure
	RestartAttempts int
	RestartDelay    time.Duration
	// PauseAfter, when positive, makes the sources stop after 1..PauseAfter and wait to be
	// stopped (with a savepoint): see WaitSourcesPaused.
	PauseAfter int64
	// Rate, when positive, bounds the records per second of all sources together (Config.Rate).
	Rate float64
	// RestorePath, when set, is the savepoint the job starts from
	// (JobGraph.SavepointRestore.Path, option execution.savepoint.path).
	RestorePath string
}

// DefaultSplits and DefaultMaxParallelism are the JobOptions defaults.
const (
	DefaultSplits         = 8
	DefaultMaxParallelism = 128
)

// VertexID is the fixed JobVertexID of the job's vertex name: the first 16 bytes of the SHA-256
// of "jobgraph/examples/streaming/" + name. Fixed IDs let a savepoint taken by one run restore
// into another (Flink matches state by operator uid).
func VertexID(name string) jobgraph.JobVertexID {
	sum := sha256.Sum256([]byte("jobgraph/examples/streaming/" + name))
	var id jobgraph.JobVertexID
	copy(id[:], sum[:16])
	return id
}

// Check validates the options and fills in the defaults.
func (o *JobOptions) check() error {
	if o.Splits == 0 {
		o.Splits = DefaultSplits
	}
	if o.MaxParallelism == 0 {
		o.MaxParallelism = DefaultMaxParallelism
	}
	switch {
	case o.Records < 1:
		return fmt.Errorf("keyedsum: records %d is below 1", o.Records)
	case o.Keys < 1:
		return fmt.Errorf("keyedsum: keys %d is below 1", o.Keys)
	case o.Splits < 1:
		return fmt.Errorf("keyedsum: splits %d is below 1", o.Splits)
	case o.OutDir == "":
		return errors.New("keyedsum: no output directory")
	case o.CheckpointInterval < 0:
		return fmt.Errorf("keyedsum: checkpoint interval %v is negative", o.CheckpointInterval)
	case o.PauseAfter < 0:
		return fmt.Errorf("keyedsum: pause after %d is negative", o.PauseAfter)
	case o.Rate < 0 || math.IsNaN(o.Rate) || math.IsInf(o.Rate, 0):
		return fmt.Errorf("keyedsum: rate %v is not a number of records per second", o.Rate)
	case o.RestartAttempts < 0 || o.RestartDelay < 0:
		return fmt.Errorf("keyedsum: restart attempts %d and delay %v must not be negative", o.RestartAttempts, o.RestartDelay)
	}
	if err := keygroup.CheckMaxParallelism(o.MaxParallelism, o.Parallelism); err != nil {
		return fmt.Errorf("keyedsum: %w", err)
	}
	for _, f := range o.Failures {
		switch f.Vertex {
		case SourceVertex, SumVertex, SinkVertex:
		default:
			return fmt.Errorf("keyedsum: failure in vertex %q: the vertices are %s, %s and %s", f.Vertex, SourceVertex, SumVertex, SinkVertex)
		}
		if f.Subtask < 0 || f.Subtask >= o.Parallelism || f.Attempt < 0 || f.AfterRecords < 0 || f.AtSnapshot < 0 {
			return fmt.Errorf("keyedsum: failure %+v: subtask must be in [0, %d), attempt, record count and snapshot at least 0", f, o.Parallelism)
		}
	}
	return nil
}

// BuildJob returns the STREAMING job: source (p) → ALL_TO_ALL PIPELINED_BOUNDED, keyed by
// i mod K → sum (p) → POINTWISE PIPELINED_BOUNDED → sink (p), every vertex with max parallelism
// opts.MaxParallelism, its fixed VertexID and the slot-sharing group "default". The graph is
// validated. Errors name the option that is out of range.
func BuildJob(opts JobOptions) (*jobgraph.JobGraph, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	out, err := filepath.Abs(opts.OutDir)
	if err != nil {
		return nil, fmt.Errorf("keyedsum: output directory: %w", err)
	}
	base := Config{Records: opts.Records, Keys: opts.Keys, Splits: opts.Splits, MaxParallelism: opts.MaxParallelism}
	configOf := func(vertex string) ([]byte, error) {
		cfg := base
		switch vertex {
		case SourceVertex:
			cfg.PauseAfter, cfg.Rate = opts.PauseAfter, opts.Rate
		case SinkVertex:
			cfg.OutDir = out
		}
		for _, f := range opts.Failures {
			if f.Vertex == vertex {
				cfg.Failures = append(cfg.Failures, f)
			}
		}
		b, err := json.Marshal(cfg)
		if err != nil {
			return nil, fmt.Errorf("keyedsum: encoding the %s config: %w", vertex, err)
		}
		return b, nil
	}
	g := jobgraph.New(JobName, jobgraph.Streaming)
	var vs [3]*jobgraph.JobVertex
	for i, name := range []string{SourceVertex, SumVertex, SinkVertex} {
		cfg, err := configOf(name)
		if err != nil {
			return nil, err
		}
		inv := map[string]string{SourceVertex: SourceInvokable, SumVertex: SumInvokable, SinkVertex: SinkInvokable}[name]
		vs[i] = g.AddVertex(name, inv, opts.Parallelism).WithMaxParallelism(opts.MaxParallelism).WithConfig(cfg)
		vs[i].ID = VertexID(name)
	}
	g.Connect(vs[0], vs[1], jobgraph.AllToAll, jobgraph.PipelinedBounded).ShipStrategy = "HASH"
	g.Connect(vs[1], vs[2], jobgraph.Pointwise, jobgraph.PipelinedBounded).ShipStrategy = "FORWARD"
	g.Checkpointing.Interval = opts.CheckpointInterval
	g.SavepointRestore.Path = opts.RestorePath
	if attempts := max(opts.RestartAttempts, len(opts.Failures)); attempts > 0 {
		g.RestartStrategy = jobgraph.FixedDelayRestart(attempts, opts.RestartDelay)
	} else {
		g.RestartStrategy = jobgraph.RestartStrategyConfig{Type: jobgraph.RestartStrategyNone}
	}
	if err := g.Validate(); err != nil {
		return nil, fmt.Errorf("keyedsum: %w", err)
	}
	return g, nil
}

// Register adds the job's task code to reg under SourceInvokable, SumInvokable and
// SinkInvokable. Like Registry.Register, it panics when one of the names is taken.
func Register(reg *taskexecutor.Registry) {
	reg.Register(SourceInvokable, RunSource)
	reg.Register(SumInvokable, RunSum)
	reg.Register(SinkInvokable, RunSink)
}

// KeyOf is the key of record i: i mod K.
func KeyOf(i, keys int64) int64 { return i % keys }

// decodeConfig reads the vertex Config and checks what every task needs.
func decodeConfig(info taskexecutor.TaskInfo) (Config, error) {
	var cfg Config
	if err := json.Unmarshal(info.Config, &cfg); err != nil {
		return cfg, fmt.Errorf("keyedsum: %s: decoding the vertex config: %w", info.TaskName, err)
	}
	if cfg.Records < 1 || cfg.Keys < 1 || cfg.Splits < 1 {
		return cfg, fmt.Errorf("keyedsum: %s: config needs records, keys and splits of at least 1, has %d, %d, %d", info.TaskName, cfg.Records, cfg.Keys, cfg.Splits)
	}
	if info.Parallelism < 1 || info.SubtaskIndex < 0 || info.SubtaskIndex >= info.Parallelism {
		return cfg, fmt.Errorf("keyedsum: %s: subtask %d of parallelism %d", info.TaskName, info.SubtaskIndex, info.Parallelism)
	}
	if cfg.PauseTick <= 0 {
		cfg.PauseTick = DefaultPauseTick
	}
	return cfg, nil
}

// failAfter is the record count after which this attempt fails, or -1.
func failAfter(info taskexecutor.TaskInfo, cfg Config) int64 {
	for _, f := range cfg.Failures {
		if f.Vertex == info.VertexName && f.Subtask == info.SubtaskIndex && f.Attempt == info.AttemptNumber && f.AtSnapshot == 0 {
			return f.AfterRecords
		}
	}
	return -1
}

// setCheckpointHandler registers h, wrapped to fail the snapshot a Failure with AtSnapshot names
// for this attempt.
func setCheckpointHandler(env taskexecutor.Environment, cfg Config, h taskexecutor.CheckpointHandler) {
	info := env.Info()
	for _, f := range cfg.Failures {
		if f.Vertex == info.VertexName && f.Subtask == info.SubtaskIndex && f.Attempt == info.AttemptNumber && f.AtSnapshot > 0 {
			h = &decliningHandler{CheckpointHandler: h, info: info, at: f.AtSnapshot}
			break
		}
	}
	env.SetCheckpointHandler(h)
}

// decliningHandler fails its at-th snapshot with ErrInjectedDecline.
type decliningHandler struct {
	taskexecutor.CheckpointHandler
	info taskexecutor.TaskInfo
	at   int
	n    int
}

func (d *decliningHandler) SnapshotState(ctx context.Context, id checkpoint.CheckpointID) (checkpoint.StateHandle, error) {
	d.n++
	if d.n == d.at {
		return checkpoint.StateHandle{}, fmt.Errorf("keyedsum: %s attempt %d, snapshot %d (checkpoint %d): %w", d.info.TaskName, d.info.AttemptNumber, d.n, id, ErrInjectedDecline)
	}
	return d.CheckpointHandler.SnapshotState(ctx, id)
}

func injected(info taskexecutor.TaskInfo, n int64) error {
	return fmt.Errorf("keyedsum: %s attempt %d after %d records: %w", info.TaskName, info.AttemptNumber, n, ErrInjectedFailure)
}

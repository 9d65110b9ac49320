package jobgraph

import (
	"fmt"
	"slices"
)

// enum holds the Flink names of a small enumeration and turns values into text and back.
type enum[T ~uint8] struct {
	kind  string
	names []string
}

func (e enum[T]) valid(v T) bool { return int(v) < len(e.names) }

func (e enum[T]) str(v T) string {
	if !e.valid(v) {
		return fmt.Sprintf("%s(%d)", e.kind, uint8(v))
	}
	return e.names[v]
}

func (e enum[T]) parse(s string) (T, error) {
	if i := slices.Index(e.names, s); i >= 0 {
		return T(i), nil
	}
	return 0, fmt.Errorf("jobgraph: unknown %s %q (want one of %v)", e.kind, Truncate(s), e.names)
}

func (e enum[T]) marshal(v T) ([]byte, error) {
	if !e.valid(v) {
		return nil, fmt.Errorf("jobgraph: invalid %s %d", e.kind, uint8(v))
	}
	return []byte(e.names[v]), nil
}

func (e enum[T]) unmarshal(p *T, b []byte) error {
	v, err := e.parse(string(b))
	if err == nil {
		*p = v
	}
	return err
}

// JobType says how a job's data flows. Flink: org.apache.flink.runtime.jobgraph.JobType.
type JobType uint8

const (
	// Streaming: unbounded input; exchanges are normally pipelined. The zero value.
	Streaming JobType = iota
	// Batch: bounded input; exchanges are normally blocking.
	Batch
)

var jobTypes = enum[JobType]{"JobType", []string{"STREAMING", "BATCH"}}

func (t JobType) String() string                { return jobTypes.str(t) }
func (t JobType) MarshalText() ([]byte, error)  { return jobTypes.marshal(t) }
func (t *JobType) UnmarshalText(b []byte) error { return jobTypes.unmarshal(t, b) }
func ParseJobType(s string) (JobType, error)    { return jobTypes.parse(s) }

// DistributionPattern says which producer subtasks each consumer subtask reads.
// Flink: org.apache.flink.runtime.jobgraph.DistributionPattern.
type DistributionPattern uint8

const (
	// AllToAll: every consumer subtask reads every producer subtask's partition.
	AllToAll DistributionPattern = iota
	// Pointwise: each consumer reads a contiguous range of producer partitions (or several
	// consumers share one partition), so that every partition is read and the fan-in or fan-out
	// per subtask is ⌊hi/lo⌋ or ⌊hi/lo⌋+1.
	Pointwise
)

var distributionPatterns = enum[DistributionPattern]{"DistributionPattern", []string{"ALL_TO_ALL", "POINTWISE"}}

func (d DistributionPattern) String() string               { return distributionPatterns.str(d) }
func (d DistributionPattern) MarshalText() ([]byte, error) { return distributionPatterns.marshal(d) }
func (d *DistributionPattern) UnmarshalText(b []byte) error {
	return distributionPatterns.unmarshal(d, b)
}
func ParseDistributionPattern(s string) (DistributionPattern, error) {
	return distributionPatterns.parse(s)
}

// ResultPartitionType says how the partitions of an intermediate result are exchanged.
// Flink: org.apache.flink.runtime.io.network.partition.ResultPartitionType.
type ResultPartitionType uint8

const (
	// PipelinedBounded: streamed while produced, with a bounded buffer (back-pressure). The zero
	// value, and Flink's default for streaming jobs.
	PipelinedBounded ResultPartitionType = iota
	// Pipelined: streamed while produced. Flink allows its buffer to be unbounded; the in-memory
	// shuffle bounds it as it bounds PIPELINED_BOUNDED (credit per input gate), so a slow consumer
	// back-pressures the producer (see HasBackPressure). Regions and failover treat both alike.
	Pipelined
	// Blocking: produced fully, then consumed; kept until the scheduler releases it.
	Blocking
	// BlockingPersistent: like Blocking, but kept after the job ends (cached data sets).
	BlockingPersistent
	// PipelinedApproximate: pipelined, and a consumer may reconnect to a restarted producer
	// (approximate local recovery).
	PipelinedApproximate
	// HybridFull: may be consumed while produced or after; every record is spilled, so it can be
	// consumed again.
	HybridFull
	// HybridSelective: may be consumed while produced or after; only what was not consumed in
	// memory is spilled.
	HybridSelective
)

var resultPartitionTypes = enum[ResultPartitionType]{"ResultPartitionType", []string{
	"PIPELINED_BOUNDED", "PIPELINED", "BLOCKING", "BLOCKING_PERSISTENT", "PIPELINED_APPROXIMATE",
	"HYBRID_FULL", "HYBRID_SELECTIVE",
}}

func (t ResultPartitionType) String() string               { return resultPartitionTypes.str(t) }
func (t ResultPartitionType) MarshalText() ([]byte, error) { return resultPartitionTypes.marshal(t) }
func (t *ResultPartitionType) UnmarshalText(b []byte) error {
	return resultPartitionTypes.unmarshal(t, b)
}
func ParseResultPartitionType(s string) (ResultPartitionType, error) {
	return resultPartitionTypes.parse(s)
}

// IsReconnectable reports whether a consumer can read this partition independently of the
// producer's lifetime — so producer and consumer need not run at the same time and fall in
// different pipelined regions. True for BLOCKING, BLOCKING_PERSISTENT, PIPELINED_APPROXIMATE,
// HYBRID_FULL and HYBRID_SELECTIVE; false for PIPELINED and PIPELINED_BOUNDED.
// Flink: ResultPartitionType.isReconnectable, which SchedulingPipelinedRegionComputeUtil uses
// to decide which edges join regions.
func (t ResultPartitionType) IsReconnectable() bool {
	return t != Pipelined && t != PipelinedBounded
}

// IsPipelined reports whether the consumer must run while the producer runs: PIPELINED,
// PIPELINED_BOUNDED and PIPELINED_APPROXIMATE. Flink: ResultPartitionType.mustBePipelinedConsumed.
func (t ResultPartitionType) IsPipelined() bool {
	return t == Pipelined || t == PipelinedBounded || t == PipelinedApproximate
}

// IsBlocking reports whether the partition is consumable only after its producer FINISHED:
// BLOCKING and BLOCKING_PERSISTENT. Flink: ResultPartitionType.isBlockingOrBlockingPersistentResultPartition.
func (t ResultPartitionType) IsBlocking() bool { return t == Blocking || t == BlockingPersistent }

// IsHybrid reports whether the partition is HYBRID_FULL or HYBRID_SELECTIVE.
func (t ResultPartitionType) IsHybrid() bool { return t == HybridFull || t == HybridSelective }

// HasBackPressure reports whether a slow consumer slows the producer down: true for the
// pipelined types (PIPELINED, PIPELINED_BOUNDED, PIPELINED_APPROXIMATE), whose in-memory buffers
// are bounded; false for the types that keep their data (blocking, hybrid).
// Flink: ResultPartitionType.hasBackPressure.
func (t ResultPartitionType) HasBackPressure() bool { return t.IsPipelined() }

// IsPersistent reports whether the partition outlives the job: BLOCKING_PERSISTENT.
func (t ResultPartitionType) IsPersistent() bool { return t == BlockingPersistent }

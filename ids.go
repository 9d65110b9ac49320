package jobgraph

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/jobgraph/jobgraph/internal/randid"
)

// The identifiers below follow Flink's AbstractID: 16 random bytes, printed as 32 lower-case
// hexadecimal characters (Flink prints the upper long, then the lower long, each as 16 hex digits;
// reading the 16 bytes big-endian gives the same text). Parsing accepts upper or lower case and
// rejects anything that is not exactly 32 hex characters. The zero value is "no ID".
//
// Each kind of ID is its own type so that a JobVertexID can never be passed where a JobID is meant.

func newAbstractID() [16]byte { return randid.New() }

func formatAbstractID(b [16]byte) string { return hex.EncodeToString(b[:]) }

func parseAbstractID(kind, s string) ([16]byte, error) {
	var b [16]byte
	if len(s) != 32 {
		return b, fmt.Errorf("jobgraph: %s %q: want 32 hexadecimal characters, got %d characters", kind, Truncate(s), len(s))
	}
	if _, err := hex.Decode(b[:], []byte(s)); err != nil {
		return [16]byte{}, fmt.Errorf("jobgraph: %s %q: not hexadecimal: %w", kind, Truncate(s), err)
	}
	return b, nil
}

// JobID identifies a job across its whole life: submission, every JobMaster leadership session,
// the HA stores and the JobResultStore. Flink: org.apache.flink.api.common.JobID.
type JobID [16]byte

// NewJobID returns a random JobID.
func NewJobID() JobID { return JobID(newAbstractID()) }

// ParseJobID parses the 32-hex-character form String prints.
func ParseJobID(s string) (JobID, error) { b, err := parseAbstractID("JobID", s); return JobID(b), err }

func (id JobID) String() string                { return formatAbstractID(id) }
func (id JobID) IsZero() bool                  { return id == JobID{} }
func (id JobID) MarshalText() ([]byte, error)  { return []byte(id.String()), nil }
func (id *JobID) UnmarshalText(b []byte) error { v, err := ParseJobID(string(b)); *id = v; return err }

// JobVertexID identifies a JobVertex within its JobGraph, and the ExecutionJobVertex built from it.
// Flink: org.apache.flink.runtime.jobgraph.JobVertexID.
type JobVertexID [16]byte

// NewJobVertexID returns a random JobVertexID.
func NewJobVertexID() JobVertexID { return JobVertexID(newAbstractID()) }

// ParseJobVertexID parses the 32-hex-character form String prints.
func ParseJobVertexID(s string) (JobVertexID, error) {
	b, err := parseAbstractID("JobVertexID", s)
	return JobVertexID(b), err
}

func (id JobVertexID) String() string               { return formatAbstractID(id) }
func (id JobVertexID) IsZero() bool                 { return id == JobVertexID{} }
func (id JobVertexID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }
func (id *JobVertexID) UnmarshalText(b []byte) error {
	v, err := ParseJobVertexID(string(b))
	*id = v
	return err
}

// IntermediateDataSetID identifies the data set a JobVertex produces for one output, and the
// IntermediateResult built from it. Flink: org.apache.flink.runtime.jobgraph.IntermediateDataSetID.
type IntermediateDataSetID [16]byte

// NewIntermediateDataSetID returns a random IntermediateDataSetID.
func NewIntermediateDataSetID() IntermediateDataSetID {
	return IntermediateDataSetID(newAbstractID())
}

// ParseIntermediateDataSetID parses the 32-hex-character form String prints.
func ParseIntermediateDataSetID(s string) (IntermediateDataSetID, error) {
	b, err := parseAbstractID("IntermediateDataSetID", s)
	return IntermediateDataSetID(b), err
}

func (id IntermediateDataSetID) String() string               { return formatAbstractID(id) }
func (id IntermediateDataSetID) IsZero() bool                 { return id == IntermediateDataSetID{} }
func (id IntermediateDataSetID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }
func (id *IntermediateDataSetID) UnmarshalText(b []byte) error {
	v, err := ParseIntermediateDataSetID(string(b))
	*id = v
	return err
}

// AllocationID identifies one slot allocation on a TaskExecutor, from the moment the
// ResourceManager asks the TaskExecutor for the slot until the slot is freed.
// Flink: org.apache.flink.runtime.clusterframework.types.AllocationID.
type AllocationID [16]byte

// NewAllocationID returns a random AllocationID.
func NewAllocationID() AllocationID { return AllocationID(newAbstractID()) }

// ParseAllocationID parses the 32-hex-character form String prints.
func ParseAllocationID(s string) (AllocationID, error) {
	b, err := parseAbstractID("AllocationID", s)
	return AllocationID(b), err
}

func (id AllocationID) String() string               { return formatAbstractID(id) }
func (id AllocationID) IsZero() bool                 { return id == AllocationID{} }
func (id AllocationID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }
func (id *AllocationID) UnmarshalText(b []byte) error {
	v, err := ParseAllocationID(string(b))
	*id = v
	return err
}

// JobMasterID is the fencing token of one JobMaster leadership session: the leader session ID
// granted by leader election. Every call a TaskExecutor or ResourceManager makes to a JobMaster,
// and every task-related call a JobMaster makes to a TaskExecutor, carries it; a stale one is
// refused. Flink: org.apache.flink.runtime.jobmaster.JobMasterID.
type JobMasterID [16]byte

// NewJobMasterID returns a random JobMasterID.
func NewJobMasterID() JobMasterID { return JobMasterID(newAbstractID()) }

// ParseJobMasterID parses the 32-hex-character form String prints.
func ParseJobMasterID(s string) (JobMasterID, error) {
	b, err := parseAbstractID("JobMasterID", s)
	return JobMasterID(b), err
}

func (id JobMasterID) String() string               { return formatAbstractID(id) }
func (id JobMasterID) IsZero() bool                 { return id == JobMasterID{} }
func (id JobMasterID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }
func (id *JobMasterID) UnmarshalText(b []byte) error {
	v, err := ParseJobMasterID(string(b))
	*id = v
	return err
}

// ResourceManagerID is the fencing token of one ResourceManager leadership session.
// Flink: org.apache.flink.runtime.resourcemanager.ResourceManagerID.
type ResourceManagerID [16]byte

// NewResourceManagerID returns a random ResourceManagerID.
func NewResourceManagerID() ResourceManagerID { return ResourceManagerID(newAbstractID()) }

// ParseResourceManagerID parses the 32-hex-character form String prints.
func ParseResourceManagerID(s string) (ResourceManagerID, error) {
	b, err := parseAbstractID("ResourceManagerID", s)
	return ResourceManagerID(b), err
}

func (id ResourceManagerID) String() string               { return formatAbstractID(id) }
func (id ResourceManagerID) IsZero() bool                 { return id == ResourceManagerID{} }
func (id ResourceManagerID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }
func (id *ResourceManagerID) UnmarshalText(b []byte) error {
	v, err := ParseResourceManagerID(string(b))
	*id = v
	return err
}

// ExecutionGraphID identifies one ExecutionGraph instance. A job gets a new ExecutionGraph (and a
// new ID) each time a JobMaster starts it, so attempt IDs of an earlier leadership session never
// match the current one. Flink: org.apache.flink.runtime.executiongraph.ExecutionGraphID.
type ExecutionGraphID [16]byte

// NewExecutionGraphID returns a random ExecutionGraphID.
func NewExecutionGraphID() ExecutionGraphID { return ExecutionGraphID(newAbstractID()) }

// ParseExecutionGraphID parses the 32-hex-character form String prints.
func ParseExecutionGraphID(s string) (ExecutionGraphID, error) {
	b, err := parseAbstractID("ExecutionGraphID", s)
	return ExecutionGraphID(b), err
}

func (id ExecutionGraphID) String() string               { return formatAbstractID(id) }
func (id ExecutionGraphID) IsZero() bool                 { return id == ExecutionGraphID{} }
func (id ExecutionGraphID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }
func (id *ExecutionGraphID) UnmarshalText(b []byte) error {
	v, err := ParseExecutionGraphID(string(b))
	*id = v
	return err
}

// ResourceID identifies a TaskExecutor (or any other component taking part in heartbeats). Like
// Flink's org.apache.flink.runtime.clusterframework.types.ResourceID it is a free-form string,
// chosen by whoever starts the TaskExecutor; NewResourceID makes a random one.
type ResourceID string

// NewResourceID returns a random ResourceID of the given prefix, e.g. "taskexecutor-1f3a…".
func NewResourceID(prefix string) ResourceID {
	return ResourceID(prefix + "-" + formatAbstractID(newAbstractID())[:12])
}

func (id ResourceID) String() string { return string(id) }

// ExecutionVertexID names one subtask of a JobVertex: the vertex ID and the subtask index
// (0 ≤ Subtask < parallelism). Printed as "<vertex>_<subtask>".
// Flink: org.apache.flink.runtime.scheduler.strategy.ExecutionVertexID.
type ExecutionVertexID struct {
	JobVertexID JobVertexID `json:"jobVertexId"`
	Subtask     int         `json:"subtask"`
}

func (id ExecutionVertexID) String() string {
	return id.JobVertexID.String() + "_" + strconv.Itoa(id.Subtask)
}

// ExecutionAttemptID names one attempt to run one subtask: the ExecutionGraph it belongs to, the
// subtask and the attempt number (0 for the first). Printed as Flink 1.16+ prints it:
// "<executionGraph>_<vertex>_<subtask>_<attempt>".
// Flink: org.apache.flink.runtime.executiongraph.ExecutionAttemptID.
type ExecutionAttemptID struct {
	ExecutionGraphID  ExecutionGraphID  `json:"executionGraphId"`
	ExecutionVertexID ExecutionVertexID `json:"executionVertexId"`
	AttemptNumber     int               `json:"attemptNumber"`
}

func (id ExecutionAttemptID) String() string {
	return id.ExecutionGraphID.String() + "_" + id.ExecutionVertexID.String() + "_" + strconv.Itoa(id.AttemptNumber)
}

// ParseExecutionAttemptID parses the form ExecutionAttemptID.String prints.
func ParseExecutionAttemptID(s string) (ExecutionAttemptID, error) {
	var id ExecutionAttemptID
	parts := strings.Split(s, "_")
	if len(parts) != 4 {
		return id, fmt.Errorf("jobgraph: ExecutionAttemptID %q: want <executionGraph>_<vertex>_<subtask>_<attempt>", Truncate(s))
	}
	var err error
	if id.ExecutionGraphID, err = ParseExecutionGraphID(parts[0]); err != nil {
		return id, err
	}
	if id.ExecutionVertexID.JobVertexID, err = ParseJobVertexID(parts[1]); err != nil {
		return id, err
	}
	if id.ExecutionVertexID.Subtask, err = strconv.Atoi(parts[2]); err != nil || id.ExecutionVertexID.Subtask < 0 {
		return id, fmt.Errorf("jobgraph: ExecutionAttemptID %q: bad subtask index %q", Truncate(s), Truncate(parts[2]))
	}
	if id.AttemptNumber, err = strconv.Atoi(parts[3]); err != nil || id.AttemptNumber < 0 {
		return id, fmt.Errorf("jobgraph: ExecutionAttemptID %q: bad attempt number %q", Truncate(s), Truncate(parts[3]))
	}
	return id, nil
}

// IntermediateResultPartitionID names one partition of an IntermediateResult: the data set and
// the index of the producing subtask. Printed as "<dataset>#<partition>".
// Flink: org.apache.flink.runtime.jobgraph.IntermediateResultPartitionID.
type IntermediateResultPartitionID struct {
	IntermediateDataSetID IntermediateDataSetID `json:"intermediateDataSetId"`
	PartitionIndex        int                   `json:"partitionIndex"`
}

func (id IntermediateResultPartitionID) String() string {
	return id.IntermediateDataSetID.String() + "#" + strconv.Itoa(id.PartitionIndex)
}

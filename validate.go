package jobgraph

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrInvalidJobGraph matches every *ValidationError with errors.Is.
var ErrInvalidJobGraph = errors.New("invalid job graph")

// Rule names the rule a JobGraph broke.
type Rule string

const (
	RuleNilGraph       Rule = "nil-graph"       // the *JobGraph is nil
	RuleEmptyGraph     Rule = "empty-graph"     // the graph has no vertices
	RuleMissingID      Rule = "missing-id"      // a job, vertex or data set ID is zero
	RuleDuplicateID    Rule = "duplicate-id"    // two vertices, or two data sets, share an ID
	RuleNilEntry       Rule = "nil-entry"       // a nil vertex, edge or data set
	RuleParallelism    Rule = "parallelism"     // parallelism < 1, or above the max parallelism
	RuleMaxParallelism Rule = "max-parallelism" // max parallelism < 0 or > 32768
	RuleInvokable      Rule = "invokable"       // a vertex names no task code
	RuleDanglingEdge   Rule = "dangling-edge"   // an edge reads a data set no vertex of the graph produces
	RuleEdgeTarget     Rule = "edge-target"     // an edge's Target is not the vertex holding it
	RuleCycle          Rule = "cycle"           // the graph has a cycle
	RuleCoLocation     Rule = "co-location"     // co-located vertices differ in parallelism or slot-sharing group
	RuleResources      Rule = "resources"       // a negative resource
	RuleConfiguration  Rule = "configuration"   // checkpointing, restart or failover settings out of range
	RuleEnumValue      Rule = "enum-value"      // a JobType, pattern or result type outside its range
	RuleUnreadDataSet  Rule = "unread-data-set" // a data set no vertex of the graph reads (e.g. Connect to a vertex of another graph)
	RuleNameLength     Rule = "name-length"     // a name or other string field longer than MaxNameLength bytes
	// RuleOperatorCoordinator: a vertex has an OperatorCoordinatorConfig but names no
	// OperatorCoordinator.
	RuleOperatorCoordinator Rule = "operator-coordinator"
)

// MaxNameLength is the longest name, in bytes, Validate accepts for the job, a vertex, its task
// code (Invokable), its OperatorCoordinator, its slot-sharing and co-location groups, an edge's
// ShipStrategy and the savepoint path (RuleNameLength). Flink sets no limit on these in a
// JobGraph (it cuts operator names to 80 characters in metric scopes only,
// TaskMetricGroup.METRICS_OPERATOR_NAME_MAX_LENGTH);
// we refuse absurd ones (a 100 MB name would be copied into every log line, archive and
// message) and keep room for the long vertex names Flink's SQL planner chains together.
const MaxNameLength = 64 << 10

// truncateRunes is how many runes of a string Truncate keeps.
const truncateRunes = 64

// Truncate returns s as error messages and logs show it: s itself when it has at most 64 runes,
// else its first 64 runes followed by "…(N bytes)", N being len(s), so an error stays short
// whatever it names. The errors of Validate, Decode, the ID parsers and the enumerations quote
// names and other input strings (vertex and job names, group names, unknown enumeration names,
// malformed IDs, JSON keys) through Truncate; the fields of a ValidationError keep the whole
// name. Other packages use it for names in their messages (the scheduler's job and task names).
// Safe for any string, valid UTF-8 or not; it allocates only when it cuts.
func Truncate(s string) string {
	if len(s) <= truncateRunes {
		return s // at most 64 bytes, so at most 64 runes
	}
	n, cut := 0, -1
	for i := range s {
		if n == truncateRunes {
			cut = i
			break
		}
		n++
	}
	if cut < 0 {
		return s
	}
	return s[:cut] + "…(" + strconv.Itoa(len(s)) + " bytes)"
}

// checkNameLength reports the first of the named strings longer than MaxNameLength.
func checkNameLength(fields ...string) error {
	for i := 0; i+1 < len(fields); i += 2 {
		if n := len(fields[i+1]); n > MaxNameLength {
			return fmt.Errorf("%s is %d bytes, above the limit of %d (MaxNameLength): %q", fields[i], n, MaxNameLength, Truncate(fields[i+1]))
		}
	}
	return nil
}

// ValidationError says which rule a JobGraph broke and where. errors.Is(err, ErrInvalidJobGraph)
// holds for every ValidationError. VertexName holds the whole name; Error shows it through
// Truncate, and Detail quotes names only through Truncate, so a message stays short.
type ValidationError struct {
	Rule Rule
	// Vertex and VertexName name the offending vertex, when there is one.
	Vertex     JobVertexID
	VertexName string
	// DataSet names the offending data set or the data set an offending edge reads, when there is one.
	DataSet IntermediateDataSetID
	// Detail says what is wrong, for people.
	Detail string
}

func (e *ValidationError) Error() string {
	var b strings.Builder
	b.WriteString("invalid job graph: ")
	b.WriteString(string(e.Rule))
	if !e.Vertex.IsZero() || e.VertexName != "" {
		fmt.Fprintf(&b, ": vertex %q (%s)", Truncate(e.VertexName), e.Vertex)
	}
	if !e.DataSet.IsZero() {
		fmt.Fprintf(&b, ": data set %s", e.DataSet)
	}
	if e.Detail != "" {
		b.WriteString(": ")
		b.WriteString(e.Detail)
	}
	return b.String()
}

// Is makes errors.Is(err, ErrInvalidJobGraph) true.
func (e *ValidationError) Is(target error) bool { return target == ErrInvalidJobGraph }

// Validate checks the graph and returns the first broken rule as a *ValidationError, or nil.
// Rules are checked graph-wide first (nil, empty, IDs, settings, name lengths), then per vertex
// in insertion order, then across vertices (edges, unread data sets, cycles, co-location), so
// the result is deterministic. A nil g gives RuleNilGraph. It may be called from any goroutine
// as long as nothing mutates g meanwhile; it does not change g.
func (g *JobGraph) Validate() error {
	if g == nil {
		return errNilGraph()
	}
	if len(g.Vertices) == 0 {
		return &ValidationError{Rule: RuleEmptyGraph, Detail: "the job graph has no vertices"}
	}
	if g.JobID.IsZero() {
		return &ValidationError{Rule: RuleMissingID, Detail: "the job has no JobID"}
	}
	if !jobTypes.valid(g.Type) {
		return &ValidationError{Rule: RuleEnumValue, Detail: fmt.Sprintf("job type %d is not STREAMING or BATCH", g.Type)}
	}
	for _, err := range []error{g.Checkpointing.validate(), g.RestartStrategy.Validate(), g.FailoverStrategy.validate(), g.SavepointRestore.validate()} {
		if err != nil {
			return &ValidationError{Rule: RuleConfiguration, Detail: err.Error()}
		}
	}
	if g.InitialClientHeartbeatTimeout < 0 {
		return &ValidationError{Rule: RuleConfiguration, Detail: fmt.Sprintf("the initial client heartbeat timeout (client.heartbeat.timeout) is %v, negative (0: a detached job)", g.InitialClientHeartbeatTimeout)}
	}
	if err := checkNameLength("the job name", g.Name, "the savepoint path (execution.savepoint.path)", g.SavepointRestore.Path); err != nil {
		return &ValidationError{Rule: RuleNameLength, Detail: err.Error()}
	}

	if err := g.checkNil(); err != nil {
		return err
	}
	if err := g.validateParallelismOverrides(); err != nil {
		return err
	}
	vertices := make(map[JobVertexID]*JobVertex, len(g.Vertices))
	dataSets := make(map[IntermediateDataSetID]*JobVertex)
	for _, v := range g.Vertices {
		if err := v.validate(); err != nil {
			return err
		}
		if prev, dup := vertices[v.ID]; dup {
			return &ValidationError{Rule: RuleDuplicateID, Vertex: v.ID, VertexName: v.Name,
				Detail: fmt.Sprintf("vertex ID already used by vertex %q", Truncate(prev.Name))}
		}
		vertices[v.ID] = v
		for _, ds := range v.Results {
			if ds.ID.IsZero() {
				return &ValidationError{Rule: RuleMissingID, Vertex: v.ID, VertexName: v.Name, Detail: "a produced data set has no ID"}
			}
			if prev, dup := dataSets[ds.ID]; dup {
				return &ValidationError{Rule: RuleDuplicateID, Vertex: v.ID, VertexName: v.Name, DataSet: ds.ID,
					Detail: fmt.Sprintf("data set ID already produced by vertex %q", Truncate(prev.Name))}
			}
			dataSets[ds.ID] = v
		}
	}

	read := make(map[IntermediateDataSetID]bool, len(dataSets))
	for _, v := range g.Vertices {
		for _, e := range v.Inputs {
			if e.Target != v.ID {
				return &ValidationError{Rule: RuleEdgeTarget, Vertex: v.ID, VertexName: v.Name, DataSet: e.Source,
					Detail: fmt.Sprintf("edge is an input of this vertex but targets vertex %s", e.Target)}
			}
			if _, ok := dataSets[e.Source]; !ok {
				return &ValidationError{Rule: RuleDanglingEdge, Vertex: v.ID, VertexName: v.Name, DataSet: e.Source,
					Detail: "input reads a data set that no vertex of the graph produces (is its producer a vertex of another graph?)"}
			}
			read[e.Source] = true
		}
	}
	// A data set nobody reads would block a pipelined producer forever and throw away a blocking
	// one's output; it is what Connect leaves behind when the consumer belongs to another graph.
	for _, v := range g.Vertices {
		for i, ds := range v.Results {
			if !read[ds.ID] {
				return &ValidationError{Rule: RuleUnreadDataSet, Vertex: v.ID, VertexName: v.Name, DataSet: ds.ID,
					Detail: fmt.Sprintf("result #%d is read by no vertex of the graph (was it connected to a vertex of another graph?)", i)}
			}
		}
	}
	if _, err := g.TopologicalOrder(); err != nil {
		return err
	}
	return g.validateCoLocation()
}

func (v *JobVertex) validate() error {
	fail := func(rule Rule, format string, args ...any) error {
		return &ValidationError{Rule: rule, Vertex: v.ID, VertexName: v.Name, Detail: fmt.Sprintf(format, args...)}
	}
	switch {
	case v.ID.IsZero():
		return fail(RuleMissingID, "the vertex has no ID")
	case v.Parallelism < 1:
		return fail(RuleParallelism, "parallelism %d is below 1", v.Parallelism)
	case v.MaxParallelism < 0 || v.MaxParallelism > MaxMaxParallelism:
		return fail(RuleMaxParallelism, "max parallelism %d is outside [1, %d] (0 means the default)", v.MaxParallelism, MaxMaxParallelism)
	case v.Parallelism > v.EffectiveMaxParallelism():
		return fail(RuleParallelism, "parallelism %d is above the max parallelism %d", v.Parallelism, v.EffectiveMaxParallelism())
	case v.Invokable == "":
		return fail(RuleInvokable, "the vertex names no task code (Invokable is empty)")
	case len(v.OperatorCoordinatorConfig) > 0 && v.OperatorCoordinator == "":
		return fail(RuleOperatorCoordinator, "the vertex has an operator coordinator config (%d bytes) but names no operator coordinator (OperatorCoordinator is empty)", len(v.OperatorCoordinatorConfig))
	}
	if err := checkNameLength("the vertex name", v.Name, "the task code name (Invokable)", v.Invokable,
		"the operator coordinator name (OperatorCoordinator)", v.OperatorCoordinator,
		"the slot-sharing group", v.SlotSharingGroup, "the co-location group", v.CoLocationGroup); err != nil {
		return fail(RuleNameLength, "%v", err)
	}
	for i, e := range v.Inputs {
		if err := checkNameLength(fmt.Sprintf("the ship strategy of input #%d", i), e.ShipStrategy); err != nil {
			return fail(RuleNameLength, "%v", err)
		}
	}
	if err := v.Resources.validate(); err != nil {
		return fail(RuleResources, "%v", err)
	}
	for i, e := range v.Inputs {
		if !distributionPatterns.valid(e.DistributionPattern) {
			return fail(RuleEnumValue, "input #%d has distribution pattern %d", i, e.DistributionPattern)
		}
	}
	for i, ds := range v.Results {
		if !resultPartitionTypes.valid(ds.ResultType) {
			return fail(RuleEnumValue, "result #%d has result partition type %d", i, ds.ResultType)
		}
		if err := checkNameLength(fmt.Sprintf("the record codec of result #%d", i), ds.RecordCodec); err != nil {
			return fail(RuleNameLength, "%v", err)
		}
	}
	return nil
}

func (g *JobGraph) validateCoLocation() error {
	first := make(map[string]*JobVertex)
	for _, v := range g.Vertices {
		if v.CoLocationGroup == "" {
			continue
		}
		f, ok := first[v.CoLocationGroup]
		if !ok {
			first[v.CoLocationGroup] = v
			continue
		}
		if v.Parallelism != f.Parallelism {
			return &ValidationError{Rule: RuleCoLocation, Vertex: v.ID, VertexName: v.Name,
				Detail: fmt.Sprintf("parallelism %d differs from %d of vertex %q in co-location group %q", v.Parallelism, f.Parallelism, Truncate(f.Name), Truncate(v.CoLocationGroup))}
		}
		if v.SlotSharingGroup != f.SlotSharingGroup || v.SlotSharingGroup == "" {
			return &ValidationError{Rule: RuleCoLocation, Vertex: v.ID, VertexName: v.Name,
				Detail: fmt.Sprintf("co-location group %q needs all its vertices in one named slot-sharing group; %q is in %q, %q in %q",
					Truncate(v.CoLocationGroup), Truncate(v.Name), Truncate(v.SlotSharingGroup), Truncate(f.Name), Truncate(f.SlotSharingGroup))}
		}
	}
	return nil
}

func (s SavepointRestoreSettings) validate() error {
	if !restoreModes.valid(s.RestoreMode) {
		return fmt.Errorf("execution.savepoint-restore-mode %d is not NO_CLAIM, CLAIM or LEGACY", s.RestoreMode)
	}
	return nil
}

// validateParallelismOverrides refuses an override below 1 (pipeline.jobvertex-parallelism-overrides),
// naming the vertex (by name, too, when the graph has it). Of several, the smallest vertex ID is
// reported, so the error does not depend on map order.
func (g *JobGraph) validateParallelismOverrides() error {
	var bad *JobVertexID
	for id, p := range g.ParallelismOverrides {
		if p < 1 && (bad == nil || bytes.Compare(id[:], bad[:]) < 0) {
			bad = &id
		}
	}
	if bad == nil {
		return nil
	}
	e := &ValidationError{Rule: RuleParallelism, Vertex: *bad,
		Detail: fmt.Sprintf("the parallelism override (pipeline.jobvertex-parallelism-overrides) %d is below 1", g.ParallelismOverrides[*bad])}
	for _, v := range g.Vertices {
		if v.ID == *bad {
			e.VertexName = v.Name
		}
	}
	return e
}

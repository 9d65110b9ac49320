package jobgraph

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInvalidJobGraph matches every *ValidationError with errors.Is.
var ErrInvalidJobGraph = errors.New("invalid job graph")

// Rule names the rule a JobGraph broke.
type Rule string

const (
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
)

// ValidationError says which rule a JobGraph broke and where. errors.Is(err, ErrInvalidJobGraph)
// holds for every ValidationError.
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
		fmt.Fprintf(&b, ": vertex %q (%s)", e.VertexName, e.Vertex)
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
// Rules are checked graph-wide first (empty, IDs, settings), then per vertex in insertion order,
// then across vertices (edges, cycles, co-location), so the result is deterministic.
func (g *JobGraph) Validate() error {
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

	if err := g.checkNil(); err != nil {
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
				Detail: fmt.Sprintf("vertex ID already used by vertex %q", prev.Name)}
		}
		vertices[v.ID] = v
		for _, ds := range v.Results {
			if ds.ID.IsZero() {
				return &ValidationError{Rule: RuleMissingID, Vertex: v.ID, VertexName: v.Name, Detail: "a produced data set has no ID"}
			}
			if prev, dup := dataSets[ds.ID]; dup {
				return &ValidationError{Rule: RuleDuplicateID, Vertex: v.ID, VertexName: v.Name, DataSet: ds.ID,
					Detail: fmt.Sprintf("data set ID already produced by vertex %q", prev.Name)}
			}
			dataSets[ds.ID] = v
		}
	}

	for _, v := range g.Vertices {
		for _, e := range v.Inputs {
			if e.Target != v.ID {
				return &ValidationError{Rule: RuleEdgeTarget, Vertex: v.ID, VertexName: v.Name, DataSet: e.Source,
					Detail: fmt.Sprintf("edge is an input of this vertex but targets vertex %s", e.Target)}
			}
			if _, ok := dataSets[e.Source]; !ok {
				return &ValidationError{Rule: RuleDanglingEdge, Vertex: v.ID, VertexName: v.Name, DataSet: e.Source,
					Detail: "input reads a data set that no vertex of the graph produces"}
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
				Detail: fmt.Sprintf("parallelism %d differs from %d of vertex %q in co-location group %q", v.Parallelism, f.Parallelism, f.Name, v.CoLocationGroup)}
		}
		if v.SlotSharingGroup != f.SlotSharingGroup || v.SlotSharingGroup == "" {
			return &ValidationError{Rule: RuleCoLocation, Vertex: v.ID, VertexName: v.Name,
				Detail: fmt.Sprintf("co-location group %q needs all its vertices in one named slot-sharing group; %q is in %q, %q in %q",
					v.CoLocationGroup, v.Name, v.SlotSharingGroup, f.Name, f.SlotSharingGroup)}
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

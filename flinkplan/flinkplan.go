// Package flinkplan turns a real Apache Flink job plan, as Flink prints it, into a
// *jobgraph.JobGraph that this library can schedule and run.
//
// Two formats are read; Parse tells them apart by itself (see DetectFormat):
//
//   - REST: the body of the JobManager's GET /jobs/:jobid/plan, written by Flink's
//     org.apache.flink.runtime.jobgraph.jsonplan.JsonPlanGenerator. It has one node per JobVertex
//     (per operator chain), so every node becomes one JobVertex with the node's ID and
//     parallelism, and every input of a node becomes one JobEdge.
//   - ExecutionPlan: the output of StreamExecutionEnvironment.getExecutionPlan() or of SQL's
//     EXPLAIN JSON_EXECUTION_PLAN, written by Flink's
//     org.apache.flink.streaming.api.graph.JSONGenerator. It has one node per operator, so
//     operators are first chained as Flink's StreamingJobGraphGenerator chains them by default,
//     and every chain becomes one JobVertex.
//
// The graph is ready to submit once the caller has registered task code under the vertices'
// Invokable name (DefaultInvokable unless WithInvokable says otherwise): every vertex is in the
// slot-sharing group "default", as Flink puts every vertex when the program names no group, and
// carries in its Config a JSON VertexConfig that says which plan nodes it was built from.
//
// Bad input — malformed JSON, a node without a usable ID or with a parallelism below 1, two nodes
// with one ID, an input naming a node that does not exist, a cycle, an unknown exchange or job
// type — is a *PlanError that names the node (its ID as the plan writes it, and its name when the
// plan gives one). errors.Is(err, ErrInvalidPlan) holds for all of them. Parse never panics.
package flinkplan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/jobgraph/jobgraph"
)

// DefaultInvokable is the task-code name every imported vertex gets unless WithInvokable
// chooses another. No task code is registered under it: a host running an imported plan
// registers its own (synthetic) task code under this name or the one it chose.
const DefaultInvokable = "flinkplan.synthetic"

// SlotSharingGroup is the slot-sharing group of every imported vertex: Flink's default group,
// which every vertex joins when the program sets none. With one group the job needs as many slots
// as its largest parallelism.
const SlotSharingGroup = "default"

// Flink's default job names (StreamGraphGenerator.DEFAULT_STREAMING_JOB_NAME and
// DEFAULT_BATCH_JOB_NAME), used when a plan names no job (execution plans never do).
const (
	DefaultStreamingJobName = "Flink Streaming Job"
	DefaultBatchJobName     = "Flink Batch Job"
)

// Format is the kind of plan Parse read.
type Format uint8

const (
	// REST is the body of GET /jobs/:jobid/plan: one node per JobVertex (operator chain).
	REST Format = iota + 1
	// ExecutionPlan is getExecutionPlan() / EXPLAIN JSON_EXECUTION_PLAN: one node per operator.
	ExecutionPlan
)

func (f Format) String() string {
	switch f {
	case REST:
		return "REST"
	case ExecutionPlan:
		return "EXECUTION_PLAN"
	}
	return fmt.Sprintf("Format(%d)", uint8(f))
}

// MarshalText writes the String form.
func (f Format) MarshalText() ([]byte, error) {
	if f != REST && f != ExecutionPlan {
		return nil, fmt.Errorf("flinkplan: invalid format %d", uint8(f))
	}
	return []byte(f.String()), nil
}

// UnmarshalText reads the String form.
func (f *Format) UnmarshalText(b []byte) error {
	switch string(b) {
	case "REST":
		*f = REST
	case "EXECUTION_PLAN":
		*f = ExecutionPlan
	default:
		return fmt.Errorf("flinkplan: unknown format %q (want REST or EXECUTION_PLAN)", b)
	}
	return nil
}

// Operator is one node of the plan as the plan describes it: for a REST plan a whole operator
// chain (one JobVertex), for an execution plan one operator of a chain.
type Operator struct {
	// ID is the node's ID as the plan writes it: 32 hex characters (REST) or a decimal
	// integer (execution plan).
	ID string `json:"id"`
	// Name is the node's name: for REST the description with Flink's HTML escaping undone, for
	// an execution plan the operator name (the node's "type").
	Name string `json:"name"`
	// Parallelism is the node's parallelism.
	Parallelism int `json:"parallelism"`
	// Operator and OperatorStrategy are the REST node's "operator" and "operator_strategy"
	// (HTML escaping undone); usually empty for streaming jobs.
	Operator         string `json:"operator,omitempty"`
	OperatorStrategy string `json:"operatorStrategy,omitempty"`
	// Pact ("Data Source", "Operator", "Data Sink") and Contents (the operator description) are
	// the execution-plan node's fields.
	Pact     string `json:"pact,omitempty"`
	Contents string `json:"contents,omitempty"`
}

// VertexConfig is what every imported JobVertex carries in its Config, as JSON: the format read
// and the plan nodes the vertex was built from (one for REST; for an execution plan the chain's
// operators in the order of the chained name, head first).
type VertexConfig struct {
	Format    Format     `json:"format"`
	Operators []Operator `json:"operators"`
}

// Plan is an imported plan.
type Plan struct {
	// Format is the format that was read.
	Format Format
	// Graph is the job graph, validated.
	Graph *jobgraph.JobGraph
	// Operators maps every vertex of Graph to the plan nodes it was built from (the same list
	// as in the vertex's VertexConfig).
	Operators map[jobgraph.JobVertexID][]Operator
}

// Option changes how Parse builds the graph.
type Option func(*options)

type options struct {
	invokable string
	jobID     jobgraph.JobID
}

// WithInvokable sets the task-code name of every vertex (default DefaultInvokable). An empty name
// is ignored.
func WithInvokable(name string) Option {
	return func(o *options) {
		if name != "" {
			o.invokable = name
		}
	}
}

// WithJobID sets the JobID instead of the plan's jid (REST) or a random one (execution plans, and
// REST plans whose jid is not 32 hex characters). A zero ID is ignored.
func WithJobID(id jobgraph.JobID) Option {
	return func(o *options) {
		if !id.IsZero() {
			o.jobID = id
		}
	}
}

// ErrInvalidPlan matches every *PlanError with errors.Is.
var ErrInvalidPlan = errors.New("invalid Flink plan")

func init() { jobgraph.RegisterErrorCode("flinkplan.invalid-plan", ErrInvalidPlan) }

// PlanError says what is wrong with a plan and, when one node is to blame, which.
type PlanError struct {
	// Node is the offending node's ID as the plan writes it (or "nodes[i]" when the node has no
	// readable ID); empty when the whole plan is to blame.
	Node string
	// NodeName is the offending node's name, when the plan gives one.
	NodeName string
	// Detail says what is wrong, for people.
	Detail string
	// Err is the cause, if any: a JSON syntax error, or the *jobgraph.ValidationError of the
	// imported graph.
	Err error
}

func (e *PlanError) Error() string {
	var b strings.Builder
	b.WriteString("flinkplan: invalid plan")
	if e.Node != "" {
		fmt.Fprintf(&b, ": node %s", e.Node)
		if e.NodeName != "" {
			fmt.Fprintf(&b, " %q", e.NodeName)
		}
	}
	if e.Detail != "" {
		b.WriteString(": ")
		b.WriteString(e.Detail)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Is makes errors.Is(err, ErrInvalidPlan) true.
func (e *PlanError) Is(target error) bool { return target == ErrInvalidPlan }

// Unwrap returns the cause.
func (e *PlanError) Unwrap() error { return e.Err }

// Import is Parse(data, opts...).Graph.
func Import(data []byte, opts ...Option) (*jobgraph.JobGraph, error) {
	p, err := Parse(data, opts...)
	if err != nil {
		return nil, err
	}
	return p.Graph, nil
}

// Parse reads a Flink plan in either format and builds its job graph.
//
// REST (one node per JobVertex): every node becomes a JobVertex with the node's ID (32 hex
// characters, any case) and parallelism (an integer, or a string holding one); its name is the
// description with Flink's escaping undone ("<br/>" back to a line break, HTML entities decoded,
// trailing line breaks dropped), or the operator, or the ID, whichever is first non-empty. The
// inputs of a node, in "num" order, become its JobEdges, each reading a new IntermediateDataSet of
// its producer (Flink's JobVertex.connectNewDataSetAsInput). Vertices keep the plan's node order,
// which is the order of Flink's JobGraph. The jid becomes the JobID when it is 32 hex characters.
//
// Execution plan (one node per operator; "id" an integer): an edge is chained, as
// StreamingJobGraphGenerator.isChainable decides with chaining enabled and one slot-sharing group,
// when its ship strategy is FORWARD, both ends have the same parallelism and the consumer has no
// other input. A chain — a node with no chained input (the head) and everything reachable from it
// over chained edges — becomes one JobVertex, named as Flink names chains
// (StreamingJobGraphGenerator.createChainedName: "a -> b", and "a -> (b, c)" where a chain
// branches), with the common parallelism and an ID derived from the head's node ID, so importing
// the same plan again gives the same vertex IDs. Every unchained edge becomes a JobEdge between
// chains, two edges between the same chains staying two edges. Vertices are in topological order.
//
// On both formats:
//   - ship strategy FORWARD or RESCALE (any case) gives POINTWISE, anything else (HASH, HASH[…],
//     REBALANCE, SHUFFLE, BROADCAST, GLOBAL, CUSTOM, DataSet's "Hash Partition on [0]", vendor
//     names) ALL_TO_ALL, as Flink's StreamPartitioner.isPointwise; the text is kept in
//     JobEdge.ShipStrategy.
//   - job type: the plan's "type" (STREAMING or BATCH, any case) when given; otherwise BATCH when an
//     exchange is blocking or blocking_persistent, else STREAMING.
//   - result partition type: the input's "exchange" (REST only: pipelined_bounded, pipelined,
//     blocking, blocking_persistent, pipelined_approximate, hybrid_full, hybrid_selective, any
//     case); without one, BLOCKING for a BATCH job and PIPELINED_BOUNDED for a STREAMING job.
//   - IntermediateDataSet IDs are derived from the producer's vertex ID and output index, so the
//     whole graph is the same on every import except a random JobID where the plan gives none.
//   - job name: the plan's "name", else DefaultStreamingJobName or DefaultBatchJobName.
//
// Fields Parse does not use (optimizer_properties, local_strategy, caching, side…) may hold
// anything. The text EXPLAIN prints before the JSON of an execution plan is skipped: everything
// up to the "== Physical Execution Plan ==" header.
//
// Parse returns a *PlanError (errors.Is ErrInvalidPlan) for bad input, naming the node, and wraps
// the graph's Validate error in one (errors.Is jobgraph.ErrInvalidJobGraph too) should the built
// graph break a jobgraph rule, e.g. a parallelism above 32768.
func Parse(data []byte, opts ...Option) (*Plan, error) {
	o := options{invokable: DefaultInvokable}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	data, err := planJSON(data)
	if err != nil {
		return nil, err
	}
	format, err := DetectFormat(data)
	if err != nil {
		return nil, err
	}
	var b *builder
	switch format {
	case REST:
		b, err = buildREST(data, o)
	default:
		b, err = buildExecutionPlan(data, o)
	}
	if err != nil {
		return nil, err
	}
	if err := b.g.Validate(); err != nil {
		pe := &PlanError{Detail: "the imported job graph is invalid", Err: err}
		var ve *jobgraph.ValidationError
		if errors.As(err, &ve) {
			if ops := b.ops[ve.Vertex]; len(ops) > 0 {
				pe.Node, pe.NodeName = ops[0].ID, ops[0].Name
			}
		}
		return nil, pe
	}
	return &Plan{Format: format, Graph: b.g, Operators: b.ops}, nil
}

// physicalPlanHeader is the header after which EXPLAIN prints the JSON execution plan.
const physicalPlanHeader = "== Physical Execution Plan =="

// planJSON returns the JSON object of the plan: data itself, or what follows EXPLAIN's header.
func planJSON(data []byte) ([]byte, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")) // a UTF-8 byte order mark
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) > 0 && trimmed[0] == '{' {
		return trimmed, nil
	}
	if i := bytes.Index(data, []byte(physicalPlanHeader)); i >= 0 {
		return bytes.TrimSpace(data[i+len(physicalPlanHeader):]), nil
	}
	return trimmed, nil
}

// DetectFormat tells which format data is in, without building anything: REST when the plan has
// a "jid", or its first node has one of the REST node fields (inputs, description, operator,
// operator_strategy, optimizer_properties) or a string "id"; ExecutionPlan when the first node
// has pact, contents or predecessors, or a numeric "id". It returns a *PlanError when data is not
// a JSON object with a "nodes" array, or the array is empty, or its first node fits neither.
func DetectFormat(data []byte) (Format, error) {
	data, err := planJSON(data)
	if err != nil {
		return 0, err
	}
	var top struct {
		JID   json.RawMessage   `json:"jid"`
		Nodes []json.RawMessage `json:"nodes"`
	}
	if err := json.Unmarshal(data, &top); err != nil {
		return 0, &PlanError{Detail: "malformed JSON", Err: err}
	}
	if top.JID != nil {
		return REST, nil
	}
	if top.Nodes == nil {
		return 0, &PlanError{Detail: `the plan has no "nodes" array`}
	}
	if len(top.Nodes) == 0 {
		return 0, &PlanError{Detail: "the plan has no nodes, so its format cannot be told"}
	}
	var first map[string]json.RawMessage
	if err := json.Unmarshal(top.Nodes[0], &first); err != nil {
		return 0, &PlanError{Node: "nodes[0]", Detail: "malformed node", Err: err}
	}
	for _, k := range []string{"pact", "contents", "predecessors"} {
		if _, ok := first[k]; ok {
			return ExecutionPlan, nil
		}
	}
	for _, k := range []string{"inputs", "description", "operator", "operator_strategy", "optimizer_properties"} {
		if _, ok := first[k]; ok {
			return REST, nil
		}
	}
	if id := bytes.TrimSpace(first["id"]); len(id) > 0 {
		switch {
		case id[0] == '"':
			return REST, nil
		case id[0] == '-' || (id[0] >= '0' && id[0] <= '9'):
			return ExecutionPlan, nil
		}
	}
	return 0, &PlanError{Node: "nodes[0]", Detail: "the node fits neither the REST nor the execution-plan format"}
}

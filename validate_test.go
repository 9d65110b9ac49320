package jobgraph_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
)

// requireValidationError asserts that err is a *ValidationError matching ErrInvalidJobGraph,
// with the given rule, and returns it.
func requireValidationError(t *testing.T, err error, rule jobgraph.Rule) *jobgraph.ValidationError {
	t.Helper()
	require.Error(t, err)
	var ve *jobgraph.ValidationError
	require.ErrorAs(t, err, &ve)
	assert.True(t, errors.Is(err, jobgraph.ErrInvalidJobGraph), "errors.Is(err, ErrInvalidJobGraph)")
	assert.Equal(t, rule, ve.Rule, "rule; error: %v", err)
	// Wrapped, it still matches.
	wrapped := fmt.Errorf("submit: %w", err)
	assert.ErrorIs(t, wrapped, jobgraph.ErrInvalidJobGraph)
	return ve
}

// pipeline returns src(2) → mid(2) → sink(2), valid.
func pipeline() (g *jobgraph.JobGraph, src, mid, sink *jobgraph.JobVertex) {
	g = jobgraph.New("pipeline", jobgraph.Streaming)
	src = g.AddVertex("src", "source", 2)
	mid = g.AddVertex("mid", "map", 2)
	sink = g.AddVertex("sink", "sink", 2)
	g.Connect(src, mid, jobgraph.AllToAll, jobgraph.PipelinedBounded)
	g.Connect(mid, sink, jobgraph.Pointwise, jobgraph.Blocking)
	return g, src, mid, sink
}

func TestValidateValid(t *testing.T) {
	g, _, _, _ := pipeline()
	require.NoError(t, g.Validate())
	require.NoError(t, richGraph().Validate())

	// One vertex, no edges.
	g = jobgraph.New("single", jobgraph.Batch)
	g.AddVertex("only", "run", 1)
	require.NoError(t, g.Validate())

	// Parallelism equal to the max parallelism, and the largest allowed max parallelism.
	g = jobgraph.New("max", jobgraph.Batch)
	g.AddVertex("a", "run", 8).WithMaxParallelism(8)
	g.AddVertex("b", "run", 32768).WithMaxParallelism(32768)
	g.AddVertex("c", "run", 128) // default max parallelism is 128
	require.NoError(t, g.Validate())

	// A data set read by two vertices (a fan-out), and valid co-location.
	g = jobgraph.New("fanout", jobgraph.Streaming)
	a := g.AddVertex("a", "run", 3).WithSlotSharingGroup("ssg").WithCoLocationGroup("cl")
	b := g.AddVertex("b", "run", 3).WithSlotSharingGroup("ssg").WithCoLocationGroup("cl")
	c := g.AddVertex("c", "run", 1)
	g.Connect(a, b, jobgraph.Pointwise, jobgraph.Pipelined)
	g.ConnectDataSet(a.Results[0], c, jobgraph.AllToAll)
	require.NoError(t, g.Validate())
}

// The issue's scenario: cycle, parallelism 0, dangling edge, duplicate vertex ID, each a
// *ValidationError naming the offender.
func TestValidateIssueScenarios(t *testing.T) {
	t.Run("cycle", func(t *testing.T) {
		// a → b → c → b
		g := jobgraph.New("cycle", jobgraph.Streaming)
		a := g.AddVertex("a", "run", 1)
		b := g.AddVertex("b", "run", 1)
		c := g.AddVertex("c", "run", 1)
		g.Connect(a, b, jobgraph.AllToAll, jobgraph.Pipelined)
		g.Connect(b, c, jobgraph.AllToAll, jobgraph.Pipelined)
		g.Connect(c, b, jobgraph.AllToAll, jobgraph.Pipelined)
		ve := requireValidationError(t, g.Validate(), jobgraph.RuleCycle)
		onCycle := map[jobgraph.JobVertexID]string{b.ID: "b", c.ID: "c"}
		require.Contains(t, onCycle, ve.Vertex, "the offender lies on the cycle b ⇄ c, not a")
		assert.Equal(t, onCycle[ve.Vertex], ve.VertexName)
		assert.Contains(t, ve.Detail, "cycle")
		assert.Contains(t, ve.Error(), "cycle")
		assert.Contains(t, ve.Error(), ve.Vertex.String())
	})
	t.Run("cycle downstream of insertion order", func(t *testing.T) {
		// d reads c and is inserted first; the cycle is b ⇄ c; d must not be named.
		g := jobgraph.New("cycle", jobgraph.Streaming)
		d := g.AddVertex("d", "run", 1)
		a := g.AddVertex("a", "run", 1)
		b := g.AddVertex("b", "run", 1)
		c := g.AddVertex("c", "run", 1)
		g.Connect(a, b, jobgraph.AllToAll, jobgraph.Pipelined)
		g.Connect(b, c, jobgraph.AllToAll, jobgraph.Pipelined)
		g.Connect(c, b, jobgraph.AllToAll, jobgraph.Pipelined)
		g.ConnectDataSet(c.Results[0], d, jobgraph.AllToAll)
		ve := requireValidationError(t, g.Validate(), jobgraph.RuleCycle)
		assert.Contains(t, []string{"b", "c"}, ve.VertexName)
		assert.Contains(t, []jobgraph.JobVertexID{b.ID, c.ID}, ve.Vertex)
	})
	t.Run("parallelism 0", func(t *testing.T) {
		g, _, mid, _ := pipeline()
		mid.Parallelism = 0
		ve := requireValidationError(t, g.Validate(), jobgraph.RuleParallelism)
		assert.Equal(t, mid.ID, ve.Vertex)
		assert.Equal(t, "mid", ve.VertexName)
		assert.Equal(t, "parallelism 0 is below 1", ve.Detail)
		assert.Equal(t, fmt.Sprintf(`invalid job graph: parallelism: vertex "mid" (%s): parallelism 0 is below 1`, mid.ID), ve.Error())
	})
	t.Run("negative parallelism", func(t *testing.T) {
		g, src, _, _ := pipeline()
		src.Parallelism = -3
		ve := requireValidationError(t, g.Validate(), jobgraph.RuleParallelism)
		assert.Equal(t, src.ID, ve.Vertex)
		assert.Equal(t, "parallelism -3 is below 1", ve.Detail)
	})
	t.Run("dangling edge", func(t *testing.T) {
		g, _, _, sink := pipeline()
		orphan := &jobgraph.IntermediateDataSet{ID: jobgraph.NewIntermediateDataSetID(), ResultType: jobgraph.Blocking}
		g.ConnectDataSet(orphan, sink, jobgraph.AllToAll)
		ve := requireValidationError(t, g.Validate(), jobgraph.RuleDanglingEdge)
		assert.Equal(t, sink.ID, ve.Vertex)
		assert.Equal(t, "sink", ve.VertexName)
		assert.Equal(t, orphan.ID, ve.DataSet)
		assert.Equal(t, fmt.Sprintf(`invalid job graph: dangling-edge: vertex "sink" (%s): data set %s: input reads a data set that no vertex of the graph produces (is its producer a vertex of another graph?)`,
			sink.ID, orphan.ID), ve.Error())
	})
	t.Run("duplicate vertex ID", func(t *testing.T) {
		g, src, _, sink := pipeline()
		sink.ID = src.ID
		sink.Inputs[0].Target = src.ID // keep the edge consistent so the duplicate is what breaks
		ve := requireValidationError(t, g.Validate(), jobgraph.RuleDuplicateID)
		assert.Equal(t, src.ID, ve.Vertex)
		assert.Equal(t, "sink", ve.VertexName, "the later vertex is the offender")
		assert.Contains(t, ve.Detail, `"src"`, "names the vertex that had the ID first")
	})
}

func TestValidateRules(t *testing.T) {
	t.Run("empty graph", func(t *testing.T) {
		ve := requireValidationError(t, jobgraph.New("empty", jobgraph.Batch).Validate(), jobgraph.RuleEmptyGraph)
		assert.True(t, ve.Vertex.IsZero())
		assert.Empty(t, ve.VertexName)
		assert.Equal(t, "invalid job graph: empty-graph: the job graph has no vertices", ve.Error())
		requireValidationError(t, (&jobgraph.JobGraph{}).Validate(), jobgraph.RuleEmptyGraph)
	})
	t.Run("missing job ID", func(t *testing.T) {
		g, _, _, _ := pipeline()
		g.JobID = jobgraph.JobID{}
		requireValidationError(t, g.Validate(), jobgraph.RuleMissingID)
	})
	t.Run("missing vertex ID", func(t *testing.T) {
		g := &jobgraph.JobGraph{JobID: jid(1), Vertices: []*jobgraph.JobVertex{{Name: "noid", Parallelism: 1, Invokable: "x"}}}
		ve := requireValidationError(t, g.Validate(), jobgraph.RuleMissingID)
		assert.Equal(t, "noid", ve.VertexName)
	})
	t.Run("missing data set ID", func(t *testing.T) {
		g, src, _, _ := pipeline()
		src.Results = append(src.Results, &jobgraph.IntermediateDataSet{})
		ve := requireValidationError(t, g.Validate(), jobgraph.RuleMissingID)
		assert.Equal(t, src.ID, ve.Vertex)
	})
	t.Run("parallelism above max parallelism", func(t *testing.T) {
		g, _, mid, _ := pipeline()
		mid.Parallelism = 10
		mid.MaxParallelism = 8
		ve := requireValidationError(t, g.Validate(), jobgraph.RuleParallelism)
		assert.Equal(t, mid.ID, ve.Vertex)
		assert.Equal(t, "mid", ve.VertexName)
		assert.Equal(t, "parallelism 10 is above the max parallelism 8", ve.Detail)
	})
	t.Run("parallelism above the default max parallelism", func(t *testing.T) {
		g, _, _, sink := pipeline()
		sink.Parallelism = 40000
		ve := requireValidationError(t, g.Validate(), jobgraph.RuleParallelism)
		assert.Equal(t, sink.ID, ve.Vertex)
		assert.Equal(t, "parallelism 40000 is above the max parallelism 32768", ve.Detail)
	})
	t.Run("max parallelism 40000", func(t *testing.T) {
		g, src, _, _ := pipeline()
		src.MaxParallelism = 40000
		ve := requireValidationError(t, g.Validate(), jobgraph.RuleMaxParallelism)
		assert.Equal(t, src.ID, ve.Vertex)
		assert.Equal(t, "src", ve.VertexName)
		assert.Equal(t, "max parallelism 40000 is outside [1, 32768] (0 means the default)", ve.Detail)
	})
	t.Run("negative max parallelism", func(t *testing.T) {
		g, src, _, _ := pipeline()
		src.MaxParallelism = -1
		ve := requireValidationError(t, g.Validate(), jobgraph.RuleMaxParallelism)
		assert.Equal(t, src.ID, ve.Vertex)
	})
	t.Run("empty invokable", func(t *testing.T) {
		g, _, mid, _ := pipeline()
		mid.Invokable = ""
		ve := requireValidationError(t, g.Validate(), jobgraph.RuleInvokable)
		assert.Equal(t, mid.ID, ve.Vertex)
		assert.Equal(t, "mid", ve.VertexName)
	})
	t.Run("operator coordinator config without a coordinator", func(t *testing.T) {
		g, _, mid, _ := pipeline()
		mid.OperatorCoordinatorConfig = []byte("splits=100")
		ve := requireValidationError(t, g.Validate(), jobgraph.RuleOperatorCoordinator)
		assert.Equal(t, mid.ID, ve.Vertex)
		assert.Equal(t, "mid", ve.VertexName)
		assert.Equal(t, "the vertex has an operator coordinator config (10 bytes) but names no operator coordinator (OperatorCoordinator is empty)", ve.Detail)
		assert.Equal(t, fmt.Sprintf(`invalid job graph: operator-coordinator: vertex "mid" (%s): %s`, mid.ID, ve.Detail), ve.Error())
		mid.OperatorCoordinator = "split-enumerator"
		require.NoError(t, g.Validate())
		mid.OperatorCoordinatorConfig = nil
		require.NoError(t, g.Validate(), "a coordinator without a config is valid")
	})
	t.Run("negative resources", func(t *testing.T) {
		for _, p := range []jobgraph.ResourceProfile{{CPUCores: -0.5}, {TaskHeapMemory: -1}, {TaskOffHeapMemory: -1},
			{ManagedMemory: -1}, {NetworkMemory: -1}} {
			g, _, mid, _ := pipeline()
			mid.Resources = p
			ve := requireValidationError(t, g.Validate(), jobgraph.RuleResources)
			assert.Equal(t, mid.ID, ve.Vertex)
		}
	})
	t.Run("co-located vertices with different parallelism", func(t *testing.T) {
		g := jobgraph.New("coloc", jobgraph.Streaming)
		head := g.AddVertex("head", "run", 2).WithSlotSharingGroup("ssg").WithCoLocationGroup("iter")
		g.AddVertex("other", "run", 5)
		tail := g.AddVertex("tail", "run", 3).WithSlotSharingGroup("ssg").WithCoLocationGroup("iter")
		g.Connect(head, tail, jobgraph.AllToAll, jobgraph.Pipelined)
		ve := requireValidationError(t, g.Validate(), jobgraph.RuleCoLocation)
		assert.Equal(t, tail.ID, ve.Vertex, "the second vertex of the group is named")
		assert.Equal(t, "tail", ve.VertexName)
		assert.Equal(t, `parallelism 3 differs from 2 of vertex "head" in co-location group "iter"`, ve.Detail)
	})
	t.Run("co-located vertices in different slot-sharing groups", func(t *testing.T) {
		g := jobgraph.New("coloc", jobgraph.Streaming)
		g.AddVertex("head", "run", 2).WithSlotSharingGroup("a").WithCoLocationGroup("iter")
		tail := g.AddVertex("tail", "run", 2).WithSlotSharingGroup("b").WithCoLocationGroup("iter")
		ve := requireValidationError(t, g.Validate(), jobgraph.RuleCoLocation)
		assert.Equal(t, tail.ID, ve.Vertex)
	})
	t.Run("co-located vertices without a slot-sharing group", func(t *testing.T) {
		g := jobgraph.New("coloc", jobgraph.Streaming)
		g.AddVertex("head", "run", 2).WithoutSlotSharingGroup().WithCoLocationGroup("iter")
		tail := g.AddVertex("tail", "run", 2).WithoutSlotSharingGroup().WithCoLocationGroup("iter")
		ve := requireValidationError(t, g.Validate(), jobgraph.RuleCoLocation)
		assert.Equal(t, tail.ID, ve.Vertex)
		assert.Equal(t, "tail", ve.VertexName)
	})
	t.Run("edge target mismatch", func(t *testing.T) {
		g, src, mid, _ := pipeline()
		mid.Inputs[0].Target = src.ID
		ve := requireValidationError(t, g.Validate(), jobgraph.RuleEdgeTarget)
		assert.Equal(t, mid.ID, ve.Vertex, "the vertex holding the edge is named")
		assert.Equal(t, "mid", ve.VertexName)
		assert.Equal(t, src.Results[0].ID, ve.DataSet)
		assert.Equal(t, "edge is an input of this vertex but targets vertex "+src.ID.String(), ve.Detail)
	})
	t.Run("duplicate data set ID", func(t *testing.T) {
		g, src, mid, _ := pipeline()
		mid.Results[0].ID = src.Results[0].ID
		ve := requireValidationError(t, g.Validate(), jobgraph.RuleDuplicateID)
		assert.Equal(t, mid.ID, ve.Vertex)
		assert.Equal(t, "mid", ve.VertexName)
		assert.Equal(t, src.Results[0].ID, ve.DataSet)
		assert.Equal(t, `data set ID already produced by vertex "src"`, ve.Detail)
	})
	t.Run("duplicate data set ID within one vertex", func(t *testing.T) {
		g, src, _, _ := pipeline()
		src.Results = append(src.Results, &jobgraph.IntermediateDataSet{ID: src.Results[0].ID})
		ve := requireValidationError(t, g.Validate(), jobgraph.RuleDuplicateID)
		assert.Equal(t, src.ID, ve.Vertex)
	})
	t.Run("nil entries", func(t *testing.T) {
		g, _, _, _ := pipeline()
		g.Vertices = append(g.Vertices, nil)
		ve := requireValidationError(t, g.Validate(), jobgraph.RuleNilEntry)
		assert.Equal(t, "vertex #3 is nil", ve.Detail)

		g, _, mid, _ := pipeline()
		mid.Inputs = append(mid.Inputs, nil)
		ve = requireValidationError(t, g.Validate(), jobgraph.RuleNilEntry)
		assert.Equal(t, mid.ID, ve.Vertex)
		assert.Equal(t, "input #1 is nil", ve.Detail)

		g, _, mid, _ = pipeline()
		mid.Results = append([]*jobgraph.IntermediateDataSet{nil}, mid.Results...)
		ve = requireValidationError(t, g.Validate(), jobgraph.RuleNilEntry)
		assert.Equal(t, "result #0 is nil", ve.Detail)
	})
	t.Run("enum values out of range", func(t *testing.T) {
		g, _, _, _ := pipeline()
		g.Type = jobgraph.JobType(2)
		requireValidationError(t, g.Validate(), jobgraph.RuleEnumValue)

		g, _, mid, _ := pipeline()
		mid.Inputs[0].DistributionPattern = jobgraph.DistributionPattern(9)
		ve := requireValidationError(t, g.Validate(), jobgraph.RuleEnumValue)
		assert.Equal(t, mid.ID, ve.Vertex)

		g, src, _, _ := pipeline()
		src.Results[0].ResultType = jobgraph.ResultPartitionType(7)
		ve = requireValidationError(t, g.Validate(), jobgraph.RuleEnumValue)
		assert.Equal(t, src.ID, ve.Vertex)
	})
}

func TestValidateConfiguration(t *testing.T) {
	exp := func(change func(*jobgraph.RestartStrategyConfig)) jobgraph.RestartStrategyConfig {
		c := jobgraph.ExponentialDelayRestart()
		change(&c)
		return c
	}
	for _, tc := range []struct {
		name   string
		change func(g *jobgraph.JobGraph)
		key    string // the Flink option key the error must name; "" for a valid graph
	}{
		{"exponential-delay multiplier 0.5", func(g *jobgraph.JobGraph) {
			g.RestartStrategy = exp(func(c *jobgraph.RestartStrategyConfig) { c.ExponentialDelayBackoffMultiplier = 0.5 })
		}, "restart-strategy.exponential-delay.backoff-multiplier"},
		{"exponential-delay multiplier unset", func(g *jobgraph.JobGraph) {
			g.RestartStrategy = jobgraph.RestartStrategyConfig{Type: jobgraph.RestartStrategyExponentialDelay,
				ExponentialDelayInitialBackoff: time.Second, ExponentialDelayMaxBackoff: time.Second}
		}, "restart-strategy.exponential-delay.backoff-multiplier"},
		{"exponential-delay initial backoff 0", func(g *jobgraph.JobGraph) {
			g.RestartStrategy = exp(func(c *jobgraph.RestartStrategyConfig) { c.ExponentialDelayInitialBackoff = 0 })
		}, "restart-strategy.exponential-delay.initial-backoff"},
		{"exponential-delay max below initial", func(g *jobgraph.JobGraph) {
			g.RestartStrategy = exp(func(c *jobgraph.RestartStrategyConfig) { c.ExponentialDelayMaxBackoff = time.Millisecond })
		}, "restart-strategy.exponential-delay.max-backoff"},
		{"exponential-delay reset threshold 0", func(g *jobgraph.JobGraph) {
			g.RestartStrategy = exp(func(c *jobgraph.RestartStrategyConfig) { c.ExponentialDelayResetBackoffThreshold = 0 })
		}, "restart-strategy.exponential-delay.reset-backoff-threshold"},
		{"exponential-delay jitter 1.5", func(g *jobgraph.JobGraph) {
			g.RestartStrategy = exp(func(c *jobgraph.RestartStrategyConfig) { c.ExponentialDelayJitterFactor = 1.5 })
		}, "restart-strategy.exponential-delay.jitter-factor"},
		{"exponential-delay jitter -0.1", func(g *jobgraph.JobGraph) {
			g.RestartStrategy = exp(func(c *jobgraph.RestartStrategyConfig) { c.ExponentialDelayJitterFactor = -0.1 })
		}, "restart-strategy.exponential-delay.jitter-factor"},
		{"exponential-delay attempts 0", func(g *jobgraph.JobGraph) {
			g.RestartStrategy = exp(func(c *jobgraph.RestartStrategyConfig) { c.ExponentialDelayAttemptsBeforeResetBackoff = 0 })
		}, "restart-strategy.exponential-delay.attempts-before-reset-backoff"},
		{"exponential-delay Flink defaults", func(g *jobgraph.JobGraph) { g.RestartStrategy = jobgraph.ExponentialDelayRestart() }, ""},
		{"exponential-delay jitter 0 and 1 are allowed", func(g *jobgraph.JobGraph) {
			g.RestartStrategy = exp(func(c *jobgraph.RestartStrategyConfig) { c.ExponentialDelayJitterFactor = 1 })
		}, ""},
		{"fixed-delay negative attempts", func(g *jobgraph.JobGraph) { g.RestartStrategy = jobgraph.FixedDelayRestart(-1, time.Second) },
			"restart-strategy.fixed-delay.attempts"},
		{"fixed-delay negative delay", func(g *jobgraph.JobGraph) { g.RestartStrategy = jobgraph.FixedDelayRestart(1, -time.Second) },
			"restart-strategy.fixed-delay.delay"},
		{"fixed-delay 0 attempts, 0 delay", func(g *jobgraph.JobGraph) { g.RestartStrategy = jobgraph.FixedDelayRestart(0, 0) }, ""},
		{"failure-rate 0 failures", func(g *jobgraph.JobGraph) {
			g.RestartStrategy = jobgraph.FailureRateRestart(0, time.Minute, time.Second)
		}, "restart-strategy.failure-rate.max-failures-per-interval"},
		{"failure-rate 0 interval", func(g *jobgraph.JobGraph) { g.RestartStrategy = jobgraph.FailureRateRestart(1, 0, time.Second) },
			"restart-strategy.failure-rate.failure-rate-interval"},
		{"failure-rate negative delay", func(g *jobgraph.JobGraph) {
			g.RestartStrategy = jobgraph.FailureRateRestart(1, time.Minute, -1)
		}, "restart-strategy.failure-rate.delay"},
		{"failure-rate defaults", func(g *jobgraph.JobGraph) { g.RestartStrategy = jobgraph.DefaultFailureRateRestart() }, ""},
		{"unknown restart strategy type", func(g *jobgraph.JobGraph) { g.RestartStrategy = jobgraph.RestartStrategyConfig{Type: "fixeddelay"} },
			"restart-strategy.type"},
		{"none", func(g *jobgraph.JobGraph) { g.RestartStrategy = jobgraph.NoRestart() }, ""},
		{"negative checkpoint interval", func(g *jobgraph.JobGraph) { g.Checkpointing.Interval = -time.Second },
			"execution.checkpointing.interval"},
		{"negative checkpoint timeout", func(g *jobgraph.JobGraph) { g.Checkpointing.Timeout = -1 },
			"execution.checkpointing.timeout"},
		{"negative min pause", func(g *jobgraph.JobGraph) { g.Checkpointing.MinPauseBetweenCheckpoints = -1 },
			"execution.checkpointing.min-pause"},
		{"negative max concurrent checkpoints", func(g *jobgraph.JobGraph) { g.Checkpointing.MaxConcurrentCheckpoints = -1 },
			"execution.checkpointing.max-concurrent-checkpoints"},
		{"negative tolerable failed checkpoints", func(g *jobgraph.JobGraph) { g.Checkpointing.TolerableFailedCheckpoints = -1 },
			"execution.checkpointing.tolerable-failed-checkpoints"},
		{"negative num retained", func(g *jobgraph.JobGraph) { g.Checkpointing.NumRetained = -1 }, "execution.checkpointing.num-retained"},
		{"unknown failover strategy", func(g *jobgraph.JobGraph) { g.FailoverStrategy = "regional" },
			"jobmanager.execution.failover-strategy"},
		{"failover region", func(g *jobgraph.JobGraph) { g.FailoverStrategy = jobgraph.FailoverRegion }, ""},
		{"failover full", func(g *jobgraph.JobGraph) { g.FailoverStrategy = jobgraph.FailoverFull }, ""},
		{"restore mode out of range", func(g *jobgraph.JobGraph) { g.SavepointRestore.RestoreMode = jobgraph.RestoreMode(3) },
			"execution.savepoint-restore-mode"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, _, _, _ := pipeline()
			tc.change(g)
			err := g.Validate()
			if tc.key == "" {
				require.NoError(t, err)
				return
			}
			ve := requireValidationError(t, err, jobgraph.RuleConfiguration)
			assert.True(t, ve.Vertex.IsZero(), "a configuration error names no vertex")
			assert.Contains(t, ve.Detail, tc.key)
			assert.Contains(t, ve.Error(), tc.key)
		})
	}

	// The exact message for the exponential-delay multiplier.
	g, _, _, _ := pipeline()
	g.RestartStrategy = exp(func(c *jobgraph.RestartStrategyConfig) { c.ExponentialDelayBackoffMultiplier = 0.5 })
	assert.EqualError(t, g.Validate(),
		"invalid job graph: configuration: restart-strategy.exponential-delay.backoff-multiplier 0.5 is below 1")
}

func TestValidateOrderIsDeterministic(t *testing.T) {
	// Two broken vertices: the first in insertion order is reported; graph-wide rules come first.
	g, src, mid, _ := pipeline()
	mid.Parallelism = 0
	src.Invokable = ""
	ve := requireValidationError(t, g.Validate(), jobgraph.RuleInvokable)
	assert.Equal(t, "src", ve.VertexName)

	g.RestartStrategy = jobgraph.RestartStrategyConfig{Type: "bogus"}
	requireValidationError(t, g.Validate(), jobgraph.RuleConfiguration)
}

func TestValidationErrorFormatting(t *testing.T) {
	e := &jobgraph.ValidationError{Rule: jobgraph.RuleCycle}
	assert.Equal(t, "invalid job graph: cycle", e.Error())
	e = &jobgraph.ValidationError{Rule: jobgraph.RuleDanglingEdge, VertexName: "v", DataSet: dsid(5), Detail: "d"}
	assert.Equal(t, `invalid job graph: dangling-edge: vertex "v" (00000000000000000000000000000000): data set 00000000000000000000000000000005: d`, e.Error())
	assert.True(t, errors.Is(e, jobgraph.ErrInvalidJobGraph))
	assert.False(t, errors.Is(e, errors.New("invalid job graph")))
}

// Validate of a nil graph is an error, not a panic; so are the other methods a host may call on
// one before submitting.
func TestValidateNilGraph(t *testing.T) {
	var g *jobgraph.JobGraph
	var err error
	require.NotPanics(t, func() { err = g.Validate() })
	ve := requireValidationError(t, err, jobgraph.RuleNilGraph)
	assert.True(t, ve.Vertex.IsZero())
	assert.Equal(t, "invalid job graph: nil-graph: the job graph is nil", err.Error())

	require.NotPanics(t, func() { _, err = g.TopologicalOrder() })
	requireValidationError(t, err, jobgraph.RuleNilGraph)
	var c *jobgraph.JobGraph
	require.NotPanics(t, func() { c, err = g.Clone() })
	requireValidationError(t, err, jobgraph.RuleNilGraph)
	assert.Nil(t, c)
	require.NotPanics(t, func() {
		assert.Nil(t, g.Vertex(vid(1)))
		assert.Nil(t, g.VertexByName("x"))
		assert.Empty(t, g.Producers())
		assert.Equal(t, 0, g.NumEdges())
		assert.Equal(t, 0, g.NumTasks())
	})
}

// Connect across graphs: the producer's graph has a data set that none of its vertices reads
// (the edge went to the other graph), the consumer's graph an input that none of its vertices
// produces. Each Validate names the vertex of its own graph and the rule.
func TestValidateConnectToAVertexOfAnotherGraph(t *testing.T) {
	for _, rt := range []jobgraph.ResultPartitionType{jobgraph.Pipelined, jobgraph.Blocking} {
		t.Run(rt.String(), func(t *testing.T) {
			g := jobgraph.New("mine", jobgraph.Streaming)
			src := g.AddVertex("src", "source", 1)
			g.AddVertex("sink", "sink", 1)
			other := jobgraph.New("other", jobgraph.Streaming)
			foreign := other.AddVertex("foreign", "sink", 1)
			g.Connect(src, foreign, jobgraph.AllToAll, rt)
			ds := src.Results[0].ID

			ve := requireValidationError(t, g.Validate(), jobgraph.RuleUnreadDataSet)
			assert.Equal(t, src.ID, ve.Vertex)
			assert.Equal(t, "src", ve.VertexName)
			assert.Equal(t, ds, ve.DataSet)
			assert.Equal(t, fmt.Sprintf(`invalid job graph: unread-data-set: vertex "src" (%s): data set %s: `+
				`result #0 is read by no vertex of the graph (was it connected to a vertex of another graph?)`, src.ID, ds), ve.Error())

			ve = requireValidationError(t, other.Validate(), jobgraph.RuleDanglingEdge)
			assert.Equal(t, foreign.ID, ve.Vertex)
			assert.Equal(t, "foreign", ve.VertexName)
			assert.Equal(t, ds, ve.DataSet)
		})
	}
	t.Run("producer of another graph", func(t *testing.T) {
		g := jobgraph.New("mine", jobgraph.Batch)
		sink := g.AddVertex("sink", "sink", 1)
		other := jobgraph.New("other", jobgraph.Batch)
		foreign := other.AddVertex("foreign", "source", 1)
		g.Connect(foreign, sink, jobgraph.AllToAll, jobgraph.Blocking)
		ve := requireValidationError(t, g.Validate(), jobgraph.RuleDanglingEdge)
		assert.Equal(t, sink.ID, ve.Vertex)
		assert.Equal(t, "input reads a data set that no vertex of the graph produces (is its producer a vertex of another graph?)", ve.Detail)
		ve = requireValidationError(t, other.Validate(), jobgraph.RuleUnreadDataSet)
		assert.Equal(t, foreign.ID, ve.Vertex)
	})
	t.Run("one of two results unread", func(t *testing.T) {
		g, _, mid, _ := pipeline()
		mid.Results = append(mid.Results, &jobgraph.IntermediateDataSet{ID: dsid(77), ResultType: jobgraph.Blocking})
		ve := requireValidationError(t, g.Validate(), jobgraph.RuleUnreadDataSet)
		assert.Equal(t, mid.ID, ve.Vertex)
		assert.Equal(t, dsid(77), ve.DataSet)
		assert.Equal(t, "result #1 is read by no vertex of the graph (was it connected to a vertex of another graph?)", ve.Detail)
	})
}

func TestTruncate(t *testing.T) {
	a64 := strings.Repeat("a", 64)
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"src", "src"},
		{a64, a64},
		{a64 + "b", a64 + "…(65 bytes)"},
		{strings.Repeat("é", 64), strings.Repeat("é", 64)}, // 128 bytes, 64 runes: kept
		{strings.Repeat("é", 100), strings.Repeat("é", 64) + "…(200 bytes)"},
		{strings.Repeat("\xff", 70), strings.Repeat("\xff", 64) + "…(70 bytes)"}, // invalid UTF-8: a byte a rune
		{strings.Repeat("x", 100<<20), strings.Repeat("x", 64) + "…(104857600 bytes)"},
	} {
		assert.Equal(t, tc.want, jobgraph.Truncate(tc.in), "input of %d bytes", len(tc.in))
	}
}

// A 100 MB vertex name fails Validate with a short message; every name-like field has the same
// limit (MaxNameLength bytes, inclusive), and names quoted in other rules' messages are cut.
func TestValidateNameLength(t *testing.T) {
	huge := strings.Repeat("n", 100<<20)
	g, _, mid, _ := pipeline()
	mid.Name = huge
	ve := requireValidationError(t, g.Validate(), jobgraph.RuleNameLength)
	assert.Equal(t, mid.ID, ve.Vertex)
	assert.Equal(t, huge, ve.VertexName, "the field keeps the whole name")
	short := strings.Repeat("n", 64) + "…(104857600 bytes)"
	assert.Equal(t, fmt.Sprintf(`invalid job graph: name-length: vertex %q (%s): the vertex name is 104857600 bytes, above the limit of 65536 (MaxNameLength): %q`,
		short, mid.ID, short), ve.Error())
	assert.Less(t, len(ve.Error()), 400)

	assert.Equal(t, 65536, jobgraph.MaxNameLength)
	atLimit := strings.Repeat("v", jobgraph.MaxNameLength)
	for _, tc := range []struct {
		name   string
		set    func(g *jobgraph.JobGraph, v *jobgraph.JobVertex, s string)
		detail string // the message's prefix for a name one byte over
	}{
		{"job name", func(g *jobgraph.JobGraph, _ *jobgraph.JobVertex, s string) { g.Name = s }, "the job name is 65537 bytes"},
		{"savepoint path", func(g *jobgraph.JobGraph, _ *jobgraph.JobVertex, s string) { g.SavepointRestore.Path = s },
			"the savepoint path (execution.savepoint.path) is 65537 bytes"},
		{"vertex name", func(_ *jobgraph.JobGraph, v *jobgraph.JobVertex, s string) { v.Name = s }, "the vertex name is 65537 bytes"},
		{"invokable", func(_ *jobgraph.JobGraph, v *jobgraph.JobVertex, s string) { v.Invokable = s }, "the task code name (Invokable) is 65537 bytes"},
		{"operator coordinator", func(_ *jobgraph.JobGraph, v *jobgraph.JobVertex, s string) { v.OperatorCoordinator = s },
			"the operator coordinator name (OperatorCoordinator) is 65537 bytes"},
		{"slot-sharing group", func(_ *jobgraph.JobGraph, v *jobgraph.JobVertex, s string) { v.SlotSharingGroup = s },
			"the slot-sharing group is 65537 bytes"},
		{"co-location group", func(_ *jobgraph.JobGraph, v *jobgraph.JobVertex, s string) { v.CoLocationGroup = s },
			"the co-location group is 65537 bytes"},
		{"ship strategy", func(_ *jobgraph.JobGraph, v *jobgraph.JobVertex, s string) { v.Inputs[0].ShipStrategy = s },
			"the ship strategy of input #0 is 65537 bytes"},
		{"record codec", func(_ *jobgraph.JobGraph, v *jobgraph.JobVertex, s string) { v.Results[0].RecordCodec = s },
			"the record codec of result #0 is 65537 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, _, mid, _ := pipeline()
			tc.set(g, mid, atLimit)
			require.NoError(t, g.Validate(), "exactly MaxNameLength bytes is accepted")
			g, _, mid, _ = pipeline()
			tc.set(g, mid, atLimit+"v")
			ve := requireValidationError(t, g.Validate(), jobgraph.RuleNameLength)
			assert.True(t, strings.HasPrefix(ve.Detail, tc.detail+", above the limit of 65536 (MaxNameLength): "), ve.Detail)
			assert.Less(t, len(ve.Error()), 400)
			if strings.HasPrefix(tc.name, "job") || strings.HasPrefix(tc.name, "savepoint") {
				assert.True(t, ve.Vertex.IsZero(), "a job-level field names no vertex")
			} else {
				assert.Equal(t, mid.ID, ve.Vertex)
			}
		})
	}

	// Names within the limit but long are cut where other rules quote them.
	long := strings.Repeat("p", 1000)
	g, src, _, sink := pipeline()
	src.Name = long
	sink.ID = src.ID
	sink.Inputs[0].Target = src.ID
	ve = requireValidationError(t, g.Validate(), jobgraph.RuleDuplicateID)
	assert.Equal(t, fmt.Sprintf(`vertex ID already used by vertex %q`, strings.Repeat("p", 64)+"…(1000 bytes)"), ve.Detail)

	g = jobgraph.New("coloc", jobgraph.Streaming)
	g.AddVertex(long, "run", 2).WithCoLocationGroup(long)
	g.AddVertex("tail", "run", 3).WithCoLocationGroup(long)
	ve = requireValidationError(t, g.Validate(), jobgraph.RuleCoLocation)
	cut := strings.Repeat("p", 64) + "…(1000 bytes)"
	assert.Equal(t, fmt.Sprintf(`parallelism 3 differs from 2 of vertex %q in co-location group %q`, cut, cut), ve.Detail)

	g, _, _, _ = pipeline()
	g.RestartStrategy = jobgraph.RestartStrategyConfig{Type: jobgraph.RestartStrategyType(long)}
	ve = requireValidationError(t, g.Validate(), jobgraph.RuleConfiguration)
	assert.Equal(t, fmt.Sprintf(`restart-strategy.type %q is not one of none, fixed-delay, failure-rate, exponential-delay`, cut), ve.Detail)
	g, _, _, _ = pipeline()
	g.FailoverStrategy = jobgraph.FailoverStrategy(long)
	ve = requireValidationError(t, g.Validate(), jobgraph.RuleConfiguration)
	assert.Equal(t, fmt.Sprintf(`jobmanager.execution.failover-strategy %q is not one of region, full`, cut), ve.Detail)
}

// The builder takes nil vertices, data sets and graphs without panicking; Validate then says what
// is missing.
func TestBuilderWithNilArguments(t *testing.T) {
	g := jobgraph.New("nils", jobgraph.Streaming)
	src := g.AddVertex("src", "source", 1)
	var e *jobgraph.JobEdge
	require.NotPanics(t, func() { e = g.Connect(src, nil, jobgraph.AllToAll, jobgraph.Pipelined) })
	require.NotNil(t, e)
	e.ShipStrategy = "FORWARD" // the edge can still be configured
	ve := requireValidationError(t, g.Validate(), jobgraph.RuleUnreadDataSet)
	assert.Equal(t, src.ID, ve.Vertex)

	g = jobgraph.New("nils", jobgraph.Streaming)
	sink := g.AddVertex("sink", "sink", 1)
	require.NotPanics(t, func() { g.Connect(nil, sink, jobgraph.AllToAll, jobgraph.Pipelined) })
	ve = requireValidationError(t, g.Validate(), jobgraph.RuleDanglingEdge)
	assert.Equal(t, sink.ID, ve.Vertex)

	g = jobgraph.New("nils", jobgraph.Streaming)
	sink = g.AddVertex("sink", "sink", 1)
	require.NotPanics(t, func() { g.ConnectDataSet(nil, sink, jobgraph.AllToAll) })
	ve = requireValidationError(t, g.Validate(), jobgraph.RuleDanglingEdge)
	assert.Equal(t, sink.ID, ve.Vertex)
	assert.True(t, ve.DataSet.IsZero())

	var none *jobgraph.JobGraph
	var v *jobgraph.JobVertex
	require.NotPanics(t, func() { v = none.AddVertex("v", "run", 1) })
	assert.Equal(t, "v", v.Name)
	requireValidationError(t, none.Validate(), jobgraph.RuleNilGraph)
}

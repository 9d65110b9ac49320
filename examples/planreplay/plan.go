package main

import (
	"fmt"
	"os"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/executiongraph"
	"github.com/jobgraph/jobgraph/flinkplan"
)

// summary is what -summary prints, as one JSON line, in this field order.
type summary struct {
	// Vertices and Edges are counted after chaining: len(g.Vertices) and g.NumEdges().
	Vertices int `json:"vertices"`
	Edges    int `json:"edges"`
	// Tasks is the sum of the vertices' parallelism (g.NumTasks()).
	Tasks int `json:"tasks"`
	// Regions is the number of pipelined regions of the job's ExecutionGraph.
	Regions int `json:"regions"`
	// Slots is the number of slots the job needs (see slotsNeeded).
	Slots int `json:"slots"`
	// Status is the job's final status.
	Status jobgraph.JobStatus `json:"status"`
}

// loadPlan reads and imports the Flink plan in path (REST or execution-plan format). A bad plan
// gives flinkplan's *PlanError, which names the offending node.
func loadPlan(path string) (*flinkplan.Plan, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	p, err := flinkplan.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// describe computes everything of the summary but the status. The regions are counted on an
// ExecutionGraph built from a copy of g, so g itself is left as it is for submission.
func describe(g *jobgraph.JobGraph) (summary, error) {
	regions, err := countRegions(g)
	if err != nil {
		return summary{}, err
	}
	return summary{
		Vertices: len(g.Vertices),
		Edges:    g.NumEdges(),
		Tasks:    g.NumTasks(),
		Regions:  regions,
		Slots:    slotsNeeded(g),
	}, nil
}

// countRegions builds the ExecutionGraph of a deep copy of g (executiongraph.Build keeps
// pointers into the graph it is given) and returns the number of its pipelined regions: sets of
// subtasks joined by pipelined partitions, which the scheduler deploys together.
func countRegions(g *jobgraph.JobGraph) (int, error) {
	c, err := g.Clone()
	if err != nil {
		return 0, err
	}
	eg, err := executiongraph.Build(c)
	if err != nil {
		return 0, err
	}
	return len(eg.Regions()), nil
}

// slotsNeeded is the number of slots g needs to run all its subtasks at once: one subtask of
// every vertex of a slot-sharing group fits in one shared slot, so a group needs as many slots as
// its largest parallelism; the groups are summed. A vertex without a group is a group of its own.
// Flink: SlotSharingExecutionSlotAllocator, and the "slots = max parallelism" rule for a job in
// the "default" group.
func slotsNeeded(g *jobgraph.JobGraph) int {
	groups := make(map[string]int)
	n := 0
	for _, v := range g.Vertices {
		if v.SlotSharingGroup == "" {
			n += v.Parallelism
			continue
		}
		groups[v.SlotSharingGroup] = max(groups[v.SlotSharingGroup], v.Parallelism)
	}
	for _, p := range groups {
		n += p
	}
	return n
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

// vertexStats counts what the subtasks of one vertex did. Subtasks update it concurrently.
type vertexStats struct {
	// records is the number of records the subtasks processed: generated (a source) or read
	// from all inputs (any other vertex).
	records atomic.Int64
	// written is the number of records the subtasks wrote, summed over their outputs: every
	// record processed is written once to every output.
	written atomic.Int64
}

// syntheticTask is the task code every vertex of an imported plan runs in place of its Flink
// operators. A source (a vertex without inputs) generates records; any other vertex reads every
// record of every input. Every record processed is written to every output.
type syntheticTask struct {
	// records is how many records each source vertex generates, split over its subtasks: subtask
	// s of p generates the record numbers s, s+p, s+2p, … below records.
	records int
	// taskTime is how long processing one record takes (a sleep); 0 for none.
	taskTime time.Duration
	// stats, if set, counts per vertex. The map is read-only while tasks run.
	stats map[jobgraph.JobVertexID]*vertexStats
	// repeat, if set, is how many times the subtasks of a vertex write each record they process
	// to each output (missing or below 1: once). Tests use it to make one branch of a diamond
	// carry more records than the other. The map is read-only while tasks run.
	repeat map[jobgraph.JobVertexID]int
}

// output is one output of a running task and the subpartition its next record goes to.
type output struct {
	w    taskexecutor.ResultPartitionWriter
	n    int
	next int
}

// invoke is the taskexecutor.Invokable.
//
// Records are spread round-robin over the subpartitions of each output: the k-th record a subtask
// writes to an output goes to subpartition k mod NumSubpartitions, as Flink's
// RebalancePartitioner does. For an ALL_TO_ALL edge that reaches every consumer subtask in turn,
// as a hash partitioner would on evenly spread keys; a POINTWISE output has only the
// subpartitions of the few consumer subtasks it is connected to.
//
// A vertex with inputs reads whichever input has data first (taskexecutor.AnyInputReader), until
// every input has ended. Reading them one after another would hang a diamond — a vertex whose
// two pipelined inputs are fed by one upstream vertex — as soon as more records are in flight
// than the shuffle buffers: the vertex waits on its first input while the upstream is blocked on
// the full queue of the second. Taking turns one record at a time hangs it too once the two
// branches carry records at different rates (see TestUnbalancedDiamondFinishes).
func (t *syntheticTask) invoke(ctx context.Context, env taskexecutor.Environment) error {
	info := env.Info()
	st := t.stats[info.ExecutionAttemptID.ExecutionVertexID.JobVertexID]
	if st == nil {
		st = &vertexStats{} // a vertex we were not told about: count nowhere
	}
	outs := make([]output, env.NumOutputs())
	for i := range outs {
		w := env.Output(i)
		outs[i] = output{w: w, n: w.NumSubpartitions()}
	}
	copies := max(t.repeat[info.ExecutionAttemptID.ExecutionVertexID.JobVertexID], 1)
	var processed, written int64
	defer func() {
		st.records.Add(processed)
		st.written.Add(written)
	}()
	process := func(record any) error {
		processed++
		if err := t.work(ctx); err != nil {
			return err
		}
		for range copies {
			for i := range outs {
				o := &outs[i]
				if err := o.w.Emit(ctx, o.next, record); err != nil {
					return err
				}
				written++
				if o.next++; o.next == o.n {
					o.next = 0
				}
			}
		}
		return nil
	}

	if env.NumInputs() == 0 {
		p := max(info.Parallelism, 1)
		for i := info.SubtaskIndex; i < t.records; i += p {
			if err := process(int64(i)); err != nil {
				return err
			}
		}
		return nil
	}
	in, ok := env.(taskexecutor.AnyInputReader)
	if !ok {
		return fmt.Errorf("%s: its environment (%T) cannot read whichever input has data first", info.TaskName, env)
	}
	for {
		_, record, err := in.NextAny(ctx)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := process(record); err != nil {
			return err
		}
	}
}

// work spends taskTime on one record, returning early when ctx ends.
func (t *syntheticTask) work(ctx context.Context) error {
	if t.taskTime <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(t.taskTime)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

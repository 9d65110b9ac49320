package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/cluster"
	"github.com/jobgraph/jobgraph/ha"
	"github.com/jobgraph/jobgraph/rpc"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

// lines is the word count's input; wantCounts its exact output.
var lines = []string{"to be or not to be", "that is the question", "to be is to do"}

var wantCounts = []string{"be=3", "do=1", "is=2", "not=1", "or=1", "question=1", "that=1", "the=1", "to=4"}

// registry holds the word count's task code: "lines" sends each word of its share of lines to
// the "count" subtask its first letter picks, and "count" adds one to the job's accumulator
// "word <w>" for each word w it reads.
func registry() *taskexecutor.Registry {
	reg := taskexecutor.NewRegistry()
	reg.Register("lines", func(ctx context.Context, env taskexecutor.Environment) error {
		out, info := env.Output(0), env.Info()
		i, p := info.SubtaskIndex, info.Parallelism
		for _, line := range lines[i*len(lines)/p : (i+1)*len(lines)/p] { // a contiguous share
			for _, w := range strings.Fields(line) {
				if err := out.Emit(ctx, int(w[0])%out.NumSubpartitions(), w); err != nil {
					return err
				}
			}
		}
		return nil
	})
	reg.Register("count", func(ctx context.Context, env taskexecutor.Environment) error {
		in := env.Input(0)
		for {
			rec, err := in.Next(ctx)
			switch {
			case errors.Is(err, io.EOF):
				return nil
			case err != nil:
				return err
			}
			c, err := env.AccumulatorRegistry().IntCounter("word " + rec.(string))
			if err != nil {
				return err
			}
			c.Add(1)
		}
	})
	return reg
}

// wordCount is the job: lines (parallelism 2) → ALL_TO_ALL PIPELINED → count (parallelism 2),
// one pipelined region in one slot-sharing group, so it needs two slots at once.
func wordCount() *jobgraph.JobGraph {
	g := jobgraph.New("word count", jobgraph.Batch)
	src := g.AddVertex("lines", "lines", 2)
	cnt := g.AddVertex("count", "count", 2)
	g.Connect(src, cnt, jobgraph.AllToAll, jobgraph.Pipelined)
	return g
}

// counts returns the job's "word <w>" accumulators as "w=n", sorted.
func counts(t *testing.T, res *jobgraph.JobResult) []string {
	t.Helper()
	var out []string
	for name := range res.Accumulators {
		w, ok := strings.CutPrefix(name, "word ")
		if !ok {
			continue
		}
		n, err := jobgraph.AccumulatorValue[int](res.Accumulators, name)
		require.NoError(t, err)
		out = append(out, fmt.Sprintf("%s=%d", w, n))
	}
	slices.Sort(out)
	return out
}

// discard is a logger that drops everything.
var discard = slog.New(slog.DiscardHandler)

// taskExecutor is a TaskExecutorConfig for TaskExecutor id with one slot of the word count's task
// code on svc, sharing shuffle (nil: its own), following the ResourceManager through services.
func taskExecutor(id string, svc rpc.Service, shuffle *taskexecutor.Shuffle, services ha.Services, log *slog.Logger) cluster.TaskExecutorConfig {
	if log == nil {
		log = discard
	}
	cfg := cluster.TaskExecutorConfig{
		TaskExecutor: taskexecutor.Config{ResourceID: jobgraph.ResourceID(id), NumSlots: 1, Registry: registry(), RPC: svc, Logger: log},
	}
	if shuffle != nil {
		cfg.TaskExecutor.Shuffle = shuffle // a nil *Shuffle would be a non-nil ShuffleEnvironment
	}
	if services != nil {
		cfg.HA = services
	}
	return cfg
}

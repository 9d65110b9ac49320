package source_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/coordination"
	"github.com/jobgraph/jobgraph/minicluster"
	"github.com/jobgraph/jobgraph/source"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

// BenchmarkSplitHandout runs one job on a MiniCluster whose reader (parallelism 1) reads b.N
// empty splits: each op is one split's round trip — RequestSplit from the task to the
// JobMaster's coordinator, AddSplits back into the task's Yield — with the job's start amortized
// over b.N. The reader emits nothing.
func BenchmarkSplitHandout(b *testing.B) {
	reg := taskexecutor.NewRegistry()
	reg.Register("reader", func(ctx context.Context, env taskexecutor.Environment) error {
		return source.ReadSplits(ctx, env, func(context.Context, *source.Split) error { return nil })
	})
	coords := coordination.NewRegistry()
	if err := coords.Register("splits", source.StaticSplitsProvider()); err != nil {
		b.Fatal(err)
	}
	mc, err := minicluster.New(minicluster.Config{TaskExecutors: 1, SlotsPerTaskExecutor: 1, Registry: reg, OperatorCoordinators: coords})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if err := mc.Start(ctx); err != nil {
		b.Fatal(err)
	}
	defer mc.Close()
	splits := make([]source.Split, b.N)
	for i := range splits {
		splits[i] = source.Split{ID: fmt.Sprint(i)}
	}
	cfg, err := source.EncodeStaticSplits(splits)
	if err != nil {
		b.Fatal(err)
	}
	g := jobgraph.New("split-handout", jobgraph.Batch)
	r := g.AddVertex("reader", "reader", 1)
	r.OperatorCoordinator = "splits"
	r.OperatorCoordinatorConfig = cfg
	b.ReportAllocs()
	b.ResetTimer()
	res, err := mc.Run(ctx, g)
	if err != nil {
		b.Fatal(err)
	}
	if res.Status != jobgraph.JobStatusFinished {
		b.Fatalf("job %s: %v", res.Status, res.RootCause)
	}
}

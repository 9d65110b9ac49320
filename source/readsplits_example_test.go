package source_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/coordination"
	"github.com/jobgraph/jobgraph/minicluster"
	"github.com/jobgraph/jobgraph/source"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

// A job whose source vertex reads the splits its coordinator hands out: each split's payload is
// a line of words, the reader emits one record per word, advancing the split's Position (so a
// checkpoint taken mid-split resumes at the next word), and a collector prints what arrives.
func ExampleReadSplits() {
	tasks := taskexecutor.NewRegistry()
	tasks.Register("lines", func(ctx context.Context, env taskexecutor.Environment) error {
		return source.ReadSplits(ctx, env, func(ctx context.Context, split *source.Split) error {
			words := strings.Fields(string(split.Payload))
			for ; split.Position < int64(len(words)); split.Position++ {
				if err := env.Output(0).Emit(ctx, 0, split.ID+": "+words[split.Position]); err != nil {
					return err
				}
			}
			return nil
		})
	})
	tasks.Register("print", func(ctx context.Context, env taskexecutor.Environment) error {
		for {
			r, err := env.Input(0).Next(ctx)
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return err
			}
			fmt.Println(r)
		}
	})
	coordinators := coordination.NewRegistry()
	if err := coordinators.Register("lines", source.StaticSplitsProvider()); err != nil {
		panic(err)
	}

	splits, err := source.EncodeStaticSplits([]source.Split{
		{ID: "line-1", Payload: []byte("to be")},
		{ID: "line-2", Payload: []byte("or not")},
	})
	if err != nil {
		panic(err)
	}
	g := jobgraph.New("read-splits", jobgraph.Batch)
	reader := g.AddVertex("reader", "lines", 1)
	reader.OperatorCoordinator = "lines"
	reader.OperatorCoordinatorConfig = splits
	g.Connect(reader, g.AddVertex("printer", "print", 1), jobgraph.Pointwise, jobgraph.Blocking)

	mc, err := minicluster.New(minicluster.Config{TaskExecutors: 1, SlotsPerTaskExecutor: 2, Registry: tasks, OperatorCoordinators: coordinators})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	if err := mc.Start(ctx); err != nil {
		panic(err)
	}
	defer mc.Close()
	res, err := mc.Run(ctx, g)
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Status)
	// Output:
	// line-1: to
	// line-1: be
	// line-2: or
	// line-2: not
	// FINISHED
}

package taskexecutor_test

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/minicluster"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

// Task code for a keyed word count: a source splits lines into words and sends each word to the
// counter subtask that owns its key (a hash shuffle, as Flink's keyBy does), the counters count
// and pass their totals on, and one sink gathers them.
func ExampleInvokable() {
	lines := []string{"to be or not to be", "that is the question", "to be is to do"}

	reg := taskexecutor.NewRegistry()
	reg.Register("lines", func(ctx context.Context, env taskexecutor.Environment) error {
		out := env.Output(0)
		info := env.Info()
		for i, line := range lines {
			if i%info.Parallelism != info.SubtaskIndex {
				continue // this subtask's share of the lines
			}
			for _, w := range strings.Fields(line) {
				h := fnv.New32a()
				h.Write([]byte(w))
				if err := out.Emit(ctx, int(h.Sum32()%uint32(out.NumSubpartitions())), w); err != nil {
					return err
				}
			}
		}
		return nil
	})
	reg.Register("count", func(ctx context.Context, env taskexecutor.Environment) error {
		counts := map[string]int{}
		for {
			rec, err := env.Input(0).Next(ctx)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return err
			}
			counts[rec.(string)]++
		}
		for _, w := range slices.Sorted(maps.Keys(counts)) {
			if err := env.Output(0).Emit(ctx, 0, fmt.Sprintf("%s=%d", w, counts[w])); err != nil {
				return err
			}
		}
		return nil
	})
	var mu sync.Mutex
	var result []string
	reg.Register("collect", func(ctx context.Context, env taskexecutor.Environment) error {
		for {
			rec, err := env.Input(0).Next(ctx)
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return err
			}
			mu.Lock()
			result = append(result, rec.(string))
			mu.Unlock()
		}
	})

	ctx := context.Background()
	mc, err := minicluster.Start(ctx, minicluster.Config{TaskExecutors: 2, SlotsPerTaskExecutor: 2, Registry: reg})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer mc.Close()

	g := jobgraph.New("keyed word count", jobgraph.Batch)
	src := g.AddVertex("lines", "lines", 2)
	cnt := g.AddVertex("count", "count", 3)
	sink := g.AddVertex("collect", "collect", 1)
	g.Connect(src, cnt, jobgraph.AllToAll, jobgraph.Blocking)
	g.Connect(cnt, sink, jobgraph.AllToAll, jobgraph.Blocking)

	res, err := mc.Run(ctx, g)
	if err != nil {
		fmt.Println(err)
		return
	}
	slices.Sort(result)
	fmt.Println(res.Status)
	fmt.Println(strings.Join(result, " "))
	// Output:
	// FINISHED
	// be=3 do=1 is=2 not=1 or=1 question=1 that=1 the=1 to=4
}

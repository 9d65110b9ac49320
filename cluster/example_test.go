package cluster_test

import (
	"context"
	"fmt"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/cluster"
	"github.com/jobgraph/jobgraph/ha/embedded"
	"github.com/jobgraph/jobgraph/rpc"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

// The two process roles in one process: a JobManager and two TaskExecutors on one
// rpc.LocalService, the TaskExecutors finding the ResourceManager through the JobManager's HA
// services (ha/embedded here; ha/file or ha/etcd, and a network transport, when they run in other
// processes) and sharing one in-memory shuffle. The word count runs on them; ending ctx closes
// all three.
func ExampleRunJobManager() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	svc := rpc.NewLocalService()
	defer svc.Close()
	services := embedded.New()
	defer services.Close()

	jm, err := cluster.RunJobManager(ctx, cluster.JobManagerConfig{RPC: svc, HA: services})
	if err != nil {
		fmt.Println(err)
		return
	}
	shuffle := taskexecutor.NewShuffle(taskexecutor.ShuffleConfig{}) // one process: one shared in-memory shuffle
	var tes []*cluster.TaskExecutorRunner
	for _, id := range []jobgraph.ResourceID{"te-1", "te-2"} {
		te, err := cluster.RunTaskExecutor(ctx, cluster.TaskExecutorConfig{
			TaskExecutor: taskexecutor.Config{ResourceID: id, NumSlots: 1, Registry: registry(), RPC: svc, Shuffle: shuffle, Logger: discard},
			HA:           services,
		})
		if err != nil {
			fmt.Println(err)
			return
		}
		tes = append(tes, te)
	}

	d := jm.LeaderDispatcher() // waits for the Dispatcher's leadership
	g := wordCount()
	if err := d.SubmitJob(ctx, g); err != nil {
		fmt.Println(err)
		return
	}
	res, err := d.RequestJobResult(ctx, g.JobID)
	if err != nil {
		fmt.Println(err)
		return
	}
	to, _ := jobgraph.AccumulatorValue[int](res.Accumulators, "word to")
	be, _ := jobgraph.AccumulatorValue[int](res.Accumulators, "word be")
	fmt.Println(res.Status, "to:", to, "be:", be, "words:", len(res.Accumulators))

	cancel() // the roles' context: every role closes
	fmt.Println("JobManager:", jm.Wait())
	for _, te := range tes {
		fmt.Printf("TaskExecutor %s: %v\n", te.TaskExecutor().ResourceID(), te.Wait())
	}
	// Output:
	// FINISHED to: 4 be: 3 words: 9
	// JobManager: <nil>
	// TaskExecutor te-1: <nil>
	// TaskExecutor te-2: <nil>
}

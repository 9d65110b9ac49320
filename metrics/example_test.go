package metrics_test

import (
	"fmt"
	"sync/atomic"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/metrics"
)

// A job's group with a counter and a gauge whose owner publishes its value atomically; a reporter
// reads them through the registry, and closing the group removes them.
func ExampleRegistry() {
	reg := metrics.NewRegistry()
	defer reg.Close()

	jobID, _ := jobgraph.ParseJobID("00000000000000000000000000000001")
	job := reg.JobGroup(jobID, "wordcount")
	restarts := job.Counter("numRestarts")
	var uptimeMs atomic.Int64 // published by the owner's loop
	job.Gauge("uptime", uptimeMs.Load)

	restarts.Inc()
	uptimeMs.Store(3000)

	for _, v := range reg.JobMetrics(jobID) {
		for _, f := range v.Fields() {
			fmt.Printf("%s %v %s=%s\n", v.Scope.Kind, v.Scope.Variables(), f.ID, f.Value)
		}
	}
	job.Close()
	fmt.Println("after close:", len(reg.Snapshot()))
	// Output:
	// jobmanager.job [{job_id 00000000000000000000000000000001} {job_name wordcount}] numRestarts=1
	// jobmanager.job [{job_id 00000000000000000000000000000001} {job_name wordcount}] uptime=3000
	// after close: 0
}

package rest_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/minicluster"
	"github.com/jobgraph/jobgraph/rest"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

// Serve Flink's REST API over a MiniCluster and ask it for a running job's status.
func Example() {
	reg := taskexecutor.NewRegistry()
	reg.Register("wait", func(ctx context.Context, _ taskexecutor.Environment) error {
		<-ctx.Done() // runs until canceled
		return ctx.Err()
	})
	running := make(chan jobgraph.JobID, 1)
	ctx := context.Background()
	mc, err := minicluster.Start(ctx, minicluster.Config{Registry: reg,
		JobStatusListener: func(id jobgraph.JobID, s jobgraph.JobStatus, _ time.Time) {
			if s == jobgraph.JobStatusRunning {
				running <- id
			}
		}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer mc.Close()

	h, err := rest.New(rest.Config{Dispatcher: mc, Cluster: mc, Metrics: mc.Metrics()})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Close()
	srv := httptest.NewServer(h) // or rest.Start(cfg): rest.bind-address and rest.port
	defer srv.Close()

	g := jobgraph.New("waiting", jobgraph.Streaming)
	g.AddVertex("wait", "wait", 1)
	if err := mc.SubmitJob(ctx, g); err != nil {
		fmt.Println(err)
		return
	}
	<-running

	resp, err := http.Get(srv.URL + "/jobs/" + g.JobID.String() + "/status")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, string(body))

	resp, err = http.Get(srv.URL + "/jobs/" + jobgraph.NewJobID().String() + "/status")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	fmt.Println(resp.StatusCode)
	// Output:
	// 200 {"status":"RUNNING"}
	// 404
}

package rest_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/minicluster"
	"github.com/jobgraph/jobgraph/rest"
	"github.com/jobgraph/jobgraph/rpc"
)

// parkedDispatcher parks every ListJobs, once answered, until release is closed, telling entered.
type parkedDispatcher struct {
	rest.Dispatcher
	entered chan struct{}
	release chan struct{}
}

func (d parkedDispatcher) ListJobs(ctx context.Context) ([]rpc.JobStatusMessage, error) {
	jobs, err := d.Dispatcher.ListJobs(ctx)
	d.entered <- struct{}{}
	<-d.release
	return jobs, err
}

// 1,000 concurrent GETs of /jobs/overview over HTTP while 100 jobs run: once every one of them is
// inside the handler (each has had its ListJobs answered and is parked there), the Dispatcher still
// answers the status of every job — a request in flight holds nothing of the Dispatcher's loop —
// and once released every one of them answers 200 with the 100 jobs. Real time, no sleep: the
// test waits on channels.
func TestConcurrentOverviewsWhileJobsRun(t *testing.T) {
	const jobs, requests = 100, 1000
	mc := startCluster(t, minicluster.Config{TaskExecutors: 4, SlotsPerTaskExecutor: jobs / 4})
	ctx := context.Background()
	var ids []jobgraph.JobID
	for range jobs {
		g := blockJob("running")
		require.NoError(t, mc.SubmitJob(ctx, g))
		ids = append(ids, g.JobID)
	}
	d := parkedDispatcher{Dispatcher: mc, entered: make(chan struct{}), release: make(chan struct{})}
	h := newHandler(t, rest.Config{Dispatcher: d})
	srv := httptest.NewServer(h)
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: requests}}
	defer client.CloseIdleConnections()

	type answer struct {
		status int
		jobs   int
		err    error
	}
	answers := make(chan answer, requests)
	var wg sync.WaitGroup
	for range requests {
		wg.Go(func() {
			resp, err := client.Get(srv.URL + "/jobs/overview")
			if err != nil {
				answers <- answer{err: err}
				return
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			var v struct{ Jobs []json.RawMessage }
			if err == nil {
				err = json.Unmarshal(body, &v)
			}
			answers <- answer{status: resp.StatusCode, jobs: len(v.Jobs), err: err}
		})
	}
	for range requests {
		<-d.entered
	}
	// All 1,000 requests are in flight; the Dispatcher answers meanwhile.
	for _, id := range ids {
		st, err := mc.RequestJobStatus(ctx, id)
		require.NoError(t, err)
		require.Equal(t, jobgraph.JobStatusRunning, st)
	}
	list, err := mc.ListJobs(ctx)
	require.NoError(t, err)
	require.Len(t, list, jobs)
	close(d.release)
	wg.Wait()
	close(answers)
	n := 0
	for a := range answers {
		require.NoError(t, a.err)
		assert.Equal(t, http.StatusOK, a.status)
		assert.Equal(t, jobs, a.jobs)
		n++
	}
	assert.Equal(t, requests, n)
}

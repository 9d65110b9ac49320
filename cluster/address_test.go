package cluster_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/cluster"
	"github.com/jobgraph/jobgraph/ha/embedded"
	"github.com/jobgraph/jobgraph/rpc"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

// hostService is a LocalService that behaves as a network Service does about addresses: its
// endpoints are reached as "host:1/<name>" (an rpc.Addresser), and a Lookup of a bare name —
// an address no other process could reach — fails.
type hostService struct{ *rpc.LocalService }

func (hostService) Address(name string) string { return "host:1/" + name }

func (s hostService) Lookup(ctx context.Context, address string) (any, error) {
	if !strings.HasPrefix(address, "host:1/") {
		return nil, fmt.Errorf("%q names no host: %w", address, rpc.ErrUnknownAddress)
	}
	return s.LocalService.Lookup(ctx, address)
}

// On a Service whose addresses name their host, every endpoint the roles start registers under
// and hands out its full address (rpc.AddressOf): the ResourceManager, the Dispatcher, the
// TaskExecutors and each JobMaster, whose slots the TaskExecutors offer at the address the
// ResourceManager was given; the word count runs to FINISHED.
func TestRolesUseTheirServicesAddresses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc := hostService{rpc.NewLocalService()}
		defer svc.Close()
		services := embedded.New()
		defer services.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // virtual time
		defer cancel()
		jm, err := cluster.RunJobManager(ctx, cluster.JobManagerConfig{RPC: svc, HA: services})
		require.NoError(t, err)
		defer jm.Close()
		assert.Equal(t, "host:1/resourcemanager", jm.ResourceManagerAddress())
		assert.Equal(t, "host:1/dispatcher", jm.DispatcherAddress())
		shuffle := taskexecutor.NewShuffle(taskexecutor.ShuffleConfig{})
		for _, id := range []string{"te-a", "te-b"} {
			te, err := cluster.RunTaskExecutor(ctx, taskExecutor(id, svc, shuffle, services, nil))
			require.NoError(t, err)
			defer te.Close()
			assert.Equal(t, "host:1/"+id, te.TaskExecutor().Address())
			_, err = te.TaskExecutor().WaitRegistered(ctx)
			require.NoError(t, err)
		}
		g := wordCount()
		d := jm.LeaderDispatcher()
		require.NoError(t, d.SubmitJob(ctx, g))
		res, err := d.RequestJobResult(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusFinished, res.Status)
		assert.Equal(t, wantCounts, counts(t, res))
	})
}

package jobmaster_test

import (
	"context"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/ha"
	"github.com/jobgraph/jobgraph/jobmaster"
	"github.com/jobgraph/jobgraph/rpc"
)

// otherService is an rpc.Service that is not the in-process *rpc.LocalService (as a network
// transport is not), over one.
type otherService struct{ *rpc.LocalService }

// The JobMaster's outgoing calls carry Config.RPCTimeout as their deadline over any Service but
// the in-process LocalService, where they carry none (no timer per call): the requirement
// declaration its scheduling makes, seen by the ResourceManager.
func TestOutgoingCallDeadlineOnlyOffTheLocalService(t *testing.T) {
	for _, tc := range []struct {
		name  string
		local bool
		want  time.Duration
	}{
		{"LocalService", true, -1},
		{"another Service", false, 3 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				local := rpc.NewLocalService()
				var svc rpc.Service = local
				if !tc.local {
					svc = otherService{local}
				}
				rm := &hbRM{id: jobgraph.NewResourceManagerID()}
				require.NoError(t, svc.Register("rm", rm))
				g := jobgraph.New("one", jobgraph.Batch)
				g.AddVertex("v", "noop", 1)
				f, err := jobmaster.NewFactory(g, jobmaster.Config{RPC: svc, ResourceManagerAddress: "rm",
					RPCTimeout: 3 * time.Second, Logger: slog.New(slog.DiscardHandler)})
				require.NoError(t, err)
				jm, err := f.Create(context.Background(), jobgraph.NewJobMasterID())
				require.NoError(t, err)
				synctest.Wait()
				rm.mu.Lock()
				assert.Equal(t, []time.Duration{tc.want}, rm.deadlines, "time left of each declaration's deadline (-1: none)")
				rm.mu.Unlock()
				jm.Close()
			})
		})
	}
}

// registeringRM records how long each RegisterJobMaster's ctx had left (-1: no deadline).
type registeringRM struct {
	*hbRM
	registrations []time.Duration // under hbRM.mu
}

func (r *registeringRM) RegisterJobMaster(ctx context.Context, token jobgraph.JobMasterID, jm jobgraph.ResourceID, address string, job jobgraph.JobID) (jobgraph.ResourceManagerID, error) {
	left := time.Duration(-1)
	if d, ok := ctx.Deadline(); ok {
		left = time.Until(d)
	}
	r.mu.Lock()
	r.registrations = append(r.registrations, left)
	r.mu.Unlock()
	return r.hbRM.RegisterJobMaster(ctx, token, jm, address, job)
}

// A JobMaster that finds the ResourceManager through leader retrieval registers with it in
// attempts bounded by cluster.registration.initial-timeout (100 ms) over any Service but the
// in-process LocalService, where an attempt has no deadline (no timer per job).
func TestRegistrationDeadlineOnlyOffTheLocalService(t *testing.T) {
	for _, tc := range []struct {
		name  string
		local bool
		want  time.Duration
	}{
		{"LocalService", true, -1},
		{"another Service", false, 100 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				local := rpc.NewLocalService()
				var svc rpc.Service = local
				if !tc.local {
					svc = otherService{local}
				}
				rm := &registeringRM{hbRM: &hbRM{id: jobgraph.NewResourceManagerID()}}
				require.NoError(t, svc.Register("rm", rm))
				retrieval := &handRetrieval{}
				g := jobgraph.New("one", jobgraph.Batch)
				g.AddVertex("v", "noop", 1)
				f, err := jobmaster.NewFactory(g, jobmaster.Config{RPC: svc, Logger: slog.New(slog.DiscardHandler),
					ResourceManagerRetrieval: func() ha.LeaderRetrieval { return retrieval }})
				require.NoError(t, err)
				jm, err := f.Create(context.Background(), jobgraph.NewJobMasterID())
				require.NoError(t, err)
				retrieval.announce("rm", ha.SessionID(rm.id))
				synctest.Wait()
				rm.mu.Lock()
				assert.Equal(t, []time.Duration{tc.want}, rm.registrations, "time left of each registration attempt's deadline (-1: none)")
				rm.mu.Unlock()
				jm.Close()
			})
		})
	}
}

package main

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/ha"
	"github.com/jobgraph/jobgraph/ha/etcd"
	"github.com/jobgraph/jobgraph/minicluster/hascenarios"
)

// BenchmarkLeaderFailover is the root module's minicluster BenchmarkLeaderFailover (ha=file) on
// ha/etcd: a leader holding hascenarios.FailoverJobs running jobs loses its leadership, and each op is the
// time from the loss until every job is RUNNING again under the new leader (issue 12's target:
// ≤ 1 s plus the election's own timeout). Two MiniClusters over one real etcd server (started
// here, on 127.0.0.1), each with its own ha/etcd client (a fresh key prefix per op), 4
// TaskExecutors × 25 slots and its own RPC service; every job is one streaming task of
// parallelism 1 that runs until canceled. The loss is the close of the leader's client, which
// resigns and revokes its lease (a graceful loss: the standby's campaign wins at once; a leader
// that dies instead is followed only once its lease expires, etcd.Options.SessionTTL later).
// Setup and teardown are outside the timer; jobs is the number of jobs.
//
// loss=lease-revoked revokes the leader's lease instead, through a client of its own, as the
// server does when the lease expires: the leader learns it from its watch of its election key
// (and campaigns again, behind the standby), so this is the loss of a leader that died, less
// the TTL the server waits first.
func BenchmarkLeaderFailover(b *testing.B) {
	srv, err := startEtcd()
	if err != nil {
		b.Fatal(err)
	}
	defer srv.close()
	raw, err := clientv3.New(clientv3.Config{Endpoints: []string{srv.endpoint}, Logger: zap.NewNop(), DialTimeout: 5 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	defer raw.Close()
	run := func(b *testing.B, lose func(prefix string, leader ha.Services) error) {
		for i := range b.N {
			b.StopTimer()
			prefix := fmt.Sprintf("/bench/%d-%s", i, jobgraph.NewJobID())
			newHA := func() (ha.Services, error) {
				return etcd.New(etcd.Options{Endpoints: []string{srv.endpoint}, Prefix: prefix})
			}
			hascenarios.LeaderFailover(b, newHA, func(leader ha.Services) error { return lose(prefix, leader) })
		}
		b.ReportMetric(hascenarios.FailoverJobs, "jobs")
	}
	b.Run("ha=etcd,loss=close", func(b *testing.B) {
		run(b, func(_ string, leader ha.Services) error { return leader.Close() })
	})
	b.Run("ha=etcd,loss=lease-revoked", func(b *testing.B) {
		run(b, func(prefix string, _ ha.Services) error {
			// The oldest campaign key is the leader's (concurrency.Election).
			resp, err := raw.Get(context.Background(), prefix+"/leader/election/", clientv3.WithFirstCreate()...)
			if err != nil {
				return err
			}
			if len(resp.Kvs) == 0 {
				return errors.New("no campaign key: nobody leads")
			}
			_, err = raw.Revoke(context.Background(), clientv3.LeaseID(resp.Kvs[0].Lease))
			return err
		})
	})
}

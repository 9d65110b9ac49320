package etcd

import (
	"fmt"
	"testing"
	"time"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/ha"
)

// handoverJobs is how many JobMaster contenders each client of BenchmarkLeaderHandover holds.
const handoverJobs = 100

// BenchmarkLeaderHandover is the HA layer's part of issue 12's BenchmarkLeaderFailover: client
// A leads with a Dispatcher and handoverJobs JobMaster contenders, each confirmed; client B
// stands by with the same contenders and a retrieval of each. One op: A's leadership ends —
// close: A's Services close (a JobManager that stops; its lease is revoked); revoke: A's lease is
// revoked by another client (what its expiry does on the server, without the SessionTTL wait) —
// until every contender of B is granted, has confirmed, and B's retrievals report all
// handoverJobs+1 addresses with B's session. Setting the clients up is outside the timer.
// ms/handover is the mean. A leader whose process dies without closing adds the lease's
// remaining TTL (Options.SessionTTL, 15 s by default) to this.
func BenchmarkLeaderHandover(b *testing.B) {
	srv := startServer(b)
	raw := srv.client(b)
	for _, how := range []string{"close", "revoke"} {
		b.Run(how, func(b *testing.B) {
			var total time.Duration
			for range b.N {
				b.StopTimer()
				prefix := newPrefix()
				jobs := make([]jobgraph.JobID, handoverJobs)
				for i := range jobs {
					jobs[i] = jobgraph.NewJobID()
				}
				a := srv.open(b, prefix)
				startAll(b, a, jobs, "a", nil)
				c := srv.open(b, prefix)
				confirmed := make(chan published, 8*(handoverJobs+1)) // never full: a blocked callback would hold up Close
				grants := startAll(b, c, jobs, "b", confirmed)
				retrievals := followAll(b, c, jobs, confirmed)
				lease, _ := leaseOf(a)
				b.StartTimer()
				t0 := time.Now()
				if how == "close" {
					if err := a.Close(); err != nil {
						b.Fatal(err)
					}
				} else if _, err := raw.Revoke(b.Context(), lease); err != nil {
					b.Fatal(err)
				}
				session := <-grants
				for seen := 0; seen < handoverJobs+1; {
					p := <-confirmed
					if p.session == session && p.address != "" {
						seen++
					}
				}
				total += time.Since(t0)
				b.StopTimer()
				for _, r := range retrievals {
					_ = r.Stop()
				}
				_ = c.Close()
				_ = a.Close()
			}
			b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/handover")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// confirmer is a contender that confirms each grant at once with its address; the first grant
// of any of a client's confirmers is sent on grants.
type confirmer struct {
	e       ha.LeaderElection
	address string
	grants  chan ha.SessionID
}

func (c *confirmer) GrantLeadership(s ha.SessionID) {
	c.e.ConfirmLeadership(s, c.address)
	select {
	case c.grants <- s:
	default:
	}
}
func (c *confirmer) RevokeLeadership()     {}
func (c *confirmer) HandleError(err error) {}

// startAll starts a Dispatcher and one JobMaster contender per job on svc, each confirming its
// grants; with confirmed nil it waits until svc leads. It returns the channel of the first grant.
func startAll(b *testing.B, svc *Services, jobs []jobgraph.JobID, name string, confirmed chan published) chan ha.SessionID {
	grants := make(chan ha.SessionID, 1)
	start := func(e ha.LeaderElection, address string) {
		if err := e.Start(&confirmer{e: e, address: address, grants: grants}); err != nil {
			b.Fatal(err)
		}
	}
	start(svc.DispatcherLeaderElection(), "dispatcher@"+name)
	if confirmed == nil {
		<-grants
	}
	for i, job := range jobs {
		start(svc.JobMasterLeaderElection(job), fmt.Sprintf("jobmaster-%d@%s", i, name))
	}
	return grants
}

// followAll starts a retrieval of the Dispatcher and of each job's JobMaster on svc, all
// reporting to confirmed.
func followAll(b *testing.B, svc *Services, jobs []jobgraph.JobID, confirmed chan published) []ha.LeaderRetrieval {
	l := &channelListener{confirmed}
	rs := []ha.LeaderRetrieval{svc.DispatcherLeaderRetrieval()}
	for _, job := range jobs {
		rs = append(rs, svc.JobMasterLeaderRetrieval(job))
	}
	for _, r := range rs {
		if err := r.Start(l); err != nil {
			b.Fatal(err)
		}
	}
	return rs
}

type channelListener struct{ ch chan published }

func (l *channelListener) NotifyLeaderAddress(address string, session ha.SessionID) {
	l.ch <- published{address, session}
}
func (l *channelListener) HandleError(err error) {}

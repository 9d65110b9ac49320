package rest

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/executiongraph"
)

// graphs coalesces concurrent RequestJob calls for one job: a request joins a call in flight
// only if that call started after the request arrived, so the graph it gets was taken after
// its arrival — it reflects every change completed before — just as its own call's would be.
// 1,000 concurrent overviews of 100 running jobs make about 100 calls instead of 100,000.
// Arrivals and call starts are ordered by one counter, not a clock.
type graphs struct {
	seq      atomic.Uint64
	mu       sync.Mutex
	inflight map[jobgraph.JobID]*graphCall
}

type graphCall struct {
	seq  uint64
	done chan struct{}
	a    *executiongraph.ArchivedExecutionGraph // read-only, shared by the joiners
	err  error
}

// arrival is a request's place in the order of arrivals and call starts.
func (g *graphs) arrival() uint64 { return g.seq.Add(1) }

// request returns the job's graph for a request that arrived at arrived: from a call in flight
// started after that, or from a call of its own. A joiner whose leader's context ended while
// its own did not calls again itself.
func (g *graphs) request(ctx context.Context, d Dispatcher, id jobgraph.JobID, arrived uint64) (*executiongraph.ArchivedExecutionGraph, error) {
	g.mu.Lock()
	if c := g.inflight[id]; c != nil && c.seq > arrived {
		g.mu.Unlock()
		select {
		case <-c.done:
			if (errors.Is(c.err, context.Canceled) || errors.Is(c.err, context.DeadlineExceeded)) && ctx.Err() == nil {
				return d.RequestJob(ctx, id)
			}
			return c.a, c.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	c := &graphCall{seq: g.seq.Add(1), done: make(chan struct{})}
	if g.inflight == nil {
		g.inflight = make(map[jobgraph.JobID]*graphCall)
	}
	g.inflight[id] = c
	g.mu.Unlock()
	c.a, c.err = d.RequestJob(ctx, id)
	g.mu.Lock()
	if g.inflight[id] == c {
		delete(g.inflight, id)
	}
	g.mu.Unlock()
	close(c.done)
	return c.a, c.err
}

package etcd

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/jobgraph/jobgraph/ha"
)

// retryDelay is how long the leader goroutine waits after a failed campaign attempt (etcd
// unreachable, say) before the next; real time, only on a failure path.
const retryDelay = 500 * time.Millisecond

// election is one handle on a component's election (ha.LeaderElection). Every field is guarded
// by s.mu.
type election struct {
	s         *Services
	component string

	contender ha.LeaderContender
	started   bool
	seq       uint64 // order of Start among the client's elections: grants go out in it
	// granted is the session the contender was granted and not yet revoked; zero otherwise.
	granted ha.SessionID
	// confirmed: the contender confirmed granted, so its leader information was written.
	confirmed bool
}

// Start registers contender; the client starts campaigning if it does not yet. While the client
// leads, the first contender started on a component (that has not left) is granted at once with
// the client's session. Errors: the election was started and not closed, the Services are
// closed, a nil contender.
func (e *election) Start(contender ha.LeaderContender) error {
	if contender == nil {
		return errors.New("ha/etcd: LeaderElection.Start with a nil contender")
	}
	s := e.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("ha/etcd: start of the %s election: %w", e.component, errClosed)
	}
	if e.started {
		return fmt.Errorf("ha/etcd: the %s election was started twice", e.component)
	}
	e.started, e.contender = true, contender
	s.starts++
	e.seq = s.starts
	queue := append(s.contenders[e.component], e)
	s.contenders[e.component] = queue
	s.count++
	if s.term != nil && queue[0] == e {
		s.grantLocked(e)
	}
	poke(s.leaderWake)
	return nil
}

// ConfirmLeadership publishes address as the component's leader for session if session is the
// one this election's contender holds: the write (the component's leader information key,
// attached to the term's lease, fenced by the term) is made on the Services' writer goroutine,
// so ConfirmLeadership never waits on etcd. A stale session is ignored.
func (e *election) ConfirmLeadership(session ha.SessionID, address string) {
	s := e.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if !e.hasLeadershipLocked(session) {
		return
	}
	value, _ := json.Marshal(leaderInfo{Address: address, Session: session.String()})
	e.confirmed = true
	s.enqueueLocked(s.infoKey(e.component), infoWrite{term: s.term, value: value})
}

// HasLeadership reports whether session is the one this election's contender holds now.
func (e *election) HasLeadership(session ha.SessionID) bool {
	e.s.mu.Lock()
	defer e.s.mu.Unlock()
	return e.hasLeadershipLocked(session)
}

func (e *election) hasLeadershipLocked(session ha.SessionID) bool {
	s := e.s
	return session != ha.SessionID{} && e.granted == session && s.term != nil && s.term.session == session
}

// Close removes the contender: it is revoked if it was granted, its leader information is
// deleted if it had confirmed, and the next contender started on the component (if any) is
// granted. When it was the client's last contender, the client gives up its leadership (resigns
// and revokes its lease, in the background) — Flink's DefaultLeaderElectionService closes its
// driver then too. Closing an election that is not started returns nil.
func (e *election) Close() error {
	s := e.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if !e.started {
		return nil
	}
	e.started = false
	queue := s.contenders[e.component]
	head := len(queue) > 0 && queue[0] == e
	queue = slices.DeleteFunc(queue, func(x *election) bool { return x == e })
	if len(queue) == 0 {
		delete(s.contenders, e.component)
	} else {
		s.contenders[e.component] = queue
	}
	s.count--
	if e.granted != (ha.SessionID{}) {
		if e.confirmed && s.term != nil {
			s.enqueueLocked(s.infoKey(e.component), infoWrite{term: s.term, del: true})
		}
		s.revokeLocked(e)
	}
	if head && len(queue) > 0 && s.term != nil {
		s.grantLocked(queue[0])
	}
	if s.count == 0 {
		s.endTermLocked()
		if s.stopAttempt != nil {
			s.stopAttempt()
			s.stopAttempt = nil
		}
	}
	return nil
}

func (s *Services) grantLocked(e *election) {
	e.granted, e.confirmed = s.term.session, false
	c, session := e.contender, e.granted
	s.callbacks.Execute(func() { c.GrantLeadership(session) })
}

func (s *Services) revokeLocked(e *election) {
	e.granted, e.confirmed = ha.SessionID{}, false
	s.callbacks.Execute(e.contender.RevokeLeadership)
}

// headsLocked returns the first election of each component, in the order they were started:
// the order a term grants them (the Dispatcher before the jobs it recovers, say).
func (s *Services) headsLocked() []*election {
	heads := make([]*election, 0, len(s.contenders))
	for _, queue := range s.contenders {
		heads = append(heads, queue[0])
	}
	slices.SortFunc(heads, func(a, b *election) int { return cmp.Compare(a.seq, b.seq) })
	return heads
}

// endTermLocked ends the current term, if any: every granted contender is revoked, the
// leader information writes not yet made are dropped (the keys go with the term's lease).
func (s *Services) endTermLocked() {
	if s.term == nil {
		return
	}
	for _, e := range s.headsLocked() {
		if e.granted != (ha.SessionID{}) {
			s.revokeLocked(e)
		}
	}
	for k, w := range s.pending {
		if w.term == s.term {
			delete(s.pending, k)
		}
	}
	clear(s.taken)
	s.term = nil
}

// lead is the leader goroutine: while the client has a contender it campaigns, leads until the
// term ends (lease lost, last contender gone, Close), and campaigns again with a new session.
func (s *Services) lead() {
	defer close(s.leadDone)
	for {
		s.mu.Lock()
		for s.count == 0 && !s.closed {
			s.mu.Unlock()
			<-s.leaderWake
			s.mu.Lock()
		}
		if s.closed {
			s.mu.Unlock()
			return
		}
		ctx, cancel := context.WithCancel(s.ctx)
		s.stopAttempt = cancel
		s.mu.Unlock()
		err := s.attempt(ctx)
		cancel()
		if err != nil && ctx.Err() == nil {
			timer := time.NewTimer(retryDelay)
			select {
			case <-timer.C:
			case <-ctx.Done():
				timer.Stop()
			}
		}
	}
}

// attempt is one campaign with a new lease, and the term if it wins. It returns when ctx ends
// (the last contender left, Close) or the term was lost, after resigning and revoking the lease.
// An error is a failed request (the next attempt waits retryDelay).
func (s *Services) attempt(ctx context.Context) error {
	grant, err := s.client.Grant(ctx, int64(s.ttl))
	if err != nil {
		return err
	}
	// The session's own context is not ctx: the lease must still be revoked after ctx ended.
	sessCtx, sessCancel := context.WithCancel(context.Background())
	defer sessCancel()
	sess, err := concurrency.NewSession(s.client, concurrency.WithLease(grant.ID), concurrency.WithTTL(s.ttl), concurrency.WithContext(sessCtx))
	if err != nil {
		s.revokeLease(grant.ID)
		return err
	}
	defer func() {
		sess.Orphan()
		s.revokeLease(grant.ID)
	}()
	session := ha.NewSessionID()
	el := concurrency.NewElection(sess, s.electionPrefix())
	if err := el.Campaign(ctx, session.String()); err != nil {
		return err // Campaign resigned itself if ctx ended
	}
	t := &term{session: session, key: el.Key(), rev: el.Rev(), lease: grant.ID}
	// Losing the key (lease revoked or expired on the server, key deleted) ends the term at once,
	// before the keep-alive notices; watched from the key's creation so nothing is missed.
	wch := s.client.Watch(ctx, t.key, clientv3.WithRev(t.rev+1))

	s.mu.Lock()
	if ctx.Err() != nil { // the last contender left, or Close, while campaigning
		s.mu.Unlock()
		s.resign(el)
		return nil
	}
	s.term = t
	for _, e := range s.headsLocked() {
		s.grantLocked(e)
	}
	s.mu.Unlock()

	lost := false
	for !lost {
		select {
		case <-ctx.Done():
			s.resign(el)
			return nil
		case <-sess.Done():
			lost = true
		case wr, ok := <-wch:
			if !ok || wr.Err() != nil {
				lost = ctx.Err() == nil // a watch that fails is taken as a loss: safe, never wrong
				continue
			}
			for _, ev := range wr.Events {
				if ev.Type == mvccpb.DELETE {
					lost = true
				}
			}
		}
	}
	s.mu.Lock()
	if s.term == t {
		s.endTermLocked()
	}
	s.mu.Unlock()
	s.resign(el)
	return nil
}

// resign deletes the election key if it is still this term's (Election.Resign is fenced by it).
func (s *Services) resign(el *concurrency.Election) {
	ctx, cancel := context.WithTimeout(context.Background(), s.reqTimeout)
	defer cancel()
	_ = el.Resign(ctx) // on failure the lease revocation that follows deletes the key too
}

// DropLeadership is a test and operations hook: the client loses its leadership now, as the
// loss of its session lease would end it. Its term ends at once here — every granted contender
// is revoked (callbacks on the client's callback goroutine), every write from now on is refused
// with ha.ErrNotLeader, leader information writes not yet made are dropped — and then the
// term's lease is revoked on the server, which deletes its election key and leader information
// (the stored plans, results and checkpoints stay), so another client may win the election. The
// client stays in the election with every contender started on it: its leader goroutine
// campaigns again with a new lease and, when it wins, grants its contenders a new session.
// A client that does not lead (or is closed) is left as it is: it returns nil. It waits for the
// revocation's answer, up to ctx or RequestTimeout; errors: that request's (the lease then
// expires after SessionTTL; the client does not lead all the same). Safe for concurrent use.
// There is no Flink counterpart: it is what a lost ZooKeeper session or an expired Kubernetes
// lease does to Flink's leader.
func (s *Services) DropLeadership(ctx context.Context) error {
	s.mu.Lock()
	t := s.term
	if t == nil || s.closed {
		s.mu.Unlock()
		return nil
	}
	s.endTermLocked()
	stop := s.stopAttempt
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, s.reqTimeout)
	defer cancel()
	if _, err := s.client.Revoke(ctx, t.lease); err != nil {
		// The term's watch may see nothing: end the term's attempt (its context only; a
		// later attempt has its own), so the leader goroutine resigns, revokes the lease
		// itself (or leaves it to expire) and campaigns again.
		if stop != nil {
			stop()
		}
		return fmt.Errorf("ha/etcd: revoking the lease of session %s: %w", t.session, err)
	}
	return nil
}

func (s *Services) revokeLease(id clientv3.LeaseID) {
	ctx, cancel := context.WithTimeout(context.Background(), s.reqTimeout)
	defer cancel()
	_, _ = s.client.Revoke(ctx, id) // on failure the lease expires after its TTL
}

// leaderInfo is the JSON value of a component's leader information key.
type leaderInfo struct {
	Address string `json:"address"`
	Session string `json:"session"`
}

// infoWrite is a pending write of a leader information key: a put of value, or a delete; fenced
// by term (dropped once term ended: the keys are attached to its lease).
type infoWrite struct {
	term  *term
	value []byte
	del   bool
}

func (s *Services) enqueueLocked(key string, w infoWrite) {
	if w.del && !s.taken[key] {
		// Nothing of this term was written at key (a put still pending is dropped), and the
		// keys of earlier terms went with their leases: there is nothing to delete.
		delete(s.pending, key)
		return
	}
	s.pending[key] = w
	poke(s.writerWake)
}

// write is the writer goroutine: it makes the pending leader information writes of the current
// term, up to maxTxnOps in one fenced transaction (a later write to a key replaced an earlier
// one while it waited, which is all a reader could tell apart).
func (s *Services) write() {
	defer s.wg.Done()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-s.writerWake:
		}
		for {
			s.mu.Lock()
			t := s.term
			var ops []clientv3.Op
			var keys []string
			for k, w := range s.pending {
				if w.term != t || t == nil {
					delete(s.pending, k)
					continue
				}
				if len(ops) == maxTxnOps {
					break
				}
				if w.del {
					ops = append(ops, clientv3.OpDelete(k))
					delete(s.taken, k)
				} else {
					ops = append(ops, clientv3.OpPut(k, string(w.value), clientv3.WithLease(t.lease)))
					s.taken[k] = true
				}
				keys = append(keys, k)
				delete(s.pending, k)
			}
			s.mu.Unlock()
			if len(ops) == 0 {
				break
			}
			ctx, cancel := s.requestContext()
			_, err := s.client.Txn(ctx).If(fenceOf(t)).Then(ops...).Commit()
			cancel()
			if err != nil && s.ctx.Err() == nil {
				s.reportWriteError(t, keys, err)
			}
			// A refused fence means the term is over; the leader goroutine revokes.
		}
	}
}

// reportWriteError tells the contenders whose leader information could not be written.
func (s *Services) reportWriteError(t *term, keys []string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.term != t {
		return
	}
	for _, queue := range s.contenders {
		e := queue[0]
		if e.granted == t.session && slices.Contains(keys, s.infoKey(e.component)) {
			c := e.contender
			werr := fmt.Errorf("ha/etcd: publishing the %s leader information: %w", e.component, err)
			s.callbacks.Execute(func() { c.HandleError(werr) })
		}
	}
}

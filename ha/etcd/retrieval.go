package etcd

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/google/uuid"

	"github.com/jobgraph/jobgraph/ha"
)

// watchState is what the one watch of <prefix>/leader/ knows, shared by every retrieval of the
// Services: the election keys (the one created first is the leader's; its value is the leader's
// session) and every component's leader information. Guarded by Services.mu.
type watchState struct {
	started bool
	primed  bool // the first Get arrived: the state is the cluster's
	// elections maps an election key to its create revision and value (a session ID).
	elections map[string]electionKey
	// infos maps a component to its published leader information.
	infos      map[string]published
	retrievals map[*retrieval]struct{}
}

type electionKey struct {
	createRev int64
	session   ha.SessionID
}

type published struct {
	address string
	session ha.SessionID
}

func (w *watchState) init() {
	w.elections = make(map[string]electionKey)
	w.infos = make(map[string]published)
	w.retrievals = make(map[*retrieval]struct{})
}

// leaderSession is the session of the election key created first; zero when there is none.
func (w *watchState) leaderSession() ha.SessionID {
	var best electionKey
	for _, k := range w.elections {
		if best.createRev == 0 || k.createRev < best.createRev {
			best = k
		}
	}
	return best.session
}

// retrieval follows one component's leader (ha.LeaderRetrieval).
type retrieval struct {
	s         *Services
	component string
	listener  ha.LeaderRetrievalListener
	// last is what the listener was told last (guarded by s.mu); stopped is read by the
	// callbacks already queued when Stop came.
	last    published
	started bool
	stopped atomic.Bool
}

// Start begins following the component: listener learns the confirmed leader (its address and
// session) once known, and every change, on the Services' callback goroutine; an empty address
// means no leader now. An address is reported only while its session is the one the current
// election leader holds, so a dead leader's information is never reported. Start does no I/O:
// the first state comes from the Services' watch. Errors: started twice, the Services closed.
func (r *retrieval) Start(listener ha.LeaderRetrievalListener) error {
	if listener == nil {
		return errors.New("ha/etcd: LeaderRetrieval.Start with a nil listener")
	}
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("ha/etcd: start of the %s retrieval: %w", r.component, errClosed)
	}
	if r.started {
		return fmt.Errorf("ha/etcd: the %s retrieval was started twice", r.component)
	}
	r.started, r.listener = true, listener
	r.stopped.Store(false)
	r.last = published{}
	s.watch.retrievals[r] = struct{}{}
	if !s.watch.started {
		s.watch.started = true
		s.wg.Add(1)
		go s.watchLeaders()
	}
	if s.watch.primed {
		s.notifyLocked(r, s.watch.leaderSession())
	}
	return nil
}

// Stop ends the notifications (one already on its way may still arrive). Stopping a retrieval
// that is not started returns nil.
func (r *retrieval) Stop() error {
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	r.started = false
	r.stopped.Store(true)
	delete(s.watch.retrievals, r)
	return nil
}

// notifyLocked tells r's listener its component's leader if it changed.
func (s *Services) notifyLocked(r *retrieval, leader ha.SessionID) {
	now := published{}
	if p, ok := s.watch.infos[r.component]; ok && p.session == leader && leader != (ha.SessionID{}) {
		now = p
	}
	if now == r.last {
		return
	}
	r.last = now
	l := r.listener
	s.callbacks.Execute(func() {
		if !r.stopped.Load() {
			l.NotifyLeaderAddress(now.address, now.session)
		}
	})
}

// watchLeaders is the watch goroutine: a Get of <prefix>/leader/, then a watch from the revision
// after it; again from a new Get when the watch fails (compacted, say).
func (s *Services) watchLeaders() {
	defer s.wg.Done()
	prefix := s.leaderPrefix()
	for s.ctx.Err() == nil {
		resp, err := s.client.Get(s.ctx, prefix, clientv3.WithPrefix())
		if err != nil {
			s.pause()
			continue
		}
		s.mu.Lock()
		clear(s.watch.elections)
		clear(s.watch.infos)
		for _, kv := range resp.Kvs {
			s.applyPutLocked(string(kv.Key), kv.Value, kv.CreateRevision)
		}
		s.watch.primed = true
		s.notifyAllLocked()
		s.mu.Unlock()
		wch := s.client.Watch(s.ctx, prefix, clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision+1))
		for wr := range wch {
			if wr.Err() != nil {
				break
			}
			s.mu.Lock()
			for _, ev := range wr.Events {
				if ev.Type == mvccpb.DELETE {
					s.applyDeleteLocked(string(ev.Kv.Key))
				} else {
					s.applyPutLocked(string(ev.Kv.Key), ev.Kv.Value, ev.Kv.CreateRevision)
				}
			}
			s.notifyAllLocked()
			s.mu.Unlock()
		}
		s.pause()
	}
}

// pause waits retryDelay or until Close.
func (s *Services) pause() {
	timer := time.NewTimer(retryDelay)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-s.ctx.Done():
	}
}

func (s *Services) notifyAllLocked() {
	leader := s.watch.leaderSession()
	for r := range s.watch.retrievals {
		s.notifyLocked(r, leader)
	}
}

func (s *Services) applyPutLocked(key string, value []byte, createRev int64) {
	switch {
	case strings.HasPrefix(key, s.electionPrefix()+"/"):
		session, err := uuid.Parse(string(value))
		if err != nil {
			session = uuid.UUID{} // not ours: a key nobody's session matches, still a leader
		}
		s.watch.elections[key] = electionKey{createRev: createRev, session: ha.SessionID(session)}
	case strings.HasPrefix(key, s.infoPrefix()):
		var info leaderInfo
		if json.Unmarshal(value, &info) != nil {
			delete(s.watch.infos, strings.TrimPrefix(key, s.infoPrefix()))
			return
		}
		session, err := uuid.Parse(info.Session)
		if err != nil {
			delete(s.watch.infos, strings.TrimPrefix(key, s.infoPrefix()))
			return
		}
		s.watch.infos[strings.TrimPrefix(key, s.infoPrefix())] = published{address: info.Address, session: ha.SessionID(session)}
	}
}

func (s *Services) applyDeleteLocked(key string) {
	switch {
	case strings.HasPrefix(key, s.electionPrefix()+"/"):
		delete(s.watch.elections, key)
	case strings.HasPrefix(key, s.infoPrefix()):
		delete(s.watch.infos, strings.TrimPrefix(key, s.infoPrefix()))
	}
}

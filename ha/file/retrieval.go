package file

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/ha"
)

// DispatcherLeaderRetrieval follows the Dispatcher's leader file.
func (s *Services) DispatcherLeaderRetrieval() ha.LeaderRetrieval {
	return &retrieval{s: s, component: dispatcherName}
}

// ResourceManagerLeaderRetrieval follows the ResourceManager's leader file.
func (s *Services) ResourceManagerLeaderRetrieval() ha.LeaderRetrieval {
	return &retrieval{s: s, component: resourceMgrName}
}

// JobMasterLeaderRetrieval follows the leader file of job's JobMaster.
func (s *Services) JobMasterLeaderRetrieval(job jobgraph.JobID) ha.LeaderRetrieval {
	return &retrieval{s: s, component: job.String()}
}

// retrieval reports a component's leader as the client's watcher reads it: every change of
// (address, session), the empty address while nobody has confirmed under the current lock
// holder's session. Start once, Stop once.
type retrieval struct {
	s         *Services
	component string

	// Guarded by s.mu.
	listener ha.LeaderRetrievalListener
	stopped  bool

	// Owned by the watcher goroutine.
	last    decodedInfo // what the listener was told last (zero: no leader)
	lastErr string      // the read error it was told last, so one error is told once
}

// Start begins polling the leader file; the listener learns the first leader within one poll
// interval (at once if there is one now). Errors: Start twice, or after Services.Close.
func (r *retrieval) Start(listener ha.LeaderRetrievalListener) error {
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("ha/file: %s retrieval: Start after Services.Close", r.component)
	}
	if r.listener != nil {
		return fmt.Errorf("ha/file: %s retrieval: started twice", r.component)
	}
	r.listener = listener
	if s.watcher == nil {
		w, err := newWatcher(s)
		if err != nil {
			return err
		}
		s.watcher = w
	}
	s.watcher.add(r)
	return nil
}

// Stop ends the notifications: none is delivered after Stop returns.
func (r *retrieval) Stop() error {
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	r.stopped = true
	if s.watcher != nil {
		s.watcher.remove(r)
	}
	return nil
}

// notify delivers (address, session) on the callback goroutine unless the retrieval was stopped
// by then.
func (r *retrieval) notify(info decodedInfo) {
	r.s.callbacks.Execute(func() {
		r.s.mu.Lock()
		l, stopped := r.listener, r.stopped
		r.s.mu.Unlock()
		if !stopped {
			l.NotifyLeaderAddress(info.address, info.session)
		}
	})
}

func (r *retrieval) reportError(err error) {
	r.s.callbacks.Execute(func() {
		r.s.mu.Lock()
		l, stopped := r.listener, r.stopped
		r.s.mu.Unlock()
		if !stopped {
			l.HandleError(err)
		}
	})
}

// watcher is the client's one polling goroutine for all its retrievals: every poll interval (and
// at once when a retrieval starts) it learns the lock holder's session — its own while the
// client leads, else the latch's if a probe finds the lock held — and reads each retrieval's
// leader file.
type watcher struct {
	s     *Services
	probe *os.File // the latch, opened for the shared-lock probe (its own open file description)

	// Guarded by s.mu.
	retrievals map[*retrieval]struct{}

	kick       chan struct{}
	stop, done chan struct{}
	// latchSession is the last session read from the latch intact (a torn read keeps it).
	latchSession ha.SessionID
	// over is a session known to have ended: the latch's while a probe found the lock free (the
	// client's own last one, once it gave its leadership up, is Services.former). A session is never taken up again (each
	// leadership draws a new one), so while the latch still names it, a client that holds the
	// lock has not written its own yet, and nobody is reported: the ended leader's file is never
	// reported again once a retrieval said no leader.
	over ha.SessionID
}

func newWatcher(s *Services) (*watcher, error) {
	probe, err := os.Open(filepath.Join(s.dir, leaderDir, latchFile))
	if err != nil {
		return nil, fmt.Errorf("ha/file: %w", err)
	}
	w := &watcher{s: s, probe: probe, retrievals: make(map[*retrieval]struct{}),
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go w.run()
	return w, nil
}

// add and remove run with s.mu held.
func (w *watcher) add(r *retrieval) {
	w.retrievals[r] = struct{}{}
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

func (w *watcher) remove(r *retrieval) { delete(w.retrievals, r) }

func (w *watcher) close() {
	close(w.stop)
	<-w.done
	_ = w.probe.Close()
}

func (w *watcher) run() {
	defer close(w.done)
	ticker := time.NewTicker(w.s.poll)
	defer ticker.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-ticker.C:
		case <-w.kick:
		}
		w.pollOnce()
		if w.s.afterPoll != nil {
			w.s.afterPoll()
		}
	}
}

// readLatch learns whether a client holds the lock and, if the latch reads intact, its session
// (into latchSession). A shared lock the probe gets means nobody holds it, and keeps anybody
// from taking it while the latch is read: the session read then is over for good.
func (w *watcher) readLatch() (held bool, err error) {
	w.s.latchTurn <- struct{}{} // the client's own tries of the lock wait (Services.latchTurn)
	defer func() { <-w.s.latchTurn }()
	free, err := flock(w.probe, syscall.LOCK_SH|syscall.LOCK_NB)
	if err != nil {
		return false, err
	}
	if free && w.s.duringProbe != nil {
		w.s.duringProbe()
	}
	session, ok, err := readLatch(w.probe)
	if ok && err == nil {
		w.latchSession = session
	}
	if !free {
		return true, err
	}
	if ok && err == nil {
		w.over = session // nobody writes the latch while the probe holds its shared lock
	}
	if uerr := unlock(w.probe); err == nil {
		err = uerr
	}
	return false, err
}

// pollOnce reads the current leader session and every retrieval's leader file, and notifies the
// retrievals whose leader changed.
func (w *watcher) pollOnce() {
	s := w.s
	s.mu.Lock()
	rs := make([]*retrieval, 0, len(w.retrievals))
	for r := range w.retrievals {
		rs = append(rs, r)
	}
	session, held, former := s.session, s.leading, s.former
	s.mu.Unlock()
	if len(rs) == 0 {
		return
	}
	var latchErr error
	if !held {
		held, latchErr = w.readLatch()
		session = w.latchSession
		if session == w.over || session == former {
			held = false // a holder that has not written its session yet
		}
	}
	for _, r := range rs {
		err := latchErr
		var info decodedInfo
		if err == nil {
			info, err = readLeaderFile(s.leaderFile(r.component))
		}
		if err != nil {
			if err.Error() != r.lastErr {
				r.lastErr = err.Error()
				r.reportError(err)
			}
			continue
		}
		r.lastErr = ""
		if !held || info.session != session || session == (ha.SessionID{}) {
			info = decodedInfo{}
		}
		if info != r.last {
			r.last = info
			r.notify(info)
		}
	}
}

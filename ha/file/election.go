package file

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/ha"
	"github.com/jobgraph/jobgraph/internal/durable"
)

// leaderInfo is a leader file's content: the confirmed address and its session. Flink:
// LeaderInformation, as ZooKeeper's connection_info node holds it.
type leaderInfo struct {
	Address string `json:"address"`
	Session string `json:"session"`
}

// DispatcherLeaderElection returns a new handle of the client's Dispatcher election, for one
// contender.
func (s *Services) DispatcherLeaderElection() ha.LeaderElection {
	return &Election{s: s, name: dispatcherName}
}

// ResourceManagerLeaderElection returns a new handle of the client's ResourceManager election,
// for one contender.
func (s *Services) ResourceManagerLeaderElection() ha.LeaderElection {
	return &Election{s: s, name: resourceMgrName}
}

// JobMasterLeaderElection returns a new handle of the client's election of job's JobMaster, for
// one contender (one JobMaster runner): the runner of the job's next leader session, started
// while the previous one still closes, waits on its own handle and is granted once the previous
// one's handle is closed.
func (s *Services) JobMasterLeaderElection(job jobgraph.JobID) ha.LeaderElection {
	return &Election{s: s, name: job.String()}
}

// component is one component's election within a client: the handles started on it, in the
// order started; the first is granted (with the client's session) while the client leads, the
// others wait until the ones before them are closed. Guarded by Services.mu.
type component struct {
	name      string
	queue     []*Election
	leader    *Election // the granted handle; nil when none is
	confirmed bool      // the leader file holds (or is queued to hold) the leader's address
	// grants counts grants and revocations, so a queued leader-file write of an earlier grant
	// is skipped.
	grants uint64
}

// Election is a handle of one component's election within a client, for one contender.
// Safe for concurrent use.
type Election struct {
	s    *Services
	name string // dispatcher, resource_manager or a JobID

	// Guarded by s.mu.
	contender       ha.LeaderContender
	started, closed bool
}

// Start registers contender and makes the client campaign if it does not yet. The contender is
// granted with the client's session at once if the client leads and no earlier handle of the
// component is still open. Errors: a second Start on the handle, Start after the handle's Close
// or after Services.Close.
func (e *Election) Start(contender ha.LeaderContender) error {
	s := e.s
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return fmt.Errorf("ha/file: %s election: Start after Services.Close", e.name)
	case e.closed:
		return fmt.Errorf("ha/file: %s election: Start on a closed election handle", e.name)
	case e.started:
		return fmt.Errorf("ha/file: %s election: a second contender started on one election handle", e.name)
	}
	e.started, e.contender = true, contender
	c := s.components[e.name]
	if c == nil {
		c = &component{name: e.name}
		s.components[e.name] = c
	}
	c.queue = append(c.queue, e)
	if s.leading {
		c.grantLocked(s)
	}
	s.startCampaignLocked()
	return nil
}

// grantLocked grants the first handle if none is granted (s.mu held, s leading).
func (c *component) grantLocked(s *Services) {
	if c.leader != nil || len(c.queue) == 0 {
		return
	}
	c.leader = c.queue[0]
	c.grants++
	c.confirmed = false
	ct, session := c.leader.contender, s.session
	s.callbacks.Execute(func() { ct.GrantLeadership(session) })
}

// revokeLocked revokes the granted handle, if any, and queues the removal of its leader file
// (s.mu held).
func (c *component) revokeLocked(s *Services) {
	if c.leader == nil {
		return
	}
	ct := c.leader.contender
	c.leader = nil
	c.grants++
	s.callbacks.Execute(ct.RevokeLeadership)
	if c.confirmed {
		c.confirmed = false
		path := s.leaderFile(c.name)
		s.io.post(func() {
			_ = s.fenced("removing the leader file of "+c.name, func() error { return durable.Remove(path) })
		})
	}
}

// ConfirmLeadership publishes address as the component's leader if the handle's contender is
// granted and session is its session: the leader file is written (atomically and durably) on the
// client's I/O goroutine, so this returns at once; a failure goes to the contender's
// HandleError. A stale session is ignored.
func (e *Election) ConfirmLeadership(session ha.SessionID, address string) {
	s := e.s
	s.mu.Lock()
	c := s.components[e.name]
	if c == nil || c.leader != e || !s.leading || session != s.session {
		s.mu.Unlock()
		return
	}
	c.confirmed = true
	grant, ct, path := c.grants, e.contender, s.leaderFile(e.name)
	s.mu.Unlock()
	s.io.post(func() {
		// The grant is checked under the fence: a revocation (DropLeadership, Close) takes the
		// fence's write lock, so it happens wholly before this check — the write is skipped, not
		// refused as a stale leader's, which the contender would hear as an election error — or
		// wholly after the write.
		s.fence.RLock()
		defer s.fence.RUnlock()
		s.mu.Lock()
		current := c.grants == grant && s.leading
		s.mu.Unlock()
		if !current {
			return // revoked since: the revocation's removal is queued behind
		}
		data, err := json.Marshal(leaderInfo{Address: address, Session: session.String()})
		if err == nil {
			err = durable.WriteFile(path, data)
		}
		if err != nil {
			err = fmt.Errorf("ha/file: writing the leader file of %s: %w", e.name, err)
			s.callbacks.Execute(func() { ct.HandleError(err) })
		}
	})
}

// HasLeadership reports whether session is the session the handle's contender was granted and
// still holds.
func (e *Election) HasLeadership(session ha.SessionID) bool {
	s := e.s
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.components[e.name]
	return c != nil && c.leader == e && s.leading && session == s.session
}

// Close removes the handle's contender; if it leads it is revoked, the removal of its leader file
// queued, and the component's next handle, if any, granted. Closing twice is harmless. The
// removal is a fenced write: when the close also ends the client's leadership (below), it may be
// refused and the file stay behind. That is harmless: a retrieval reports a leader file only
// while its session is the latch's and a client holds the lock.
//
// Closing the client's last handle with a contender ends the client's part in the election: it
// gives up its leadership (releasing the lock) or stops campaigning, as Flink's
// DefaultLeaderElectionService does once its last contender is removed. Errors: the I/O error of
// releasing the lock.
func (e *Election) Close() error {
	s := e.s
	s.mu.Lock()
	if e.closed || !e.started {
		e.closed = true
		s.mu.Unlock()
		return nil
	}
	e.closed = true
	c := s.components[e.name]
	wasLeader := c.leader == e
	if wasLeader {
		c.revokeLocked(s)
	}
	if i := slices.Index(c.queue, e); i >= 0 {
		c.queue = slices.Delete(c.queue, i, i+1)
	}
	if len(c.queue) == 0 {
		delete(s.components, e.name)
	} else if wasLeader && s.leading {
		c.grantLocked(s)
	}
	last := len(s.components) == 0
	s.mu.Unlock()
	if last {
		return s.resignIfUnused()
	}
	return nil
}

// removeStaleLeaderFiles removes the leader files whose session is not session: a previous
// leader's, never to be confirmed again. Best effort, on the I/O goroutine after a grant.
func (s *Services) removeStaleLeaderFiles(session ha.SessionID) {
	dir := filepath.Join(s.dir, leaderDir)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, ent := range entries {
		name := ent.Name()
		if ent.IsDir() || durable.IsTemp(name) || !strings.HasSuffix(name, ".json") {
			continue
		}
		info, err := readLeaderFile(filepath.Join(dir, name))
		if err != nil || info.session == session {
			continue
		}
		path := filepath.Join(dir, name)
		_ = s.fenced("removing a stale leader file", func() error {
			// Confirmed since the listing with the new session? Then it stays.
			if again, err := readLeaderFile(path); err == nil && again.session == session {
				return nil
			}
			return durable.Remove(path)
		})
	}
}

// decodedInfo is a leader file read: address and session, the zero value for a missing file.
type decodedInfo struct {
	address string
	session ha.SessionID
}

// readLeaderFile reads a leader file; a missing one reads as the zero decodedInfo.
func readLeaderFile(path string) (decodedInfo, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return decodedInfo{}, nil
	}
	if err != nil {
		return decodedInfo{}, err
	}
	var info leaderInfo
	if err := json.Unmarshal(data, &info); err != nil {
		return decodedInfo{}, fmt.Errorf("ha/file: leader file %s: %w", path, err)
	}
	u, err := uuid.Parse(info.Session)
	if err != nil {
		return decodedInfo{}, fmt.Errorf("ha/file: leader file %s: session %q: %w", path, jobgraph.Truncate(info.Session), err)
	}
	return decodedInfo{address: info.Address, session: ha.SessionID(u)}, nil
}

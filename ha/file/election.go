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

// DispatcherLeaderElection returns the client's Dispatcher election (the same one every call).
func (s *Services) DispatcherLeaderElection() ha.LeaderElection {
	return s.election(dispatcherName)
}

// ResourceManagerLeaderElection returns the client's ResourceManager election (the same one
// every call).
func (s *Services) ResourceManagerLeaderElection() ha.LeaderElection {
	return s.election(resourceMgrName)
}

// JobMasterLeaderElection returns the client's election of job's JobMaster (the same one while
// it is in use; a new one once every contender of it was closed).
func (s *Services) JobMasterLeaderElection(job jobgraph.JobID) ha.LeaderElection {
	return s.election(job.String())
}

func (s *Services) election(component string) *Election {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.byComponent[component]
	if e == nil {
		e = &Election{s: s, component: component}
		s.byComponent[component] = e
	}
	return e
}

// Election is one component's election within a client. Its first contender is granted with the
// client's session while the client leads; later contenders wait until the election is closed.
// Safe for concurrent use.
type Election struct {
	s         *Services
	component string // dispatcher, resource_manager or a JobID

	// Guarded by s.mu.
	contenders []ha.LeaderContender
	leader     ha.LeaderContender // the granted contender; nil when none is
	confirmed  bool               // the leader file holds (or is queued to hold) the leader's address
	// grants counts grants and revocations, so a queued leader-file write of an earlier grant
	// is skipped.
	grants uint64
}

// Start registers contender and makes the client campaign if it does not yet. The contender is
// granted with the client's session at once if the client leads and nobody leads this election.
// Errors: the contender was started before on this election, or the client is closed.
func (e *Election) Start(contender ha.LeaderContender) error {
	s := e.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("ha/file: %s election: Start after Services.Close", e.component)
	}
	if slices.Contains(e.contenders, contender) {
		return fmt.Errorf("ha/file: %s election: contender started twice", e.component)
	}
	e.contenders = append(e.contenders, contender)
	s.elections[e] = struct{}{}
	if s.byComponent[e.component] == nil {
		s.byComponent[e.component] = e
	}
	if s.leading {
		e.grantLocked()
	}
	s.startCampaignLocked()
	return nil
}

// grantLocked grants the first contender if nobody leads the election (s.mu held, s leading).
func (e *Election) grantLocked() {
	if e.leader != nil || len(e.contenders) == 0 {
		return
	}
	e.leader = e.contenders[0]
	e.grants++
	e.confirmed = false
	c, session := e.leader, e.s.session
	e.s.callbacks.Execute(func() { c.GrantLeadership(session) })
}

// revokeLocked revokes the leader, if any, and queues the removal of its leader file (s.mu held).
func (e *Election) revokeLocked() {
	if e.leader == nil {
		return
	}
	c := e.leader
	e.leader = nil
	e.grants++
	e.s.callbacks.Execute(c.RevokeLeadership)
	if e.confirmed {
		e.confirmed = false
		s, path := e.s, e.s.leaderFile(e.component)
		s.io.post(func() {
			_ = s.fenced("removing the leader file of "+e.component, func() error { return durable.Remove(path) })
		})
	}
}

// ConfirmLeadership publishes address as the component's leader if session is the granted one:
// the leader file is written (atomically and durably) on the client's I/O goroutine, so this
// returns at once; a failure goes to the contender's HandleError. A stale session is ignored.
func (e *Election) ConfirmLeadership(session ha.SessionID, address string) {
	s := e.s
	s.mu.Lock()
	if e.leader == nil || !s.leading || session != s.session {
		s.mu.Unlock()
		return
	}
	e.confirmed = true
	grant, c, path := e.grants, e.leader, s.leaderFile(e.component)
	s.mu.Unlock()
	s.io.post(func() {
		s.mu.Lock()
		current := e.grants == grant
		s.mu.Unlock()
		if !current {
			return // revoked since: the revocation's removal is queued behind
		}
		err := s.fenced("writing the leader file of "+e.component, func() error {
			data, err := json.Marshal(leaderInfo{Address: address, Session: session.String()})
			if err != nil {
				return err
			}
			return durable.WriteFile(path, data)
		})
		if err != nil {
			s.callbacks.Execute(func() { c.HandleError(err) })
		}
	})
}

// HasLeadership reports whether session is the session the election's contender was granted
// and still holds.
func (e *Election) HasLeadership(session ha.SessionID) bool {
	s := e.s
	s.mu.Lock()
	defer s.mu.Unlock()
	return e.leader != nil && s.leading && session == s.session
}

// Close removes every contender of the election; the leader is revoked and its leader file
// removed. A contender started afterwards leads next (with the client's session while it
// leads).
//
// Closing the client's last election with a contender ends the client's part in the election:
// it gives up its leadership (releasing the lock) or stops campaigning, as Flink's
// DefaultLeaderElectionService does once its last contender is removed. Errors: the I/O error of
// releasing the lock.
func (e *Election) Close() error {
	s := e.s
	s.mu.Lock()
	e.revokeLocked()
	e.contenders = nil
	delete(s.elections, e)
	if s.byComponent[e.component] == e {
		delete(s.byComponent, e.component)
	}
	last := len(s.elections) == 0
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

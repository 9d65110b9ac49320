package file

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"syscall"
	"time"

	"github.com/google/uuid"

	"github.com/jobgraph/jobgraph/ha"
)

// The latch holds the leading client's session as one fixed-size record, "<uuid> <crc32c>\n":
// written in place with one pwrite (the file is never replaced, since the lock belongs to its
// inode), so a reader racing the write may see a torn record, which the checksum rejects.
const latchRecordLen = 36 + 1 + 8 + 1

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func latchRecord(session ha.SessionID) []byte {
	id := session.String()
	return fmt.Appendf(nil, "%s %08x\n", id, crc32.Checksum([]byte(id), castagnoli))
}

// parseLatch reads a latch record: the zero session for an empty latch (nobody ever led), ok
// false for a torn or foreign record.
func parseLatch(data []byte) (session ha.SessionID, ok bool) {
	if len(data) == 0 {
		return ha.SessionID{}, true
	}
	if len(data) != latchRecordLen || data[36] != ' ' || data[latchRecordLen-1] != '\n' {
		return ha.SessionID{}, false
	}
	var sum uint32
	if _, err := fmt.Sscanf(string(data[37:45]), "%08x", &sum); err != nil || sum != crc32.Checksum(data[:36], castagnoli) {
		return ha.SessionID{}, false
	}
	u, err := uuid.ParseBytes(data[:36])
	if err != nil {
		return ha.SessionID{}, false
	}
	return ha.SessionID(u), true
}

// readLatch reads the session in the latch f; ok false for a torn record.
func readLatch(f *os.File) (ha.SessionID, bool, error) {
	buf := make([]byte, latchRecordLen+1)
	n, err := f.ReadAt(buf, 0)
	if err != nil && n == 0 && !errors.Is(err, io.EOF) {
		return ha.SessionID{}, false, err
	}
	s, ok := parseLatch(buf[:n])
	return s, ok, nil
}

// writeLatch writes session into the latch f durably: one pwrite, a truncate to the record's
// length (a no-op unless the file held something else), fsync.
func writeLatch(f *os.File, session ha.SessionID) error {
	if _, err := f.WriteAt(latchRecord(session), 0); err != nil {
		return err
	}
	if err := f.Truncate(latchRecordLen); err != nil {
		return err
	}
	return f.Sync()
}

// tryLock takes the exclusive lock on f without blocking; false if another open file
// description holds a lock on it.
func tryLock(f *os.File) (bool, error) {
	return flock(f, syscall.LOCK_EX|syscall.LOCK_NB)
}

func flock(f *os.File, how int) (bool, error) {
	for {
		err := syscall.Flock(int(f.Fd()), how)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, syscall.EWOULDBLOCK):
			return false, nil
		case errors.Is(err, syscall.EINTR):
			continue
		}
		return false, fmt.Errorf("ha/file: flock %s: %w", f.Name(), err)
	}
}

func unlock(f *os.File) error {
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_UN); err != nil {
		return fmt.Errorf("ha/file: unlocking %s: %w", f.Name(), err)
	}
	return nil
}

// startCampaignLocked makes the client take part in the election unless it does (s.mu held).
func (s *Services) startCampaignLocked() {
	if s.campaignStop != nil || s.closed {
		return
	}
	stop := make(chan struct{})
	s.campaignStop = stop
	s.campaigns.Go(func() { s.campaign(stop, false) })
}

// DropLeadership is a test and operations hook: the client gives its leadership up now as a lost
// lock would end it, without closing anything. Every granted contender is revoked (callbacks on
// the client's callback goroutine, as ever), every write from now on is refused with
// ha.ErrNotLeader, and the lock is released; nothing durable is removed — not even the leader
// files, which retrievals stop reporting once nobody holds the lock and the next leader removes.
// The client stays in the election with every contender started on it: it tries the lock again
// one PollInterval from now and then every PollInterval, so another client polling meanwhile
// may take it first; when it wins, it leads with a new session and grants its contenders again.
// A client that does not lead (or is closed) is left as it is: it returns nil. Errors: the I/O
// error of releasing the lock (the client does not lead any more all the same). Safe for
// concurrent use; it does not wait for the callbacks. There is no Flink counterpart (Flink's
// drivers lose leadership only through the coordination service); Kubernetes' or ZooKeeper's
// lost lease is what it simulates.
func (s *Services) DropLeadership() error {
	s.fence.Lock() // no fenced write runs from here on
	defer s.fence.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.leading || s.closed {
		return nil
	}
	s.former = s.session
	s.leading, s.session = false, ha.SessionID{}
	for _, c := range s.components {
		if c.leader != nil {
			ct := c.leader.contender
			c.leader, c.confirmed = nil, false
			c.grants++ // a leader-file write queued for the ended grant is skipped
			s.callbacks.Execute(ct.RevokeLeadership)
		}
	}
	err := unlock(s.latch)
	// The campaign that won returned; campaignStop stays set while a contender is left, so a
	// new campaign goroutine takes the stop channel over, waiting one poll first.
	stop := make(chan struct{})
	close(s.campaignStop)
	s.campaignStop = stop
	s.campaigns.Go(func() { s.campaign(stop, true) })
	return err
}

// campaign tries the lock (at once unless wait, else after one poll interval) and then every
// poll interval until the client leads or stop is closed. An error (of flock or of writing the
// session) goes to every contender's HandleError, once until a different one, and the next poll
// tries again.
func (s *Services) campaign(stop chan struct{}, wait bool) {
	ticker := time.NewTicker(s.poll)
	defer ticker.Stop()
	var lastErr string
	if wait {
		select {
		case <-stop:
			return
		case <-ticker.C:
		}
	}
	for {
		won, err := s.tryLead(stop)
		if won {
			return
		}
		if err != nil && err.Error() != lastErr {
			lastErr = err.Error()
			s.reportToContenders(err)
		}
		select {
		case <-stop:
			return
		case <-ticker.C:
		}
	}
}

// tryLead takes the lock if it is free, writes a new session into the latch and grants every
// contender of the client. If stop was closed meanwhile (the last contender left, or Close), it
// releases the lock again.
func (s *Services) tryLead(stop chan struct{}) (bool, error) {
	s.latchTurn <- struct{}{} // not inside the client's own probe (Services.latchTurn)
	got, err := tryLock(s.latch)
	<-s.latchTurn
	if s.afterAttempt != nil {
		s.afterAttempt(got)
	}
	if err != nil || !got {
		return false, err
	}
	session := ha.NewSessionID()
	if err := writeLatch(s.latch, session); err != nil {
		_ = unlock(s.latch)
		return false, fmt.Errorf("ha/file: writing the session into %s: %w", s.latch.Name(), err)
	}
	s.fence.Lock()
	defer s.fence.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-stop: // closed under s.mu, so no contender was granted by this campaign
		return false, unlock(s.latch)
	default:
	}
	s.leading, s.session = true, session
	for _, c := range s.components {
		c.grantLocked(s)
	}
	s.io.post(func() { s.removeStaleLeaderFiles(session) })
	return true, nil
}

// resignIfUnused ends the client's part in the election once no contender is left, as Flink's
// DefaultLeaderElectionService closes its driver when its last contender is removed: a
// campaign stops, a leadership is given up (the lock released), so another client may lead,
// and a contender started later makes the client campaign for a new session. Leader files the
// revocations queued for removal stay (the removals are refused once the client does not
// lead); retrievals see nobody holds the lock, and the next leader removes them.
func (s *Services) resignIfUnused() error {
	s.fence.Lock()
	defer s.fence.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.components) > 0 || s.closed || s.campaignStop == nil {
		return nil
	}
	close(s.campaignStop)
	s.campaignStop = nil
	if !s.leading {
		return nil
	}
	s.former = s.session
	s.leading, s.session = false, ha.SessionID{}
	return unlock(s.latch)
}

// reportToContenders hands err to the HandleError of every contender of the client.
func (s *Services) reportToContenders(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.components {
		for _, e := range c.queue {
			ct := e.contender
			s.callbacks.Execute(func() { ct.HandleError(err) })
		}
	}
}

package file

// SetAfterAttempt makes s call fn after each try of the lock; call it before the first
// contender starts.
func (s *Services) SetAfterAttempt(fn func(got bool)) { s.afterAttempt = fn }

// SetAfterPoll makes s call fn after each poll of its retrievals; call it before the first
// retrieval starts.
func (s *Services) SetAfterPoll(fn func()) { s.afterPoll = fn }

var ParseLatch, LatchRecord = parseLatch, latchRecord

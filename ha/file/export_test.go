package file

// SetAfterAttempt makes s call fn after each try of the lock; call it before the first
// contender starts.
func (s *Services) SetAfterAttempt(fn func(got bool)) { s.afterAttempt = fn }

// SetAfterPoll makes s call fn after each poll of its retrievals; call it before the first
// retrieval starts.
func (s *Services) SetAfterPoll(fn func()) { s.afterPoll = fn }

// SetDuringProbe makes s call fn while its retrievals' probe holds a shared lock of the latch;
// call it before the first retrieval starts.
func (s *Services) SetDuringProbe(fn func()) { s.duringProbe = fn }

var ParseLatch, LatchRecord = parseLatch, latchRecord

package file

// SetAfterAttempt makes s call fn after each try of the lock; call it before the first
// contender starts.
func (s *Services) SetAfterAttempt(fn func(got bool)) { s.afterAttempt = fn }

var ParseLatch, LatchRecord = parseLatch, latchRecord

package netshuffle

// NumConns is the number of client connections e holds to data servers (a test hook: every
// stream to one server shares one).
func (e *Environment) NumConns() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.conns)
}

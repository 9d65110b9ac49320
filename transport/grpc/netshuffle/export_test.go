package netshuffle

// NumConns is the number of client connections e holds to data servers (a test hook: every
// stream to one server shares one).
func (e *Environment) NumConns() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.conns)
}

// NumProduced is the number of partitions produced here that e remembers (to fail one whose
// records cannot be sent).
func (e *Environment) NumProduced() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.produced)
}

// Int64sPerFrame is how many int64 records (8 bytes each, no lengths) a chunk, and so a full
// Data frame, holds with the default BufferSize.
const Int64sPerFrame = (DefaultBufferSize - frameOverhead) / 8

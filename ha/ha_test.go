package ha_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/ha"
)

func TestSessionIDStringIsTheUUID(t *testing.T) {
	s := ha.SessionID{0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef}
	assert.Equal(t, "12345678-9abc-def0-0123-456789abcdef", s.String())
	assert.Equal(t, "00000000-0000-0000-0000-000000000000", ha.SessionID{}.String())

	n := ha.NewSessionID()
	u, err := uuid.Parse(n.String())
	require.NoError(t, err)
	assert.Equal(t, ha.SessionID(u), n, "String parses back to the same bytes")
	assert.Equal(t, uuid.Version(4), u.Version())
	assert.Equal(t, uuid.RFC4122, u.Variant())
	assert.Len(t, n.String(), 36)
}

func TestNewSessionIDIsFresh(t *testing.T) {
	seen := make(map[ha.SessionID]bool)
	for range 100 {
		s := ha.NewSessionID()
		require.NotEqual(t, ha.SessionID{}, s)
		require.False(t, seen[s], "session %s returned twice", s)
		seen[s] = true
	}
}

func TestSessionIDIsTheJobMasterIDOfItsSession(t *testing.T) {
	// The runner fences a JobMaster with JobMasterID(session); the conversion keeps the bytes.
	s := ha.NewSessionID()
	id := jobgraph.JobMasterID(s)
	assert.Equal(t, s, ha.SessionID(id))
	u := uuid.UUID(s)
	assert.Equal(t, fmt.Sprintf("%x", u[:]), id.String())
}

func TestErrorsAreDistinct(t *testing.T) {
	assert.False(t, errors.Is(ha.ErrNotFound, ha.ErrAlreadyExists))
	assert.False(t, errors.Is(ha.ErrAlreadyExists, ha.ErrNotFound))
	assert.EqualError(t, ha.ErrNotFound, "ha: not found")
	assert.EqualError(t, ha.ErrAlreadyExists, "ha: already exists")
}

package randid

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestNewIsUniqueAcrossCalls(t *testing.T) {
	const n = 100_000
	seen := make(map[[16]byte]struct{}, n)
	for range n {
		seen[New()] = struct{}{}
	}
	assert.Len(t, seen, n, "no two of %d IDs are equal", n)
}

func TestNewUUIDIsARandomUUID(t *testing.T) {
	for range 1000 {
		b := NewUUID()
		u, err := uuid.FromBytes(b[:])
		require.NoError(t, err)
		assert.Equal(t, uuid.Version(4), u.Version(), "%s", u)
		assert.Equal(t, uuid.RFC4122, u.Variant(), "%s", u)
		parsed, err := uuid.Parse(u.String())
		require.NoError(t, err)
		assert.Equal(t, b, [16]byte(parsed), "round trip through the text form")
	}
}

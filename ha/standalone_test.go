package ha_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph/ha"
)

type heard struct{ leaders []string }

func (h *heard) NotifyLeaderAddress(address string, session ha.SessionID) {
	h.leaders = append(h.leaders, address+" "+session.String())
}

func (h *heard) HandleError(err error) { h.leaders = append(h.leaders, "error "+err.Error()) }

// A StandaloneLeaderRetrieval names its fixed address with ha.NoSession once, on Start's
// goroutine; a second Start is refused, and Stop changes nothing.
func TestStandaloneLeaderRetrievalNamesItsAddressOnce(t *testing.T) {
	r := ha.NewStandaloneLeaderRetrieval("resourcemanager")
	var h heard
	require.NoError(t, r.Start(&h))
	assert.Equal(t, []string{"resourcemanager 00000000-0000-0000-0000-000000000000"}, h.leaders)
	assert.EqualError(t, r.Start(&h), "ha: StandaloneLeaderRetrieval started twice")
	assert.NoError(t, r.Stop())
	assert.Len(t, h.leaders, 1)
}

package hascenarios

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// withoutRegrantedCycle takes out the revoked runner's one extra JobMaster however far it got
// before the close ended it, and only one.
func TestWithoutRegrantedCycle(t *testing.T) {
	l1 := "INITIALIZING CREATED RUNNING SUSPENDED "
	l2 := "INITIALIZING CREATED RUNNING"
	for _, c := range []struct {
		extra   string // between L1's SUSPENDED and L2's INITIALIZING
		removed bool
		ran     bool
	}{
		{"", false, false},
		{"INITIALIZING ", true, false},
		{"INITIALIZING SUSPENDED ", true, false},
		{"INITIALIZING CREATED ", true, false},
		{"INITIALIZING CREATED SUSPENDED ", true, false}, // closed in CREATED: 3 in 300 runs of the cleanup scenario
		{"INITIALIZING CREATED RUNNING ", true, true},
		{"INITIALIZING CREATED RUNNING SUSPENDED ", true, true},
	} {
		log := strings.Fields(l1 + c.extra + l2)
		out, removed, ran, ok := withoutRegrantedCycle(log, false)
		assert.Equal(t, strings.Fields(l1+l2), out, "extra %q", c.extra)
		assert.Equal(t, c.removed, removed, "extra %q", c.extra)
		assert.Equal(t, c.ran, ran, "extra %q", c.extra)
		assert.True(t, ok, "extra %q", c.extra)

		// With one leader per client no extra JobMaster may run at all.
		_, _, _, ok = withoutRegrantedCycle(log, true)
		assert.Equal(t, !c.removed, ok, "one leader per client, extra %q", c.extra)
	}

	// Two extra JobMasters are one too many.
	two := strings.Fields(l1 + "INITIALIZING CREATED SUSPENDED INITIALIZING CREATED RUNNING SUSPENDED " + l2)
	out, removed, _, ok := withoutRegrantedCycle(two, false)
	assert.Equal(t, two, out)
	assert.True(t, removed)
	assert.False(t, ok)
}

package tetest

import (
	"errors"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/rpc"
)

// The case of rpc.ResourceManagerDisconnector. A gateway that does not implement it passes: the
// case then only logs that it was not applicable.

// disconnectorRegistersAgain: a disconnect carrying another ResourceManagerID than the
// registration's is refused with rpc.ErrFencingTokenMismatch and changes nothing; the current
// ResourceManager's makes the TaskExecutor register with it again, with its slots as they are,
// after which it still takes that ResourceManager's slot requests.
func disconnectorRegistersAgain(s *suite) {
	d, ok := s.te.(rpc.ResourceManagerDisconnector)
	if !ok {
		s.t.Logf("not applicable: the gateway under test (%T) does not implement rpc.ResourceManagerDisconnector; the case passes", s.te)
		return
	}
	a := jobgraph.NewAllocationID()
	s.allocate(0, a)
	// Its heartbeat answer carries the ResourceManagerID its registration got (the fake refuses
	// any other): the registration's answer has reached it.
	require.NoError(s.t, s.te.HeartbeatFromResourceManager(s.ctx, "tetest-rm"))
	s.waitFor("the TaskExecutor answers with its slot report", func() bool { return len(s.rm.heartbeatReports()) > 0 })

	err := d.DisconnectResourceManager(s.ctx, jobgraph.NewResourceManagerID(), rpc.Failure(errors.New("tetest: an earlier ResourceManager dropped the TaskExecutor")))
	require.ErrorIs(s.t, err, rpc.ErrFencingTokenMismatch, "a disconnect of another ResourceManagerID than the registration's")
	s.settle()
	assert.Len(s.t, s.rm.registrations(), 1, "a stale disconnect changes nothing")

	require.NoError(s.t, d.DisconnectResourceManager(s.ctx, s.rm.id, rpc.Failure(errors.New("tetest: the ResourceManager dropped the TaskExecutor"))))
	s.waitFor("the TaskExecutor registers again", func() bool { return len(s.rm.registrations()) > 1 })
	s.settle()
	regs := s.rm.registrations()
	assert.Len(s.t, regs, 2, "it registers again once")
	again := regs[1]
	assert.Equal(s.t, teID, again.ResourceID)
	got := map[rpc.SlotID][2]string{}
	for _, st := range again.SlotReport.Slots {
		got[st.SlotID] = [2]string{st.AllocationID.String(), st.JobID.String()}
	}
	assert.Equal(s.t, map[rpc.SlotID][2]string{
		s.slot(0): {a.String(), s.job.String()},
		s.slot(1): {jobgraph.AllocationID{}.String(), jobgraph.JobID{}.String()},
	}, got, "the registration reports its slots as they are")
	// Still registered with the same ResourceManager: its slot requests are taken.
	s.allocate(1, jobgraph.NewAllocationID())
}

package resourcemanager

import (
	"cmp"
	"context"
	"slices"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/rpc"
)

// RequestTaskManagerInfo returns every registered TaskExecutor as an rpc.TaskManagerInfo (slots
// total and free, the jobs of the others, resources, last heartbeat), sorted by ResourceID. The
// state is copied on the main loop; the caller owns the result. Safe from any goroutine; it waits
// for the loop or ctx. Errors: ErrClosed, ErrNotRunning before Start, an error wrapping
// ha.ErrNotLeader while it does not lead, ctx's. Flink: ResourceManagerGateway.requestTaskManagerInfo
// (and requestResourceOverview, whose sums the caller takes over the list).
func (rm *ResourceManager) RequestTaskManagerInfo(ctx context.Context) ([]rpc.TaskManagerInfo, error) {
	if err := rm.closedErr(); err != nil {
		return nil, err
	}
	return submit(ctx, rm, func() ([]rpc.TaskManagerInfo, error) {
		if err := rm.checkRunning(); err != nil {
			return nil, err
		}
		byTE := make(map[jobgraph.ResourceID]*rpc.TaskManagerInfo, len(rm.taskExecutors))
		out := make([]rpc.TaskManagerInfo, 0, len(rm.taskExecutors))
		for id, reg := range rm.taskExecutors {
			out = append(out, rpc.TaskManagerInfo{ResourceID: id, Address: reg.address, LastHeartbeat: reg.lastHeartbeat,
				TotalResource: reg.total})
		}
		slices.SortFunc(out, func(a, b rpc.TaskManagerInfo) int { return cmp.Compare(a.ResourceID, b.ResourceID) })
		for i := range out {
			byTE[out[i].ResourceID] = &out[i]
		}
		slots := rm.sm.Slots()
		slices.SortFunc(slots, func(a, b SlotInfo) int { return cmp.Compare(a.SlotID.SlotNumber, b.SlotID.SlotNumber) })
		sum := make(map[jobgraph.ResourceID]jobgraph.ResourceProfile, len(out))
		for _, s := range slots {
			info := byTE[s.SlotID.ResourceID]
			if info == nil {
				continue
			}
			info.SlotsNumber++
			sum[info.ResourceID] = sum[info.ResourceID].Merge(s.Profile)
			if s.State == SlotFree {
				info.FreeSlots++
				info.FreeResource = info.FreeResource.Merge(s.Profile)
				continue
			}
			info.AllocatedSlots = append(info.AllocatedSlots, rpc.AllocatedSlotInfo{JobID: s.Job, Resource: s.Profile})
		}
		for i := range out {
			if out[i].TotalResource.IsUnknown() {
				out[i].TotalResource = sum[out[i].ResourceID]
			}
		}
		return out, nil
	})
}

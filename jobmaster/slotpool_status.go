package jobmaster

import (
	"context"

	"github.com/jobgraph/jobgraph/internal/mainloop"
)

// SlotPoolStatus is a read-only snapshot of a JobMaster's slot pool, in slots. Flink logs the
// same counts as DeclarativeSlotPoolBridge.getSlotServiceStatus.
type SlotPoolStatus struct {
	// Allocated: slots the pool holds that serve a request (a task runs or will run in them).
	Allocated int
	// Free: slots the pool holds that serve no request; they go back to their TaskExecutor after
	// slot.idle.timeout.
	Free int
	// Pending: slot requests waiting for a slot.
	Pending int
}

// SlotPoolStatus answers, on the JobMaster's loop, how many slots its pool holds allocated and
// free and how many requests wait. It fails with ctx's error, or the loop's when the JobMaster is
// closed. Safe for concurrent use.
func (jm *DefaultJobMaster) SlotPoolStatus(ctx context.Context) (SlotPoolStatus, error) {
	return mainloop.Submit(ctx, jm.loop, func() (SlotPoolStatus, error) {
		if jm.closed || jm.pool == nil {
			return SlotPoolStatus{}, nil
		}
		return SlotPoolStatus{
			Allocated: jm.pool.NumAllocatedSlots(),
			Free:      jm.pool.NumFreeSlots(),
			Pending:   jm.pool.NumPendingRequests(),
		}, nil
	})
}

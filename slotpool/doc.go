// Package slotpool is a JobMaster's slot pool: Flink's DeclarativeSlotPool together with the
// parts of DeclarativeSlotPoolBridge, DefaultDeclarativeSlotPool and PhysicalSlot that the
// DefaultScheduler relies on.
//
// A Pool keeps the job's resource requirements (how many slots of which ResourceProfile), accepts
// the slots TaskExecutors offer up to those requirements, and hands the accepted (physical) slots
// out to the scheduler. It is a plain struct driven only from its JobMaster's main loop: it has no
// locks and no goroutines and does no I/O. What it needs done elsewhere it asks for through Config:
//
//   - Timers schedules slot-request and idle-slot timeouts back onto the main loop
//     (*mainloop.Loop satisfies it);
//   - OnRequirementsChanged hands the full requirement list to the JobMaster, which declares it to
//     the ResourceManager (ResourceManagerGateway.DeclareRequiredResources);
//   - OnNewSlots reports slots that became free and were not taken by a pending request;
//   - OnReturnSlot reports each slot leaving the pool, for TaskExecutorGateway.FreeSlot.
//
// # Two ways to use it
//
// The scheduler's way (Flink's DefaultScheduler through the DeclarativeSlotPoolBridge): each
// RequestSlot or AllocateFreeSlot adds one requirement for its profile, and the requirement is
// withdrawn when that request ends: it times out, is canceled, or its slot is returned
// (CancelRequest) or lost (ReleaseSlot, ReleaseSlots). The declared requirements are then exactly
// the pending plus the allocated requests, and free slots are surplus that goes back to its
// TaskExecutor after slot.idle.timeout.
//
// The declarative way (Flink's AdaptiveScheduler): IncreaseRequirements, DecreaseRequirements and
// SetRequirements state what the job wants, ReserveFreeSlot and FreeReservedSlot use slots without
// touching those numbers. The two kinds of requirement are kept apart (Requirements reports their
// sum), so SetRequirements never disturbs the requirements of pending requests; still, as in Flink,
// a job should use one way, not both.
//
// # Callbacks
//
// Callbacks (the Config hooks, SlotRequest.OnDone callbacks, Payload.Release) never run in the
// middle of a change: the pool first brings its state to rest, then runs them, in order, before the
// outermost pool method returns (or at the end of the timer callback that caused them). A callback
// may call the pool again.
package slotpool

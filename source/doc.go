// Package source is FLIP-27's split-enumerator source on the operator-coordinator plug point
// (package coordination): a SourceCoordinator on the JobMaster hands out splits — units of input,
// a file, a range of rows — on demand to the source's readers, the subtasks of the vertex, which
// read one split after another. A reader that is slower than the others asks less often and so
// gets fewer splits; no split is read twice and none is lost when a reader fails.
//
// # The two sides
//
// The coordinator side runs on the JobMaster's loop: NewProvider (any SplitEnumerator),
// StaticSplitsProvider (the splits listed in the vertex's OperatorCoordinatorConfig) and
// SplitListProvider (splits a host function lists) give a coordination.Provider the host registers
// in the JobMaster's coordination.Registry under the name the vertex's OperatorCoordinator field
// gives. Flink: SourceCoordinator, SourceCoordinatorContext, SplitEnumerator, SplitEnumeratorContext,
// SplitAssignmentTracker and FileSource's StaticFileSplitEnumerator.
//
// The reader side runs in the task: ReadSplits, called by the vertex's Invokable, asks the
// coordinator for a split, waits for it, hands it to the task's read function, asks for the next,
// and returns once the coordinator said there are no more splits and every split it got was read.
// Flink: SourceOperator with SourceReaderBase.
//
// # Events (JSON, one object per event)
//
// reader → coordinator:
//
//	{"type":"RequestSplit"}                                  Flink: RequestSplitEvent
//
// coordinator → reader:
//
//	{"type":"AddSplits","splits":[{"id":"f-7","payload":"…base64…"}]}   Flink: AddSplitEvent
//	{"type":"NoMoreSplits"}                                  Flink: NoMoreSplitsEvent
//
// A reader has at most one RequestSplit outstanding: it asks again only once an AddSplits or
// NoMoreSplits answered it and it has nothing left to read.
//
// # State (JSON)
//
// The coordinator's checkpoint state (what CheckpointCoordinator returns and ResetToCheckpoint
// takes):
//
//	{"version":1,"enumerator":"…base64 of the SplitEnumerator's SnapshotState…"}
//
// The static enumerator's state is the list of splits not handed out yet, in the order they will
// be: {"splits":[{"id":…,"payload":…},…]}. A reader's checkpoint state (its
// checkpoint.StateHandle.Data) is the splits it was given and has not finished, the one it reads
// first, each with the Position its read function reached: {"splits":[{"id":…,"position":12},…]}.
//
// # Failures
//
// The coordinator remembers which splits it gave each subtask since each checkpoint (Flink's
// SplitAssignmentTracker). A region restart that resets a subtask to checkpoint c
// (OperatorCoordinator.SubtaskReset, c = coordination.NoCheckpoint if there is none) returns
// exactly the splits handed to that subtask after c to the enumerator (SplitEnumerator.AddSplitsBack),
// which hands them out again; the subtask's restored reader state holds the splits it had at c. A
// global failover (ResetToCheckpoint) replaces the enumerator by one restored from the
// checkpoint's state, and every reader restores its own splits from the same checkpoint. The
// assignments are not part of the coordinator's state: after a restore to c every subtask starts
// from c, so no later region restart can go back before c (Flink's SourceCoordinator stopped
// checkpointing its SplitAssignmentTracker for the same reason).
//
// What the runtime guarantees and this package relies on: events to one attempt arrive in the
// order they were sent and in order with checkpoint triggers (a split sent before a checkpoint's
// coordinator snapshot is in the reader's snapshot for that checkpoint; one sent after it reaches
// the reader after its snapshot), and only the current attempt's events reach the coordinator.
package source

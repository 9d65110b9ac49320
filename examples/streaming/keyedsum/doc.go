// Package keyedsum is the job logic of the streaming example: a STREAMING job that reads the
// integers 1..N, keeps a running sum per key in checkpointed keyed state, and writes every update
// to files exactly once, through a two-phase-commit sink; and Check, which verifies that output.
//
// The job (BuildJob) has three vertices, all of parallelism p and max parallelism m (the number of
// key groups, default 128):
//
//		source ──ALL_TO_ALL, PIPELINED_BOUNDED, key groups of i mod K──▶ sum ──POINTWISE, PIPELINED_BOUNDED──▶ sink
//
//	  - "source" (task code "streaming-source"): the integers 1..N are S splits; split j holds
//	    the i with i mod S = j, in increasing order. On a fresh start subtask k takes the splits j
//	    with j mod p = k (round robin) and emits one record per integer, taking turns among its
//	    splits. Each split's position (the next integer it emits) is operator list state, one
//	    element per split under the name SplitsState, in SPLIT_DISTRIBUTE mode: restored at another
//	    parallelism, the splits are dealt out again as Flink's RoundRobinOperatorStateRepartitioner
//	    does, and each continues where the snapshot left it. Record i goes to the sum subtask that
//	    owns key i mod K: keygroup.AssignKeyToParallelOperator of the key's Long.hashCode over m and
//	    the sum's parallelism, as Flink's KeyGroupStreamPartitioner routes a keyBy.
//	  - "sum" (task code "streaming-sum"): adds i to the running sum of key i mod K and emits an
//	    Update (key, running sum, i) per record. The sums are keyed state, checkpointed by key
//	    group (checkpoint.StateHandle.KeyedState): restored at another parallelism, subtask i gets
//	    exactly the key groups [⌈i·m/p⌉, ⌈(i+1)·m/p⌉) with their sums. It reports what it restored
//	    in accumulator AccRestoredSums.
//	  - "sink" (task code "streaming-sink"): writes each Update as the line "key\tsum\ti\n" to
//	    OUT/part-<subtask>, committing the lines of a checkpoint only once that checkpoint
//	    completed (Flink's TwoPhaseCommitSinkFunction): the lines received since the previous
//	    snapshot are a transaction, pre-committed at the snapshot (they become part of the sink's
//	    state) and committed — appended to the file — by NotifyCheckpointComplete. A restored sink
//	    first commits the transactions its state holds, idempotently (see CommitMarker), and drops
//	    the lines of the failed attempt that no completed checkpoint covers.
//
// Exactly-once means (Check): every i in 1..N appears once in the output, and for every key the
// sums, read in file order, are the running totals of that key's i values in that order. Over
// several runs (stop with a savepoint, restore at another parallelism into a new directory) the
// same holds with the runs' outputs read one after the other.
//
// Failures (JobOptions.Failures, PlanFailures) are injected at seeded record counts: failure k
// makes one task of attempt k return ErrInjectedFailure after it handled a given number of
// records; the job's restart strategy restarts the region (the whole job: every edge is
// pipelined) from the latest completed checkpoint.
//
// JobOptions.PauseAfter makes the sources emit exactly the integers 1..M and then wait (taking
// part in checkpoints, see RunSource) until the job is stopped: WaitSourcesPaused tells a host in
// the same process when every source got there, so a stop-with-savepoint covers exactly 1..M.
//
// Every vertex Config is JSON of Config. The vertices have fixed IDs (VertexID), derived from
// their names, so a savepoint of one run restores into a job built by another, as Flink matches
// operator state by the operators' uids.
package keyedsum

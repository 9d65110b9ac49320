// Package shuffletest is the conformance suite for taskexecutor.ShuffleEnvironment
// implementations (the TaskExecutor side of the shuffle plug point; the in-memory
// *taskexecutor.Shuffle is the default). It drives writers and readers through the public API
// only, as a TaskExecutor does: a pipelined partition delivers one producer's records in order
// and back-pressures a writer whose reader does not read; an ALL_TO_ALL exchange delivers each
// record to exactly the subpartition it was emitted to and ends a gate (io.EOF) once every
// producer finished; a reader may attach before its producer; a stopped task's waiting Emit and
// Next return with its stop's error; Fail and FailPartitions fail the readers
// (taskexecutor.ErrProducerFailed); a BLOCKING partition is readable once finished, and again,
// a HYBRID one while produced, and again;
// ReleasePartitionsLocally, ReleaseAllOf and ReleaseJobPartitions release what their contracts
// say and nothing else; a subpartition index out of range is an error naming it; checkpoint
// barriers keep their place in the record stream and Aligned/ResumeAlignment hold back an
// aligned channel until resumed. Run it from the implementation's tests:
//
//	func TestShuffleConformance(t *testing.T) {
//		shuffletest.TestShuffleEnvironment(t, shuffletest.Config{
//			NewEnvironment: func(t *testing.T) taskexecutor.ShuffleEnvironment { return myshuffle.New() },
//		})
//	}
//
// Each case gets a fresh environment from NewEnvironment (which must clean up after itself with
// t.Cleanup, if it needs to) and uses the writers of one task and the readers of one task each
// from one goroutine, as the TaskExecutor does. Without a ShuffleMaster the deployment
// descriptors carry no rpc.ShuffleDescriptor (the in-memory default needs none); an
// implementation whose readers and writers need the descriptors of its JobMaster side gives the
// suite its scheduler.ShuffleMaster (Config.NewShuffleMaster): the suite then registers every
// partition before it creates the partition's writer and deploys writers and readers with the
// descriptors, as the scheduler does.
// A shuffle whose records, barriers and failures cross processes as bytes (a network shuffle)
// sets Config.AcrossProcesses: barriers and causes are then compared by value and text.
// TestShuffleEnvironment runs in real time; TestShuffleEnvironmentInBubble runs each case inside
// its own testing/synctest bubble, where it also checks that a waiting call is durably blocked
// (synctest.Wait) rather than only that it returns the right thing. No case sleeps: each waits
// for what it expects for at most Timeout.
package shuffletest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/rpc"
	"github.com/jobgraph/jobgraph/scheduler"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

// Timeout bounds every wait of the suite (virtual time in a bubble).
const Timeout = 10 * time.Second

// DefaultMaxBufferedRecords is Config.MaxBufferedRecords when it is 0.
const DefaultMaxBufferedRecords = 1 << 16

// Config is what the suite needs of an implementation.
type Config struct {
	// NewEnvironment returns a fresh ShuffleEnvironment for one case.
	NewEnvironment func(t *testing.T) taskexecutor.ShuffleEnvironment
	// MaxBufferedRecords bounds how many small records (ints) a pipelined subpartition whose
	// reader does not read accepts — in the writer, in flight and at the reader together —
	// before Emit blocks (DefaultMaxBufferedRecords). The back-pressure case emits one more
	// and fails if Emit never blocked.
	MaxBufferedRecords int
	// NewShuffleMaster, if not nil, returns the JobMaster side of env's shuffle service for one
	// case. The suite registers each partition with it (RegisterPartitionWithProducer) just
	// before it creates the partition's writer, and puts the descriptor it returned in the
	// writer's ResultPartitionDeploymentDescriptor and in the ShuffleDescriptors of every
	// reader attached later; a reader attached before its partition was registered gets a
	// descriptor naming the ResultPartitionID only (Flink's UnknownShuffleDescriptor), as the
	// scheduler deploys it. nil: every descriptor is nil.
	NewShuffleMaster func(t *testing.T, env taskexecutor.ShuffleEnvironment) scheduler.ShuffleMaster
	// AcrossProcesses says that records, barriers and failures cross as bytes (a network
	// shuffle): a reader gets a barrier equal to the one broadcast rather than the same
	// pointer, and a failure whose cause has the text of the producer's cause rather than the
	// same error (errors.Is still matches the taskexecutor sentinels). Records must come back
	// equal and of the type emitted: the suite emits int, string and Record. A reader may
	// have received all of a small partition before it is released, so the release cases
	// then write more records than MaxBufferedRecords.
	AcrossProcesses bool
}

// TestShuffleEnvironment runs the conformance suite, one subtest per case, in real time.
func TestShuffleEnvironment(t *testing.T, cfg Config) { run(t, cfg, false) }

// TestShuffleEnvironmentInBubble runs the conformance suite with each case inside a
// testing/synctest bubble. Only for implementations whose goroutines all end when the case's
// writers and readers are done, and that do no real I/O.
func TestShuffleEnvironmentInBubble(t *testing.T, cfg Config) { run(t, cfg, true) }

var cases = []struct {
	name string
	run  func(s *suite)
}{
	{"Pipelined/OneProducersRecordsInOrder", pipelinedInOrder},
	{"Pipelined/AllToAllDeliversEachRecordToItsSubpartition", allToAll},
	{"Pipelined/ReaderAttachesBeforeItsProducer", readerBeforeProducer},
	{"Pipelined/BackPressureAndStoppedEmit", backPressure},
	{"Stop/StoppedNextReturnsTheStopsError", stoppedNext},
	{"Fail/ProducerFailureFailsItsReaders", producerFails},
	{"Fail/FailPartitionsFailsReadersBeforeAnyWriter", failPartitions},
	{"Blocking/ReadableOnlyAfterFinishAndAgain", blockingReadAfterFinish},
	{"Hybrid/ReadableWhileProducedAndAgain", hybridReadWhileProduced},
	{"Release/ReleasePartitionsLocally", releaseLocally},
	{"Release/ReleaseAllOfReturnsThatProducersPartitions", releaseAllOf},
	{"Release/ReleaseJobPartitionsKeepsFinishedPersistentOnes", releaseJob},
	{"Errors/SubpartitionIndexOutOfRange", subpartitionOutOfRange},
	{"Barriers/KeepTheirPlaceInTheRecordStream", barriersInOrder},
	{"Barriers/AlignmentHoldsBackAChannelUntilResumed", barrierAlignment},
}

func run(t *testing.T, cfg Config, inBubble bool) {
	require.NotNil(t, cfg.NewEnvironment, "Config.NewEnvironment")
	if cfg.MaxBufferedRecords <= 0 {
		cfg.MaxBufferedRecords = DefaultMaxBufferedRecords
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := func(t *testing.T) {
				env := cfg.NewEnvironment(t)
				require.NotNil(t, env, "NewEnvironment returned nil")
				s := &suite{t: t, ctx: t.Context(), env: env, cfg: cfg, inBubble: inBubble,
					job: jobgraph.NewJobID(), vertex: jobgraph.NewJobVertexID()}
				if cfg.NewShuffleMaster != nil {
					s.master = cfg.NewShuffleMaster(t, env)
					require.NotNil(t, s.master, "NewShuffleMaster returned nil")
					s.registered = make(map[rpc.ResultPartitionID]rpc.ShuffleDescriptor)
				}
				c.run(s)
			}
			if inBubble {
				synctest.Test(t, body)
			} else {
				body(t)
			}
		})
	}
}

// suite is what one case sees.
type suite struct {
	t        *testing.T
	ctx      context.Context
	env      taskexecutor.ShuffleEnvironment
	cfg      Config
	inBubble bool
	job      jobgraph.JobID
	vertex   jobgraph.JobVertexID // of every producer
	// master is Config.NewShuffleMaster's, nil without one; registered holds the descriptor it
	// gave each partition the suite created a writer for. Used from the case's goroutine only.
	master     scheduler.ShuffleMaster
	registered map[rpc.ResultPartitionID]rpc.ShuffleDescriptor
}

// Where the producers of the suite run.
const (
	te1 = jobgraph.ResourceID("shuffletest-te-1")
	te2 = jobgraph.ResourceID("shuffletest-te-2")
)

// partition is partition i of data set ds, produced by attempt 0 of subtask i.
func (s *suite) partition(ds jobgraph.IntermediateDataSetID, i int) rpc.ResultPartitionID {
	return rpc.ResultPartitionID{
		PartitionID: jobgraph.IntermediateResultPartitionID{IntermediateDataSetID: ds, PartitionIndex: i},
		ProducerID: jobgraph.ExecutionAttemptID{
			ExecutionVertexID: jobgraph.ExecutionVertexID{JobVertexID: s.vertex, Subtask: i},
		},
	}
}

// partitions are partitions 0..n-1 of a new data set.
func (s *suite) partitions(n int) []rpc.ResultPartitionID {
	ds := jobgraph.NewIntermediateDataSetID()
	out := make([]rpc.ResultPartitionID, n)
	for i := range out {
		out[i] = s.partition(ds, i)
	}
	return out
}

// owner is a task of job on TaskExecutor te with its own stop signal; stop stops it.
func (s *suite) owner(job jobgraph.JobID, te jobgraph.ResourceID, name string) (o taskexecutor.ShuffleIOOwnerContext, stop func(error)) {
	ts, stop := taskexecutor.NewTaskStop(s.ctx)
	s.t.Cleanup(func() { stop(errors.New("case over")) })
	return taskexecutor.ShuffleIOOwnerContext{JobID: job, TaskName: name, TaskExecutor: te, Stop: ts}, stop
}

// producerDesc is the deployment descriptor of partition id, produced on te for job: registered
// with the ShuffleMaster first, if there is one.
func (s *suite) producerDesc(job jobgraph.JobID, te jobgraph.ResourceID, id rpc.ResultPartitionID, typ jobgraph.ResultPartitionType, subs int) rpc.ResultPartitionDeploymentDescriptor {
	s.t.Helper()
	d := rpc.ResultPartitionDeploymentDescriptor{ResultPartitionID: id, ResultType: typ, NumberOfSubpartitions: subs}
	if s.master == nil {
		return d
	}
	sd, err := s.master.RegisterPartitionWithProducer(job,
		scheduler.PartitionDescriptor{ResultPartitionID: id, DataSetID: id.PartitionID.IntermediateDataSetID, ResultType: typ,
			PartitionIndex: id.PartitionID.PartitionIndex, NumberOfSubpartitions: subs},
		scheduler.ProducerDescriptor{ExecutionAttemptID: id.ProducerID, ProducerLocation: te})
	require.NoError(s.t, err, "RegisterPartitionWithProducer")
	require.Equal(s.t, id, sd.ResultPartitionID, "the ShuffleMaster's descriptor names the partition registered")
	s.registered[id] = sd
	d.ShuffleDescriptor = &sd
	return d
}

// writerOn registers a producer task on te of job for partition id and returns its writer.
func (s *suite) writerOn(job jobgraph.JobID, te jobgraph.ResourceID, id rpc.ResultPartitionID, typ jobgraph.ResultPartitionType, subs int) taskexecutor.ShuffleWriter {
	s.t.Helper()
	o, _ := s.owner(job, te, "producer "+id.PartitionID.String())
	ws, err := s.env.CreateResultPartitionWriters(o, []rpc.ResultPartitionDeploymentDescriptor{s.producerDesc(job, te, id, typ, subs)})
	require.NoError(s.t, err)
	require.Len(s.t, ws, 1)
	require.Equal(s.t, subs, ws[0].NumSubpartitions())
	return ws[0]
}

func (s *suite) writer(id rpc.ResultPartitionID, typ jobgraph.ResultPartitionType, subs int) taskexecutor.ShuffleWriter {
	s.t.Helper()
	return s.writerOn(s.job, te1, id, typ, subs)
}

// gateDesc reads subpartition sub of each of ids.
func (s *suite) gateDesc(typ jobgraph.ResultPartitionType, sub int, ids []rpc.ResultPartitionID) rpc.InputGateDeploymentDescriptor {
	var ds jobgraph.IntermediateDataSetID
	if len(ids) > 0 {
		ds = ids[0].PartitionID.IntermediateDataSetID
	}
	d := rpc.InputGateDeploymentDescriptor{DataSetID: ds, ResultType: typ, Partitions: ids, ConsumedSubpartitionIndex: sub}
	if s.master != nil {
		d.ShuffleDescriptors = make([]rpc.ShuffleDescriptor, len(ids))
		for i, id := range ids {
			sd, ok := s.registered[id]
			if !ok {
				sd = rpc.ShuffleDescriptor{ResultPartitionID: id} // not registered yet: unknown
			}
			d.ShuffleDescriptors[i] = sd
		}
	}
	return d
}

// readerOf attaches a consumer task of the case's job to d and returns its reader, closed when
// the case ends.
func (s *suite) readerOf(d rpc.InputGateDeploymentDescriptor) taskexecutor.ShuffleReader {
	s.t.Helper()
	r, _ := s.stoppableReader(d)
	return r
}

func (s *suite) stoppableReader(d rpc.InputGateDeploymentDescriptor) (taskexecutor.ShuffleReader, func(error)) {
	s.t.Helper()
	o, stop := s.owner(s.job, te2, fmt.Sprintf("consumer of subpartition %d", d.ConsumedSubpartitionIndex))
	rs, err := s.env.CreateInputGates(o, []rpc.InputGateDeploymentDescriptor{d})
	require.NoError(s.t, err)
	require.Len(s.t, rs, 1)
	s.t.Cleanup(rs[0].Close)
	return rs[0], stop
}

func (s *suite) reader(typ jobgraph.ResultPartitionType, sub int, ids ...rpc.ResultPartitionID) taskexecutor.ShuffleReader {
	s.t.Helper()
	return s.readerOf(s.gateDesc(typ, sub, ids))
}

// next reads one record, which must be there within Timeout.
func (s *suite) next(r taskexecutor.ShuffleReader) any {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(s.ctx, Timeout)
	defer cancel()
	rec, err := r.Next(ctx)
	require.NoError(s.t, err)
	return rec
}

// drain reads r to io.EOF (each record within Timeout) and returns what it read.
func (s *suite) drain(r taskexecutor.ShuffleReader) []any {
	s.t.Helper()
	out, err := s.readToError(r)
	require.Equal(s.t, io.EOF, err, "after %d records", len(out))
	return out
}

// readToError reads r until Next returns an error, each record within Timeout.
func (s *suite) readToError(r taskexecutor.ShuffleReader) ([]any, error) {
	ctx, cancel := context.WithTimeout(s.ctx, Timeout)
	defer cancel()
	var out []any
	for {
		rec, err := r.Next(ctx)
		if err != nil {
			return out, err
		}
		out = append(out, rec)
	}
}

// nothingNow asserts that r has nothing to hand out now: no record, no end, no error. In a
// bubble it first lets every goroutine of the case (the implementation's too) settle.
func (s *suite) nothingNow(r taskexecutor.ShuffleReader, why string) {
	s.t.Helper()
	if s.inBubble {
		synctest.Wait()
	}
	rec, ok, err := r.Poll()
	require.NoError(s.t, err, why)
	require.False(s.t, ok, "%s: got %v", why, rec)
}

// sameBarrier asserts that got is the barrier want a writer broadcast: the same pointer, or an
// equal barrier when it crossed as bytes (Config.AcrossProcesses).
func (s *suite) sameBarrier(want *taskexecutor.CheckpointBarrier, got any, msgAndArgs ...any) {
	s.t.Helper()
	if !s.cfg.AcrossProcesses {
		assert.Same(s.t, want, got, msgAndArgs...)
		return
	}
	b, ok := got.(*taskexecutor.CheckpointBarrier)
	if assert.True(s.t, ok, "a *CheckpointBarrier, got %T", got) {
		assert.Equal(s.t, want.ID, b.ID, msgAndArgs...)
		assert.True(s.t, want.Timestamp.Equal(b.Timestamp), "timestamp %v, want %v", b.Timestamp, want.Timestamp)
		assert.Equal(s.t, want.Properties, b.Properties, msgAndArgs...)
	}
}

// causedBy asserts that err has cause among its causes: the same error, or one with its text
// when it crossed as bytes (Config.AcrossProcesses).
func (s *suite) causedBy(err, cause error, what string) {
	s.t.Helper()
	if !s.cfg.AcrossProcesses {
		assert.ErrorIs(s.t, err, cause, what)
		return
	}
	if assert.Error(s.t, err, what) {
		assert.Contains(s.t, err.Error(), cause.Error(), what)
	}
}

// await waits for done, within Timeout.
func (s *suite) await(done <-chan struct{}, what string) {
	s.t.Helper()
	select {
	case <-done:
	case <-time.After(Timeout):
		s.t.Fatalf("%s did not happen within %v", what, Timeout)
	}
}

// blocked asserts, in a bubble, that done is not closed once every goroutine is durably
// blocked; in real time it cannot tell and checks nothing.
func (s *suite) blocked(done <-chan struct{}, what string) {
	s.t.Helper()
	if !s.inBubble {
		return
	}
	synctest.Wait()
	select {
	case <-done:
		s.t.Fatalf("%s returned; it should wait", what)
	default:
	}
}

// promptly asserts that done is closed: in a bubble once every goroutine settled, without any
// virtual time passing; in real time within Timeout.
func (s *suite) promptly(done <-chan struct{}, what string) {
	s.t.Helper()
	if !s.inBubble {
		s.await(done, what)
		return
	}
	start := time.Now()
	synctest.Wait()
	select {
	case <-done:
	default:
		s.t.Fatalf("%s is still waiting", what)
	}
	assert.Zero(s.t, time.Since(start), "%s took virtual time", what)
}

func ints(from, to int) []any {
	out := make([]any, 0, to-from)
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

// emit emits from..to-1 to subpartition sub.
func (s *suite) emit(w taskexecutor.ShuffleWriter, sub, from, to int) {
	s.t.Helper()
	for i := from; i < to; i++ {
		require.NoError(s.t, w.Emit(s.ctx, sub, i))
	}
}

// produce runs fn in a goroutine of its own (a producer task) and returns a channel closed when it
// returned; fn's error fails the case.
func (s *suite) produce(fn func() error) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := fn(); err != nil {
			s.t.Errorf("producer: %v", err)
		}
	}()
	return done
}

// emitAndFinish emits from..to-1 to subpartition sub, then finishes.
func (s *suite) emitAndFinish(w taskexecutor.ShuffleWriter, sub, from, to int) func() error {
	return func() error {
		for i := from; i < to; i++ {
			if err := w.Emit(s.ctx, sub, i); err != nil {
				return fmt.Errorf("emit %d: %w", i, err)
			}
		}
		return w.Finish(s.ctx)
	}
}

// ---- pipelined partitions ----

// The records of one producer arrive in order at a pipelined reader, which then ends, and ends
// again.
func pipelinedInOrder(s *suite) {
	t := s.t
	for _, typ := range []jobgraph.ResultPartitionType{jobgraph.PipelinedBounded, jobgraph.Pipelined} {
		id := s.partitions(1)[0]
		w := s.writer(id, typ, 1)
		r := s.reader(typ, 0, id)
		const n = 10000
		done := s.produce(s.emitAndFinish(w, 0, 0, n))
		got := s.drain(r)
		s.await(done, "the producer's Finish")
		assert.Equal(t, ints(0, n), got, typ.String())
		_, err := r.Next(s.ctx)
		assert.Equal(t, io.EOF, err, "%s: io.EOF again after the end", typ)
		assert.True(t, r.ProducersFinished(), typ.String())
	}
}

// Record is one record of the ALL_TO_ALL case: producer P's Seq-th record, emitted to
// subpartition Sub. Exported so that a shuffle whose records cross as bytes can encode it.
type Record struct{ P, Sub, Seq int }

// An ALL_TO_ALL exchange of P producers and C consumers, every gate listing the same partitions:
// each record reaches exactly the reader of the subpartition it was emitted to, each producer's
// records in order, and a gate ends only once every producer finished.
func allToAll(s *suite) {
	t := s.t
	const p, c, each = 3, 4, 200 // each producer emits each/c records to every subpartition
	ids := s.partitions(p)
	writers := make([]taskexecutor.ShuffleWriter, p)
	for i, id := range ids {
		writers[i] = s.writer(id, jobgraph.Pipelined, c)
	}
	readers := make([]taskexecutor.ShuffleReader, c)
	for j := range readers {
		readers[j] = s.reader(jobgraph.Pipelined, j, ids...)
	}
	produce := func(pi int) func() error {
		return func() error {
			for i := range each {
				if err := writers[pi].Emit(s.ctx, i%c, Record{P: pi, Sub: i % c, Seq: i}); err != nil {
					return err
				}
			}
			return writers[pi].Finish(s.ctx)
		}
	}
	// Every producer but the last emits and finishes.
	var producers []<-chan struct{}
	for pi := range p - 1 {
		producers = append(producers, s.produce(produce(pi)))
	}
	type result struct {
		early, late     []Record
		unfinishedSeen  bool
		finishedAtEnd   bool
		errEarly, errAt error
	}
	results := make([]result, c)
	phase1 := make([]chan struct{}, c)
	lastStarted := make(chan struct{})
	consumers := make([]chan struct{}, c)
	for j := range c {
		phase1[j], consumers[j] = make(chan struct{}), make(chan struct{})
		go func() {
			defer close(consumers[j])
			r, res := readers[j], &results[j]
			ctx, cancel := context.WithTimeout(s.ctx, Timeout)
			defer cancel()
			for len(res.early) < (p-1)*each/c {
				x, err := r.Next(ctx)
				if err != nil {
					res.errEarly = err
					close(phase1[j])
					return
				}
				res.early = append(res.early, x.(Record))
			}
			res.unfinishedSeen = !r.ProducersFinished()
			close(phase1[j])
			<-lastStarted
			for {
				x, err := r.Next(ctx)
				if err != nil {
					res.errAt = err
					break
				}
				res.late = append(res.late, x.(Record))
			}
			res.finishedAtEnd = r.ProducersFinished()
		}()
	}
	for j := range c {
		s.await(phase1[j], fmt.Sprintf("reader %d's records of the first %d producers", j, p-1))
	}
	for _, d := range producers {
		s.await(d, "a producer's Finish")
	}
	// Every producer but the last finished and every record of theirs was read: the gates have
	// not ended.
	for j := range c {
		require.NoError(t, results[j].errEarly, "reader %d", j)
		assert.True(t, results[j].unfinishedSeen, "reader %d: ProducersFinished while producer %d has not finished", j, p-1)
	}
	close(lastStarted)
	if s.inBubble {
		// The readers wait in Next: the last producer has neither written nor finished.
		for j := range c {
			s.blocked(consumers[j], fmt.Sprintf("reader %d's Next before the last producer finished", j))
		}
	}
	last := s.produce(produce(p - 1))
	s.await(last, "the last producer's Finish")
	for j := range c {
		s.await(consumers[j], fmt.Sprintf("reader %d's end", j))
	}
	for j := range c {
		res := results[j]
		assert.Equal(t, io.EOF, res.errAt, "reader %d ends with io.EOF", j)
		assert.True(t, res.finishedAtEnd, "reader %d: ProducersFinished after io.EOF", j)
		all := append(append([]Record(nil), res.early...), res.late...)
		next := make([]int, p) // the next Seq expected of each producer at this reader
		for pi := range next {
			next[pi] = j
		}
		for _, x := range all {
			require.Equal(t, j, x.Sub, "reader %d got %+v, emitted to subpartition %d", j, x, x.Sub)
			require.Equal(t, next[x.P], x.Seq, "reader %d: producer %d's records in order", j, x.P)
			next[x.P] += c
		}
		for pi := range p {
			assert.Equal(t, each+j, next[pi], "reader %d: every record of producer %d", j, pi)
		}
		for _, x := range res.early {
			assert.NotEqual(t, p-1, x.P, "reader %d got a record of the last producer before it started", j)
		}
		assert.Len(t, res.late, each/c, "reader %d: the last producer's records after it started", j)
	}
}

// A reader may attach before its producer registered: it has nothing (no record, no end, no
// error) until the producer writes, then gets every record in order and the end.
func readerBeforeProducer(s *suite) {
	t := s.t
	id := s.partitions(1)[0]
	r := s.reader(jobgraph.PipelinedBounded, 1, id)
	s.nothingNow(r, "a reader whose producer has not registered")
	var got []any
	var err error
	done := make(chan struct{})
	go func() { defer close(done); got, err = s.readToError(r) }()
	s.blocked(done, "Next before the producer registered")
	w := s.writer(id, jobgraph.PipelinedBounded, 2)
	producer := s.produce(s.emitAndFinish(w, 1, 0, 1000))
	s.await(producer, "the producer's Finish")
	s.await(done, "the reader's end")
	assert.Equal(t, io.EOF, err)
	assert.Equal(t, ints(0, 1000), got)
}

// A pipelined writer whose reader does not read blocks in Emit (back-pressure) and goes on once
// the reader reads; a stopped producer's waiting Emit returns at once with its stop's error.
func backPressure(s *suite) {
	t := s.t
	id := s.partitions(1)[0]
	o, stop := s.owner(s.job, te1, "producer")
	ws, err := s.env.CreateResultPartitionWriters(o, []rpc.ResultPartitionDeploymentDescriptor{s.producerDesc(s.job, te1, id, jobgraph.PipelinedBounded, 1)})
	require.NoError(t, err)
	w := ws[0]
	r := s.reader(jobgraph.PipelinedBounded, 0, id) // attached, does not read yet
	max := s.cfg.MaxBufferedRecords
	// More than the reader reads below plus twice the bound: the emitter never runs out of
	// records unless Emit fails to block.
	limit := 4 * (max + 1)

	var emitted atomic.Int64
	var emitErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range limit {
			if emitErr = w.Emit(context.Background(), 0, i); emitErr != nil {
				return
			}
			emitted.Add(1)
		}
	}()
	read := 0
	check := func(x any) {
		t.Helper()
		require.Equal(t, read, x, "records in order")
		read++
		// Whatever was accepted and not read yet is at most the bound (emitted only grows after
		// an Emit returned, so the check can only be too lenient, never too strict).
		require.LessOrEqual(t, int(emitted.Load())-read, max, "records accepted beyond what the reader took")
	}
	if s.inBubble {
		synctest.Wait()
		select {
		case <-done:
			require.NoError(t, emitErr)
			t.Fatalf("Emit never blocked: %d records accepted without a read (Config.MaxBufferedRecords %d)", emitted.Load(), max)
		default:
		}
		before := int(emitted.Load())
		require.LessOrEqual(t, before, max, "records accepted before Emit blocked")
		// The reader takes what is there (at most what was accepted); the writer goes on, and
		// blocks again.
		for read < before {
			x, ok, err := r.Poll()
			require.NoError(t, err)
			if !ok {
				break
			}
			check(x)
		}
		require.Positive(t, read, "the reader found nothing of %d records accepted", before)
		synctest.Wait()
		assert.Greater(t, int(emitted.Load()), before, "the writer went on once the reader read")
		s.blocked(done, "Emit to a reader that stopped reading again")
	} else {
		for range 2 * max / 3 {
			check(s.next(r))
		}
	}
	// The producer task is stopped while its Emit waits (or is about to).
	stop(errors.New("canceled by the suite"))
	s.promptly(done, "a stopped task's Emit")
	require.Error(t, emitErr, "Emit after its task stopped")
	require.Error(t, o.Stop.Err())
	assert.ErrorIs(t, emitErr, o.Stop.Err(), "a stopped task's Emit returns its stop's error")
	assert.ErrorIs(t, w.Emit(context.Background(), 0, -1), o.Stop.Err(), "and so does every Emit after")
	// What the reader can still take of what was accepted comes in order.
	for {
		x, ok, err := r.Poll()
		if err != nil || !ok {
			break
		}
		check(x)
	}
}

// A stopped consumer's Next returns its stop's error (the task's context's: context.Canceled),
// whether it waits or has records at hand.
func stoppedNext(s *suite) {
	t := s.t
	// Waiting: its producer has not even registered.
	waiting, stopWaiting := s.stoppableReader(s.gateDesc(jobgraph.PipelinedBounded, 0, s.partitions(1)))
	var err error
	done := make(chan struct{})
	go func() { defer close(done); _, err = waiting.Next(context.Background()) }()
	s.blocked(done, "Next on a partition with no records")
	stopWaiting(errors.New("canceled by the suite"))
	s.promptly(done, "a stopped task's waiting Next")
	assert.Equal(t, context.Canceled, err, "a stopped task's waiting Next")
	_, err = waiting.Next(context.Background())
	assert.Equal(t, context.Canceled, err, "Next after the stop")

	// With records at hand.
	id := s.partitions(1)[0]
	r, stop := s.stoppableReader(s.gateDesc(jobgraph.PipelinedBounded, 0, []rpc.ResultPartitionID{id}))
	w := s.writer(id, jobgraph.PipelinedBounded, 1)
	s.emit(w, 0, 0, 3)
	w.FlushIdle()
	assert.Equal(t, 0, s.next(r))
	stop(errors.New("canceled by the suite"))
	_, err = r.Next(context.Background())
	assert.Equal(t, context.Canceled, err, "a stopped task's Next with records at hand")
	_, _, err = r.Poll()
	assert.Equal(t, context.Canceled, err, "a stopped task's Poll")
}

// ---- failures ----

// A producer's Fail makes its readers (waiting or not) get an error matching ErrProducerFailed
// and the cause, naming the partition; the error sticks.
func producerFails(s *suite) {
	t := s.t
	for _, typ := range []jobgraph.ResultPartitionType{jobgraph.PipelinedBounded, jobgraph.Blocking, jobgraph.HybridFull} {
		id := s.partitions(1)[0]
		w := s.writer(id, typ, 1)
		r := s.reader(typ, 0, id)
		var err error
		done := make(chan struct{})
		go func() { defer close(done); _, err = s.readToError(r) }()
		s.emit(w, 0, 0, 3)
		s.blocked(done, typ.String()+" reader before its producer failed")
		cause := errors.New("out of memory")
		w.Fail(cause)
		s.await(done, typ.String()+" reader's error")
		assert.ErrorIs(t, err, taskexecutor.ErrProducerFailed, typ.String())
		s.causedBy(err, cause, typ.String())
		var pe *taskexecutor.PartitionError
		if assert.ErrorAs(t, err, &pe, typ.String()) {
			assert.Equal(t, id, pe.Partition, typ.String())
		}
		_, again := r.Next(s.ctx)
		assert.ErrorIs(t, again, taskexecutor.ErrProducerFailed, "%s: the error sticks", typ)
		if typ.IsBlocking() || typ.IsHybrid() { // a pipelined subpartition is read once
			s.attachFails(s.gateDesc(typ, 0, []rpc.ResultPartitionID{id}), taskexecutor.ErrProducerFailed, typ.String()+" reader attached after the failure")
		}
	}
}

// FailPartitions fails partitions whose writers were never created: readers waiting for them
// get ErrProducerFailed and the cause.
func failPartitions(s *suite) {
	t := s.t
	ids := s.partitions(2)
	r := s.reader(jobgraph.Pipelined, 0, ids...)
	o, _ := s.owner(s.job, te1, "producer without task code")
	cause := errors.New("no task code registered")
	s.env.FailPartitions(o, []rpc.ResultPartitionDeploymentDescriptor{s.producerDesc(s.job, te1, ids[0], jobgraph.Pipelined, 1)}, cause)
	_, err := s.readToError(r)
	assert.ErrorIs(t, err, taskexecutor.ErrProducerFailed)
	s.causedBy(err, cause, "FailPartitions")
}

// ---- blocking partitions ----

// A BLOCKING partition gives its readers nothing before its producer finished, then everything
// of their subpartition; reading does not consume it: a second reader reads it again.
func blockingReadAfterFinish(s *suite) {
	t := s.t
	for _, typ := range []jobgraph.ResultPartitionType{jobgraph.Blocking, jobgraph.BlockingPersistent} {
		id := s.partitions(1)[0]
		w := s.writer(id, typ, 2)
		early := s.reader(typ, 1, id)
		s.emit(w, 0, 0, 100)
		s.emit(w, 1, 100, 150)
		require.NoError(t, w.Broadcast(s.ctx, "all"))
		w.FlushIdle()
		s.nothingNow(early, typ.String()+" partition before its producer finished")
		assert.False(t, early.ProducersFinished(), typ.String())
		require.NoError(t, w.Finish(s.ctx))
		assert.Equal(t, append(ints(100, 150), "all"), s.drain(early), typ.String())
		for range 2 {
			assert.Equal(t, append(ints(100, 150), "all"), s.drain(s.reader(typ, 1, id)), "%s: read again", typ)
			assert.Equal(t, append(ints(0, 100), "all"), s.drain(s.reader(typ, 0, id)), "%s: read again", typ)
		}
	}
}

// A HYBRID partition is readable while it is produced (what was handed over, FlushIdle) and,
// once finished, again from its start by another reader.
func hybridReadWhileProduced(s *suite) {
	t := s.t
	for _, typ := range []jobgraph.ResultPartitionType{jobgraph.HybridFull, jobgraph.HybridSelective} {
		id := s.partitions(1)[0]
		w := s.writer(id, typ, 1)
		s.emit(w, 0, 0, 8)
		w.FlushIdle()
		r := s.reader(typ, 0, id)
		var got []any
		for range 8 {
			got = append(got, s.next(r))
		}
		assert.Equal(t, ints(0, 8), got, "%s: read while produced", typ)
		assert.False(t, r.ProducersFinished(), typ.String())
		s.emit(w, 0, 8, 10)
		require.NoError(t, w.Finish(s.ctx))
		assert.Equal(t, ints(8, 10), s.drain(r), typ.String())
		assert.Equal(t, ints(0, 10), s.drain(s.reader(typ, 0, id)), "%s: read again", typ)
	}
}

// ---- release ----

// readFails asserts that r fails with an error matching want before its end (records it hands
// out first are fine: they were at hand).
func (s *suite) readFails(r taskexecutor.ShuffleReader, want error, what string) {
	s.t.Helper()
	_, err := s.readToError(r)
	assert.ErrorIs(s.t, err, want, what)
}

// attachFails asserts that a reader of d attached now fails (at CreateInputGates or at its first
// read) with an error matching want.
func (s *suite) attachFails(d rpc.InputGateDeploymentDescriptor, want error, what string) {
	s.t.Helper()
	o, _ := s.owner(s.job, te2, "late consumer")
	rs, err := s.env.CreateInputGates(o, []rpc.InputGateDeploymentDescriptor{d})
	if err != nil {
		assert.ErrorIs(s.t, err, want, what)
		return
	}
	defer rs[0].Close()
	s.readFails(rs[0], want, what)
}

// ReleasePartitionsLocally makes the partition's readers, in the middle of it or new, fail with
// ErrPartitionReleased; unknown IDs are ignored and other partitions stay readable.
func releaseLocally(s *suite) {
	t := s.t
	n := 1000
	if s.cfg.AcrossProcesses {
		n = max(n, s.cfg.MaxBufferedRecords+1) // more than can be in flight
	}
	ids := s.partitions(2)
	for _, id := range ids {
		w := s.writer(id, jobgraph.Blocking, 1)
		s.emit(w, 0, 0, n)
		require.NoError(t, w.Finish(s.ctx))
	}
	r := s.reader(jobgraph.Blocking, 0, ids[0])
	assert.Equal(t, 0, s.next(r))
	unknown := s.partitions(1)[0]
	s.env.ReleasePartitionsLocally(ids[0], unknown)
	s.readFails(r, taskexecutor.ErrPartitionReleased, "a reader in the middle of a released partition")
	s.attachFails(s.gateDesc(jobgraph.Blocking, 0, ids[:1]), taskexecutor.ErrPartitionReleased, "a reader of a released partition")
	assert.Equal(t, ints(0, n), s.drain(s.reader(jobgraph.Blocking, 0, ids[1])), "the partition not released")
}

// ReleaseAllOf returns exactly the IDs of the partitions produced on that TaskExecutor; their
// readers get ErrPartitionLost; the others stay readable.
func releaseAllOf(s *suite) {
	t := s.t
	n := 10
	if s.cfg.AcrossProcesses {
		n = s.cfg.MaxBufferedRecords + 1 // more than can be in flight
	}
	ids := s.partitions(3)
	for i, te := range []jobgraph.ResourceID{te1, te1, te2} {
		w := s.writerOn(s.job, te, ids[i], jobgraph.Blocking, 1)
		s.emit(w, 0, 0, n)
		require.NoError(t, w.Finish(s.ctx))
	}
	r := s.reader(jobgraph.Blocking, 0, ids[1])
	assert.ElementsMatch(t, ids[:2], s.env.ReleaseAllOf(te1))
	s.readFails(r, taskexecutor.ErrPartitionLost, "a reader of a partition of the TaskExecutor gone")
	assert.Equal(t, ints(0, n), s.drain(s.reader(jobgraph.Blocking, 0, ids[2])), "the other TaskExecutor's partition")
	assert.Empty(t, s.env.ReleaseAllOf(te1), "nothing left on it")
	assert.Empty(t, s.env.ReleaseAllOf("shuffletest-unknown"))
	assert.Equal(t, []rpc.ResultPartitionID{ids[2]}, s.env.ReleaseAllOf(te2))
}

// ReleaseJobPartitions releases the job's partitions produced on that TaskExecutor (their
// readers get ErrPartitionReleased) except finished BLOCKING_PERSISTENT ones, and nothing of
// other jobs or other TaskExecutors.
func releaseJob(s *suite) {
	t := s.t
	other := jobgraph.NewJobID()
	type part struct {
		job  jobgraph.JobID
		te   jobgraph.ResourceID
		typ  jobgraph.ResultPartitionType
		kept bool
	}
	parts := []part{
		{s.job, te1, jobgraph.Blocking, false},
		{s.job, te1, jobgraph.BlockingPersistent, true},
		{other, te1, jobgraph.Blocking, true},
		{s.job, te2, jobgraph.Blocking, true},
	}
	// A partition that crossed to its reader whole before the release can be read to its end
	// when records cross as bytes: then each holds more than can be in flight.
	n := 3
	if s.cfg.AcrossProcesses {
		n = s.cfg.MaxBufferedRecords + 1
	}
	ids := s.partitions(len(parts))
	readers := make([]taskexecutor.ShuffleReader, len(parts))
	for i, p := range parts {
		w := s.writerOn(p.job, p.te, ids[i], p.typ, 1)
		s.emit(w, 0, 0, n)
		require.NoError(t, w.Finish(s.ctx))
		o, _ := s.owner(p.job, te2, "consumer")
		rs, err := s.env.CreateInputGates(o, []rpc.InputGateDeploymentDescriptor{s.gateDesc(p.typ, 0, ids[i:i+1])})
		require.NoError(t, err)
		t.Cleanup(rs[0].Close)
		readers[i] = rs[0]
	}
	s.env.ReleaseJobPartitions(s.job, te1)
	for i, p := range parts {
		if p.kept {
			assert.Equal(t, ints(0, n), s.drain(readers[i]), "partition %d (%s) kept", i, p.typ)
		} else {
			s.readFails(readers[i], taskexecutor.ErrPartitionReleased, fmt.Sprintf("partition %d (%s) released", i, p.typ))
		}
	}
	assert.Equal(t, ints(0, n), s.drain(s.reader(jobgraph.BlockingPersistent, 0, ids[1])), "the persistent partition is read again")
}

// ---- bad input ----

// A subpartition index out of range is an error naming it, for a writer's Emit and for a
// reader's descriptor; what was accepted before is not lost.
func subpartitionOutOfRange(s *suite) {
	t := s.t
	id := s.partitions(1)[0]
	w := s.writer(id, jobgraph.Blocking, 2)
	s.emit(w, 0, 0, 5)
	for _, sub := range []int{2, -1} {
		err := w.Emit(s.ctx, sub, "bad")
		require.Error(t, err, "Emit to subpartition %d of 2", sub)
		assert.Contains(t, err.Error(), fmt.Sprintf("subpartition %d", sub))
	}
	require.NoError(t, w.Finish(s.ctx))
	o, _ := s.owner(s.job, te2, "consumer")
	_, err := s.env.CreateInputGates(o, []rpc.InputGateDeploymentDescriptor{s.gateDesc(jobgraph.Blocking, 0, []rpc.ResultPartitionID{id}), s.gateDesc(jobgraph.Blocking, 2, []rpc.ResultPartitionID{id})})
	require.Error(t, err, "a reader of subpartition 2 of 2")
	assert.Contains(t, err.Error(), "subpartition 2")
	assert.Contains(t, err.Error(), "input 1")
	assert.Equal(t, ints(0, 5), s.drain(s.reader(jobgraph.Blocking, 0, id)), "what was accepted before the bad Emit")
	assert.Empty(t, s.drain(s.reader(jobgraph.Blocking, 1, id)), "the bad records went nowhere")
}

// ---- checkpoint barriers ----

func barrier(id checkpoint.CheckpointID) *taskexecutor.CheckpointBarrier {
	return &taskexecutor.CheckpointBarrier{ID: id, Timestamp: time.Unix(1700000000, 0), Properties: checkpoint.CheckpointPropertiesFor(checkpoint.Checkpoint)}
}

// A barrier a pipelined writer broadcasts comes to every subpartition's reader after every
// record emitted before it and before every record emitted after it, as the same pointer; once
// the reader took it from its only channel it is aligned, and after ResumeAlignment it goes on.
func barriersInOrder(s *suite) {
	t := s.t
	id := s.partitions(1)[0]
	w := s.writer(id, jobgraph.PipelinedBounded, 2)
	readers := []taskexecutor.ShuffleReader{s.reader(jobgraph.PipelinedBounded, 0, id), s.reader(jobgraph.PipelinedBounded, 1, id)}
	b := barrier(7)
	producer := s.produce(func() error {
		for i := range 20 {
			if err := w.Emit(s.ctx, i%2, i); err != nil {
				return err
			}
		}
		if err := w.BroadcastBarrier(s.ctx, b); err != nil {
			return err
		}
		for i := 20; i < 40; i++ {
			if err := w.Emit(s.ctx, i%2, i); err != nil {
				return err
			}
		}
		return w.Finish(s.ctx)
	})
	for sub, r := range readers {
		var before []any
		for range 10 {
			before = append(before, s.next(r))
		}
		assert.Equal(t, []any{sub, sub + 2, sub + 4, sub + 6, sub + 8, sub + 10, sub + 12, sub + 14, sub + 16, sub + 18}, before, "subpartition %d before the barrier", sub)
		x := s.next(r)
		s.sameBarrier(b, x, "subpartition %d: the barrier after the records before it", sub)
		assert.True(t, r.Aligned(7), "subpartition %d: aligned with its only channel's barrier", sub)
		r.ResumeAlignment(7)
		var after []any
		for range 10 {
			after = append(after, s.next(r))
		}
		assert.Equal(t, []any{20 + sub, 22 + sub, 24 + sub, 26 + sub, 28 + sub, 30 + sub, 32 + sub, 34 + sub, 36 + sub, 38 + sub}, after, "subpartition %d after the barrier", sub)
	}
	s.await(producer, "the producer's Finish")
	for _, r := range readers {
		_, err := r.Next(s.ctx)
		assert.Equal(t, io.EOF, err)
	}
}

// Two channels into one gate: once one delivered the barrier of checkpoint 1, what it sends next
// is held back while the other's records still come; once both delivered it the gate is
// aligned and hands out nothing more until ResumeAlignment(1), then the held-back records; a
// barrier of checkpoint 1 that comes after is dropped.
func barrierAlignment(s *suite) {
	t := s.t
	ids := s.partitions(2)
	r := s.reader(jobgraph.PipelinedBounded, 0, ids...)
	w0, w1 := s.writer(ids[0], jobgraph.PipelinedBounded, 1), s.writer(ids[1], jobgraph.PipelinedBounded, 1)
	b0, b1 := barrier(1), barrier(1)

	require.NoError(t, w0.Emit(s.ctx, 0, "a"))
	require.NoError(t, w0.BroadcastBarrier(s.ctx, b0))
	require.NoError(t, w0.Emit(s.ctx, 0, "b"))
	w0.FlushIdle()
	assert.False(t, r.Aligned(1), "no barrier taken yet")
	assert.Equal(t, "a", s.next(r))
	s.sameBarrier(b0, s.next(r), "channel 0's barrier")
	assert.False(t, r.Aligned(1), "channel 1 has not delivered the barrier")

	require.NoError(t, w1.Emit(s.ctx, 0, "c"))
	w1.FlushIdle()
	assert.Equal(t, "c", s.next(r), "channel 0's b is held back; channel 1's c comes")
	assert.False(t, r.Aligned(1))
	require.NoError(t, w1.BroadcastBarrier(s.ctx, b1))
	require.NoError(t, w1.Emit(s.ctx, 0, "d"))
	w1.FlushIdle()
	s.sameBarrier(b1, s.next(r), "channel 1's barrier")
	assert.True(t, r.Aligned(1), "both channels delivered the barrier")
	s.nothingNow(r, "an aligned gate before ResumeAlignment")

	r.ResumeAlignment(1)
	assert.ElementsMatch(t, []any{"b", "d"}, []any{s.next(r), s.next(r)}, "the held-back records after ResumeAlignment")
	require.NoError(t, w0.BroadcastBarrier(s.ctx, barrier(1)))
	require.NoError(t, w0.Emit(s.ctx, 0, "e"))
	w0.FlushIdle()
	assert.Equal(t, "e", s.next(r), "a barrier of a checkpoint resumed already is dropped")
	require.NoError(t, w0.Finish(s.ctx))
	require.NoError(t, w1.Finish(s.ctx))
	_, err := r.Next(s.ctx)
	assert.Equal(t, io.EOF, err)
	assert.True(t, r.Aligned(2), "an ended reader is always aligned")
}

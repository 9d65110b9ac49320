package netshuffle_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/cluster"
	"github.com/jobgraph/jobgraph/taskexecutor"
	grpctransport "github.com/jobgraph/jobgraph/transport/grpc"
	"github.com/jobgraph/jobgraph/transport/grpc/netshuffle"
)

// Issue 13's scenarios of two jobs sharing two TaskExecutors, each TaskExecutor with its own
// netshuffle.Environment and every role on its own grpctransport.Service, all over loopback
// sockets: job A's trouble (a consumer that stops reading, a record twice the frame limit)
// stays job A's, and job B runs on with its exact result.

// Slot profiles that pin every producer to TaskExecutor te-1 and every consumer to te-2, so the
// records of both jobs cross between the two TaskExecutors, on the one HTTP/2 connection te-2's
// Environment holds to te-1's data server.
var (
	producerSlot  = jobgraph.ResourceProfile{CPUCores: 2}
	consumerSlot  = jobgraph.ResourceProfile{CPUCores: 1, ManagedMemory: 1 << 20}
	producerNeeds = jobgraph.ResourceProfile{CPUCores: 2}            // only te-1's slots have 2 cores
	consumerNeeds = jobgraph.ResourceProfile{ManagedMemory: 1 << 20} // only te-2's have managed memory
)

// Task code of the two-job cluster, by name.
const (
	invProduce   = "twojobs.produce"   // int64 records 0..n-1, as its job's probe says
	invConsume   = "twojobs.consume"   // reads them, checks their order, counts and sums them
	invOversized = "twojobs.oversized" // a record of probe.big bytes on the first attempts, then n small ones
	invBytes     = "twojobs.bytes"     // reads []byte records, counts them and their bytes
)

// probe is what one job's task code does and reports, found by the job's ID.
type probe struct {
	n int64 // records the producer emits (on an attempt that emits no oversized record)

	// The producer of invProduce.
	pauseAt  int64         // after this many records it waits for resume (0: no pause)
	resume   chan struct{} // closed by the test
	paused   chan struct{} // closed once it waits for resume
	reachAt  int64         // closes reached once it emitted this many (0: never)
	reached  chan struct{}
	emitted  atomic.Int64 // records Emit accepted
	emitting atomic.Bool  // inside an Emit call
	done     atomic.Bool  // every record emitted

	// The consumer of invConsume waits for release before it reads (nil: reads at once).
	release chan struct{}

	// invOversized: attempts below oversizedAttempts emit one record of big bytes, then wait
	// to be canceled; the consumer's errors of each attempt go to errs.
	oversizedAttempts int
	big               int
	errs              chan attemptError
	consumerAttempts  chan int // every consumer attempt's number, as it starts
}

type attemptError struct {
	attempt int
	err     error
}

// probes finds a job's probe from its task code.
type probes struct {
	mu sync.Mutex
	m  map[jobgraph.JobID]*probe
}

func (ps *probes) add(id jobgraph.JobID, p *probe) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.m == nil {
		ps.m = make(map[jobgraph.JobID]*probe)
	}
	ps.m[id] = p
}

func (ps *probes) get(env taskexecutor.Environment) (*probe, error) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if p := ps.m[env.Info().JobID]; p != nil {
		return p, nil
	}
	return nil, fmt.Errorf("no probe for job %v", env.Info().JobID)
}

// waitFor waits for ch to close, or for ctx (the task's) to end.
func waitFor(ctx context.Context, ch chan struct{}) error {
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (ps *probes) register(reg *taskexecutor.Registry) {
	reg.Register(invProduce, func(ctx context.Context, env taskexecutor.Environment) error {
		p, err := ps.get(env)
		if err != nil {
			return err
		}
		out := env.Output(0)
		for i := range p.n {
			if p.pauseAt > 0 && i == p.pauseAt {
				close(p.paused)
				if err := waitFor(ctx, p.resume); err != nil {
					return err
				}
			}
			p.emitting.Store(true)
			err := out.Emit(ctx, 0, i)
			p.emitting.Store(false)
			if err != nil {
				return err
			}
			if p.emitted.Add(1) == p.reachAt {
				close(p.reached)
			}
		}
		p.done.Store(true)
		return nil
	})
	reg.Register(invConsume, func(ctx context.Context, env taskexecutor.Environment) error {
		p, err := ps.get(env)
		if err != nil {
			return err
		}
		acc := env.AccumulatorRegistry()
		count, err := acc.LongCounter("records")
		if err != nil {
			return err
		}
		sum, err := acc.LongCounter("sum")
		if err != nil {
			return err
		}
		if p.release != nil {
			if err := waitFor(ctx, p.release); err != nil {
				return err
			}
		}
		in := env.Input(0)
		for want := int64(0); ; want++ {
			rec, err := in.Next(ctx)
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return err
			}
			if rec != want {
				return fmt.Errorf("record %d is %v", want, rec)
			}
			count.Add(1)
			sum.Add(want)
		}
	})
	reg.Register(invOversized, func(ctx context.Context, env taskexecutor.Environment) error {
		p, err := ps.get(env)
		if err != nil {
			return err
		}
		out := env.Output(0)
		if env.Info().AttemptNumber < p.oversizedAttempts {
			if err := out.Emit(ctx, 0, make([]byte, p.big)); err != nil {
				return err
			}
			// Yield hands the record over; the data server finds it too large and fails the
			// partition; the consumer fails, and the failover cancels this attempt.
			for {
				if err := env.Yield(ctx); err != nil {
					return err
				}
			}
		}
		for i := range p.n {
			if err := out.Emit(ctx, 0, []byte{byte(i)}); err != nil {
				return err
			}
		}
		return nil
	})
	reg.Register(invBytes, func(ctx context.Context, env taskexecutor.Environment) error {
		p, err := ps.get(env)
		if err != nil {
			return err
		}
		attempt := env.Info().AttemptNumber
		p.consumerAttempts <- attempt
		acc := env.AccumulatorRegistry()
		count, err := acc.LongCounter("records")
		if err != nil {
			return err
		}
		size, err := acc.LongCounter("bytes")
		if err != nil {
			return err
		}
		in := env.Input(0)
		for {
			rec, err := in.Next(ctx)
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				p.errs <- attemptError{attempt, err}
				return err
			}
			count.Add(1)
			size.Add(int64(len(rec.([]byte))))
		}
	})
}

// twoJobCluster is a JobManager and two TaskExecutors (te-1 for producers, te-2 for consumers,
// two slots each), each role on its own grpctransport.Service, each TaskExecutor with its own
// netshuffle.Environment, as three processes would have them.
type twoJobCluster struct {
	jm          *cluster.JobManager
	producerEnv *netshuffle.Environment // te-1's
	consumerEnv *netshuffle.Environment // te-2's
	probes      *probes
}

func startTwoJobCluster(t testing.TB, ctx context.Context, shuffle netshuffle.Config) *twoJobCluster {
	t.Helper()
	return startTwoJobClusterWith(t, ctx, shuffle, shuffle)
}

// startTwoJobClusterWith is startTwoJobCluster with te-1's (the producers') and te-2's (the
// consumers') shuffle configurations.
func startTwoJobClusterWith(t testing.TB, ctx context.Context, producerShuffle, consumerShuffle netshuffle.Config) *twoJobCluster {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	var closers []func() error
	t.Cleanup(func() {
		cancel()
		for i := len(closers) - 1; i >= 0; i-- {
			if err := closers[i](); err != nil {
				t.Errorf("closing the cluster: %v", err)
			}
		}
	})
	newService := func() *grpctransport.Service {
		svc, err := grpctransport.New(grpctransport.Options{Logger: quietLogger()})
		require.NoError(t, err)
		closers = append(closers, svc.Close)
		return svc
	}
	book := &netshuffle.AddressBook{}
	jm, err := cluster.RunJobManager(ctx, cluster.JobManagerConfig{RPC: newService(), Logger: quietLogger(),
		ShuffleMaster: &netshuffle.ShuffleMaster{Resolve: book.Resolve}})
	require.NoError(t, err)
	closers = append(closers, jm.Wait)

	c := &twoJobCluster{jm: jm, probes: &probes{}}
	reg := taskexecutor.NewRegistry()
	c.probes.register(reg)
	for _, te := range []struct {
		id      jobgraph.ResourceID
		profile jobgraph.ResourceProfile
		env     **netshuffle.Environment
		shuffle netshuffle.Config
	}{{"te-1", producerSlot, &c.producerEnv, producerShuffle}, {"te-2", consumerSlot, &c.consumerEnv, consumerShuffle}} {
		cfg := te.shuffle
		cfg.Logger = quietLogger()
		env, err := netshuffle.New(cfg)
		require.NoError(t, err)
		closers = append(closers, env.Close)
		*te.env = env
		book.Set(te.id, env.Addr())
		svc := newService()
		runner, err := cluster.RunTaskExecutor(ctx, cluster.TaskExecutorConfig{
			TaskExecutor: taskexecutor.Config{ResourceID: te.id, NumSlots: 2, SlotProfile: te.profile, Registry: reg,
				RPC: svc, Shuffle: env, Logger: quietLogger()},
			ResourceManagerAddress: jm.ResourceManagerAddress()})
		require.NoError(t, err)
		closers = append(closers, runner.Wait)
	}
	return c
}

// pairJob is a producer (on te-1) feeding a consumer (on te-2), parallelism 1 each, over a
// bounded pipelined edge whose records use codec; no restarts unless the caller sets some.
func pairJob(name, produce, consume, codec string) *jobgraph.JobGraph {
	g := jobgraph.New(name, jobgraph.Batch)
	src := g.AddVertex("producer", produce, 1).WithResources(producerNeeds).WithSlotSharingGroup("producers")
	sink := g.AddVertex("consumer", consume, 1).WithResources(consumerNeeds).WithSlotSharingGroup("consumers")
	g.Connect(src, sink, jobgraph.AllToAll, jobgraph.PipelinedBounded)
	src.Results[0].RecordCodec = codec
	g.RestartStrategy = jobgraph.NoRestart()
	return g
}

// run submits g with p and waits for its result.
func (c *twoJobCluster) run(ctx context.Context, g *jobgraph.JobGraph, p *probe) (*jobgraph.JobResult, error) {
	c.probes.add(g.JobID, p)
	d := c.jm.LeaderDispatcher()
	if err := d.SubmitJob(ctx, g); err != nil {
		return nil, err
	}
	return d.RequestJobResult(ctx, g.JobID)
}

// submit submits g with p and returns a channel with its result.
func (c *twoJobCluster) submit(t testing.TB, ctx context.Context, g *jobgraph.JobGraph, p *probe) <-chan *jobgraph.JobResult {
	t.Helper()
	c.probes.add(g.JobID, p)
	d := c.jm.LeaderDispatcher()
	require.NoError(t, d.SubmitJob(ctx, g))
	out := make(chan *jobgraph.JobResult, 1)
	go func() {
		res, err := d.RequestJobResult(ctx, g.JobID)
		if err != nil { // ctx ended: the test fails on it
			res = &jobgraph.JobResult{JobID: g.JobID, Name: g.Name, Status: jobgraph.JobStatusFailed, Failure: jobgraph.NewErrorInfo(err, time.Time{})}
		}
		out <- res
	}()
	return out
}

// requireCounted requires res FINISHED with the accumulator values want.
func requireCounted(t testing.TB, res *jobgraph.JobResult, want map[string]int64) {
	t.Helper()
	require.Equal(t, jobgraph.JobStatusFinished, res.Status, "%s: %v", res.Name, res.Failure)
	for name, v := range want {
		got, err := jobgraph.AccumulatorValue[int64](res.Accumulators, name)
		require.NoError(t, err, "%s: accumulator %s", res.Name, name)
		require.Equal(t, v, got, "%s: accumulator %s", res.Name, name)
	}
}

// stallBound is what a producer of 8-byte int64 records can have emitted while its consumer
// reads nothing, with the default shuffle configuration (as TestSlowConsumerBlocksOnlyItsProducer
// counts it), in chunks of Int64sPerFrame records: the writer's chunk, the in-memory queue and
// one at the data server, then the Data frames of the stream's credit and the one more a
// frame the reader took gives back.
const stallBound = (1 + netshuffle.DefaultLocalQueueCapacity + 1 + netshuffle.DefaultBuffersPerChannel + 1) * netshuffle.Int64sPerFrame

// stallFloor is what such a producer emits at least before it can block: a full Data frame
// (the second of its credit: a stream whose consumer holds a frame only sends full ones), the
// record of the first, and a record in each chunk of the in-memory queue.
const stallFloor = netshuffle.Int64sPerFrame + 1 + netshuffle.DefaultLocalQueueCapacity

// A consumer that stops reading: its producer blocks on credit; a second job on the same two
// TaskExecutors keeps its throughput. Job A's consumer waits before reading; its producer
// emits until the stream's credit and the in-memory queue are full, and then waits in Emit
// with at most stallBound of its 4·stallBound records accepted. Meanwhile job B, whose
// records cross the same connection between the same two TaskExecutors, moves 20·stallBound
// records to their end, in order, and finishes; job A is still RUNNING with its producer still
// inside Emit and no record more than the bound. Then A's consumer reads and A finishes with
// every record, in order. (Throughput: BenchmarkSecondJobBesideAStalledOne.)
func TestStalledConsumerBlocksOnlyItsJob(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	c := startTwoJobCluster(t, ctx, netshuffle.Config{})

	const nA, nB = 4 * stallBound, 20 * stallBound
	a := &probe{n: nA, release: make(chan struct{}), reachAt: stallFloor, reached: make(chan struct{})}
	gA := pairJob("A: a consumer that stops reading", invProduce, invConsume, netshuffle.CodecInt64)
	aDone := c.submit(t, ctx, gA, a)
	select {
	case <-a.reached:
	case res := <-aDone:
		t.Fatalf("job A ended (%v: %v) before its producer emitted %d records", res.Status, res.Failure, stallFloor)
	case <-ctx.Done():
		t.Fatalf("job A's producer emitted only %d records", a.emitted.Load())
	}

	gB := pairJob("B: beside a stalled job", invProduce, invConsume, netshuffle.CodecInt64)
	res, err := c.run(ctx, gB, &probe{n: nB})
	require.NoError(t, err)
	requireCounted(t, res, map[string]int64{"records": nB, "sum": nB * (nB - 1) / 2})

	// A is stalled: RUNNING, its producer waiting in Emit with at most the bound accepted.
	status, err := c.jm.LeaderDispatcher().RequestJobStatus(ctx, gA.JobID)
	require.NoError(t, err)
	require.Equal(t, jobgraph.JobStatusRunning, status, "job A while its consumer does not read")
	emitted := a.emitted.Load()
	t.Logf("job A's producer emitted %d records (floor %d, bound %d) while job B moved %d", emitted, stallFloor, stallBound, nB)
	require.GreaterOrEqual(t, emitted, int64(stallFloor))
	require.LessOrEqual(t, emitted, int64(stallBound), "records job A's producer emitted while its consumer read nothing")
	require.True(t, a.emitting.Load(), "job A's producer waits inside Emit")
	require.False(t, a.done.Load(), "job A's producer cannot have emitted everything")
	// Every stream of both jobs went from te-2 to te-1, on one connection.
	require.Equal(t, 1, c.consumerEnv.NumConns(), "te-2's connections to data servers")
	require.Equal(t, 0, c.producerEnv.NumConns(), "te-1's connections to data servers")

	close(a.release)
	select {
	case res := <-aDone:
		requireCounted(t, res, map[string]int64{"records": nA, "sum": nA * (nA - 1) / 2})
	case <-ctx.Done():
		t.Fatalf("job A did not finish once released: %d records emitted", a.emitted.Load())
	}
}

// A frame of 2 × the size limit: that stream fails with a size error; the job fails over;
// other jobs run on. A data stream has two limits, and each subtest puts a record of twice one
// of them into job A's stream on its first two attempts:
//
//   - the reader's MaxFrameSize (256 KiB on both TaskExecutors), which the consumer announces
//     when it opens the stream: the producer's data server cannot put the record in any frame
//     the consumer accepts, so it fails the partition with ErrFrameTooLarge and the consumer's
//     stream ends with that failure (ErrProducerFailed with ErrFrameTooLarge);
//   - the data server's own gRPC send limit (its MaxFrameSize, 256 KiB on te-1, while te-2's
//     readers accept 1 MiB): the record fits the consumer's frame limit, and the frame of twice
//     the producer's limit is refused by gRPC as the data server sends it, so the consumer's
//     stream ends with gRPC's RESOURCE_EXHAUSTED: a *StreamError matching ErrFrameTooLarge.
//
// Either way job A fails over, twice — its fixed-delay strategy allows exactly two restarts —
// and its third attempt delivers its records: FINISHED, with exactly two failures in its
// exception history, both the consumer's size error. Job B shares the TaskExecutors and the
// connection between them with A throughout: it is half-way through its records when A's
// first attempt starts, waits until A failed twice, and finishes with every record in order.
func TestOversizedRecordFailsOverOnlyItsJob(t *testing.T) {
	const limit = 256 << 10
	for _, tc := range []struct {
		name               string
		producer, consumer netshuffle.Config
		producerFailed     bool   // the consumer's error is the producer's partition failure
		message            string // in the consumer's error and the exception history
	}{{
		name:     "a record of twice the readers' frame limit",
		producer: netshuffle.Config{MaxFrameSize: limit}, consumer: netshuffle.Config{MaxFrameSize: limit},
		producerFailed: true,
		message:        fmt.Sprintf("an encoded record of %d bytes does not fit in the consumer's frame limit of %d bytes", 2*limit, limit),
	}, {
		name:     "a frame of twice the data server's send limit",
		producer: netshuffle.Config{MaxFrameSize: limit}, consumer: netshuffle.Config{MaxFrameSize: 4 * limit},
		// gRPC's text; sizes checked below.
		message: "trying to send message larger than max (",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			testOversizedFailsOverOnlyItsJob(t, tc.producer, tc.consumer, tc.producerFailed, tc.message)
		})
	}
}

func testOversizedFailsOverOnlyItsJob(t *testing.T, producer, consumer netshuffle.Config, producerFailed bool, message string) {
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	c := startTwoJobClusterWith(t, ctx, producer, consumer)

	const nB = 200_000
	b := &probe{n: nB, pauseAt: nB / 2, paused: make(chan struct{}), resume: make(chan struct{})}
	gB := pairJob("B: beside a job that fails over", invProduce, invConsume, netshuffle.CodecInt64)
	bDone := c.submit(t, ctx, gB, b)
	select {
	case <-b.paused:
	case res := <-bDone:
		t.Fatalf("job B ended (%v: %v) before half its records", res.Status, res.Failure)
	}

	const nA = 1000
	a := &probe{n: nA, oversizedAttempts: 2, big: 2 * producer.MaxFrameSize, errs: make(chan attemptError, 3), consumerAttempts: make(chan int, 3)}
	gA := pairJob("A: an oversized record", invOversized, invBytes, netshuffle.CodecBytes)
	gA.RestartStrategy = jobgraph.FixedDelayRestart(2, 0)
	aDone := c.submit(t, ctx, gA, a)
	for attempt := range 2 {
		var got attemptError
		select {
		case got = <-a.errs:
		case res := <-aDone:
			t.Fatalf("job A ended (%v: %v) before its consumer's attempt %d failed", res.Status, res.Failure, attempt)
		}
		require.Equal(t, attempt, got.attempt, "the consumer attempt that failed")
		require.ErrorIs(t, got.err, netshuffle.ErrFrameTooLarge, "attempt %d", attempt)
		require.ErrorContains(t, got.err, message, "attempt %d", attempt)
		var se *netshuffle.StreamError
		if producerFailed {
			require.ErrorIs(t, got.err, taskexecutor.ErrProducerFailed, "attempt %d", attempt)
			require.False(t, errors.As(got.err, &se), "attempt %d: the producer's failure, not the stream's: %v", attempt, got.err)
		} else {
			require.ErrorAs(t, got.err, &se, "attempt %d", attempt)
			require.Equal(t, c.producerEnv.Addr(), se.Address, "attempt %d: the stream's data server", attempt)
			require.NotErrorIs(t, got.err, taskexecutor.ErrPartitionLost, "attempt %d: the stream's error, not the connection's", attempt)
			// The frame (the record, its length and the Frame's protobuf fields) against the
			// producer's MaxFrameSize plus what it allows a Frame beyond its records.
			m := regexp.MustCompile(`larger than max \((\d+) vs\. (\d+)\)`).FindStringSubmatch(got.err.Error())
			require.Len(t, m, 3, "attempt %d: gRPC's sizes in %q", attempt, got.err)
			frame, sendLimit := mustAtoi(t, m[1]), mustAtoi(t, m[2])
			require.Greater(t, frame, 2*producer.MaxFrameSize, "attempt %d: the frame's size", attempt)
			require.GreaterOrEqual(t, sendLimit, producer.MaxFrameSize, "attempt %d: the send limit", attempt)
			require.Less(t, sendLimit, 2*producer.MaxFrameSize, "attempt %d: the send limit", attempt)
		}
	}
	status, err := c.jm.LeaderDispatcher().RequestJobStatus(ctx, gB.JobID)
	require.NoError(t, err)
	require.Equal(t, jobgraph.JobStatusRunning, status, "job B while job A failed over")
	close(b.resume)

	var res *jobgraph.JobResult
	select {
	case res = <-aDone:
	case <-ctx.Done():
		t.Fatal("job A did not finish")
	}
	requireCounted(t, res, map[string]int64{"records": nA, "bytes": nA})
	require.Len(t, res.ExceptionHistory, 2, "job A's failures")
	for i, e := range res.ExceptionHistory {
		require.Equal(t, "consumer (1/1)", e.TaskName, "failure %d", i)
		require.Equal(t, jobgraph.ResourceID("te-2"), e.Location, "failure %d", i)
		require.Contains(t, e.Message, netshuffle.ErrFrameTooLarge.Error(), "failure %d", i)
		require.Contains(t, e.Message, message, "failure %d", i)
		require.Empty(t, e.Concurrent, "failure %d: the producer was canceled, not failed", i)
	}
	close(a.consumerAttempts)
	var attempts []int
	for n := range a.consumerAttempts {
		attempts = append(attempts, n)
	}
	require.Equal(t, []int{0, 1, 2}, attempts, "job A's consumer attempts")
	require.Empty(t, a.errs, "no failure on the third attempt")

	select {
	case res = <-bDone:
	case <-ctx.Done():
		t.Fatal("job B did not finish")
	}
	requireCounted(t, res, map[string]int64{"records": nB, "sum": nB * (nB - 1) / 2})
	require.Empty(t, res.ExceptionHistory, "job B's failures")
	require.Equal(t, 1, c.consumerEnv.NumConns(), "te-2's connections to data servers")
}

func mustAtoi(t testing.TB, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	require.NoError(t, err)
	return n
}

// BenchmarkSecondJobBesideAStalledOne measures what TestStalledConsumerBlocksOnlyItsJob
// asserts in order: job B's throughput (a producer on te-1 → a consumer on te-2, benchJobB
// int64 records of 8 bytes, bounded pipelined, over loopback gRPC) alone, and beside job A
// whose consumer stopped reading (its producer blocked on credit on the same connection
// between the same two TaskExecutors), in the same run. Each op runs job B alone, and stalls
// job A, runs job B again and releases A — alone first on even ops, last on odd ones (A's
// setup and end are outside both times; a job's time is submit → JobResult, so it includes
// scheduling and deployment). It reports both rates
// (records/s-alone, records/s-beside, and MB/s of record bytes), their ratio (beside/alone), and
// the process's CPU time (user and system, every role of the cluster) per record of job B
// (cpu-ns/record-alone, -beside; unix only) and the ratio of the records per CPU second
// (cpu-beside/alone), which a loaded machine's scheduling disturbs less than the wall time.
//
//	cd transport/grpc && go test -run '^$' -bench SecondJobBesideAStalledOne -benchtime 6x -benchmem ./netshuffle/
func BenchmarkSecondJobBesideAStalledOne(b *testing.B) {
	ctx := b.Context()
	c := startTwoJobCluster(b, ctx, netshuffle.Config{})
	cpuOK := true
	runB := func(name string, wall, cpu *time.Duration) {
		cpu0, ok0 := processCPU()
		start := time.Now()
		res, err := c.run(ctx, pairJob(name, invProduce, invConsume, netshuffle.CodecInt64), &probe{n: benchJobB})
		*wall += time.Since(start)
		cpu1, ok1 := processCPU()
		*cpu += cpu1 - cpu0
		cpuOK = cpuOK && ok0 && ok1
		require.NoError(b, err)
		requireCounted(b, res, map[string]int64{"records": benchJobB, "sum": benchJobB * (benchJobB - 1) / 2})
	}
	b.ReportAllocs()
	var alone, beside, aloneCPU, besideCPU time.Duration
	for i := 0; b.Loop(); i++ {
		// Alone first on even ops, last on odd ones: a load that drifts weighs on both alike.
		if i%2 == 0 {
			runB("B alone", &alone, &aloneCPU)
		}

		a := &probe{n: 4 * stallBound, release: make(chan struct{}), reachAt: stallFloor, reached: make(chan struct{})}
		aDone := c.submit(b, ctx, pairJob("A: stalled", invProduce, invConsume, netshuffle.CodecInt64), a)
		select {
		case <-a.reached:
		case res := <-aDone:
			b.Fatalf("job A ended (%v: %v) before it stalled", res.Status, res.Failure)
		}
		runB("B beside a stalled job", &beside, &besideCPU)
		require.LessOrEqual(b, a.emitted.Load(), int64(stallBound), "job A stayed stalled")
		require.True(b, a.emitting.Load(), "job A's producer waits in Emit")
		close(a.release)
		requireCounted(b, <-aDone, map[string]int64{"records": 4 * stallBound})
		if i%2 == 1 {
			runB("B alone", &alone, &aloneCPU)
		}
	}
	records := float64(b.N) * benchJobB
	b.ReportMetric(records/alone.Seconds(), "records/s-alone")
	b.ReportMetric(records/beside.Seconds(), "records/s-beside")
	b.ReportMetric(records*8/alone.Seconds()/1e6, "MB/s-alone")
	b.ReportMetric(records*8/beside.Seconds()/1e6, "MB/s-beside")
	b.ReportMetric(alone.Seconds()/beside.Seconds(), "beside/alone")
	if cpuOK {
		b.ReportMetric(float64(aloneCPU.Nanoseconds())/records, "cpu-ns/record-alone")
		b.ReportMetric(float64(besideCPU.Nanoseconds())/records, "cpu-ns/record-beside")
		b.ReportMetric(aloneCPU.Seconds()/besideCPU.Seconds(), "cpu-beside/alone")
	}
}

// benchJobB is job B's records in BenchmarkSecondJobBesideAStalledOne.
const benchJobB = 2_000_000

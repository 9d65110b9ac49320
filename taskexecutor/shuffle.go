package taskexecutor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/rpc"
)

// Defaults of ShuffleConfig.
const (
	// DefaultBatchSize is how many records a writer gathers for one subpartition before it hands
	// them to the reader as one batch.
	DefaultBatchSize = 256
	// DefaultQueueCapacity is how many batches a pipelined subpartition buffers before Emit
	// blocks. Flink bounds a channel by network buffers (taskmanager.network.memory.buffers-per-channel,
	// default 2, plus floating buffers per gate, default 8); we count batches of records instead.
	DefaultQueueCapacity = 8
)

// Errors a reader gets (errors.Is) when it cannot read a partition; they come wrapped in a
// *PartitionError naming the partition.
var (
	// ErrProducerFailed: the producing execution failed or was canceled before it finished.
	// Flink: ProducerFailedException.
	ErrProducerFailed = errors.New("producer failed")
	// ErrPartitionReleased: the partition was released (ReleasePartitions, or its job's JobMaster
	// disconnected from the producing TaskExecutor). Flink: PartitionNotFoundException.
	ErrPartitionReleased = errors.New("result partition released")
	// ErrPartitionLost: the TaskExecutor that held the partition is gone (Shuffle.ReleaseAllOf).
	ErrPartitionLost = errors.New("result partition lost")
)

// PartitionError is what a partition's readers (and its writer) get once it can no longer be
// read. errors.Is matches Reason (ErrProducerFailed, ErrPartitionReleased or ErrPartitionLost)
// and Cause.
type PartitionError struct {
	Partition rpc.ResultPartitionID
	Reason    error
	// Cause is the producer's failure, or why the partition was released or lost; may be nil.
	Cause error
}

func (e *PartitionError) Error() string {
	s := fmt.Sprintf("result partition %s: %v", partitionName(e.Partition), e.Reason)
	if e.Cause != nil {
		s += ": " + e.Cause.Error()
	}
	return s
}

func (e *PartitionError) Unwrap() []error {
	if e.Cause == nil {
		return []error{e.Reason}
	}
	return []error{e.Reason, e.Cause}
}

// partitionName prints a ResultPartitionID as "<dataset>#<index>@<producer attempt>".
func partitionName(id rpc.ResultPartitionID) string {
	return id.PartitionID.String() + "@" + id.ProducerID.String()
}

// ShuffleConfig tunes the in-memory shuffle. Zero fields take the defaults.
type ShuffleConfig struct {
	// BatchSize is the number of records per batch (DefaultBatchSize). A writer also hands over
	// a smaller batch when the reader is idle, when its own task waits for input, and at finish,
	// so batching never delays a record indefinitely.
	BatchSize int
	// QueueCapacity is the number of batches a pipelined subpartition buffers before Emit blocks
	// (DefaultQueueCapacity).
	QueueCapacity int
}

// Shuffle is the in-memory shuffle service all TaskExecutors of one process share: it holds the
// result partitions tasks produce, keyed by rpc.ResultPartitionID, and connects readers to them.
// Flink: the NettyShuffleEnvironment, with local input channels only.
//
// Pipelined partitions (PIPELINED, PIPELINED_BOUNDED, PIPELINED_APPROXIMATE) stream batches of
// records through a bounded queue per subpartition: a writer blocks while its reader is behind
// (back-pressure), and a batch is gone once read. Blocking partitions (BLOCKING,
// BLOCKING_PERSISTENT) keep every batch until released and become readable once their producer
// FINISHED; each subpartition may be read any number of times. Hybrid partitions (HYBRID_FULL,
// HYBRID_SELECTIVE) are kept like blocking ones and readable while produced, like pipelined ones.
//
// A reader may attach before the producer has registered its partition (within a pipelined
// region, deployment order is arbitrary): the entry is created on demand and the reader waits.
//
// Safe for concurrent use.
type Shuffle struct {
	batchSize int
	capacity  int

	mu         sync.Mutex // before partition.mu
	partitions map[rpc.ResultPartitionID]*partition
}

// NewShuffle returns an empty shuffle.
func NewShuffle(cfg ShuffleConfig) *Shuffle {
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = DefaultBatchSize
	}
	if cfg.QueueCapacity <= 0 {
		cfg.QueueCapacity = DefaultQueueCapacity
	}
	return &Shuffle{
		batchSize:  cfg.BatchSize,
		capacity:   cfg.QueueCapacity,
		partitions: make(map[rpc.ResultPartitionID]*partition),
	}
}

// Len is the number of partitions the shuffle holds, counting released and failed ones it still
// remembers so that late readers get an error rather than wait.
func (s *Shuffle) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.partitions)
}

// ReleasePartitions drops the data of the partitions named: their readers (present and future)
// get an error wrapping ErrPartitionReleased, and a writer still producing one gets it from Emit.
// Unknown IDs are ignored. The shuffle remembers a released partition until its producer's
// TaskExecutor disconnects from the job or is released with ReleaseAllOf.
func (s *Shuffle) ReleasePartitions(ids ...rpc.ResultPartitionID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		if p := s.partitions[id]; p != nil {
			p.fail(&PartitionError{Partition: id, Reason: ErrPartitionReleased})
		}
	}
}

// ReleaseAllOf forgets every partition produced on the TaskExecutor producer, as when that
// TaskExecutor is lost: attached readers get an error wrapping ErrPartitionLost. It returns the
// IDs released, sorted by their printed form.
func (s *Shuffle) ReleaseAllOf(producer jobgraph.ResourceID) []rpc.ResultPartitionID {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []rpc.ResultPartitionID
	for id, p := range s.partitions {
		if p.producer != producer || producer == "" {
			continue
		}
		p.fail(&PartitionError{Partition: id, Reason: ErrPartitionLost,
			Cause: fmt.Errorf("TaskExecutor %s is gone", producer)})
		p.removed = true
		delete(s.partitions, id)
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b rpc.ResultPartitionID) int {
		return strings.Compare(partitionName(a), partitionName(b))
	})
	return ids
}

// releaseJob forgets the partitions of job produced on producer, except BLOCKING_PERSISTENT ones
// that still hold data (Flink keeps those as cluster partitions). Called when the job's JobMaster
// disconnects from that TaskExecutor.
func (s *Shuffle) releaseJob(job jobgraph.JobID, producer jobgraph.ResourceID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, p := range s.partitions {
		if p.job != job || p.producer != producer || producer == "" {
			continue
		}
		p.mu.Lock()
		keep := p.typ.IsPersistent() && p.state == stateFinished
		p.mu.Unlock()
		if keep {
			continue
		}
		p.fail(&PartitionError{Partition: id, Reason: ErrPartitionReleased,
			Cause: fmt.Errorf("job %s disconnected from TaskExecutor %s", job, producer)})
		p.removed = true
		delete(s.partitions, id)
	}
}

// failProduced marks partitions failed whose producer failed before it could set them up (its
// task code is missing, say), so that readers already waiting for them, or coming later, fail.
func (s *Shuffle) failProduced(job jobgraph.JobID, producer jobgraph.ResourceID, descs []rpc.ResultPartitionDeploymentDescriptor, cause error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range descs {
		p := s.partitions[d.ResultPartitionID]
		if p == nil {
			p = s.newPartition(job, d.ResultPartitionID, d.ResultType)
		}
		if p.producer == "" {
			p.producer = producer
		} else if p.producer != producer {
			continue // someone else's
		}
		p.fail(&PartitionError{Partition: d.ResultPartitionID, Reason: ErrProducerFailed, Cause: cause})
	}
}

// newPartition adds an entry awaiting its producer. s.mu held.
func (s *Shuffle) newPartition(job jobgraph.JobID, id rpc.ResultPartitionID, typ jobgraph.ResultPartitionType) *partition {
	p := &partition{shuffle: s, id: id, job: job, typ: typ, done: make(chan struct{})}
	s.partitions[id] = p
	return p
}

// maybeDrop removes p from the map if it is no longer needed (see partition.droppable).
func (s *Shuffle) maybeDrop(p *partition) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p.removed || s.partitions[p.id] != p {
		return
	}
	p.mu.Lock()
	drop := p.droppable()
	p.mu.Unlock()
	if drop {
		p.removed = true
		delete(s.partitions, p.id)
	}
}

type partitionState uint8

const (
	stateAwaitingProducer partitionState = iota // created by a reader; no writer yet
	stateProducing
	stateFinished
	stateFailed // failed, released or lost; err says which
)

// partition is one result partition. Fields marked s.mu are guarded by Shuffle.mu, the rest by mu.
type partition struct {
	shuffle *Shuffle
	id      rpc.ResultPartitionID

	job      jobgraph.JobID      // s.mu
	producer jobgraph.ResourceID // s.mu; "" until a writer registers
	removed  bool                // s.mu; no longer in the map

	mu    sync.Mutex // before inputGate.mu
	typ   jobgraph.ResultPartitionType
	state partitionState
	err   *PartitionError // when stateFailed
	done  chan struct{}   // closed on stateFailed: wakes a writer waiting for space
	subs  []*subpartition
	// What droppable needs, kept as subpartitions change so that it costs O(1), not
	// O(subpartitions) (a reader detaching from one of 1,000 subpartitions of each of 1,000
	// partitions would otherwise cost 10⁹ steps): readers counts the channels attached to any
	// subpartition, ended the subpartitions that are eofDelivered or abandoned.
	readers int
	ended   int
}

// retained: every batch is kept (blocking, hybrid) rather than consumed (pipelined).
func (p *partition) retained() bool { return p.typ.IsBlocking() || p.typ.IsHybrid() }

// readableWhileProducing: readers see batches before the producer finished.
func (p *partition) readableWhileProducing() bool { return !p.typ.IsBlocking() }

func (p *partition) sub(i int) *subpartition {
	for len(p.subs) <= i {
		sp := &subpartition{p: p, index: len(p.subs)}
		if !p.retained() {
			sp.space = make(chan struct{}, 1)
		}
		p.subs = append(p.subs, sp)
	}
	return p.subs[i]
}

// fail moves p to stateFailed with err (the first failure wins), drops its data and wakes its
// readers and writer.
func (p *partition) fail(err *PartitionError) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state == stateFailed {
		return
	}
	p.state = stateFailed
	p.err = err
	close(p.done)
	for _, sp := range p.subs {
		clear(sp.batches)
		sp.batches, sp.head, sp.free = nil, 0, nil
		sp.notifyReaders()
	}
}

// droppable reports whether the shuffle may forget p: nothing produces it and nobody reads it,
// or it is a pipelined partition every subpartition of which was read to the end (or abandoned).
// p.mu held.
func (p *partition) droppable() bool {
	if p.producer == "" {
		return p.readers == 0
	}
	return !p.retained() && p.state == stateFinished && p.ended == len(p.subs)
}

// subpartition is the data meant for one consumer subtask. Guarded by p.mu, except hungry.
type subpartition struct {
	p     *partition
	index int

	// batches is a queue from head (pipelined) or every batch ever written (retained; head 0).
	batches [][]any
	head    int
	// free holds consumed batches of a pipelined subpartition for the writer to reuse.
	free    [][]any
	readers []*channel
	// eofDelivered: a reader of this pipelined subpartition got to its end.
	eofDelivered bool
	// abandoned: the reader of this pipelined subpartition went away before the end; what is
	// written from then on is dropped, so the producer never blocks on it.
	abandoned bool
	// space gets a token when a reader takes a batch from a full queue (pipelined only).
	space chan struct{}
	// hungry points at the reading gate's idle flag while one is attached and the partition is
	// readable while produced: the writer then hands over partial batches at once.
	hungry atomic.Pointer[atomic.Bool]
}

func (sp *subpartition) queued() int { return len(sp.batches) - sp.head }

func (sp *subpartition) notifyReaders() {
	for _, c := range sp.readers {
		c.gate.notify(c.index)
	}
}

func (sp *subpartition) enqueue(b []any) {
	if sp.head > 0 && len(sp.batches) == cap(sp.batches) {
		n := copy(sp.batches, sp.batches[sp.head:])
		clear(sp.batches[n:])
		sp.batches = sp.batches[:n]
		sp.head = 0
	}
	sp.batches = append(sp.batches, b)
}

// push hands batch to the subpartition. For a bounded queue that is full it waits for space
// (block) until ctx ends or the task stops, or gives up at once (!block, ok false). It returns
// an emptied batch for the writer to fill next, possibly nil.
func (sp *subpartition) push(ctx context.Context, stop *stopSignal, batch []any, block bool) (next []any, ok bool, err error) {
	p := sp.p
	capacity := p.shuffle.capacity
	p.mu.Lock()
	for {
		if p.state == stateFailed {
			err := p.err
			p.mu.Unlock()
			return nil, false, err
		}
		if sp.abandoned {
			p.mu.Unlock()
			clear(batch)
			return batch[:0], true, nil
		}
		if p.retained() || sp.queued() < capacity {
			break
		}
		if !block {
			p.mu.Unlock()
			return nil, false, nil
		}
		p.mu.Unlock()
		select {
		case <-sp.space:
		case <-p.done:
		case <-ctx.Done():
			return nil, false, ctx.Err()
		case <-stop.ctx.Done():
			return nil, false, stop.ctx.Err()
		}
		p.mu.Lock()
	}
	sp.enqueue(batch)
	if n := len(sp.free); n > 0 {
		next = sp.free[n-1]
		sp.free[n-1] = nil
		sp.free = sp.free[:n-1]
	}
	if p.readableWhileProducing() {
		sp.notifyReaders()
	}
	p.mu.Unlock()
	return next, true, nil
}

// partitionWriter is the ResultPartitionWriter of one produced partition. Used only from its
// task's goroutine.
type partitionWriter struct {
	p         *partition
	stop      *stopSignal // the writing task's
	subs      []*subpartition
	bufs      [][]any
	batchSize int
	eager     bool // hand partial batches to an idle reader (readable while produced)
}

var _ ResultPartitionWriter = (*partitionWriter)(nil)

// newWriter registers the producer of d's partition and returns its writer.
func (s *Shuffle) newWriter(job jobgraph.JobID, producer jobgraph.ResourceID, d rpc.ResultPartitionDeploymentDescriptor) (*partitionWriter, error) {
	id := d.ResultPartitionID
	n := d.NumberOfSubpartitions
	if n < 1 {
		return nil, fmt.Errorf("result partition %s: %d subpartitions; want at least 1", partitionName(id), n)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.partitions[id]
	if p == nil {
		p = s.newPartition(job, id, d.ResultType)
	} else if p.producer != "" {
		return nil, fmt.Errorf("result partition %s is already produced on TaskExecutor %s", partitionName(id), p.producer)
	}
	p.mu.Lock()
	var err *PartitionError
	switch {
	case p.state == stateFailed:
		p.mu.Unlock()
		return nil, p.err
	case p.typ != d.ResultType:
		err = &PartitionError{Partition: id, Reason: ErrProducerFailed,
			Cause: fmt.Errorf("produced as %s but read as %s", d.ResultType, p.typ)}
	case len(p.subs) > n:
		err = &PartitionError{Partition: id, Reason: ErrProducerFailed,
			Cause: fmt.Errorf("it has %d subpartitions, but a reader asked for subpartition %d", n, len(p.subs)-1)}
	}
	if err != nil {
		p.mu.Unlock()
		p.producer = producer
		p.fail(err)
		return nil, err
	}
	p.producer = producer
	p.job = job
	p.state = stateProducing
	p.sub(n - 1)
	p.mu.Unlock()
	w := &partitionWriter{
		p:         p,
		stop:      notStopped,
		subs:      p.subs,
		bufs:      make([][]any, n),
		batchSize: s.batchSize,
		eager:     p.readableWhileProducing(),
	}
	return w, nil
}

func (w *partitionWriter) NumSubpartitions() int { return len(w.bufs) }

func (w *partitionWriter) Emit(ctx context.Context, s int, record any) error {
	if err := w.stop.err(); err != nil {
		return err
	}
	if uint(s) >= uint(len(w.bufs)) {
		return fmt.Errorf("result partition %s: subpartition %d out of range [0, %d)", partitionName(w.p.id), s, len(w.bufs))
	}
	buf := w.bufs[s]
	if buf == nil {
		buf = make([]any, 0, w.batchSize)
	}
	buf = append(buf, record)
	w.bufs[s] = buf
	if len(buf) >= w.batchSize {
		return w.flush(ctx, s, true)
	}
	if w.eager {
		// The reader waits for data: hand over what there is (once per wait of the reader).
		if h := w.subs[s].hungry.Load(); h != nil && h.Load() && h.CompareAndSwap(true, false) {
			return w.flush(ctx, s, true)
		}
	}
	return nil
}

func (w *partitionWriter) Broadcast(ctx context.Context, record any) error {
	for s := range w.bufs {
		if err := w.Emit(ctx, s, record); err != nil {
			return err
		}
	}
	return nil
}

// flush hands subpartition s's gathered records over; see subpartition.push for block.
func (w *partitionWriter) flush(ctx context.Context, s int, block bool) error {
	buf := w.bufs[s]
	if len(buf) == 0 {
		return nil
	}
	if block {
		// Once per batch: an Emit into a subpartition whose reader went away never waits, so
		// this is where a task looping on Emit learns that ctx ended or that its TaskExecutor
		// is closing.
		if err := w.stop.check(ctx); err != nil {
			return err
		}
	}
	next, ok, err := w.subs[s].push(ctx, w.stop, buf, block)
	if err != nil || !ok {
		return err
	}
	w.bufs[s] = next
	return nil
}

// flushIdle hands over every partial batch that fits without waiting: the task is about to wait
// for input, and its readers should not wait for records it already wrote.
func (w *partitionWriter) flushIdle() {
	if !w.eager {
		return
	}
	for s := range w.bufs {
		_ = w.flush(context.Background(), s, false) // a failed partition fails the next Emit
	}
}

// finish flushes what is left and marks the partition finished: readers of a blocking partition
// may start, readers of the others see its end once they have read everything.
func (w *partitionWriter) finish(ctx context.Context) error {
	for s := range w.bufs {
		if err := w.flush(ctx, s, true); err != nil {
			return err
		}
	}
	p := w.p
	p.mu.Lock()
	if p.state == stateFailed {
		err := p.err
		p.mu.Unlock()
		return err
	}
	p.state = stateFinished
	for _, sp := range p.subs {
		sp.notifyReaders()
	}
	drop := p.droppable()
	p.mu.Unlock()
	if drop {
		p.shuffle.maybeDrop(p)
	}
	return nil
}

// fail marks the partition failed because its producer failed or was canceled.
func (w *partitionWriter) fail(cause error) {
	w.p.fail(&PartitionError{Partition: w.p.id, Reason: ErrProducerFailed, Cause: cause})
}

// channel is one partition a gate reads (one subpartition of it). Used only by its gate's reader,
// except gate and index.
type channel struct {
	gate   *inputGate
	index  int
	sp     *subpartition
	cursor int // next batch of a retained subpartition
	ended  bool
}

// fetch takes the channel's next batch. more reports whether the channel may have another one
// right away; eof that the channel has ended.
func (c *channel) fetch() (batch []any, more, eof bool, err error) {
	sp := c.sp
	p := sp.p
	p.mu.Lock()
	if p.state == stateFailed {
		p.mu.Unlock()
		return nil, false, false, p.err
	}
	if p.retained() {
		defer p.mu.Unlock()
		if p.state == stateAwaitingProducer || (p.state == stateProducing && !p.readableWhileProducing()) {
			return nil, false, false, nil
		}
		if c.cursor < len(sp.batches) {
			batch = sp.batches[c.cursor]
			c.cursor++
			return batch, c.cursor < len(sp.batches) || p.state == stateFinished, false, nil
		}
		return nil, false, p.state == stateFinished, nil
	}
	if sp.queued() > 0 {
		wasFull := sp.queued() >= p.shuffle.capacity
		batch = sp.batches[sp.head]
		sp.batches[sp.head] = nil
		sp.head++
		if sp.head == len(sp.batches) {
			sp.batches, sp.head = sp.batches[:0], 0
		}
		more = sp.queued() > 0 || p.state == stateFinished
		p.mu.Unlock()
		if wasFull {
			select {
			case sp.space <- struct{}{}:
			default:
			}
		}
		return batch, more, false, nil
	}
	if p.state != stateFinished {
		p.mu.Unlock()
		return nil, false, false, nil
	}
	if !sp.eofDelivered {
		sp.eofDelivered = true
		if !sp.abandoned {
			p.ended++
		}
	}
	drop := p.droppable()
	p.mu.Unlock()
	if drop {
		p.shuffle.maybeDrop(p)
	}
	return nil, false, true, nil
}

// recycle returns a consumed batch of a pipelined subpartition for its writer to reuse.
func (c *channel) recycle(b []any) {
	sp := c.sp
	p := sp.p
	if p.retained() {
		return
	}
	clear(b)
	p.mu.Lock()
	if p.state != stateFailed && len(sp.free) <= p.shuffle.capacity {
		sp.free = append(sp.free, b[:0])
	}
	p.mu.Unlock()
}

// detach unregisters the channel from its subpartition.
func (c *channel) detach() {
	sp := c.sp
	p := sp.p
	p.mu.Lock()
	if i := slices.Index(sp.readers, c); i >= 0 {
		sp.readers = slices.Delete(sp.readers, i, i+1)
		p.readers--
	}
	sp.hungry.CompareAndSwap(&c.gate.hungry, nil)
	if !p.retained() && !sp.eofDelivered && !sp.abandoned && len(sp.readers) == 0 {
		sp.abandoned = true
		p.ended++
		// A writer waits for space only after it saw the queue full (under p.mu), so only then
		// does it need the token that wakes it to see abandoned.
		full := sp.queued() >= p.shuffle.capacity
		clear(sp.batches)
		sp.batches, sp.head = sp.batches[:0], 0
		if full {
			select {
			case sp.space <- struct{}{}:
			default:
			}
		}
	}
	drop := p.droppable()
	p.mu.Unlock()
	if drop {
		p.shuffle.maybeDrop(p)
	}
}

// inputGate is the InputGate of one input of a task: it merges the subpartitions it reads,
// batch by batch, in the order batches arrive. Next and poll are used only from the task's
// goroutine.
type inputGate struct {
	channels []*channel
	open     int         // channels not ended
	stop     *stopSignal // the reading task's

	mu     sync.Mutex
	ready  fifo[int] // channels that may have a batch, in notification order
	queued []bool
	wake   chan struct{}
	// anyWake, if set, is shared by every gate of the task and gets a token too whenever a
	// channel is queued: Environment.NextAny waits on it. Set before the gate is attached.
	anyWake chan struct{}

	hungry atomic.Bool // the reader waits for data

	cur    []any
	pos    int
	curCh  *channel
	err    error
	closed bool

	// beforeWait runs before the gate waits for data: the task flushes its own outputs.
	beforeWait func()
}

var _ InputGate = (*inputGate)(nil)

// newGate attaches a reader to the subpartitions d names.
func (s *Shuffle) newGate(job jobgraph.JobID, d rpc.InputGateDeploymentDescriptor) (*inputGate, error) {
	return s.openGate(job, d, nil)
}

// openGate is newGate for a gate that also signals anyWake (if not nil) when it may have data.
func (s *Shuffle) openGate(job jobgraph.JobID, d rpc.InputGateDeploymentDescriptor, anyWake chan struct{}) (*inputGate, error) {
	n := len(d.Partitions)
	g := &inputGate{
		channels: make([]*channel, 0, n),
		ready:    fifo[int]{items: make([]int, 0, n)},
		queued:   make([]bool, n),
		wake:     make(chan struct{}, 1),
		anyWake:  anyWake,
		stop:     notStopped,
	}
	// Every channel starts queued, so the first Next looks at each. This happens before attach
	// makes the gate visible to producers, whose notify then finds the channel already queued.
	g.open = n
	for i := range n {
		g.ready.push(i)
		g.queued[i] = true
	}
	if err := s.attach(job, d, g); err != nil {
		g.close()
		return nil, err
	}
	return g, nil
}

func (s *Shuffle) attach(job jobgraph.JobID, d rpc.InputGateDeploymentDescriptor, g *inputGate) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, id := range d.Partitions {
		idx := d.ConsumedSubpartitionIndex
		p := s.partitions[id]
		if p == nil {
			p = s.newPartition(job, id, d.ResultType)
		}
		p.mu.Lock()
		if idx < 0 || (p.state != stateAwaitingProducer && p.state != stateFailed && idx >= len(p.subs)) {
			n := len(p.subs)
			p.mu.Unlock()
			return fmt.Errorf("result partition %s has %d subpartitions; cannot read subpartition %d", partitionName(id), n, idx)
		}
		sp := p.sub(idx)
		if !p.retained() && (len(sp.readers) > 0 || sp.eofDelivered || sp.abandoned) {
			p.mu.Unlock()
			return fmt.Errorf("subpartition %d of pipelined result partition %s is already being read or was read", idx, partitionName(id))
		}
		c := &channel{gate: g, index: i, sp: sp}
		sp.readers = append(sp.readers, c)
		p.readers++
		if p.readableWhileProducing() {
			sp.hungry.Store(&g.hungry)
		}
		g.channels = append(g.channels, c)
		p.mu.Unlock()
	}
	return nil
}

// notify queues channel i as possibly having a batch and wakes the reader, whether it waits in
// this gate's Next or in NextAny.
func (g *inputGate) notify(i int) {
	g.requeue(i)
	select {
	case g.wake <- struct{}{}:
	default:
	}
	if g.anyWake != nil {
		select {
		case g.anyWake <- struct{}{}:
		default:
		}
	}
}

func (g *inputGate) requeue(i int) {
	g.mu.Lock()
	if !g.queued[i] {
		g.queued[i] = true
		g.ready.push(i)
	}
	g.mu.Unlock()
}

func (g *inputGate) pop() (int, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ready.len() == 0 {
		return 0, false
	}
	i := g.ready.pop()
	g.queued[i] = false
	return i, true
}

func (g *inputGate) Next(ctx context.Context) (any, error) {
	if err := g.stop.err(); err != nil {
		return nil, err
	}
	if g.pos < len(g.cur) {
		r := g.cur[g.pos]
		g.pos++
		return r, nil
	}
	return g.nextBatch(ctx)
}

func (g *inputGate) nextBatch(ctx context.Context) (any, error) {
	for {
		if g.err == nil {
			if err := g.stop.check(ctx); err != nil {
				return nil, err
			}
		}
		r, ok, err := g.poll()
		if ok {
			g.hungry.Store(false)
			return r, nil
		}
		if err != nil {
			return nil, err
		}
		if g.beforeWait != nil {
			g.beforeWait()
		}
		g.hungry.Store(true)
		select {
		case <-g.wake:
		case <-ctx.Done():
			g.hungry.Store(false)
			return nil, ctx.Err()
		case <-g.stop.ctx.Done():
			g.hungry.Store(false)
			return nil, g.stop.ctx.Err()
		}
	}
}

// poll returns the next record without waiting: from the current batch, else from the next
// batch of a queued channel (ok true). Otherwise ok is false and err is io.EOF once every
// channel ended, the partition error that stopped the gate (it sticks), or nil when no
// channel has a batch now.
func (g *inputGate) poll() (record any, ok bool, err error) {
	if g.pos < len(g.cur) {
		r := g.cur[g.pos]
		g.pos++
		return r, true, nil
	}
	if g.err != nil {
		return nil, false, g.err
	}
	g.recycleCur()
	for {
		if g.open == 0 {
			return nil, false, io.EOF
		}
		i, ok := g.pop()
		if !ok {
			return nil, false, nil
		}
		c := g.channels[i]
		if c.ended {
			continue
		}
		b, more, eof, err := c.fetch()
		if err != nil {
			g.err = err
			return nil, false, err
		}
		if eof {
			c.ended = true
			g.open--
			continue
		}
		if more {
			g.requeue(i)
		}
		if len(b) == 0 {
			continue
		}
		g.cur, g.pos, g.curCh = b, 1, c
		return b[0], true, nil
	}
}

// recycleCur gives the current batch back to its writer once every record of it was handed out.
func (g *inputGate) recycleCur() {
	if g.curCh != nil && g.pos >= len(g.cur) {
		g.curCh.recycle(g.cur)
		g.cur, g.pos, g.curCh = nil, 0, nil
	}
}

// close detaches the gate from its partitions. Idempotent.
func (g *inputGate) close() {
	if g.closed {
		return
	}
	g.closed = true
	if g.curCh != nil {
		g.curCh.recycle(g.cur)
		g.cur, g.pos, g.curCh = nil, 0, nil
	}
	// Start at a channel that depends on the subpartition read: the consumers of an ALL_TO_ALL
	// edge, which read the same partitions, then detach from them in different orders rather
	// than all queueing for the first partition's lock, then the second's, and so on.
	n := len(g.channels)
	if n == 0 {
		return
	}
	first := g.channels[0].sp.index % n
	for i := range n {
		j := first + i
		if j >= n {
			j -= n
		}
		g.channels[j].detach()
	}
}

// stopSignal is how the gates and writers of a task learn that the task was stopped (canceled,
// failed from outside, or its TaskExecutor is closing), so that every call of the task API that
// waits, or that a task may loop on, fails from then on — whatever ctx the task passes, and even
// when the call would neither wait nor fail otherwise (an Emit into a subpartition whose reader
// went away, a Next with records at hand). Flink gets the same from interrupting the task thread
// and from releasing the task's network resources (Task.TaskCanceler).
type stopSignal struct {
	ctx    context.Context // the task's context
	cancel context.CancelCauseFunc
	// stopped is set by stop just before ctx is canceled, so a task that sees ctx canceled
	// never gets nil from its next call: one atomic load per call is all the hot paths pay.
	// When ctx ends otherwise (its TaskExecutor is closing or was killed) the calls see it at
	// their next batch or wait (check).
	stopped atomic.Bool
}

// notStopped is the signal of gates and writers that belong to no task (in tests).
var notStopped = &stopSignal{ctx: context.Background(), cancel: func(error) {}}

func newStopSignal(parent context.Context) *stopSignal {
	ctx, cancel := context.WithCancelCause(parent)
	return &stopSignal{ctx: ctx, cancel: cancel}
}

// stop cancels the task's context with why (the first reason wins) and tells its gates and
// writers. Safe anywhere.
func (s *stopSignal) stop(why error) {
	s.stopped.Store(true)
	s.cancel(why)
}

// err is context.Canceled — what the task's context's Err returns once canceled — once stop
// was called, else nil. Every call of the task API checks it first.
func (s *stopSignal) err() error {
	if s.stopped.Load() {
		return context.Canceled
	}
	return nil
}

// check returns the task's context's error, or ctx's, once either has ended: the test a call
// makes once per batch and before it waits.
func (s *stopSignal) check(ctx context.Context) error {
	if err := s.ctx.Err(); err != nil {
		return err
	}
	return ctx.Err()
}

// fifo is a queue on a slice that reuses its array.
type fifo[T any] struct {
	items []T
	head  int
}

func (q *fifo[T]) len() int { return len(q.items) - q.head }

func (q *fifo[T]) push(v T) {
	if q.head > 0 && len(q.items) == cap(q.items) {
		n := copy(q.items, q.items[q.head:])
		clear(q.items[n:])
		q.items = q.items[:n]
		q.head = 0
	}
	q.items = append(q.items, v)
}

// pop removes the oldest item; the queue must not be empty.
func (q *fifo[T]) pop() T {
	var zero T
	v := q.items[q.head]
	q.items[q.head] = zero
	q.head++
	if q.head == len(q.items) {
		q.items, q.head = q.items[:0], 0
	}
	return v
}

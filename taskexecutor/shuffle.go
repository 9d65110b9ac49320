package taskexecutor

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/metrics"
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

// ErrProducerNotInThisShuffle is matched by the error of a reader whose input names a producer
// on a TaskExecutor that does not use this in-memory Shuffle: a TaskExecutor of another process,
// which this shuffle can never reach (a cluster whose JobManager has a network shuffle's
// ShuffleMaster, but whose TaskExecutors kept the in-memory default). The task fails at
// deployment instead of waiting forever. The check needs the partitions' shuffle descriptors (a
// ShuffleMaster on the JobManager) and at least one TaskExecutor using the Shuffle.
var ErrProducerNotInThisShuffle = errors.New("taskexecutor: the producer does not use this in-memory shuffle")

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

// UnavailablePartition names the partition that could not be read: a PartitionError is a
// scheduler.UnavailablePartitionError, so region failover restarts the partition's producer too
// when the reader fails with it (Flink: PartitionException), and jobgraph.NewErrorInfo keeps the
// partition when the failure crosses to the JobMaster.
func (e *PartitionError) UnavailablePartition() jobgraph.IntermediateResultPartitionID {
	return e.Partition.PartitionID
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
	// BatchSize is the number of records per batch (DefaultBatchSize). A writer of a pipelined
	// or hybrid partition also hands over a smaller batch when it emits while the reader waits
	// for data, whenever its own task waits through the task's API (a read, Yield), and at
	// finish. It does not on a timer: a task that emits and then waits outside the API — on a
	// channel of its own, on ctx.Done() — keeps the records of its unfinished batches until its
	// next Emit, read or Yield, or its end. Such a task should wait in Environment.Yield (which
	// also runs its mail). Where we differ: Flink's output flusher hands over partial buffers
	// every execution.buffer-timeout (100 ms) whatever the task does; here the buffers are the
	// writing goroutine's alone, so a record costs no synchronisation.
	BatchSize int
	// QueueCapacity is the number of pipelined batches one input gate buffers, shared by every
	// producer it reads (Flink's floating buffers per gate), before their writers block
	// (DefaultQueueCapacity). A pipelined subpartition whose reader has not attached yet holds
	// as many before its writer blocks.
	QueueCapacity int
}

// Shuffle is the in-memory shuffle service all TaskExecutors of one process share: it holds the
// result partitions tasks produce, keyed by rpc.ResultPartitionID, and connects readers to them.
// Flink: the NettyShuffleEnvironment, with local input channels only. It is the default
// ShuffleEnvironment (see InMemoryShuffle).
//
// Pipelined partitions (PIPELINED, PIPELINED_BOUNDED, PIPELINED_APPROXIMATE) stream batches of
// records into the input queue of the gate that reads each subpartition: a writer blocks while
// that gate holds QueueCapacity batches (back-pressure), and a batch is gone once read. Blocking
// partitions (BLOCKING, BLOCKING_PERSISTENT) keep every batch until released and become readable
// once their producer FINISHED; each subpartition may be read any number of times. Hybrid
// partitions (HYBRID_FULL, HYBRID_SELECTIVE) are kept like blocking ones and readable while
// produced, like pipelined ones.
//
// Cost: an exchange of P producers and C consumers costs O(P + C) while no record flows — one
// entry per partition, one per gate, and one shared "group" per distinct list of partitions the
// gates read (all C gates of an ALL_TO_ALL edge share one) — plus, per (producer, consumer) pair
// that carries data, its batches and a writer slot; end-of-partition is counted per group, not
// per pair. Flink instead keeps one InputChannel per pair (see docs/ARCHITECTURE.md).
//
// A reader may attach before the producer has registered its partition (within a pipelined
// region, deployment order is arbitrary): the entry is created on demand and the reader waits.
//
// Safe for concurrent use.
type Shuffle struct {
	batchSize int
	capacity  int

	mu         sync.Mutex // before inputGate.mu
	partitions map[rpc.ResultPartitionID]*partition
	groups     map[sliceKey]*group // by the Partitions slice of a gate descriptor
	byHash     map[uint64][]*group // by the hash of the partitions listed
	seed       maphash.Seed

	// epoch changes (under mu) whenever a route from a subpartition to a gate may have changed:
	// a writer's cached route is good while epoch has not moved.
	epoch atomic.Uint64
	// pairObjects counts the per-(producer, consumer) objects created: writer slots and batch
	// lists of subpartitions. A test hook: with no record written it stays 0.
	pairObjects atomic.Int64
	// users are the TaskExecutors whose Config.Shuffle this is (under mu; attach).
	users map[jobgraph.ResourceID]bool
}

// attach records that TaskExecutor te uses the shuffle (taskexecutor.New).
func (s *Shuffle) attach(te jobgraph.ResourceID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.users == nil {
		s.users = make(map[jobgraph.ResourceID]bool)
	}
	s.users[te] = true
}

// checkProducers refuses an input whose shuffle descriptors name a producer on a TaskExecutor
// that does not use this shuffle (ErrProducerNotInThisShuffle). Once per group of partitions
// (groupFor), so O(partitions) per ConsumedPartitionGroup, as the group itself costs. Under mu.
func (s *Shuffle) checkProducers(d rpc.InputGateDeploymentDescriptor) error {
	if len(s.users) == 0 {
		return nil // a Shuffle used directly, not through TaskExecutors: nothing to compare with
	}
	for _, sd := range d.ShuffleDescriptors {
		if at := sd.ProducerLocation; at != "" && !s.users[at] {
			return fmt.Errorf("%w: result partition %s is produced on TaskExecutor %s, which runs in another process or with another shuffle; TaskExecutors in several processes need a network shuffle (transport/grpc/netshuffle, whose Environment each TaskExecutor gets as Config.Shuffle)",
				ErrProducerNotInThisShuffle, partitionName(sd.ResultPartitionID), at)
		}
	}
	return nil
}

// sliceKey names a Partitions slice of a descriptor by its first element and length: the
// scheduler shares one slice among the consumers of a ConsumedPartitionGroup, so the second
// gate of a group finds it in O(1).
type sliceKey struct {
	first *rpc.ResultPartitionID
	n     int
}

// NewShuffle returns an empty shuffle.
func NewShuffle(cfg ShuffleConfig) *Shuffle {
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = DefaultBatchSize
	}
	if cfg.QueueCapacity <= 0 {
		cfg.QueueCapacity = DefaultQueueCapacity
	}
	s := &Shuffle{
		batchSize:  cfg.BatchSize,
		capacity:   cfg.QueueCapacity,
		partitions: make(map[rpc.ResultPartitionID]*partition),
		groups:     make(map[sliceKey]*group),
		byHash:     make(map[uint64][]*group),
		seed:       maphash.MakeSeed(),
	}
	s.epoch.Store(1)
	return s
}

// Len is the number of partitions the shuffle holds, counting released and failed ones it still
// remembers so that late readers get an error rather than wait, and entries readers created
// while waiting for their producer.
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
			s.fail(p, &PartitionError{Partition: id, Reason: ErrPartitionReleased})
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
		s.fail(p, &PartitionError{Partition: id, Reason: ErrPartitionLost,
			Cause: fmt.Errorf("TaskExecutor %s is gone", producer)})
		s.remove(p)
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
		if p.typ.IsPersistent() && p.state == stateFinished {
			continue
		}
		s.fail(p, &PartitionError{Partition: id, Reason: ErrPartitionReleased,
			Cause: fmt.Errorf("job %s disconnected from TaskExecutor %s", job, producer)})
		s.remove(p)
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
		s.fail(p, &PartitionError{Partition: d.ResultPartitionID, Reason: ErrProducerFailed, Cause: cause})
	}
}

// newPartition adds an entry awaiting its producer. s.mu held.
func (s *Shuffle) newPartition(job jobgraph.JobID, id rpc.ResultPartitionID, typ jobgraph.ResultPartitionType) *partition {
	p := &partition{id: id, job: job, typ: typ, done: make(chan struct{})}
	s.partitions[id] = p
	return p
}

// fail moves p to stateFailed with err (the first failure wins), drops its data and fails the
// gates of every group that lists it. s.mu held.
func (s *Shuffle) fail(p *partition, err *PartitionError) {
	if p.state == stateFailed {
		return
	}
	p.state = stateFailed
	p.err = err
	p.failed.Store(true) // after p.err: a writer that sees it reads p.err
	close(p.done)
	p.data = nil
	s.wakeWriter(p)
	for _, l := range p.links {
		g := l.g
		if g.err != nil {
			continue
		}
		g.err = err
		for i := range g.subs {
			for _, gate := range g.subs[i].gates {
				gate.setErr(err)
			}
		}
	}
	s.epoch.Add(1)
}

// remove forgets p. s.mu held.
func (s *Shuffle) remove(p *partition) {
	if p.removed {
		return
	}
	p.removed = true
	delete(s.partitions, p.id)
	for _, l := range p.links {
		l.g.live--
		s.maybeForgetGroup(l.g)
	}
	p.links = nil
	p.data = nil
	s.epoch.Add(1)
}

// wakeWriter wakes p's writer if it waits for room to park a batch. s.mu held.
func (s *Shuffle) wakeWriter(p *partition) {
	if p.space != nil {
		close(p.space)
		p.space = nil
	}
}

type partitionState uint8

const (
	stateAwaitingProducer partitionState = iota // created by a reader; no writer yet
	stateProducing
	stateFinished
	stateFailed // failed, released or lost; err says which
)

// partition is one result partition: O(1) unless data waits in it. Guarded by Shuffle.mu except
// where marked.
type partition struct {
	id rpc.ResultPartitionID // immutable

	job      jobgraph.JobID
	producer jobgraph.ResourceID // "" until a writer registers
	removed  bool                // no longer in the map
	typ      jobgraph.ResultPartitionType
	state    partitionState
	err      *PartitionError // when stateFailed
	numSubs  int             // from the writer; 0 before

	failed atomic.Bool      // state == stateFailed, for writers that do not take Shuffle.mu
	done   chan struct{}    // closed on stateFailed: wakes a writer waiting for space
	free   chan []any       // pipelined: consumed batches for the writer to reuse; immutable once set
	space  chan struct{}    // closed when parked batches were taken: wakes a writer waiting to park
	links  []link           // the groups that list p
	data   map[int]*batches // by subpartition: kept batches (blocking, hybrid), or pipelined ones parked for a reader not attached yet
}

// link says p is at position pos of group g.
type link struct {
	g   *group
	pos int
}

type batches struct{ list [][]any }

// retained: every batch is kept (blocking, hybrid) rather than consumed (pipelined).
func retained(t jobgraph.ResultPartitionType) bool { return t.IsBlocking() || t.IsHybrid() }

// group is what the gates reading one list of partitions share (in a job, the consumers of one
// ConsumedPartitionGroup): the partitions, which of them finished, the first failure, and per
// subpartition index the gates reading it. One per list, whatever the number of gates, so an
// ALL_TO_ALL exchange needs one. Guarded by Shuffle.mu.
type group struct {
	hash  uint64
	ids   []rpc.ResultPartitionID
	keys  []sliceKey
	parts []*partition // by position in ids
	typ   jobgraph.ResultPartitionType
	subs  []groupSub // by subpartition index, up to the largest read

	gates    int // attached
	live     int // partitions still linked
	finished int // partitions of parts that FINISHED
	err      *PartitionError
	removed  bool

	maxSub   int                   // largest subpartition index a gate asked for; -1 for none
	minSubs  int                   // fewest subpartitions of a registered producer; 0 for none
	minPart  rpc.ResultPartitionID // the partition with minSubs
	maxSubs  int                   // most subpartitions of a registered producer
	doneSubs int                   // pipelined: subpartitions read to their end or abandoned
	withData map[int][]int         // by subpartition: positions of partitions holding batches for it
}

type groupSub struct {
	gates []*inputGate
	// done: pipelined, a reader read this subpartition of every partition to its end, or went
	// away before; what is written to it from then on is dropped, so producers never block.
	done bool
}

func (g *group) sub(i int) *groupSub {
	if i >= len(g.subs) {
		g.subs = slices.Grow(g.subs, i+1-len(g.subs))[:i+1]
	}
	return &g.subs[i]
}

// groupFor finds or creates the group of d's partitions. s.mu held.
func (s *Shuffle) groupFor(job jobgraph.JobID, d rpc.InputGateDeploymentDescriptor) (*group, error) {
	key := sliceKey{&d.Partitions[0], len(d.Partitions)}
	if g := s.groups[key]; g != nil {
		return g, nil
	}
	var h maphash.Hash
	h.SetSeed(s.seed)
	for _, id := range d.Partitions {
		maphash.WriteComparable(&h, id)
	}
	sum := h.Sum64()
	for _, g := range s.byHash[sum] {
		if slices.Equal(g.ids, d.Partitions) {
			g.keys = append(g.keys, key)
			s.groups[key] = g
			return g, nil
		}
	}
	if err := s.checkProducers(d); err != nil {
		return nil, err
	}
	g := &group{hash: sum, ids: d.Partitions, keys: []sliceKey{key}, typ: d.ResultType, maxSub: -1,
		parts: make([]*partition, len(d.Partitions))}
	for pos, id := range d.Partitions {
		p := s.partitions[id]
		if p == nil {
			p = s.newPartition(job, id, d.ResultType)
		} else if slices.ContainsFunc(p.links, func(l link) bool { return l.g == g }) {
			s.unlinkGroup(g)
			return nil, fmt.Errorf("result partition %s is listed twice in the input", partitionName(id))
		}
		p.links = append(p.links, link{g, pos})
		g.parts[pos] = p
		g.live++
		switch p.state {
		case stateFinished:
			g.finished++
		case stateFailed:
			if g.err == nil {
				g.err = p.err
			}
		}
		g.producerRegistered(p)
		for sub := range p.data {
			if g.withData == nil {
				g.withData = make(map[int][]int)
			}
			g.withData[sub] = append(g.withData[sub], pos)
		}
	}
	s.groups[key] = g
	s.byHash[sum] = append(s.byHash[sum], g)
	return g, nil
}

// producerRegistered notes p's number of subpartitions, if known.
func (g *group) producerRegistered(p *partition) {
	if p.numSubs == 0 {
		return
	}
	if g.minSubs == 0 || p.numSubs < g.minSubs {
		g.minSubs, g.minPart = p.numSubs, p.id
	}
	g.maxSubs = max(g.maxSubs, p.numSubs)
}

// unlinkGroup detaches g from its partitions, drops entries readers created that no producer
// claimed, and forgets g. s.mu held.
func (s *Shuffle) unlinkGroup(g *group) {
	for _, p := range g.parts {
		if p != nil {
			s.unlink(p, g)
		}
	}
	g.live = 0
	s.forgetGroup(g)
}

// unlink detaches g from p, and forgets p once no producer claims it and no group links it (an
// entry a reader created). s.mu held.
func (s *Shuffle) unlink(p *partition, g *group) {
	if i := slices.IndexFunc(p.links, func(l link) bool { return l.g == g }); i >= 0 {
		p.links = slices.Delete(p.links, i, i+1)
		g.live--
	}
	if p.producer == "" && len(p.links) == 0 {
		s.remove(p)
	}
}

func (s *Shuffle) forgetGroup(g *group) {
	if g.removed {
		return
	}
	g.removed = true
	for _, k := range g.keys {
		delete(s.groups, k)
	}
	list := s.byHash[g.hash]
	if i := slices.Index(list, g); i >= 0 {
		list = slices.Delete(list, i, i+1)
	}
	if len(list) == 0 {
		delete(s.byHash, g.hash)
	} else {
		s.byHash[g.hash] = list
	}
	s.epoch.Add(1)
}

// maybeForgetGroup forgets g once no gate reads it and no partition links it. s.mu held.
func (s *Shuffle) maybeForgetGroup(g *group) {
	if g.gates == 0 && g.live <= 0 {
		s.forgetGroup(g)
	}
}

// groupIdle is called when the last gate of g left: a group is kept only while it must
// remember pipelined subpartitions that were read or abandoned, for partitions still produced.
// s.mu held.
func (s *Shuffle) groupIdle(g *group) {
	if g.doneSubs == 0 || retained(g.typ) {
		s.unlinkGroup(g)
		return
	}
	// Drop the entries nobody produces (as when the reader came first and left); keep the rest.
	for pos, p := range g.parts {
		if p == nil || p.producer != "" || p.removed {
			continue
		}
		s.unlink(p, g)
		g.parts[pos] = nil
	}
	s.maybeForgetGroup(g)
}

// subDone marks subpartition sub of g read to the end or abandoned (pipelined) and drops the
// partitions every subpartition of which is done. s.mu held.
func (s *Shuffle) subDone(g *group, sub int) {
	gs := g.sub(sub)
	if gs.done {
		return
	}
	gs.done = true
	g.doneSubs++
	s.epoch.Add(1)
	if g.doneSubs == g.maxSubs {
		// Once per group: partitions finishing later check for themselves (finished).
		for _, p := range g.parts {
			if p != nil {
				s.maybeDropConsumed(p)
			}
		}
	}
}

// maybeDropConsumed forgets a finished pipelined partition every subpartition of which was read
// to the end or abandoned. s.mu held.
func (s *Shuffle) maybeDropConsumed(p *partition) {
	if p.removed || retained(p.typ) || p.state != stateFinished {
		return
	}
	for _, l := range p.links {
		if l.g.doneSubs >= p.numSubs {
			s.remove(p)
			return
		}
	}
}

// route says where a batch for subpartition sub of p goes now: the gate reading it (pipelined:
// the one; retained: the first), or nowhere (drop: pipelined and read or abandoned). s.mu held.
func (s *Shuffle) route(p *partition, sub int) (target *inputGate, drop bool) {
	for _, l := range p.links {
		if sub >= len(l.g.subs) {
			continue
		}
		gs := &l.g.subs[sub]
		if len(gs.gates) > 0 {
			return gs.gates[0], false
		}
		if gs.done && !retained(p.typ) {
			drop = true
		}
	}
	return nil, drop
}

// keep adds batch to the kept (or parked) batches of subpartition sub of p, telling p's groups
// that it holds data for sub. s.mu held.
func (s *Shuffle) keep(p *partition, sub int, batch []any) {
	if p.data == nil {
		p.data = make(map[int]*batches)
	}
	bs := p.data[sub]
	if bs == nil {
		bs = &batches{}
		p.data[sub] = bs
		s.pairObjects.Add(1)
		for _, l := range p.links {
			if l.g.withData == nil {
				l.g.withData = make(map[int][]int)
			}
			l.g.withData[sub] = append(l.g.withData[sub], l.pos)
		}
	}
	bs.list = append(bs.list, batch)
}

// publish hands a batch of a retained partition to every gate reading sub now; it stays kept
// for later readers. s.mu held.
func (s *Shuffle) publish(p *partition, sub int, batch []any) {
	s.keep(p, sub, batch)
	for _, l := range p.links {
		if sub < len(l.g.subs) {
			for _, gate := range l.g.subs[sub].gates {
				gate.deliver(entry{batch: batch})
			}
		}
	}
}

// partitionWriter is the ResultPartitionWriter of one produced partition. Used only from its
// task's goroutine.
type partitionWriter struct {
	s    *Shuffle
	p    *partition
	stop *TaskStop // the writing task's
	n    int       // subpartitions
	// backPressure measures the waits for room (ShuffleIOOwnerContext.BackPressure); nil: none.
	backPressure *metrics.TimerGauge
	// slot maps a subpartition to 1 + its index in outs, 0 for none yet: 4 bytes per
	// subpartition, allocated at the first record. outs holds only subpartitions written to.
	slot      []int32
	outs      []outBuf
	batchSize int
	eager     bool // hand partial batches to an idle reader (readable while produced); false: blocking, batches stay here until finish
	hybrid    bool // batches are kept and published as written
}

// outBuf is what a writer holds for one subpartition it wrote to.
type outBuf struct {
	sub int
	buf []any
	// target is the gate reading sub as of epoch (pipelined, hybrid), nil for none.
	target *inputGate
	epoch  uint64
	kept   [][]any // blocking: every batch written, handed over at finish
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
	if p.state == stateFailed {
		return nil, p.err
	}
	var err *PartitionError
	if p.typ != d.ResultType {
		err = &PartitionError{Partition: id, Reason: ErrProducerFailed,
			Cause: fmt.Errorf("produced as %s but read as %s", d.ResultType, p.typ)}
	}
	for _, l := range p.links {
		if err == nil && l.g.maxSub >= n {
			err = &PartitionError{Partition: id, Reason: ErrProducerFailed,
				Cause: fmt.Errorf("it has %d subpartitions, but a reader asked for subpartition %d", n, l.g.maxSub)}
		}
	}
	p.producer = producer
	if err != nil {
		s.fail(p, err)
		return nil, err
	}
	p.job = job
	p.state = stateProducing
	p.numSubs = n
	if !retained(p.typ) {
		// Room for every batch the writer can have in flight to a few gates at once: a smaller
		// free list drops batches that the writer then allocates again (BenchmarkPipelinedShuffle
		// allocated 6 B per record with capacity+2).
		p.free = make(chan []any, 4*s.capacity)
	}
	for _, l := range p.links {
		l.g.producerRegistered(p)
	}
	return &partitionWriter{
		s:         s,
		p:         p,
		stop:      notStopped,
		n:         n,
		batchSize: s.batchSize,
		eager:     !p.typ.IsBlocking(),
		hybrid:    p.typ.IsHybrid(),
	}, nil
}

func (w *partitionWriter) NumSubpartitions() int { return w.n }

// out returns what the writer holds for subpartition s, creating it at the first record.
func (w *partitionWriter) out(s int) *outBuf {
	if w.slot == nil {
		w.slot = make([]int32, w.n)
	}
	i := w.slot[s]
	if i == 0 {
		w.outs = append(w.outs, outBuf{sub: s})
		i = int32(len(w.outs))
		w.slot[s] = i
		w.s.pairObjects.Add(1)
	}
	return &w.outs[i-1]
}

func (w *partitionWriter) newBuf() []any {
	select {
	case b := <-w.p.free:
		return b
	default:
		return make([]any, 0, w.batchSize)
	}
}

func (w *partitionWriter) Emit(ctx context.Context, s int, record any) error {
	if err := w.stop.Err(); err != nil {
		return err
	}
	if uint(s) >= uint(w.n) {
		return fmt.Errorf("result partition %s: subpartition %d out of range [0, %d)", partitionName(w.p.id), s, w.n)
	}
	o := w.out(s)
	if o.buf == nil {
		o.buf = w.newBuf()
	}
	o.buf = append(o.buf, record)
	if len(o.buf) >= w.batchSize {
		return w.flush(ctx, o, true)
	}
	if w.eager {
		// The reader waits for data: hand over what there is (once per wait of the reader).
		if h := w.target(o); h != nil && h.hungry.Load() && h.hungry.CompareAndSwap(true, false) {
			return w.flush(ctx, o, true)
		}
	}
	return nil
}

func (w *partitionWriter) Broadcast(ctx context.Context, record any) error {
	for s := range w.n {
		if err := w.Emit(ctx, s, record); err != nil {
			return err
		}
	}
	return nil
}

// target is the gate reading o's subpartition, looked up again when a route changed.
func (w *partitionWriter) target(o *outBuf) *inputGate {
	s := w.s
	if o.epoch == s.epoch.Load() {
		return o.target
	}
	s.mu.Lock()
	o.target, _ = s.route(w.p, o.sub)
	o.epoch = s.epoch.Load()
	s.mu.Unlock()
	return o.target
}

// flush hands o's gathered records over. For a pipelined gate (or parking place) that is full it
// waits for room (block) until ctx ends or the task stops, or gives up at once (!block).
func (w *partitionWriter) flush(ctx context.Context, o *outBuf, block bool) error {
	if len(o.buf) == 0 {
		return nil
	}
	if block {
		// Once per batch: an Emit into a subpartition whose reader went away never waits, so
		// this is where a task looping on Emit learns that ctx ended or that its TaskExecutor
		// is closing.
		if err := w.stop.Check(ctx); err != nil {
			return err
		}
	}
	p := w.p
	if p.failed.Load() {
		return p.err
	}
	switch {
	case !w.eager: // blocking
		o.kept = append(o.kept, o.buf)
		o.buf = nil
		return nil
	case w.hybrid:
		w.s.mu.Lock()
		if p.state != stateFailed {
			w.s.publish(p, o.sub, o.buf)
		}
		w.s.mu.Unlock()
		o.buf = nil
		return nil
	}
	done, dropped, err := w.handOver(ctx, o, o.buf, block)
	switch {
	case err != nil || !done:
		return err
	case dropped:
		clear(o.buf)
		o.buf = o.buf[:0]
	default:
		o.buf = w.newBuf()
	}
	return nil
}

// handOver gives a pipelined batch for o's subpartition to the gate reading it, parks it for a
// reader not attached yet, or drops it when the reader is done with the subpartition (done,
// dropped). When the gate or the parking place is full it waits for room (block) until ctx ends
// or the task stops, or gives up at once (!block: not done, no error). It does not touch o.buf.
func (w *partitionWriter) handOver(ctx context.Context, o *outBuf, batch []any, block bool) (done, dropped bool, err error) {
	p := w.p
	for {
		var wait <-chan struct{}
		if t := w.target(o); t != nil {
			ok, full, gone := t.offer(entry{batch: batch, src: p}, w.s.capacity)
			switch {
			case ok:
				return true, false, nil
			case gone:
				o.epoch = 0 // look it up again
				continue
			}
			wait = full
		} else {
			var err error
			done, dropped, wait, err = w.park(o, batch)
			if err != nil || done {
				return done, dropped, err
			}
		}
		if wait == nil {
			continue
		}
		if !block {
			return false, false, nil
		}
		if err := w.waitForRoom(ctx, wait); err != nil {
			return false, false, err
		}
	}
}

// waitForRoom waits until wait is closed (nil), the partition ends (its error), ctx ends or the
// task stops, measured as back-pressure.
func (w *partitionWriter) waitForRoom(ctx context.Context, wait <-chan struct{}) error {
	w.backPressure.MarkStart()
	defer w.backPressure.MarkEnd()
	select {
	case <-wait:
		return nil
	case <-w.p.done:
		return w.p.err
	case <-ctx.Done():
		return ctx.Err()
	case <-w.stop.ctx.Done():
		return w.stop.ctx.Err()
	}
}

// park handles a pipelined batch no gate reads yet: dropped when its reader is done with the
// subpartition, else parked in the partition while there is room (done), else wait is closed
// once there may be; a nil wait with !done means a reader came meanwhile.
func (w *partitionWriter) park(o *outBuf, batch []any) (done, dropped bool, wait <-chan struct{}, err error) {
	s, p := w.s, w.p
	s.mu.Lock()
	defer s.mu.Unlock()
	if p.state == stateFailed {
		return false, false, nil, p.err
	}
	t, drop := s.route(p, o.sub)
	o.target, o.epoch = t, s.epoch.Load()
	switch {
	case t != nil:
		return false, false, nil, nil
	case drop:
		return true, true, nil, nil
	}
	if bs := p.data[o.sub]; bs == nil || len(bs.list) < s.capacity {
		s.keep(p, o.sub, batch)
		return true, false, nil, nil
	}
	if p.space == nil {
		p.space = make(chan struct{})
	}
	return false, false, p.space, nil
}

// flushIdle hands over every partial batch that fits without waiting: the task is about to wait
// for input, and its readers should not wait for records it already wrote.
func (w *partitionWriter) flushIdle() {
	if !w.eager {
		return
	}
	for i := range w.outs {
		_ = w.flush(context.Background(), &w.outs[i], false) // a failed partition fails the next Emit
	}
}

// finish flushes what is left and marks the partition finished: readers of a blocking partition
// may start, readers of the others see its end once they have read everything.
func (w *partitionWriter) finish(ctx context.Context) error {
	for i := range w.outs {
		if err := w.flush(ctx, &w.outs[i], true); err != nil {
			return err
		}
	}
	s, p := w.s, w.p
	s.mu.Lock()
	defer s.mu.Unlock()
	if p.state == stateFailed {
		return p.err
	}
	if !w.eager { // blocking
		for i := range w.outs {
			o := &w.outs[i]
			for _, b := range o.kept {
				s.publish(p, o.sub, b)
			}
			o.kept = nil
		}
	}
	p.state = stateFinished
	for _, l := range p.links {
		g := l.g
		g.finished++
		if g.finished == len(g.parts) {
			for i := range g.subs {
				for _, gate := range g.subs[i].gates {
					gate.setEnded()
				}
			}
		}
	}
	s.maybeDropConsumed(p)
	return nil
}

// fail marks the partition failed because its producer failed or was canceled.
func (w *partitionWriter) fail(cause error) {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	w.s.fail(w.p, &PartitionError{Partition: w.p.id, Reason: ErrProducerFailed, Cause: cause})
}

// entry is one batch in a gate's input queue, tagged by the partition that produced it when it
// is a pipelined batch to give back (src); kept batches are shared and never given back.
type entry struct {
	batch []any
	src   *partition
}

// inputGate is the InputGate of one input of a task: one input queue that every partition it
// reads hands its batches to, in the order they arrive; it ends once its group's partitions all
// finished and the queue is empty. Next and poll are used only from the task's goroutine.
type inputGate struct {
	s    *Shuffle
	grp  *group // nil for a gate without partitions; Shuffle.mu
	sub  int
	stop *TaskStop // the reading task's

	mu       sync.Mutex
	queue    fifo[entry]
	inFlight int           // pipelined batches in queue: the gate's credit is Shuffle.capacity
	space    chan struct{} // closed when a batch left a full queue: wakes the writers waiting
	allEnded bool          // every partition finished: after queue, the end
	perr     *PartitionError
	detached bool
	wake     chan struct{}
	// anyWake, if set, is shared by every gate of the task and gets a token too whenever a
	// batch arrives: Environment.NextAny waits on it. Set before the gate is attached.
	anyWake chan struct{}

	hungry atomic.Bool // the reader waits for data

	// The reader's: the batch it hands out, its sticky error, whether it ended.
	cur    []any
	pos    int
	curSrc *partition
	err    error
	ended  bool
	closed bool

	// beforeWait runs before the gate waits for data: the task flushes its own outputs.
	beforeWait func()

	// Checkpoint barrier alignment (see barrier.go), guarded by mu: barriers of checkpoints up
	// to floor are dropped; alignID is the checkpoint whose barrier some channels (producer
	// partitions) delivered, blocked maps each of them to the batches held back from it since,
	// in held, in arrival order. blocked is nil while the gate aligns nothing.
	floor   checkpoint.CheckpointID
	alignID checkpoint.CheckpointID
	blocked map[*partition]int
	held    fifo[entry]
}

var _ InputGate = (*inputGate)(nil)

// newGate attaches a reader to the subpartitions d names.
func (s *Shuffle) newGate(job jobgraph.JobID, d rpc.InputGateDeploymentDescriptor) (*inputGate, error) {
	return s.openGate(job, d, nil)
}

// openGate is newGate for a gate that also signals anyWake (if not nil) when it may have data.
// O(1) when another gate of the same partition list is attached, O(len(d.Partitions)) for the
// first.
func (s *Shuffle) openGate(job jobgraph.JobID, d rpc.InputGateDeploymentDescriptor, anyWake chan struct{}) (*inputGate, error) {
	g := &inputGate{s: s, sub: d.ConsumedSubpartitionIndex, stop: notStopped, wake: make(chan struct{}, 1), anyWake: anyWake}
	idx := d.ConsumedSubpartitionIndex
	if len(d.Partitions) == 0 {
		g.allEnded = true
		return g, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	grp, err := s.groupFor(job, d)
	if err != nil {
		return nil, err
	}
	if idx < 0 || (grp.minSubs > 0 && idx >= grp.minSubs) {
		id, n := d.Partitions[0], 0
		if grp.minSubs > 0 {
			id, n = grp.minPart, grp.minSubs
		}
		if grp.gates == 0 {
			s.groupIdle(grp)
		}
		return nil, fmt.Errorf("result partition %s has %d subpartitions; cannot read subpartition %d", partitionName(id), n, idx)
	}
	gs := grp.sub(idx)
	if !retained(grp.typ) && (len(gs.gates) > 0 || gs.done) {
		if grp.gates == 0 {
			s.groupIdle(grp)
		}
		return nil, fmt.Errorf("subpartition %d of pipelined result partition %s is already being read or was read", idx, partitionName(d.Partitions[0]))
	}
	gs.gates = append(gs.gates, g)
	grp.gates++
	grp.maxSub = max(grp.maxSub, idx)
	g.grp = grp
	s.epoch.Add(1)
	if grp.err != nil {
		g.perr = grp.err
	}
	// What was written for idx before the gate came: kept batches to read, parked ones to take.
	for _, pos := range grp.withData[idx] {
		p := grp.parts[pos]
		if p == nil {
			continue
		}
		bs := p.data[idx]
		if bs == nil {
			continue
		}
		if retained(p.typ) {
			for _, b := range bs.list {
				g.queue.push(entry{batch: b})
			}
			continue
		}
		for _, b := range bs.list {
			g.queue.push(entry{batch: b, src: p})
			g.inFlight++
		}
		delete(p.data, idx)
		s.wakeWriter(p)
	}
	if !retained(grp.typ) {
		delete(grp.withData, idx)
	}
	g.allEnded = grp.finished == len(grp.parts)
	return g, nil
}

// notify wakes the reader, whether it waits in this gate's Next or in NextAny.
func (g *inputGate) notify() {
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

// offer queues a pipelined batch unless the gate holds capacity of them (full is then closed
// once one left) or is detached (gone).
func (g *inputGate) offer(e entry, capacity int) (ok bool, full <-chan struct{}, gone bool) {
	g.mu.Lock()
	if g.detached || g.perr != nil {
		g.mu.Unlock()
		return false, nil, true
	}
	if g.inFlight >= capacity || (g.blocked != nil && g.blocked[e.src] >= capacity) {
		// Full, or e's channel is blocked by an alignment and has as many batches held back
		// as the gate has credit: its writer waits until the alignment ends.
		if g.space == nil {
			g.space = make(chan struct{})
		}
		full = g.space
		g.mu.Unlock()
		return false, full, false
	}
	g.queue.push(e)
	g.inFlight++
	g.mu.Unlock()
	g.notify()
	return true, nil, false
}

// deliver queues a kept batch (no credit: kept batches never block their writer).
func (g *inputGate) deliver(e entry) {
	g.mu.Lock()
	if g.detached || g.perr != nil {
		g.mu.Unlock()
		return
	}
	g.queue.push(e)
	g.mu.Unlock()
	g.notify()
}

// setEnded tells the gate that every partition it reads finished.
func (g *inputGate) setEnded() {
	g.mu.Lock()
	g.allEnded = true
	g.mu.Unlock()
	g.notify()
}

// setErr fails the gate with err (the first wins) and drops what it holds.
func (g *inputGate) setErr(err *PartitionError) {
	g.mu.Lock()
	if g.perr == nil {
		g.perr = err
		g.dropQueued()
	}
	g.mu.Unlock()
	g.notify()
}

// dropQueued empties the queue and wakes the writers waiting for room. g.mu held.
func (g *inputGate) dropQueued() {
	for g.queue.len() > 0 {
		g.queue.pop()
	}
	g.inFlight = 0
	g.held = fifo[entry]{}
	g.alignID, g.blocked = 0, nil
	if g.space != nil {
		close(g.space)
		g.space = nil
	}
}

// take removes the next batch from the queue. A batch of a channel blocked by an alignment is
// held back instead (barrier.go); a barrier comes back with barrier set, after the gate noted
// it; a stale one is dropped.
func (g *inputGate) take() (e entry, barrier *CheckpointBarrier, ok, end bool, err *PartitionError) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.perr != nil {
		return entry{}, nil, false, false, g.perr
	}
	for {
		if g.queue.len() == 0 {
			return entry{}, nil, false, g.allEnded && g.held.len() == 0, nil
		}
		e = g.queue.pop()
		if e.src != nil {
			g.inFlight--
			if g.space != nil {
				close(g.space)
				g.space = nil
			}
			if g.blocked != nil {
				if n, isBlocked := g.blocked[e.src]; isBlocked {
					g.held.push(e)
					g.blocked[e.src] = n + 1
					continue
				}
			}
			if b := barrierOf(e.batch); b != nil {
				if !g.noteBarrier(e.src, b) {
					continue
				}
				return e, b, true, false, nil
			}
		}
		return e, nil, true, false, nil
	}
}

func (g *inputGate) Next(ctx context.Context) (any, error) {
	if err := g.stop.Err(); err != nil {
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
			if err := g.stop.Check(ctx); err != nil {
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
// batch in the queue (ok true). Otherwise ok is false and err is io.EOF once every partition
// ended and the queue is empty, the partition error that stopped the gate (it sticks), or nil
// when no batch is there now.
func (g *inputGate) poll() (record any, ok bool, err error) {
	if g.pos < len(g.cur) {
		r := g.cur[g.pos]
		g.pos++
		return r, true, nil
	}
	if g.err != nil {
		return nil, false, g.err
	}
	if g.ended {
		return nil, false, io.EOF
	}
	g.recycleCur()
	for {
		e, b, ok, end, perr := g.take()
		switch {
		case perr != nil:
			g.err = perr
			return nil, false, perr
		case b != nil:
			return b, true, nil // its batch is the writer's, never given back
		case ok:
			if len(e.batch) == 0 {
				continue
			}
			g.cur, g.pos, g.curSrc = e.batch, 1, e.src
			return e.batch[0], true, nil
		case end:
			g.ended = true
			g.reachedEnd()
			return nil, false, io.EOF
		}
		return nil, false, nil
	}
}

// reachedEnd tells the shuffle that the gate read its pipelined subpartition to the end.
func (g *inputGate) reachedEnd() {
	s := g.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if grp := g.grp; grp != nil && !retained(grp.typ) {
		s.subDone(grp, g.sub)
	}
}

// recycleCur gives the current batch back to its writer once every record of it was handed out.
func (g *inputGate) recycleCur() {
	if g.pos >= len(g.cur) {
		g.giveBack()
	}
}

func (g *inputGate) giveBack() {
	if src := g.curSrc; src != nil {
		b := g.cur
		clear(b)
		select {
		case src.free <- b[:0]:
		default:
		}
	}
	g.cur, g.pos, g.curSrc = nil, 0, nil
}

// close detaches the gate from its partitions. Idempotent.
func (g *inputGate) close() {
	if g.closed {
		return
	}
	g.closed = true
	g.giveBack()
	grp := g.grp
	if grp == nil {
		return
	}
	s := g.s
	s.mu.Lock()
	defer s.mu.Unlock()
	g.mu.Lock()
	g.detached = true
	g.dropQueued()
	g.mu.Unlock()
	gs := grp.sub(g.sub)
	if i := slices.Index(gs.gates, g); i >= 0 {
		gs.gates = slices.Delete(gs.gates, i, i+1)
	}
	grp.gates--
	s.epoch.Add(1)
	if !retained(grp.typ) {
		s.subDone(grp, g.sub) // abandoned, if not read to the end
	}
	if grp.gates == 0 {
		s.groupIdle(grp)
	}
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

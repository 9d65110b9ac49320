package netshuffle

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/rpc"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

// Errors of one stream (errors.Is), in a *StreamError: the stream is closed, the reader fails
// with it, and every other stream goes on.
var (
	// ErrFrameTooLarge: a Data frame, or a record, exceeds the consumer's MaxFrameSize.
	ErrFrameTooLarge = errors.New("netshuffle: frame too large")
	// ErrMalformedFrame: a frame that cannot be read (a record count or length that does not
	// match its bytes, a record its codec refuses, a message out of the protocol's order).
	ErrMalformedFrame = errors.New("netshuffle: malformed frame")
)

// ErrNoShuffleMaster is matched by the error of a task whose input or output carries no shuffle
// descriptors: the JobManager deployed it without the network shuffle's ShuffleMaster, so no
// reader could find a producer in another process (it would wait forever). The task fails at
// deployment and the job fails over, until its restart strategy gives up; the message names the
// option to set.
var ErrNoShuffleMaster = errors.New("netshuffle: no network-shuffle ShuffleMaster on the JobManager")

// noShuffleMasterHint ends both ErrNoShuffleMaster messages (writer and reader): what to set.
const noShuffleMasterHint = "the JobManager runs without the network shuffle's ShuffleMaster (set cluster.JobManagerConfig.ShuffleMaster or jobmaster.Config.ShuffleMaster to a *netshuffle.ShuffleMaster)"

func init() {
	jobgraph.RegisterErrorCode("netshuffle.no-shuffle-master", ErrNoShuffleMaster)
	jobgraph.RegisterErrorCode("netshuffle.frame-too-large", ErrFrameTooLarge)
	jobgraph.RegisterErrorCode("netshuffle.malformed-frame", ErrMalformedFrame)
}

// StreamError is the failure of one stream of a reader: which subpartition of which partition,
// from which data server, and why (Err matches ErrFrameTooLarge or ErrMalformedFrame).
type StreamError struct {
	Partition    rpc.ResultPartitionID
	Subpartition int
	Address      string
	Err          error
}

func (e *StreamError) Error() string {
	return fmt.Sprintf("netshuffle: subpartition %d of result partition %v from %s: %v", e.Subpartition, e.Partition, e.Address, e.Err)
}

func (e *StreamError) Unwrap() error { return e.Err }

// entry is one item of a gate's queue: a Data frame's records (count of them in data, in the
// wire's format, checked when it arrived, decoded when the reader gets to them), a barrier, or
// a channel's end, from channel ch.
type entry struct {
	ch      *channel
	data    []byte
	buf     *[]byte // the pool's buffer data is in (nil: none), back once read
	count   int
	size    int // Data.record_size
	barrier *taskexecutor.CheckpointBarrier
	end     bool
}

// gate is a reader of one input: one channel (stream) per partition it reads, their decoded
// frames in one queue in arrival order. Next, Poll and the rest of the ShuffleReader methods are
// used only from the task's goroutine; channels push from their own. Flink: SingleInputGate
// with RemoteInputChannels and its SingleCheckpointBarrierHandler.
type gate struct {
	env        *Environment
	sub        int
	stop       *taskexecutor.TaskStop
	wake       chan struct{}
	anyWake    chan struct{}
	beforeWait func()
	retained   bool // blocking or hybrid: no barriers, no alignment
	chans      []*channel

	mu        sync.Mutex
	queue     fifo
	held      fifo // batches of blocked channels, while aligning
	perr      error
	received  int // channels whose End arrived
	floor     checkpoint.CheckpointID
	alignID   checkpoint.CheckpointID
	blocked   map[*channel]bool
	endsTaken int // channels whose End the reader took: all they sent was handed out

	// The reader's: the frame at hand (left records in curData, of the record size curSize,
	// from curCh), decoded one by one.
	curData []byte
	curBuf  *[]byte
	curLeft int
	curSize int
	curCh   *channel
	err     error
	eof     bool
	closed  bool
}

var (
	_ taskexecutor.ShuffleReader       = (*gate)(nil)
	_ taskexecutor.BufferedInt64Reader = (*gate)(nil)
)

func (e *Environment) newGate(owner taskexecutor.ShuffleIOOwnerContext, d rpc.InputGateDeploymentDescriptor) (*gate, error) {
	stop := owner.Stop
	if stop == nil {
		stop, _ = taskexecutor.NewTaskStop(background)
	}
	g := &gate{env: e, sub: d.ConsumedSubpartitionIndex, stop: stop, wake: make(chan struct{}, 1),
		anyWake: owner.Wake, beforeWait: owner.BeforeWait, retained: d.ResultType.IsBlocking() || d.ResultType.IsHybrid()}
	if d.ShuffleDescriptors == nil && len(d.Partitions) > 0 {
		// Without descriptors no reader can learn where a producer in another process serves
		// its partition, and would wait for it here forever: a half-configured network shuffle.
		return nil, fmt.Errorf("%w: the input of data set %s carries no shuffle descriptors: %s", ErrNoShuffleMaster, d.DataSetID, noShuffleMasterHint)
	}
	if d.ShuffleDescriptors != nil && len(d.ShuffleDescriptors) != len(d.Partitions) {
		return nil, fmt.Errorf("netshuffle: %d shuffle descriptors for %d partitions", len(d.ShuffleDescriptors), len(d.Partitions))
	}
	if g.sub < 0 {
		return nil, fmt.Errorf("netshuffle: cannot read subpartition %d", g.sub)
	}
	seen := make(map[rpc.ResultPartitionID]bool, len(d.Partitions))
	for i, id := range d.Partitions {
		if seen[id] {
			return nil, fmt.Errorf("netshuffle: result partition %v is listed twice in the input", id)
		}
		seen[id] = true
		addr, codecName, producer := e.addr, "", jobgraph.ResourceID("")
		if d.ShuffleDescriptors != nil {
			sd := &d.ShuffleDescriptors[i]
			dd, known, err := parseDescriptor(sd)
			if err != nil {
				return nil, err
			}
			if known {
				addr, codecName, producer = dd.Address, dd.Codec, sd.ProducerLocation
				if dd.Subpartitions > 0 && g.sub >= dd.Subpartitions {
					return nil, fmt.Errorf("netshuffle: result partition %v has %d subpartitions; cannot read subpartition %d", id, dd.Subpartitions, g.sub)
				}
			}
		}
		name, codec, err := e.codecFor(codecName)
		if err != nil {
			return nil, err
		}
		g.chans = append(g.chans, &channel{gate: g, id: id, addr: addr, producer: producer, codecName: name, codec: codec,
			typ: d.ResultType, job: owner.JobID, grant: make(chan struct{}, 1), done: make(chan struct{}), opened: make(chan struct{})})
	}
	for _, ch := range g.chans {
		if !e.register(ch) {
			g.Close()
			return nil, errors.New("netshuffle: the shuffle environment is closed")
		}
		ch.start()
	}
	// Attached once the producers' data servers attached every stream (or refused one), as an
	// in-memory reader is attached when CreateInputGates returns: a partition released after
	// that fails this reader too.
	for _, ch := range g.chans {
		select {
		case <-ch.opened:
		case <-stop.Context().Done():
			g.Close()
			return nil, stop.Context().Err()
		}
	}
	return g, nil
}

// notify wakes the reader, in Next or in NextAny.
func (g *gate) notify() {
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

// push queues what channel ch received.
func (g *gate) push(e entry) {
	g.mu.Lock()
	if g.perr != nil {
		g.mu.Unlock()
		return
	}
	if e.end {
		g.received++
	}
	g.queue.push(e)
	g.mu.Unlock()
	g.notify()
}

// failWith fails the gate with err (the first wins), drops what it holds and ends every stream:
// the reader hands out the rest of the batch at hand, then err.
func (g *gate) failWith(err error) {
	g.mu.Lock()
	if g.perr != nil {
		g.mu.Unlock()
		return
	}
	g.perr = err
	g.queue, g.held = fifo{}, fifo{}
	g.alignID, g.blocked = 0, nil
	g.mu.Unlock()
	for _, ch := range g.chans {
		ch.cancelStream()
	}
	g.notify()
}

// take removes the next entry the reader may have: a batch or a barrier (ok), or nothing now;
// end once every channel ended and all was handed out.
func (g *gate) take() (e entry, ok, end bool, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for {
		if g.perr != nil {
			return entry{}, false, false, g.perr
		}
		if g.queue.len() == 0 {
			return entry{}, false, g.endsTaken == len(g.chans) && g.held.len() == 0, nil
		}
		e = g.queue.pop()
		if g.blocked[e.ch] {
			g.held.push(e)
			continue
		}
		switch {
		case e.end:
			g.endsTaken++
			e.ch.ended = true
			continue
		case e.barrier != nil:
			if !g.noteBarrier(e.ch, e.barrier) {
				continue
			}
		default:
			e.ch.addCredit(1) // a buffer of the channel is free again
		}
		return e, true, false, nil
	}
}

// noteBarrier records that ch delivered b; false: b is stale and dropped. g.mu held. As the
// in-memory shuffle's: a barrier of a newer checkpoint ends the alignment of the older one.
func (g *gate) noteBarrier(ch *channel, b *taskexecutor.CheckpointBarrier) bool {
	if g.retained {
		return false
	}
	switch {
	case b.ID <= g.floor || b.ID < g.alignID:
		return false
	case b.ID > g.alignID:
		if g.alignID != 0 {
			g.resumeLocked()
		}
		g.alignID = b.ID
		g.blocked = map[*channel]bool{ch: true}
	default:
		g.blocked[ch] = true
	}
	return true
}

// resumeLocked ends the alignment: what was held back goes to the front of the queue, in order.
func (g *gate) resumeLocked() {
	if g.held.len() > 0 {
		var q fifo
		for g.held.len() > 0 {
			q.push(g.held.pop())
		}
		for g.queue.len() > 0 {
			q.push(g.queue.pop())
		}
		g.queue = q
	}
	g.alignID, g.blocked = 0, nil
}

func (g *gate) Next(ctx context.Context) (any, error) {
	if err := g.stop.Err(); err != nil {
		return nil, err
	}
	if g.curLeft > 0 {
		if r, ok := g.decodeNext(); ok {
			return r, nil
		}
	}
	for {
		if g.err == nil {
			if err := g.stop.Check(ctx); err != nil {
				return nil, err
			}
		}
		r, ok, err := g.poll()
		if ok {
			return r, nil
		}
		if err != nil {
			return nil, err
		}
		if g.beforeWait != nil {
			g.beforeWait()
		}
		select {
		case <-g.wake:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-g.stop.Context().Done():
			return nil, g.stop.Context().Err()
		}
	}
}

func (g *gate) Poll() (any, bool, error) {
	if err := g.stop.Err(); err != nil {
		return nil, false, err
	}
	return g.poll()
}

func (g *gate) poll() (any, bool, error) {
	if g.curLeft > 0 {
		if r, ok := g.decodeNext(); ok {
			return r, true, nil
		}
	}
	if g.err != nil {
		return nil, false, g.err
	}
	if g.eof {
		return nil, false, io.EOF
	}
	e, ok, end, err := g.take()
	switch {
	case err != nil:
		g.err = err
		return nil, false, err
	case ok && e.barrier != nil:
		return e.barrier, true, nil
	case ok:
		g.curData, g.curBuf, g.curLeft, g.curSize, g.curCh = e.data, e.buf, e.count, e.size, e.ch
		if r, ok := g.decodeNext(); ok {
			return r, true, nil
		}
		return nil, false, g.err
	case end:
		g.eof = true
		return nil, false, io.EOF
	}
	return nil, false, nil
}

// decodeNext decodes the next record of the frame at hand (there is one). A record its codec
// refuses fails the gate with a *StreamError (ErrMalformedFrame) naming the stream: false, and
// g.err says why.
func (g *gate) decodeNext() (any, bool) {
	var b []byte
	if g.curSize > 0 {
		b, g.curData = g.curData[:g.curSize], g.curData[g.curSize:]
	} else {
		n, k := binary.Uvarint(g.curData) // the lengths were checked when the frame arrived
		b, g.curData = g.curData[k:k+int(n)], g.curData[k+int(n):]
	}
	g.curLeft--
	ch := g.curCh
	r, err := ch.codec.Decode(b)
	if err != nil {
		g.frameDone()
		g.err = ch.streamError(fmt.Errorf("%w: codec %s: %v", ErrMalformedFrame, ch.codecName, err))
		g.failWith(g.err)
		return nil, false
	}
	if g.curLeft == 0 {
		g.frameDone()
	}
	return r, true
}

// frameDone ends the frame at hand: its buffer goes back to the pool (a codec's Decode keeps
// nothing of it).
func (g *gate) frameDone() {
	if g.curBuf != nil {
		g.env.pool.Put(g.curBuf)
	}
	g.curData, g.curBuf, g.curLeft, g.curCh = nil, nil, 0, nil
}

func (g *gate) Buffered() (any, bool) {
	if g.curLeft > 0 {
		return g.decodeNext()
	}
	return nil, false
}

// BufferedInt64s implements taskexecutor.BufferedInt64Reader: a frame of the int64 codec's
// 8-byte records is read straight into dst; a frame of another codec gives nothing here (Buffered
// decodes its records one by one).
func (g *gate) BufferedInt64s(dst []int64) int {
	if g.curLeft == 0 || g.curSize != 8 {
		return 0
	}
	if _, ok := g.curCh.codec.(int64Codec); !ok {
		return 0
	}
	n := min(len(dst), g.curLeft)
	decodeInt64s(dst[:n], g.curData[:8*n])
	g.curData, g.curLeft = g.curData[8*n:], g.curLeft-n
	if g.curLeft == 0 {
		g.frameDone()
	}
	return n
}

func (g *gate) Aligned(id checkpoint.CheckpointID) bool {
	if g.retained || g.eof || g.err != nil {
		return true
	}
	if g.curLeft > 0 {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.perr != nil {
		return true
	}
	if g.alignID != id && g.alignID != 0 {
		return false
	}
	for _, ch := range g.chans {
		if !ch.ended && !(g.alignID == id && g.blocked[ch]) {
			return false
		}
	}
	return true
}

func (g *gate) ProducersFinished() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.received == len(g.chans)
}

func (g *gate) ResumeAlignment(id checkpoint.CheckpointID) {
	g.mu.Lock()
	g.floor = max(g.floor, id)
	if g.alignID != 0 && g.alignID <= id {
		g.resumeLocked()
	}
	g.mu.Unlock()
	g.notify()
}

// SetWaiting implements taskexecutor.ShuffleReader: nothing to do, a data server sends a partial
// frame whenever it has nothing more at hand.
func (g *gate) SetWaiting(bool) {}

func (g *gate) Close() {
	if g.closed {
		return
	}
	g.closed = true
	g.mu.Lock()
	if g.perr == nil {
		g.perr = errors.New("netshuffle: reader closed")
	}
	g.queue, g.held = fifo{}, fifo{}
	g.mu.Unlock()
	for _, ch := range g.chans {
		ch.cancelStream()
	}
	for _, ch := range g.chans {
		ch.wait()
	}
	g.curData, g.curLeft, g.curCh = nil, 0, nil
}

// channel is one stream of a gate: subpartition gate.sub of one partition, read from the data
// server at addr. Flink: RemoteInputChannel with its credit.
type channel struct {
	gate      *gate
	id        rpc.ResultPartitionID
	addr      string
	producer  jobgraph.ResourceID // "" when the descriptor named none
	codecName string
	codec     Codec
	typ       jobgraph.ResultPartitionType
	job       jobgraph.JobID

	ended bool // the reader took its End: gate.mu

	cmu     sync.Mutex
	credit  uint32 // granted by the reader, not sent yet
	cancel  context.CancelFunc
	stopped bool
	grant   chan struct{}
	opened  chan struct{} // closed once the producer answered Opened, or the stream ended
	done    chan struct{} // closed when the stream's goroutines ended
	started bool
}

// setOpened marks the stream attached (or ended). Only the stream's goroutine calls it.
func (ch *channel) setOpened() {
	select {
	case <-ch.opened:
	default:
		close(ch.opened)
	}
}

func (ch *channel) addCredit(n uint32) {
	ch.cmu.Lock()
	ch.credit += n
	ch.cmu.Unlock()
	select {
	case ch.grant <- struct{}{}:
	default:
	}
}

func (ch *channel) cancelStream() {
	ch.cmu.Lock()
	ch.stopped = true
	if ch.cancel != nil {
		ch.cancel()
	}
	ch.cmu.Unlock()
}

func (ch *channel) wait() {
	ch.cmu.Lock()
	started := ch.started
	ch.cmu.Unlock()
	if started {
		<-ch.done
	}
}

// lostError is the error of a stream whose producer's process or connection is gone.
func (ch *channel) lostError(cause error) error {
	return &taskexecutor.PartitionError{Partition: ch.id, Reason: taskexecutor.ErrPartitionLost,
		Cause: fmt.Errorf("netshuffle: data server %s: %w", ch.addr, cause)}
}

func (ch *channel) streamError(err error) error {
	return &StreamError{Partition: ch.id, Subpartition: ch.gate.sub, Address: ch.addr, Err: err}
}

// start runs the stream on goroutines of its own; the gate's Close waits for them.
func (ch *channel) start() {
	ctx, cancel := context.WithCancel(background)
	ch.cmu.Lock()
	if ch.stopped {
		ch.cmu.Unlock()
		cancel()
		close(ch.opened)
		return
	}
	ch.cancel, ch.started = cancel, true
	ch.cmu.Unlock()
	go func() {
		defer close(ch.done)
		defer ch.setOpened()
		defer ch.gate.env.unregister(ch)
		defer cancel()
		if err := ch.run(ctx); err != nil && ctx.Err() == nil {
			ch.gate.failWith(err)
		}
	}()
}

// run reads the stream until its End, a Failure, an error, or ctx ends.
func (ch *channel) run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	env := ch.gate.env
	conn, err := env.conn(ch.addr)
	if err != nil {
		return ch.lostError(err)
	}
	stream, err := NewPartitionServiceClient(conn).Read(ctx)
	if err != nil {
		return ch.transportError(err)
	}
	partition, err := json.Marshal(ch.id)
	if err != nil {
		return err
	}
	open := &Open{Job: ch.job[:], Partition: partition, Subpartition: int32(ch.gate.sub), ResultType: ch.typ.String(),
		Codec: ch.codecName, Credit: uint32(env.cfg.BuffersPerChannel), MaxFrameBytes: uint32(env.cfg.MaxFrameSize)}
	if err := stream.Send(&ReadRequest{Kind: &ReadRequest_Open{Open: open}}); err != nil {
		return ch.transportError(err)
	}
	// Credits go out on a goroutine of their own: a Send never waits for the reader.
	sendDone := make(chan struct{})
	go func() {
		defer close(sendDone)
		for {
			select {
			case <-ch.grant:
			case <-ctx.Done():
				return
			}
			ch.cmu.Lock()
			n := ch.credit
			ch.credit = 0
			ch.cmu.Unlock()
			if n == 0 {
				continue
			}
			if err := stream.Send(&ReadRequest{Kind: &ReadRequest_Credit{Credit: n}}); err != nil {
				return // Recv sees why
			}
		}
	}()
	defer func() { cancel(); <-sendDone }()
	for {
		var f inFrame // a Data frame's records in a buffer of the pool (wireCodec)
		if err := stream.RecvMsg(&f); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return ch.transportError(err)
		}
		if f.isData {
			if err := ch.check(int(f.count), int(f.size), f.records); err != nil {
				return ch.streamError(fmt.Errorf("%w: %v", ErrMalformedFrame, err))
			}
			ch.gate.push(entry{ch: ch, data: f.records, buf: f.buf, count: int(f.count), size: int(f.size)})
			continue
		}
		switch k := f.frame.Kind.(type) {
		case *Frame_Data:
			if err := ch.check(int(k.Data.Count), int(k.Data.RecordSize), k.Data.Records); err != nil {
				return ch.streamError(fmt.Errorf("%w: %v", ErrMalformedFrame, err))
			}
			ch.gate.push(entry{ch: ch, data: k.Data.Records, count: int(k.Data.Count), size: int(k.Data.RecordSize)})
		case *Frame_Barrier:
			b, err := parseBarrier(k.Barrier)
			if err != nil {
				return ch.streamError(fmt.Errorf("%w: %v", ErrMalformedFrame, err))
			}
			ch.gate.push(entry{ch: ch, barrier: b})
		case *Frame_End:
			ch.gate.push(entry{ch: ch, end: true})
			return nil
		case *Frame_Failure:
			return ch.failure(k.Failure)
		case *Frame_Opened:
			ch.setOpened()
		default:
			return ch.streamError(fmt.Errorf("%w: a frame of no known kind", ErrMalformedFrame))
		}
	}
}

// check checks a Data frame's framing before its records are queued: a count that matches its
// bytes, every record length within them. The records themselves are decoded when the reader
// gets to them (a record its codec refuses fails the reader then).
func (ch *channel) check(count, size int, records []byte) error {
	if count == 0 {
		return errors.New("a Data frame with no records")
	}
	if len(records) > ch.gate.env.cfg.MaxFrameSize {
		return fmt.Errorf("%d bytes of records, above MaxFrameSize %d", len(records), ch.gate.env.cfg.MaxFrameSize)
	}
	if size > 0 {
		if uint64(count)*uint64(size) != uint64(len(records)) {
			return fmt.Errorf("%d records of %d bytes in %d bytes", count, size, len(records))
		}
		return nil
	}
	if count > len(records) {
		return fmt.Errorf("%d records in %d bytes", count, len(records))
	}
	b := records
	for i := range count {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)-k) {
			return fmt.Errorf("record %d of %d: its length runs past the frame", i, count)
		}
		b = b[k+int(n):]
	}
	if len(b) != 0 {
		return fmt.Errorf("%d bytes after the last of %d records", len(b), count)
	}
	return nil
}

// failure turns a Failure frame into the reader's error.
func (ch *channel) failure(f *Failure) error {
	var cause error
	if len(f.Cause) > 0 {
		var info jobgraph.ErrorInfo
		if err := json.Unmarshal(f.Cause, &info); err != nil {
			return ch.streamError(fmt.Errorf("%w: failure cause: %v", ErrMalformedFrame, err))
		}
		cause = info.Err()
	}
	var reason error
	switch f.Reason {
	case Failure_PRODUCER_FAILED:
		reason = taskexecutor.ErrProducerFailed
	case Failure_PARTITION_RELEASED:
		reason = taskexecutor.ErrPartitionReleased
	case Failure_PARTITION_LOST:
		reason = taskexecutor.ErrPartitionLost
	default:
		if cause == nil {
			cause = errors.New("no cause given")
		}
		return fmt.Errorf("netshuffle: data server %s refused subpartition %d of %v: %w", ch.addr, ch.gate.sub, ch.id, cause)
	}
	return &taskexecutor.PartitionError{Partition: ch.id, Reason: reason, Cause: cause}
}

// transportError maps a stream error: a frame over the size limit is that stream's
// ErrFrameTooLarge; anything else means the producer's process or the connection to it is gone
// (ErrPartitionLost: region failover restarts the producer).
func (ch *channel) transportError(err error) error {
	if s, ok := status.FromError(err); ok && s.Code() == codes.ResourceExhausted {
		return ch.streamError(fmt.Errorf("%w: %s", ErrFrameTooLarge, s.Message()))
	}
	return ch.lostError(err)
}

// fifo is a queue of entries on a slice that reuses its array.
type fifo struct {
	items []entry
	head  int
}

func (q *fifo) len() int { return len(q.items) - q.head }

func (q *fifo) push(e entry) {
	if q.head > 0 && len(q.items) == cap(q.items) {
		n := copy(q.items, q.items[q.head:])
		clear(q.items[n:])
		q.items, q.head = q.items[:n], 0
	}
	q.items = append(q.items, e)
}

func (q *fifo) pop() entry {
	e := q.items[q.head]
	q.items[q.head] = entry{}
	q.head++
	if q.head == len(q.items) {
		q.items, q.head = q.items[:0], 0
	}
	return e
}

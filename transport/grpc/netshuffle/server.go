package netshuffle

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/rpc"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

// server is the data server: it streams subpartitions of the partitions produced in its
// Environment's process. Flink: PartitionRequestServerHandler and its
// CreditBasedSequenceNumberingViewReader.
type server struct {
	UnimplementedPartitionServiceServer
	env *Environment
}

// openRequest is a parsed Open.
type openRequest struct {
	job      jobgraph.JobID
	id       rpc.ResultPartitionID
	sub      int
	typ      jobgraph.ResultPartitionType
	codec    Codec
	credit   uint32
	maxFrame int
}

func parseOpen(env *Environment, o *Open) (openRequest, error) {
	var r openRequest
	if o == nil {
		return r, errors.New("the first request of a stream must be an Open")
	}
	if len(o.Job) != len(r.job) {
		return r, fmt.Errorf("job ID of %d bytes; want %d", len(o.Job), len(r.job))
	}
	copy(r.job[:], o.Job)
	if err := json.Unmarshal(o.Partition, &r.id); err != nil {
		return r, fmt.Errorf("partition ID: %w", err)
	}
	if err := r.typ.UnmarshalText([]byte(o.ResultType)); err != nil {
		return r, fmt.Errorf("result type: %w", err)
	}
	r.sub = int(o.Subpartition)
	var err error
	if _, r.codec, err = env.codecFor(o.Codec); err != nil {
		return r, fmt.Errorf("on the producer's TaskExecutor: %w", err)
	}
	if o.Credit == 0 {
		return r, errors.New("no initial credit")
	}
	r.credit = o.Credit
	r.maxFrame = int(o.MaxFrameBytes)
	if r.maxFrame <= 0 {
		return r, errors.New("no max_frame_bytes")
	}
	return r, nil
}

// Read implements PartitionServiceServer: one subpartition to one consumer, sending Data frames
// only against credit.
func (s *server) Read(stream PartitionService_ReadServer) error {
	env := s.env
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	req, err := parseOpen(env, first.GetOpen())
	if err != nil {
		return stream.Send(failureFrame(fmt.Errorf("netshuffle: malformed Open: %w", err)))
	}
	ts, stop := taskexecutor.NewTaskStop(stream.Context())
	defer stop(errors.New("stream over"))
	wake := make(chan struct{}, 1)
	owner := taskexecutor.ShuffleIOOwnerContext{JobID: req.job, Stop: ts, Wake: wake,
		TaskName: fmt.Sprintf("netshuffle: reader of subpartition %d of %v", req.sub, req.id)}
	rs, err := env.local.CreateInputGates(owner, []rpc.InputGateDeploymentDescriptor{{
		DataSetID: req.id.PartitionID.IntermediateDataSetID, ResultType: req.typ,
		Partitions: []rpc.ResultPartitionID{req.id}, ConsumedSubpartitionIndex: req.sub}})
	if err != nil {
		return stream.Send(failureFrame(err))
	}
	r := rs[0]
	defer r.Close()
	if err := stream.Send(&Frame{Kind: &Frame_Opened{Opened: &Opened{}}}); err != nil {
		return err
	}

	// Credit arrives on its own goroutine; the stream's context ends it (and this handler's
	// waits) when the consumer goes away.
	var credit atomic.Int64
	credit.Store(int64(req.credit))
	granted := make(chan struct{}, 1)
	recvDone := make(chan struct{})
	env.serving.Add(1)
	go func() {
		defer env.serving.Done()
		defer close(recvDone)
		for {
			m, err := stream.Recv()
			if err != nil {
				stop(fmt.Errorf("consumer gone: %w", err))
				return
			}
			n := m.GetCredit()
			if n == 0 {
				stop(errors.New("a request after Open that grants no credit"))
				return
			}
			credit.Add(int64(n))
			select {
			case granted <- struct{}{}:
			default:
			}
		}
	}()

	w := frameWriter{env: env, stream: stream, limit: env.recordBytes(), max: req.maxFrame}
	defer w.release()
	ctx := ts.Context()
	for {
		// Wait for credit before taking anything from the partition: what is not taken stays
		// in the producer's in-memory shuffle, and its writer blocks once that is full.
		for credit.Load() <= 0 {
			select {
			case <-granted:
			case <-ctx.Done():
				return nil
			}
		}
		var rec any
		var err error
		if len(w.backlog) > 0 {
			rec = w.backlog[0]
			w.backlog[0] = nil
			w.backlog = w.backlog[1:]
		} else {
			var ok bool
			rec, ok, err = r.Poll()
			switch {
			case err == io.EOF:
				if err := w.flush(); err != nil {
					return err
				}
				return stream.Send(&Frame{Kind: &Frame_End{End: &End{}}})
			case err != nil:
				if ctx.Err() != nil {
					return nil
				}
				if err := w.flush(); err != nil {
					return err
				}
				return stream.Send(failureFrame(err))
			case !ok:
				// Nothing at hand. Once the consumer holds nothing of this stream (all its
				// credit is back), it may be waiting: send the partial frame, or, with none,
				// ask the producer's writer to hand over its partial chunk at its next Emit
				// (the in-memory shuffle's hunger). While the consumer still has frames to
				// read, keep filling.
				idle := credit.Load() >= int64(req.credit)
				if idle && w.count > 0 {
					if err := w.flush(); err != nil {
						return err
					}
					credit.Add(-1)
					continue
				}
				if idle {
					r.SetWaiting(true)
				}
				select {
				case <-wake:
				case <-granted:
				case <-ctx.Done():
					return nil
				}
				continue
			}
		}
		var c *chunk
		switch v := rec.(type) {
		case *taskexecutor.CheckpointBarrier:
			if w.count > 0 {
				if err := w.flush(); err != nil {
					return err
				}
				credit.Add(-1)
			}
			if err := stream.Send(barrierFrame(v)); err != nil {
				return err
			}
			r.ResumeAlignment(v.ID) // one channel: nothing to align here; the consumer aligns
			continue
		case *chunk:
			c = v
		default:
			err = fmt.Errorf("a record of type %T, not written through the network shuffle's writer", rec)
		}
		full := false
		if err == nil {
			full, err = w.add(c)
		}
		if err != nil {
			// The records cannot cross: the producer fails (its next Emit says why), and so
			// does this reader.
			cause := fmt.Errorf("netshuffle: record for subpartition %d of %v: %w", req.sub, req.id, err)
			env.failProduced(req.id, cause)
			return stream.Send(failureFrame(&taskexecutor.PartitionError{Partition: req.id, Reason: taskexecutor.ErrProducerFailed, Cause: cause}))
		}
		if full {
			if err := w.flush(); err != nil {
				return err
			}
			credit.Add(-1)
		}
	}
}

// frameWriter turns the chunks of a subpartition into Data frames: a chunk of at least
// BufferSize bytes goes as it is (no copy), smaller ones are gathered into one frame of up to
// BufferSize bytes; no frame exceeds the consumer's limit.
type frameWriter struct {
	env    *Environment
	stream PartitionService_ReadServer
	limit  int // send once the frame holds this many bytes
	max    int // the consumer's MaxFrameSize
	// The frame being gathered from small chunks (copied), count records of record size size,
	// in a buffer of the pool (gbuf).
	buf   []byte
	gbuf  *[]byte
	count int
	size  int
	// direct is a chunk to send as it is, on its own.
	direct *chunk
	// backlog holds chunks to take before polling the partition again: one that did not fit
	// the frame being sent, or the parts of one over the consumer's limit.
	backlog []*chunk
}

// add takes c into the frame; full: send it now.
func (w *frameWriter) add(c *chunk) (full bool, err error) {
	if len(c.data) > w.max {
		parts, err := split(c, w.max)
		if err != nil {
			return false, err
		}
		w.env.putChunk(c)
		w.backlog = append(parts, w.backlog...)
		return false, nil
	}
	if w.count > 0 && (len(w.buf)+len(c.data) > w.max || c.size != w.size) {
		w.backlog = append([]*chunk{c}, w.backlog...)
		return true, nil
	}
	if w.count == 0 && len(c.data) >= w.limit {
		w.direct = c
		return true, nil
	}
	if w.gbuf == nil {
		w.gbuf = w.env.pool.Get(w.env.chunkCap)
		w.buf = (*w.gbuf)[:0]
	}
	w.buf = append(w.buf, c.data...)
	w.count += c.count
	w.size = c.size
	w.env.putChunk(c)
	return len(w.buf) >= w.limit, nil
}

// split cuts a chunk over the consumer's limit into chunks within it (not pooled); a single
// record that cannot fit in the limit is ErrFrameTooLarge.
func split(c *chunk, limit int) ([]*chunk, error) {
	var parts []*chunk
	cur := &chunk{size: c.size}
	b := c.data
	for len(b) > 0 {
		n, k := uint64(c.size), 0
		if c.size == 0 {
			n, k = binary.Uvarint(b)
			if k <= 0 || n > uint64(len(b)-k) {
				return nil, fmt.Errorf("%w: a chunk whose record lengths run past its end", ErrMalformedFrame)
			}
		}
		if size := n + binary.MaxVarintLen64; size > uint64(limit) {
			return nil, fmt.Errorf("%w: an encoded record of %d bytes does not fit in the consumer's frame limit of %d bytes", ErrFrameTooLarge, n, limit)
		}
		rec := b[:k+int(n)]
		if cur.count > 0 && len(cur.data)+len(rec) > limit {
			parts = append(parts, cur)
			cur = &chunk{size: c.size}
		}
		cur.data = append(cur.data, rec...)
		cur.count++
		b = b[len(rec):]
	}
	if cur.count > 0 {
		parts = append(parts, cur)
	}
	return parts, nil
}

// flush sends the frame, if there is one. Its buffer goes to gRPC (wireCodec), which gives a
// pooled one back to the pool once written.
func (w *frameWriter) flush() error {
	if c := w.direct; c != nil {
		w.direct = nil
		return w.stream.SendMsg(c.records())
	}
	if w.count == 0 {
		return nil
	}
	*w.gbuf = w.buf
	f := &outFrame{count: w.count, size: w.size, records: w.gbuf, pooled: true}
	w.buf, w.gbuf, w.count = nil, nil, 0
	return w.stream.SendMsg(f)
}

// release gives back the chunks the stream still holds when it ends.
func (w *frameWriter) release() {
	w.env.putChunk(w.direct)
	for _, c := range w.backlog {
		w.env.putChunk(c)
	}
	if w.gbuf != nil {
		*w.gbuf = w.buf[:0]
		w.env.pool.Put(w.gbuf)
	}
	w.direct, w.backlog, w.gbuf, w.buf = nil, nil, nil, nil
}

func barrierFrame(b *taskexecutor.CheckpointBarrier) *Frame {
	var ts int64
	if !b.Timestamp.IsZero() {
		ts = b.Timestamp.UnixNano()
	}
	return &Frame{Kind: &Frame_Barrier{Barrier: &Barrier{Id: int64(b.ID), TimestampUnixNano: ts, SnapshotType: b.Properties.Type.String()}}}
}

func parseBarrier(m *Barrier) (*taskexecutor.CheckpointBarrier, error) {
	b := &taskexecutor.CheckpointBarrier{ID: checkpoint.CheckpointID(m.Id)}
	if m.TimestampUnixNano != 0 {
		b.Timestamp = time.Unix(0, m.TimestampUnixNano)
	}
	if err := b.Properties.Type.UnmarshalText([]byte(m.SnapshotType)); err != nil {
		return nil, fmt.Errorf("barrier of checkpoint %d: %w", m.Id, err)
	}
	return b, nil
}

// failureFrame describes err to the consumer: the reason the library's sentinels give, and the
// cause as a jobgraph.ErrorInfo (its text and codes).
func failureFrame(err error) *Frame {
	reason := Failure_OTHER
	cause := err
	var pe *taskexecutor.PartitionError
	if errors.As(err, &pe) {
		cause = pe.Cause
	}
	switch {
	case errors.Is(err, taskexecutor.ErrPartitionLost):
		reason = Failure_PARTITION_LOST
	case errors.Is(err, taskexecutor.ErrPartitionReleased):
		reason = Failure_PARTITION_RELEASED
	case errors.Is(err, taskexecutor.ErrProducerFailed):
		reason = Failure_PRODUCER_FAILED
	}
	var data []byte
	if cause != nil {
		data, _ = json.Marshal(jobgraph.NewErrorInfo(cause, time.Time{}))
	}
	return &Frame{Kind: &Frame_Failure{Failure: &Failure{Reason: reason, Cause: data}}}
}

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

	w := frameWriter{stream: stream, codec: req.codec, limit: env.cfg.BufferSize, max: req.maxFrame}
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
		w.takePending()
		rec, ok, err := r.Poll()
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
			// Nothing at hand. Once the consumer holds nothing of this stream (all its credit
			// is back), it may be waiting: send the partial frame, or, with none, ask the
			// producer's writer to hand over its partial batch at its next Emit (the in-memory
			// shuffle's hunger). While the consumer still has frames to read, keep filling.
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
		if b, isBarrier := rec.(*taskexecutor.CheckpointBarrier); isBarrier {
			if w.count > 0 {
				if err := w.flush(); err != nil {
					return err
				}
				credit.Add(-1)
			}
			if err := stream.Send(barrierFrame(b)); err != nil {
				return err
			}
			r.ResumeAlignment(b.ID) // one channel: nothing to align here; the consumer aligns
			continue
		}
		full, err := w.add(rec)
		if err != nil {
			// The record cannot cross: the producer fails (its next Emit says why), and so
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

// frameWriter gathers encoded records into a Data frame.
type frameWriter struct {
	stream  PartitionService_ReadServer
	codec   Codec
	limit   int // send once the frame holds this many bytes
	max     int // the consumer's MaxFrameSize
	buf     []byte
	scratch []byte
	count   int
	// pending is an encoded record that did not fit into the frame being sent (hasPending).
	pending    []byte
	hasPending bool
}

// add encodes rec into the frame; full: send it now.
func (w *frameWriter) add(rec any) (full bool, err error) {
	w.scratch, err = w.codec.Append(w.scratch[:0], rec)
	if err != nil {
		return false, err
	}
	n := len(w.scratch)
	if size := n + binary.MaxVarintLen64; size > w.max {
		return false, fmt.Errorf("%w: an encoded record of %d bytes does not fit in the consumer's frame limit of %d bytes", ErrFrameTooLarge, n, w.max)
	}
	if w.count > 0 && len(w.buf)+n+binary.MaxVarintLen64 > w.max {
		// Would overflow the consumer's limit: this one starts the next frame.
		w.pending = append(w.pending[:0], w.scratch...)
		w.hasPending = true
		return true, nil
	}
	w.buf = binary.AppendUvarint(w.buf, uint64(n))
	w.buf = append(w.buf, w.scratch...)
	w.count++
	return len(w.buf) >= w.limit, nil
}

// flush sends the frame, if it holds records.
func (w *frameWriter) flush() error {
	if w.count == 0 {
		return nil
	}
	err := w.stream.Send(&Frame{Kind: &Frame_Data{Data: &Data{Count: uint32(w.count), Records: w.buf}}})
	w.buf, w.count = w.buf[:0], 0
	return err
}

// takePending starts the frame after a flush with the record that did not fit into the one
// before (the stream has credit for it again).
func (w *frameWriter) takePending() {
	if w.hasPending {
		w.buf = binary.AppendUvarint(w.buf, uint64(len(w.pending)))
		w.buf = append(w.buf, w.pending...)
		w.count = 1
		w.hasPending = false
	}
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

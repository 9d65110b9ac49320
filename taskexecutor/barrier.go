package taskexecutor

import (
	"context"

	"github.com/jobgraph/jobgraph/checkpoint"
)

// Checkpoint barriers in the in-memory shuffle.
//
// A barrier is a batch of its own, []any{*CheckpointBarrier}, that a pipelined writer hands over
// on every subpartition after the batch it was filling (BroadcastBarrier): it takes the same
// path as a batch of records — the gate's queue (one credit), or the partition's parking place
// for a reader not attached yet — so it comes after every record written before it and costs
// nothing while no checkpoint runs. Blocking and hybrid partitions carry no barriers: their
// readers read a finished or kept partition and take no part in alignment.
//
// The gate aligns (Flink's SingleCheckpointBarrierHandler, aligned checkpoints): once a channel
// (one producer partition) delivered the barrier of checkpoint N, the gate holds back what that
// channel sends next, until ResumeAlignment. A held-back batch gives its credit back to the gate,
// so the channels still due their barrier are never starved by blocked ones; instead a blocked
// channel may hold back at most QueueCapacity batches before its writer waits
// (back-pressure), so an alignment holds at most QueueCapacity batches per blocked channel. The
// per-channel map exists only while the gate aligns.

// barrierOf returns the barrier a batch carries, or nil for a batch of records.
func barrierOf(batch []any) *CheckpointBarrier {
	if len(batch) != 1 {
		return nil
	}
	b, _ := batch[0].(*CheckpointBarrier)
	return b
}

// noteBarrier records that channel src delivered b; false means b is stale (a checkpoint the
// gate aligned already, or older than the one it aligns) and is dropped. A barrier of a newer
// checkpoint than the one aligned ends that alignment (its held-back batches go first) and
// starts the new one: the task declines the older checkpoint as subsumed. g.mu held.
func (g *inputGate) noteBarrier(src *partition, b *CheckpointBarrier) bool {
	switch {
	case b.ID <= g.floor || b.ID < g.alignID:
		return false
	case b.ID > g.alignID:
		if g.alignID != 0 {
			g.resumeLocked()
		}
		g.alignID = b.ID
		g.blocked = map[*partition]int{src: 0}
	default:
		g.blocked[src] = 0
	}
	return true
}

// resumeLocked ends the alignment: the held-back batches go back to the front of the queue, in
// the order they came, and count as in flight again; the writers waiting go on. g.mu held.
func (g *inputGate) resumeLocked() {
	if n := g.held.len(); n > 0 {
		items := make([]entry, 0, n+g.queue.len())
		for g.held.len() > 0 {
			e := g.held.pop()
			if e.src != nil {
				g.inFlight++
			}
			items = append(items, e)
		}
		for g.queue.len() > 0 {
			items = append(items, g.queue.pop())
		}
		g.queue = fifo[entry]{items: items}
	}
	g.alignID, g.blocked = 0, nil
	if g.space != nil {
		close(g.space)
		g.space = nil
	}
}

// ResumeAlignment implements ShuffleReader.
func (g *inputGate) ResumeAlignment(id checkpoint.CheckpointID) {
	g.mu.Lock()
	g.floor = max(g.floor, id)
	if g.alignID != 0 && g.alignID <= id {
		g.resumeLocked()
	}
	g.mu.Unlock()
	g.notify()
}

// ProducersFinished implements ShuffleReader.
func (g *inputGate) ProducersFinished() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.allEnded
}

// Aligned implements ShuffleReader: O(1) while a channel is still due its barrier and no
// partition finished; once partitions finished, O(partitions) to tell those that delivered the
// barrier from those that ended without it.
func (g *inputGate) Aligned(id checkpoint.CheckpointID) bool {
	grp := g.grp
	if grp == nil || retained(grp.typ) || g.ended || g.err != nil {
		return true
	}
	if g.pos < len(g.cur) {
		return false // records taken before the barrier are still to be handed out
	}
	total := len(grp.parts)
	g.mu.Lock()
	nb := 0
	if g.alignID == id {
		nb = len(g.blocked)
	}
	g.mu.Unlock()
	if nb == total {
		return true
	}
	s := g.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if nb+grp.finished < total {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.alignID != id && g.alignID != 0 {
		return false
	}
	// Every channel that did not deliver the barrier must have finished (read under s.mu, so
	// every batch it wrote is in the queue by now) and have nothing left in the queue.
	ended := 0
	for _, p := range grp.parts {
		if p == nil {
			ended++
			continue
		}
		if _, isBlocked := g.blocked[p]; isBlocked && g.alignID == id {
			continue
		}
		if p.state != stateFinished {
			return false
		}
		ended++
	}
	if nb+ended < total {
		return false
	}
	for i := g.queue.head; i < len(g.queue.items); i++ {
		if src := g.queue.items[i].src; src != nil {
			if _, isBlocked := g.blocked[src]; !isBlocked {
				return false
			}
		}
	}
	return true
}

// BroadcastBarrier implements ShuffleWriter: on every subpartition of a pipelined partition,
// the batch being filled, then the barrier. A subpartition written to for the first time gets
// no writer slot for it.
func (w *partitionWriter) BroadcastBarrier(ctx context.Context, b *CheckpointBarrier) error {
	if err := w.stop.Err(); err != nil {
		return err
	}
	if retained(w.p.typ) {
		return nil // blocking and hybrid partitions carry no barriers
	}
	if err := w.stop.Check(ctx); err != nil {
		return err
	}
	if w.p.failed.Load() {
		return w.p.err
	}
	batch := []any{b} // one batch for every subpartition: a reader never gives a barrier's back
	for s := range w.n {
		var o *outBuf
		if w.slot != nil && w.slot[s] != 0 {
			o = &w.outs[w.slot[s]-1]
			if err := w.flush(ctx, o, true); err != nil {
				return err
			}
		} else {
			o = &outBuf{sub: s}
		}
		if _, _, err := w.handOver(ctx, o, batch, true); err != nil {
			return err
		}
	}
	return nil
}

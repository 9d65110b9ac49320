package resourcemanager

import "container/heap"

// waitQueue holds the jobs that lack slots of one requirement profile, first registered first: a
// binary heap on job.seq, so that a job lacking again (its TaskExecutor was lost, say) takes its
// registration place back rather than the end of the line. push, remove and head cost
// O(log n) or less.
type waitQueue struct {
	entries waitHeap
}

// waitEntry is one job's place in one waitQueue.
type waitEntry struct {
	j     *job
	index int // in waitQueue.entries
}

func (q *waitQueue) len() int { return len(q.entries) }

// head returns the first job; the queue must not be empty (an empty queue is dropped).
func (q *waitQueue) head() *job { return q.entries[0].j }

func (q *waitQueue) push(j *job) *waitEntry {
	e := &waitEntry{j: j}
	heap.Push(&q.entries, e)
	return e
}

func (q *waitQueue) remove(e *waitEntry) { heap.Remove(&q.entries, e.index) }

type waitHeap []*waitEntry

func (h waitHeap) Len() int           { return len(h) }
func (h waitHeap) Less(a, b int) bool { return h[a].j.seq < h[b].j.seq }
func (h waitHeap) Swap(a, b int) {
	h[a], h[b] = h[b], h[a]
	h[a].index, h[b].index = a, b
}
func (h *waitHeap) Push(x any) {
	e := x.(*waitEntry)
	e.index = len(*h)
	*h = append(*h, e)
}
func (h *waitHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return e
}

package rpc

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jobgraph/jobgraph"
)

// The JSON form of an InputGateDeploymentDescriptor names the partitions it reads in one of two
// ways:
//
//   - "partitionRange", when the gate reads partitions first … first+count-1 of its data set in
//     that order, each produced by the subtask of the same index of one producer JobVertex of
//     one ExecutionGraph (what the scheduler builds for every ALL_TO_ALL and POINTWISE edge):
//     the ExecutionGraphID, the producer's JobVertexID, first, count, and the producers' attempt
//     numbers run-length encoded as [run length, attempt number] pairs. Its size is O(1) plus one
//     pair per change of attempt number along the range — one pair for a job that never
//     restarted or restarted everything — where the list form costs ~170 bytes per partition
//     (2.7 MB for one sink of a 10,000 × 10,000 ALL_TO_ALL edge).
//   - "partitions", the explicit list, for anything else.
//
// Both decode to the same InputGateDeploymentDescriptor.Partitions. Flink ships a
// ConsumedPartitionGroup's ShuffleDescriptors serialized and compressed once per group
// (TaskDeploymentDescriptorFactory's cache, offloaded to the blob server when large); the range
// form needs no cache, since it is small for every consumer.

// partitionRange is the "partitionRange" object.
type partitionRange struct {
	ExecutionGraphID jobgraph.ExecutionGraphID `json:"executionGraphId"`
	ProducerVertexID jobgraph.JobVertexID      `json:"producerVertexId"`
	First            int                       `json:"first"`
	Count            int                       `json:"count"`
	// Attempts are [run length, attempt number] pairs; the run lengths add up to Count.
	Attempts [][2]int `json:"attempts"`
}

// inputGateJSON is InputGateDeploymentDescriptor's wire form.
type inputGateJSON struct {
	DataSetID                 jobgraph.IntermediateDataSetID `json:"dataSetId"`
	ResultType                jobgraph.ResultPartitionType   `json:"resultType"`
	Partitions                []ResultPartitionID            `json:"partitions,omitempty"`
	PartitionRange            *partitionRange                `json:"partitionRange,omitempty"`
	ConsumedSubpartitionIndex int                            `json:"consumedSubpartitionIndex"`
	ShuffleDescriptors        []ShuffleDescriptor            `json:"shuffleDescriptors,omitempty"`
}

// MarshalJSON writes the gate with its partitions as a "partitionRange" when they form one (see
// above), else as the "partitions" list. Cost: O(len(Partitions)) time, output O(1) plus the
// attempt runs for a range.
func (d InputGateDeploymentDescriptor) MarshalJSON() ([]byte, error) {
	w := inputGateJSON{DataSetID: d.DataSetID, ResultType: d.ResultType, ConsumedSubpartitionIndex: d.ConsumedSubpartitionIndex, ShuffleDescriptors: d.ShuffleDescriptors}
	if r, ok := compactRange(d.DataSetID, d.Partitions); ok {
		w.PartitionRange = r
	} else {
		w.Partitions = d.Partitions
	}
	return json.Marshal(w)
}

// compactRange returns ps as a partitionRange if they form one.
func compactRange(dataSet jobgraph.IntermediateDataSetID, ps []ResultPartitionID) (*partitionRange, bool) {
	if len(ps) == 0 {
		return nil, false
	}
	p0 := ps[0]
	r := &partitionRange{
		ExecutionGraphID: p0.ProducerID.ExecutionGraphID,
		ProducerVertexID: p0.ProducerID.ExecutionVertexID.JobVertexID,
		First:            p0.PartitionID.PartitionIndex,
		Count:            len(ps),
	}
	for i, p := range ps {
		idx := r.First + i
		if p.PartitionID.IntermediateDataSetID != dataSet || p.PartitionID.PartitionIndex != idx ||
			p.ProducerID.ExecutionGraphID != r.ExecutionGraphID ||
			p.ProducerID.ExecutionVertexID != (jobgraph.ExecutionVertexID{JobVertexID: r.ProducerVertexID, Subtask: idx}) {
			return nil, false
		}
		if n := len(r.Attempts); n > 0 && r.Attempts[n-1][1] == p.ProducerID.AttemptNumber {
			r.Attempts[n-1][0]++
		} else {
			r.Attempts = append(r.Attempts, [2]int{1, p.ProducerID.AttemptNumber})
		}
	}
	return r, true
}

// UnmarshalJSON reads either form. Errors: both forms present; a range whose first or count is
// negative or reaches past jobgraph.MaxMaxParallelism partitions, whose attempt runs are not
// positive or do not add up to count, or has a negative attempt number; a malformed ID.
func (d *InputGateDeploymentDescriptor) UnmarshalJSON(data []byte) error {
	var w inputGateJSON
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	out := InputGateDeploymentDescriptor{DataSetID: w.DataSetID, ResultType: w.ResultType,
		Partitions: w.Partitions, ConsumedSubpartitionIndex: w.ConsumedSubpartitionIndex}
	if r := w.PartitionRange; r != nil {
		if w.Partitions != nil {
			return errors.New("rpc: input gate: both partitions and partitionRange given")
		}
		ps, err := r.expand(w.DataSetID)
		if err != nil {
			return fmt.Errorf("rpc: input gate of data set %s: partitionRange: %w", w.DataSetID, err)
		}
		out.Partitions = ps
	}
	if w.ShuffleDescriptors != nil {
		if len(w.ShuffleDescriptors) != len(out.Partitions) {
			return fmt.Errorf("rpc: input gate of data set %s: %d shuffleDescriptors for %d partitions", w.DataSetID, len(w.ShuffleDescriptors), len(out.Partitions))
		}
		for i, sd := range w.ShuffleDescriptors {
			if sd.ResultPartitionID != out.Partitions[i] {
				return fmt.Errorf("rpc: input gate of data set %s: shuffleDescriptors[%d] describes partition %v, not %v", w.DataSetID, i, sd.ResultPartitionID, out.Partitions[i])
			}
		}
		out.ShuffleDescriptors = w.ShuffleDescriptors
	}
	*d = out
	return nil
}

func (r *partitionRange) expand(dataSet jobgraph.IntermediateDataSetID) ([]ResultPartitionID, error) {
	if r.First < 0 || r.Count < 0 || r.First > jobgraph.MaxMaxParallelism || r.Count > jobgraph.MaxMaxParallelism-r.First {
		return nil, fmt.Errorf("first %d and count %d must name partitions within [0, %d)", r.First, r.Count, jobgraph.MaxMaxParallelism)
	}
	sum := 0
	for i, run := range r.Attempts {
		if run[0] <= 0 || run[1] < 0 {
			return nil, fmt.Errorf("attempts[%d] = %v: want a positive run length and a non-negative attempt number", i, run)
		}
		if sum += run[0]; sum > r.Count {
			break
		}
	}
	if sum != r.Count {
		return nil, fmt.Errorf("attempt runs cover %d partitions, count is %d", sum, r.Count)
	}
	if r.Count == 0 {
		return nil, nil
	}
	ps := make([]ResultPartitionID, 0, r.Count)
	for _, run := range r.Attempts {
		for range run[0] {
			idx := r.First + len(ps)
			ps = append(ps, ResultPartitionID{
				PartitionID: jobgraph.IntermediateResultPartitionID{IntermediateDataSetID: dataSet, PartitionIndex: idx},
				ProducerID: jobgraph.ExecutionAttemptID{ExecutionGraphID: r.ExecutionGraphID,
					ExecutionVertexID: jobgraph.ExecutionVertexID{JobVertexID: r.ProducerVertexID, Subtask: idx}, AttemptNumber: run[1]},
			})
		}
	}
	return ps, nil
}

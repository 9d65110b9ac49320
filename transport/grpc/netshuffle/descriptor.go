package netshuffle

import (
	"encoding/json"
	"fmt"
	"sync"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/rpc"
	"github.com/jobgraph/jobgraph/scheduler"
)

// descriptorData is rpc.ShuffleDescriptor.Data of a network-shuffle partition: where its
// producer's data server listens, the data set's record codec and the partition's number of
// subpartitions (so a reader of one out of range fails when it is created). Flink:
// NettyShuffleDescriptor's ConnectionID and the partition's metadata.
type descriptorData struct {
	Address       string `json:"address"`
	Codec         string `json:"codec,omitempty"`
	Subpartitions int    `json:"subpartitions,omitempty"`
}

// parseDescriptor reads d's Data; ok is false for a descriptor without any (Flink's
// UnknownShuffleDescriptor: the scheduler deployed the reader before its producer).
func parseDescriptor(d *rpc.ShuffleDescriptor) (dd descriptorData, ok bool, err error) {
	if d == nil || len(d.Data) == 0 {
		return descriptorData{}, false, nil
	}
	if err := json.Unmarshal(d.Data, &dd); err != nil {
		return descriptorData{}, false, fmt.Errorf("netshuffle: shuffle descriptor of partition %v: %w", d.ResultPartitionID, err)
	}
	if dd.Address == "" {
		return descriptorData{}, false, fmt.Errorf("netshuffle: shuffle descriptor of partition %v names no address", d.ResultPartitionID)
	}
	return dd, true, nil
}

// ShuffleMaster is the JobMaster's side of the network shuffle (scheduler.ShuffleMaster, for
// jobmaster.Config.ShuffleMaster): it describes each partition with the data address of its
// producer's TaskExecutor, the data set's record codec and the number of subpartitions, in
// rpc.ShuffleDescriptor.Data. Flink: NettyShuffleMaster. Its methods are called on the
// JobMaster's main loop and do no I/O: Resolve must answer from memory.
type ShuffleMaster struct {
	// Resolve maps a TaskExecutor to the address ("host:port") of its Environment's data server
	// (Environment.Addr). An error fails the producing attempt's deployment. Required.
	Resolve func(jobgraph.ResourceID) (string, error)
}

var _ scheduler.ShuffleMaster = (*ShuffleMaster)(nil)

// RegisterPartitionWithProducer implements scheduler.ShuffleMaster.
func (m *ShuffleMaster) RegisterPartitionWithProducer(_ jobgraph.JobID, p scheduler.PartitionDescriptor, producer scheduler.ProducerDescriptor) (rpc.ShuffleDescriptor, error) {
	if m == nil || m.Resolve == nil {
		return rpc.ShuffleDescriptor{}, fmt.Errorf("netshuffle: ShuffleMaster has no Resolve")
	}
	addr, err := m.Resolve(producer.ProducerLocation)
	if err != nil {
		return rpc.ShuffleDescriptor{}, fmt.Errorf("netshuffle: no data address for TaskExecutor %s: %w", producer.ProducerLocation, err)
	}
	data, err := json.Marshal(descriptorData{Address: addr, Codec: p.RecordCodec, Subpartitions: p.NumberOfSubpartitions})
	if err != nil {
		return rpc.ShuffleDescriptor{}, err
	}
	return rpc.ShuffleDescriptor{ResultPartitionID: p.ResultPartitionID, ProducerLocation: producer.ProducerLocation, Data: data}, nil
}

// ReleasePartitionExternally implements scheduler.ShuffleMaster: the network shuffle keeps
// nothing outside the producer's TaskExecutor, whose copy TaskExecutorGateway.ReleasePartitions
// releases.
func (m *ShuffleMaster) ReleasePartitionExternally(rpc.ShuffleDescriptor) {}

// AddressBook is a Resolve for ShuffleMaster: the data address of each TaskExecutor, as the
// host learns it (a TaskExecutor process announces Environment.Addr when it starts). Safe for
// concurrent use.
type AddressBook struct {
	mu    sync.RWMutex
	addrs map[jobgraph.ResourceID]string
}

// Set records the data address of TaskExecutor te.
func (b *AddressBook) Set(te jobgraph.ResourceID, addr string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.addrs == nil {
		b.addrs = make(map[jobgraph.ResourceID]string)
	}
	b.addrs[te] = addr
}

// Resolve returns the address recorded for te, or an error naming it.
func (b *AddressBook) Resolve(te jobgraph.ResourceID) (string, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if a, ok := b.addrs[te]; ok {
		return a, nil
	}
	return "", fmt.Errorf("TaskExecutor %s has no data address in the address book", te)
}

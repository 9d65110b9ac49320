package netshuffle_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/rpc"
	"github.com/jobgraph/jobgraph/taskexecutor"
	"github.com/jobgraph/jobgraph/transport/grpc/netshuffle"
)

// The test binary re-executed as a TaskExecutor process that produces partitions.
const (
	roleEnv      = "NETSHUFFLE_TEST_ROLE"
	producerSpec = "NETSHUFFLE_TEST_PRODUCER"
)

// producerProcess is what the producer process is asked to produce: a PIPELINED_BOUNDED
// partition it writes int64s to for ever, and a BLOCKING one of Blocking int64s it finishes.
type producerProcess struct {
	Job       jobgraph.JobID
	Pipelined rpc.ResultPartitionID
	Blocking  rpc.ResultPartitionID
	Records   int
}

// runProducerProcess is the producer process: it prints its data address, produces, and stays
// until it is killed (or its standard input closes).
func runProducerProcess() int {
	var spec producerProcess
	if err := json.Unmarshal([]byte(os.Getenv(producerSpec)), &spec); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	env, err := netshuffle.New(netshuffle.Config{Logger: quietLogger()})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	owner := taskexecutor.ShuffleIOOwnerContext{JobID: spec.Job, TaskExecutor: "te-producer", TaskName: "producer"}
	desc := func(id rpc.ResultPartitionID, typ jobgraph.ResultPartitionType) rpc.ResultPartitionDeploymentDescriptor {
		data, _ := json.Marshal(map[string]any{"address": env.Addr(), "codec": netshuffle.CodecInt64, "subpartitions": 1})
		return rpc.ResultPartitionDeploymentDescriptor{ResultPartitionID: id, ResultType: typ, NumberOfSubpartitions: 1,
			ShuffleDescriptor: &rpc.ShuffleDescriptor{ResultPartitionID: id, ProducerLocation: "te-producer", Data: data}}
	}
	ws, err := env.CreateResultPartitionWriters(owner, []rpc.ResultPartitionDeploymentDescriptor{
		desc(spec.Pipelined, jobgraph.PipelinedBounded), desc(spec.Blocking, jobgraph.Blocking)})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx := context.Background()
	for i := range spec.Records {
		_ = ws[1].Emit(ctx, 0, int64(i))
	}
	if err := ws[1].Finish(ctx); err != nil { // the producer task of the blocking partition is done
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	fmt.Println(env.Addr())
	go func() {
		for i := 0; ; i++ {
			if ws[0].Emit(ctx, 0, int64(i)) != nil {
				return
			}
		}
	}()
	_, _ = io.Copy(io.Discard, os.Stdin) // until killed, or the test's end closes stdin
	return 0
}

// A partition whose producer's process is SIGKILLed: the reader in the middle of the pipelined
// one, and a reader of the finished blocking one attached afterwards, get ErrPartitionLost
// naming their partition (region failover restarts the producer). Before the kill, the blocking
// partition is read twice from the producer's process, whose producer task had finished.
func TestProducerProcessKilledLosesItsPartitions(t *testing.T) {
	x := newExchange(t)
	spec := producerProcess{Job: x.job, Pipelined: x.partition(jobgraph.NewIntermediateDataSetID(), 0),
		Blocking: x.partition(jobgraph.NewIntermediateDataSetID(), 0), Records: 5000}
	specJSON, err := json.Marshal(spec)
	require.NoError(t, err)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), roleEnv+"=producer", producerSpec+"="+string(specJSON))
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = stdin.Close(); _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err, "the producer process's address")
	addr := strings.TrimSpace(line)

	consumerEnv := newEnv(t, netshuffle.Config{})
	desc := func(id rpc.ResultPartitionID) rpc.ShuffleDescriptor {
		data, err := json.Marshal(map[string]any{"address": addr, "codec": netshuffle.CodecInt64, "subpartitions": 1})
		require.NoError(t, err)
		return rpc.ShuffleDescriptor{ResultPartitionID: id, ProducerLocation: "te-producer", Data: data}
	}
	for range 2 {
		got, err := readAll(t.Context(), x.read(consumerEnv, jobgraph.Blocking, 0, desc(spec.Blocking)))
		require.Equal(t, io.EOF, err)
		require.Len(t, got, spec.Records, "the finished blocking partition, read from the producer's process")
		assert.Equal(t, int64(spec.Records-1), got[len(got)-1])
	}

	r := x.read(consumerEnv, jobgraph.PipelinedBounded, 0, desc(spec.Pipelined))
	for i := range 1000 {
		rec, err := r.Next(t.Context())
		require.NoError(t, err)
		require.Equal(t, int64(i), rec)
	}
	require.NoError(t, cmd.Process.Kill()) // SIGKILL
	_ = cmd.Wait()
	for _, tc := range []struct {
		what string
		r    taskexecutor.ShuffleReader
		id   rpc.ResultPartitionID
	}{
		{"the reader in the middle of the pipelined partition", r, spec.Pipelined},
		{"a reader of the blocking partition attached after the kill", nil, spec.Blocking},
	} {
		if tc.r == nil {
			tc.r = x.read(consumerEnv, jobgraph.Blocking, 0, desc(tc.id))
		}
		_, err := readAll(t.Context(), tc.r)
		assert.ErrorIs(t, err, taskexecutor.ErrPartitionLost, tc.what)
		var pe *taskexecutor.PartitionError
		if assert.ErrorAs(t, err, &pe, tc.what) {
			assert.Equal(t, tc.id, pe.Partition, tc.what)
		}
	}
}

// Package netshuffle is a network shuffle for jobgraph: TaskExecutors in different processes
// exchange the records of their tasks over gRPC, behind the core's shuffle plug point
// (taskexecutor.ShuffleEnvironment on each TaskExecutor, scheduler.ShuffleMaster on the
// JobMaster). Flink: the NettyShuffleEnvironment and NettyShuffleMaster, with credit-based flow
// control (FLIP "credit-based flow control", Flink 1.5).
//
// Each TaskExecutor process runs one Environment (New): its tasks write their partitions into
// an in-memory taskexecutor.Shuffle of the process, which keeps every semantic of the
// in-memory default (batching, back-pressure, BLOCKING partitions kept until released and
// readable again after their producer finished, HYBRID ones readable while produced, failure
// and release), and one gRPC data server (127.0.0.1 unless Config.ListenAddress says otherwise;
// TLS with Config.ServerTLS/ClientTLS) streams them to consumers. The JobMaster's ShuffleMaster
// describes each partition with its producer's data address, the data set's record codec and its
// number of subpartitions (rpc.ShuffleDescriptor.Data), and the scheduler ships the descriptors
// in the deployment descriptors.
//
// A consumer's reader opens one gRPC stream per (partition, subpartition) it reads — all streams
// to one data server share one HTTP/2 connection — and grants it credit: Config.BuffersPerChannel
// Data frames up front, one more whenever its reader took a frame. A producing task's writer
// encodes each record with the data set's Codec straight into a chunk of its subpartition (a
// FixedSizeCodec's records without lengths; taskexecutor.Int64Writer's batches of the int64
// codec copied in as they are) and hands the chunk to the in-memory shuffle once it fills a
// frame of Config.BufferSize bytes, or earlier when the data server waits for it; the data
// server takes chunks from the in-memory shuffle only while the stream has credit and sends one
// frame per credit (a full chunk as it is, smaller ones gathered, a smaller frame whenever
// nothing more is at hand). The consumer decodes each record only when its reader gets to it
// (taskexecutor.BufferedInt64Reader: int64 records in bulk). Checkpoint barriers, the end of
// the partition and failures travel in-band, in their place, and need no credit. So a
// consumer that stops reading stops its own streams only: its producers' writers block in the
// in-memory shuffle
// (back-pressure), while every other stream on the same connection flows — gRPC's own windows
// are set larger than any stream's credit allows in flight, and the connection's window is
// returned as data arrives (TestSlowConsumerBlocksOnlyItsProducer).
//
// What a reader gets: the records of each partition in order; *taskexecutor.CheckpointBarrier
// records aligned as in the in-memory shuffle (Flink's aligned checkpoints: a channel that
// delivered the barrier is held back, without credit, until ResumeAlignment); io.EOF once every
// partition ended; a *taskexecutor.PartitionError matching ErrProducerFailed or
// ErrPartitionReleased as the producer's process says (the cause's text and library sentinel
// codes cross as a jobgraph.ErrorInfo); ErrPartitionLost when the producer's process or the
// connection to it is gone, so region failover restarts the producer; a *StreamError matching
// ErrFrameTooLarge or ErrMalformedFrame when one stream carried a frame over the limit or one it
// cannot read — that stream closes, no other stream is touched.
//
// Where we differ: Flink reads a partition produced in the same process through a
// LocalInputChannel; here every read goes through the data server, even from the producer's own
// process. Flink sends network buffers of serialized records, a record possibly spanning two;
// here a Data frame holds whole records, each a length and the Codec's bytes (no length for a
// FixedSizeCodec). A reader whose descriptor does not know the
// producer yet (Flink's UnknownShuffleDescriptor, which Flink updates later with
// updatePartitionInfo) reads from its own process's data server: the scheduler registers every
// partition of a deployment bulk before it deploys any of it, so a pipelined consumer always
// knows its producers, and a blocking one is deployed after them.
//
// The wire is netshuffle.proto; netshuffle.pb.go and netshuffle_grpc.pb.go are generated from it
// by transport/grpc/gen.sh, which pins protoc-gen-go v1.36.12 and protoc-gen-go-grpc v1.5.1
// (run it from transport/grpc after changing the .proto; commit what it writes).
//
// A half-configured network shuffle fails the task at deployment rather than hanging: a writer
// or reader deployed without shuffle descriptors (the JobManager has no ShuffleMaster) fails
// with ErrNoShuffleMaster.
package netshuffle

package netshuffle

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/rpc"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

// Defaults of Config.
const (
	// DefaultListenAddress is where the data server listens unless Config.ListenAddress says
	// otherwise: loopback only.
	DefaultListenAddress = "127.0.0.1:0"
	// DefaultBufferSize is the size of a full Data frame, header included (Flink's
	// taskmanager.memory.segment-size, 32 KiB).
	DefaultBufferSize = 32 << 10
	// DefaultBuffersPerChannel is the credit a consumer grants each channel (one (partition,
	// subpartition) stream) up front: the Data frames in flight or waiting at the consumer per
	// channel (Flink's taskmanager.network.memory.buffers-per-channel). Flink's default is 2
	// exclusive buffers a channel plus 8 floating ones per gate that whichever channel has
	// data borrows; we have no floating buffers, and with 2 a stream waits a credit's round
	// trip every other frame (BenchmarkNetworkShuffleAllToAll: 0.75 GB/s with 2, 1.2-1.4 GB/s
	// with 8, over loopback). The cost: up to 8 frames of BufferSize at the consumer per
	// channel.
	DefaultBuffersPerChannel = 8
	// DefaultLocalQueueCapacity is the in-memory shuffle's QueueCapacity in an Environment
	// (Config.Local): the chunks of encoded records — up to BufferSize bytes each — a
	// subpartition holds at its producer, handed over and not sent yet, before the producer's
	// writer blocks (Flink bounds a partition by its network buffers, too).
	DefaultLocalQueueCapacity = 4
)

// Config configures an Environment. Zero fields take the defaults.
type Config struct {
	// ListenAddress is the data server's "host:port" (DefaultListenAddress: 127.0.0.1, any
	// port). Without ServerTLS it must be a loopback address (127.0.0.0/8, ::1, localhost):
	// New refuses any other.
	ListenAddress string
	// Listener, if not nil, is used instead of listening on ListenAddress (the Environment
	// closes it).
	Listener net.Listener
	// ServerTLS, if not nil, is the data server's TLS configuration (for mutual TLS: a
	// certificate, ClientCAs and ClientAuth RequireAndVerifyClientCert, as Flink's
	// security.ssl.internal.* configure it); nil serves plaintext, and New logs that it does.
	ServerTLS *tls.Config
	// ClientTLS, if not nil, is the TLS configuration consumers dial producers with (for mutual
	// TLS: a client certificate and RootCAs); nil dials plaintext.
	ClientTLS *tls.Config
	// Codecs holds the record codecs by name (NewCodecs' built-ins when nil).
	Codecs *Codecs
	// DefaultCodec is the codec of a data set whose RecordCodec is "" (DefaultCodec, "json").
	DefaultCodec string
	// BufferSize is the size of a full Data frame (DefaultBufferSize): a producer's writer
	// gathers BufferSize less 64 bytes (room for the frame's header) of encoded records of a
	// subpartition before it hands them over to be sent; the record that reaches that mark
	// stays in the frame, and a single larger record goes alone in one. A producer also sends
	// a smaller frame whenever the consumer waits, so batching never delays a record.
	BufferSize int
	// MaxFrameSize is the largest Data frame (bytes of encoded records) this Environment's
	// readers accept (4 × BufferSize, at least 1 MiB). A producer fails a partition with a
	// record that cannot fit in it (ErrFrameTooLarge, the producer's task fails); a frame
	// larger than it that arrives all the same fails that stream only, with ErrFrameTooLarge.
	MaxFrameSize int
	// BuffersPerChannel is the credit a reader grants each stream up front
	// (DefaultBuffersPerChannel).
	BuffersPerChannel int
	// Local configures the in-memory shuffle that holds the partitions produced in this
	// process (taskexecutor.ShuffleConfig). Its batches hold one chunk of encoded records
	// each here (up to BufferSize bytes, see the package documentation), so BatchSize does not
	// matter and QueueCapacity counts chunks (DefaultLocalQueueCapacity when zero).
	Local taskexecutor.ShuffleConfig
	// Logger is where the Environment logs (slog.Default() when nil).
	Logger *slog.Logger
}

// Environment is the network shuffle's TaskExecutor side (a taskexecutor.ShuffleEnvironment
// for taskexecutor.Config.Shuffle), one per TaskExecutor process: it holds the partitions
// produced in the process in an in-memory taskexecutor.Shuffle, serves them to consumers over
// gRPC from one data server, and reads the partitions its own consumers read from their
// producers' data servers, each (partition, subpartition) on a stream of its own with
// credit-based flow control. See the package documentation. Safe for concurrent use.
type Environment struct {
	cfg    Config
	log    *slog.Logger
	codecs *Codecs
	local  *taskexecutor.Shuffle
	lis    net.Listener
	srv    *grpc.Server
	addr   string

	mu       sync.Mutex
	closed   bool
	conns    map[string]*grpc.ClientConn // by producer address, shared by every stream to it
	produced map[rpc.ResultPartitionID]producedPartition
	channels map[*channel]struct{} // open streams of this process's readers
	serving  sync.WaitGroup        // the server's stream goroutines

	pool     *bytePool // chunks and received frames
	chunkCap int       // the capacity of a chunk's buffer: BufferSize and room for one more record
	codec    wireCodec // of every stream, both sides
}

// producedPartition is what the Environment remembers of a partition produced here: enough to
// fail it when a record of it cannot be sent.
type producedPartition struct {
	job   jobgraph.JobID
	owner jobgraph.ResourceID
	desc  rpc.ResultPartitionDeploymentDescriptor
}

var _ taskexecutor.ShuffleEnvironment = (*Environment)(nil)

// New starts an Environment's data server and returns it. Close stops it. Errors: a
// ListenAddress that is not host:port, or not loopback without ServerTLS; the address cannot be
// listened on.
func New(cfg Config) (*Environment, error) {
	if cfg.ListenAddress == "" {
		cfg.ListenAddress = DefaultListenAddress
	}
	if cfg.Codecs == nil {
		cfg.Codecs = NewCodecs()
	}
	if cfg.DefaultCodec == "" {
		cfg.DefaultCodec = DefaultCodec
	}
	if cfg.BufferSize <= 0 {
		cfg.BufferSize = DefaultBufferSize
	}
	if cfg.MaxFrameSize <= 0 {
		cfg.MaxFrameSize = max(4*cfg.BufferSize, 1<<20)
	}
	if cfg.BuffersPerChannel <= 0 {
		cfg.BuffersPerChannel = DefaultBuffersPerChannel
	}
	if cfg.Local.QueueCapacity <= 0 {
		cfg.Local.QueueCapacity = DefaultLocalQueueCapacity
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	lis := cfg.Listener
	if lis == nil {
		host, _, err := net.SplitHostPort(cfg.ListenAddress)
		if err != nil {
			return nil, fmt.Errorf("netshuffle: ListenAddress %q: %w", cfg.ListenAddress, err)
		}
		if ip := net.ParseIP(host); cfg.ServerTLS == nil && host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return nil, fmt.Errorf("netshuffle: ListenAddress %q is not a loopback address and ServerTLS is nil: refusing to serve partitions unauthenticated beyond this machine", cfg.ListenAddress)
		}
		if lis, err = net.Listen("tcp", cfg.ListenAddress); err != nil {
			return nil, fmt.Errorf("netshuffle: data server: %w", err)
		}
	}
	e := &Environment{
		cfg:      cfg,
		log:      cfg.Logger,
		codecs:   cfg.Codecs,
		local:    taskexecutor.NewShuffle(cfg.Local),
		lis:      lis,
		addr:     lis.Addr().String(),
		conns:    make(map[string]*grpc.ClientConn),
		produced: make(map[rpc.ResultPartitionID]producedPartition),
		channels: make(map[*channel]struct{}),
	}
	opts := append(e.windowOptions(),
		grpc.MaxRecvMsgSize(1<<20), // requests are small: an Open or a credit
		grpc.WriteBufferSize(ioBufferSize), grpc.ReadBufferSize(ioBufferSize),
		grpc.MaxSendMsgSize(cfg.MaxFrameSize+frameOverhead))
	if cfg.ServerTLS != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(cfg.ServerTLS)))
	} else {
		e.log.Info("netshuffle: data server without TLS; it should listen on loopback only", "address", e.addr)
	}
	e.chunkCap = cfg.BufferSize + cfg.BufferSize/8
	e.pool = newBytePool(e.chunkCap)
	e.codec = newWireCodec(e.pool)
	opts = append(opts, grpc.ForceServerCodecV2(e.codec))
	e.srv = grpc.NewServer(opts...)
	RegisterPartitionServiceServer(e.srv, &server{env: e})
	go func() { _ = e.srv.Serve(lis) }() // Serve returns once Stop closed the listener
	return e, nil
}

// ioBufferSize is the size of gRPC's write and read buffers of the data server's and the
// readers' connections (gRPC's default is 32 KiB): a buffer holds several Data frames, so the
// frames of the streams that share a connection leave in one write and arrive in one read
// (BenchmarkNetworkShuffleAllToAll: 15-25% less CPU per record than with 32 KiB).
const ioBufferSize = 256 << 10

// frameOverhead is what a Frame adds to the bytes of its records, at most.
const frameOverhead = 64

// windowOptions sets gRPC's HTTP/2 flow-control windows so that they never stop a stream
// before its credit does: a stream's window holds every Data frame its credit allows (twice
// over), and the connection's window is returned as data arrives, whether or not a reader
// takes it, so one stream that is not read never blocks the others on the connection. Fixed
// windows also turn off gRPC's BDP estimation, which would resize them.
func (e *Environment) windowOptions() []grpc.ServerOption {
	w, cw := e.windows()
	return []grpc.ServerOption{grpc.InitialWindowSize(w), grpc.InitialConnWindowSize(cw)}
}

func (e *Environment) windows() (stream, conn int32) {
	perStream := 2 * e.cfg.BuffersPerChannel * (e.cfg.MaxFrameSize + frameOverhead)
	perStream = max(perStream, 64<<10)
	perStream = min(perStream, 1<<30)
	return int32(perStream), int32(min(max(16*perStream, 16<<20), 1<<30))
}

// Addr is the data server's address ("host:port"): what the ShuffleMaster puts in the
// descriptors of the partitions produced here (see AddressBook).
func (e *Environment) Addr() string { return e.addr }

// Local is the in-memory shuffle holding the partitions produced in this process (for tests
// and metrics; its partitions are this Environment's).
func (e *Environment) Local() *taskexecutor.Shuffle { return e.local }

// Close stops the data server (streams to this process's partitions end, and their readers in
// other processes get ErrPartitionLost), ends the streams of this process's readers and closes
// the connections. Idempotent; returns nil.
func (e *Environment) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	chans := make([]*channel, 0, len(e.channels))
	for ch := range e.channels {
		chans = append(chans, ch)
	}
	e.mu.Unlock()
	for _, ch := range chans {
		ch.gate.failWith(ch.lostError(errors.New("the consumer's shuffle environment closed")))
	}
	e.srv.Stop()
	e.serving.Wait()
	for _, ch := range chans {
		ch.wait()
	}
	e.mu.Lock()
	conns := e.conns
	e.conns = nil
	e.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
	}
	return nil
}

// conn returns the shared client connection to addr, dialing it (lazily: gRPC connects on the
// first stream) the first time.
func (e *Environment) conn(addr string) (*grpc.ClientConn, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, errors.New("netshuffle: the shuffle environment is closed")
	}
	if c := e.conns[addr]; c != nil {
		return c, nil
	}
	creds := insecure.NewCredentials()
	if e.cfg.ClientTLS != nil {
		creds = credentials.NewTLS(e.cfg.ClientTLS)
	}
	w, cw := e.windows()
	c, err := grpc.NewClient("passthrough:///"+addr,
		grpc.WithTransportCredentials(creds),
		grpc.WithInitialWindowSize(w), grpc.WithInitialConnWindowSize(cw),
		grpc.WithWriteBufferSize(ioBufferSize), grpc.WithReadBufferSize(ioBufferSize),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(e.cfg.MaxFrameSize+frameOverhead), grpc.ForceCodecV2(e.codec)))
	if err != nil {
		return nil, fmt.Errorf("netshuffle: dial %s: %w", addr, err)
	}
	e.conns[addr] = c
	return c, nil
}

// codecFor returns the codec named by a descriptor ("" for the default).
func (e *Environment) codecFor(name string) (string, Codec, error) {
	if name == "" {
		name = e.cfg.DefaultCodec
	}
	c, err := e.codecs.lookup(name)
	return name, c, err
}

// CreateResultPartitionWriters implements taskexecutor.ShuffleEnvironment: the partitions are
// produced into the in-memory shuffle of this process, from which the data server streams them.
// A partition whose record codec is not registered here is refused ("output i: …").
func (e *Environment) CreateResultPartitionWriters(owner taskexecutor.ShuffleIOOwnerContext, descs []rpc.ResultPartitionDeploymentDescriptor) ([]taskexecutor.ShuffleWriter, error) {
	codecs := make([]Codec, len(descs))
	for i, d := range descs {
		if d.ShuffleDescriptor == nil {
			err := fmt.Errorf("%w: the output of partition %v carries no shuffle descriptor: %s", ErrNoShuffleMaster, d.ResultPartitionID, noShuffleMasterHint)
			e.local.FailPartitions(owner, descs, err)
			return nil, fmt.Errorf("output %d: %w", i, err)
		}
		dd, _, err := parseDescriptor(d.ShuffleDescriptor)
		if err == nil {
			_, codecs[i], err = e.codecFor(dd.Codec)
		}
		if err != nil {
			e.local.FailPartitions(owner, descs, err)
			return nil, fmt.Errorf("output %d: %w", i, err)
		}
	}
	ws, err := e.local.CreateResultPartitionWriters(owner, descs)
	if err != nil {
		return nil, err
	}
	for i, inner := range ws {
		w, err := e.newWriter(inner, owner, descs[i], codecs[i])
		if err != nil {
			for _, w := range ws {
				w.Fail(err)
			}
			return nil, fmt.Errorf("output %d: %w", i, err)
		}
		ws[i] = w
	}
	e.mu.Lock()
	for _, d := range descs {
		e.produced[d.ResultPartitionID] = producedPartition{job: owner.JobID, owner: owner.TaskExecutor, desc: d}
	}
	e.mu.Unlock()
	return ws, nil
}

// FailPartitions implements taskexecutor.ShuffleEnvironment.
func (e *Environment) FailPartitions(owner taskexecutor.ShuffleIOOwnerContext, descs []rpc.ResultPartitionDeploymentDescriptor, cause error) {
	e.local.FailPartitions(owner, descs, cause)
}

// failProduced fails a partition produced here whose records cannot be sent (see
// producedPartition); false if it is not known here.
func (e *Environment) failProduced(id rpc.ResultPartitionID, cause error) bool {
	e.mu.Lock()
	p, ok := e.produced[id]
	e.mu.Unlock()
	if ok {
		e.local.FailPartitions(taskexecutor.ShuffleIOOwnerContext{JobID: p.job, TaskExecutor: p.owner},
			[]rpc.ResultPartitionDeploymentDescriptor{p.desc}, cause)
	}
	return ok
}

// ReleasePartitionsLocally implements taskexecutor.ShuffleEnvironment: the partitions produced
// here; their readers, here and in other processes, get ErrPartitionReleased.
func (e *Environment) ReleasePartitionsLocally(ids ...rpc.ResultPartitionID) {
	e.local.ReleasePartitionsLocally(ids...)
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, id := range ids {
		delete(e.produced, id)
	}
}

// ReleaseJobPartitions implements taskexecutor.ShuffleEnvironment.
func (e *Environment) ReleaseJobPartitions(job jobgraph.JobID, producer jobgraph.ResourceID) {
	e.local.ReleaseJobPartitions(job, producer)
	e.mu.Lock()
	defer e.mu.Unlock()
	for id, p := range e.produced {
		if p.job == job && p.owner == producer {
			delete(e.produced, id)
		}
	}
}

// ReleaseAllOf implements taskexecutor.ShuffleEnvironment: it releases the partitions produced
// here on producer (their readers get ErrPartitionLost) and returns their IDs; and the readers
// of this process reading partitions of a producer in another process that is gone get
// ErrPartitionLost at once rather than when their connection notices.
func (e *Environment) ReleaseAllOf(producer jobgraph.ResourceID) []rpc.ResultPartitionID {
	ids := e.local.ReleaseAllOf(producer)
	e.mu.Lock()
	var lost []*channel
	for ch := range e.channels {
		if producer != "" && ch.producer == producer {
			lost = append(lost, ch)
		}
	}
	for id, p := range e.produced {
		if p.owner == producer {
			delete(e.produced, id)
		}
	}
	e.mu.Unlock()
	for _, ch := range lost {
		ch.gate.failWith(ch.lostError(fmt.Errorf("TaskExecutor %s is gone", producer)))
	}
	return ids
}

// CreateInputGates implements taskexecutor.ShuffleEnvironment: one gate per descriptor, with
// one stream per partition to the data server its descriptor names (this process's own for a
// partition whose descriptor names none yet). A subpartition index out of range of a known
// partition, or a codec not registered here, is an error naming the input.
func (e *Environment) CreateInputGates(owner taskexecutor.ShuffleIOOwnerContext, descs []rpc.InputGateDeploymentDescriptor) ([]taskexecutor.ShuffleReader, error) {
	out := make([]taskexecutor.ShuffleReader, 0, len(descs))
	for i, d := range descs {
		g, err := e.newGate(owner, d)
		if err != nil {
			for _, g := range out {
				g.Close()
			}
			return nil, fmt.Errorf("input %d: %w", i, err)
		}
		out = append(out, g)
	}
	return out, nil
}

// register adds ch to the open channels; false once the Environment is closed.
func (e *Environment) register(ch *channel) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return false
	}
	e.channels[ch] = struct{}{}
	return true
}

func (e *Environment) unregister(ch *channel) {
	e.mu.Lock()
	delete(e.channels, ch)
	e.mu.Unlock()
}

// background is the context of the streams of this process's readers: they end with their gate.
var background = context.Background()

// recordBytes is how many bytes of records a chunk or a frame gathers before it goes: so many
// that a whole Data frame of fixed-size records, with its header, fits in BufferSize bytes (a
// frame of 32 KiB and a few bytes would make gRPC take, and clear, a 1 MiB receive buffer
// for it).
func (e *Environment) recordBytes() int { return max(e.cfg.BufferSize-frameOverhead, 1) }

// Package grpctransport is jobgraph's rpc.Service over gRPC: the four gateways
// (rpc.DispatcherGateway, rpc.JobMasterGateway, rpc.ResourceManagerGateway,
// rpc.TaskExecutorGateway) served by one listener per process and called from any other, so
// TaskExecutors, JobMasters, the ResourceManager and the Dispatcher can run in different
// processes and on different machines. Flink: the pekko-based RpcService
// (org.apache.flink.runtime.rpc.pekko), with gRPC in place of Pekko remoting.
//
// # Addresses
//
// A Service listens on one host:port (127.0.0.1 with a port the kernel picks, unless
// Options.ListenAddress says otherwise). An endpoint's address is "<host:port>/<name>"
// (Service.Address(name)); a bare name means the same name on the Service at hand. Lookup asks
// the Service at host:port which gateway the endpoint serves (so rpc.Connect[G] fails for the
// wrong G, and an address nothing is registered under fails with an error matching
// rpc.ErrUnknownAddress, checked on the remote side, that is unreachable (rpc.IsUnreachable),
// as is a call through a stub to an endpoint unregistered since) and returns a client stub for
// exactly that gateway. One connection per peer host:port is dialed on first use and shared by every
// stub and call to that peer; Close closes them.
//
// # The wire
//
// The protocol is internal/pb/jobgraphrpc.proto: one gRPC service per gateway, one rpc per
// method (Describe on the Endpoint service answers Lookup). IDs (16 raw bytes), fencing tokens
// (JobMasterID, ResourceManagerID), attempt IDs, slot IDs, resource profiles, slot reports,
// offers, task execution states, heartbeat payloads, ErrorInfo and checkpoint IDs are fields of
// their own. Four large plain-data structs travel in the encoding the library already has for
// them, as bytes: the JobGraph of SubmitJob (jobgraph's JSON codec, read back with
// jobgraph.Decode), the JobResult of RequestJobResult (JSON), the TaskDeploymentDescriptor of
// SubmitTask and SubmitTasks (its JSON form, input gates in the compact "partitionRange" form
// of rpc/deployment_codec.go) and the checkpoint.StateHandle of AcknowledgeCheckpoint (JSON,
// as checkpoint metadata stores it). The endpoint a call is for is named in the call's gRPC
// metadata ("jobgraph-endpoint"). Empty lists and maps arrive as nil. The generated code is
// committed (internal/pb); gen.sh regenerates it with pinned generator versions.
//
// Of the optional interfaces a gateway may implement, the TaskExecutor stub implements
// rpc.ResourceManagerDisconnector (its own rpc, DisconnectResourceManager on the TaskExecutor
// service), so a remote TaskExecutor hears the ResourceManager drop it; the serving side hands
// the call to the TaskExecutor when its gateway implements it and answers codes.Unimplemented
// (an error, neither fencing nor unreachable) when it does not. The one-way notifiers
// (rpc.TaskExecutionStateNotifier, rpc.ResourceManagerNotifier, rpc.TaskExecutorNotifier) are
// not implemented: their callers wait for the gateway method instead.
//
// # Fencing, deadlines and errors
//
// Fencing tokens travel in every fenced call and the serving side hands them to the endpoint
// unchanged: a stale token is refused by the endpoint exactly as in-process, with the same
// error. Deadlines come from the caller's ctx (gRPC carries them; the endpoint's ctx ends with
// the caller's). An endpoint's error crosses as a gRPC status whose detail holds its
// jobgraph.ErrorInfo (text and the codes of the registered sentinels it matches — the library's
// one mapping, jobgraph.RegisterErrorCode) and the typed errors of its chain this package knows
// (*rpc.FencingError, *rpc.HeartbeatTimeoutError, *rpc.HeartbeatTargetUnreachableError,
// *jobgraph.ValidationError,
// *jobgraph.AccumulatorTypeError, *checkpoint.CheckpointError, *slotpool.NoResourceAvailableError,
// *jobmaster.MissingDeploymentError, *taskexecutor.UnknownInvokableError,
// *taskexecutor.TaskCancellationTimeoutError, *taskexecutor.PartitionError,
// *dispatcher.DuplicateJobSubmissionError) with their fields: on the caller's side the error
// has the endpoint's text, errors.Is matches the same sentinels and errors.As finds the same
// typed errors (an error field inside one, such as CheckpointError.Cause, crosses as its text
// and sentinels); a host adds its own types with RegisterErrorType. A call whose ctx ends returns an error matching ctx's error
// (context.Canceled, context.DeadlineExceeded). A call after this Service's Close matches
// rpc.ErrServiceClosed; a message over a size limit matches ErrMessageTooLarge; a peer that
// cannot be reached (codes.Unavailable without an answer: nothing listens, the connection broke)
// gives the transport's error as an rpc.UnreachableError, and an endpoint's error that was one
// (a killed TaskExecutor's) is one on the caller's side too, so heartbeat senders count both
// toward heartbeat.rpc-failure-threshold; a timeout never is.
//
// # Security
//
// With Options.TLS enabled (Flink's security.ssl.internal.enabled) every connection, served and
// dialed, is mutual TLS: a peer without a certificate signed by the cluster CA is refused in
// the handshake, before any call reaches an endpoint. Without TLS the listener must be a
// loopback address, and New logs (slog) that it listens unauthenticated on loopback only.
// Every message, sent or received, as server or client, is bounded by
// Options.MaxReceiveMessageSize and MaxSendMessageSize (10 MiB by default, Flink's
// pekko.framesize); a larger one fails its call alone with ErrMessageTooLarge, and the
// connection serves other calls on.
//
// # Goroutines
//
// A Service and the stubs it hands out are safe for concurrent use. Calls block the calling
// goroutine for the round trip, so endpoints call them off their main loops, exactly as they
// call the in-process gateways.
package grpctransport

package grpctransport_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/cluster"
	"github.com/jobgraph/jobgraph/ha"
	"github.com/jobgraph/jobgraph/ha/embedded"
	"github.com/jobgraph/jobgraph/ha/file"
	"github.com/jobgraph/jobgraph/rpc"
	"github.com/jobgraph/jobgraph/taskexecutor"
	grpctransport "github.com/jobgraph/jobgraph/transport/grpc"
)

// roleRecordingTaskExecutor is a real taskexecutor.TaskExecutor (envResourceManager,
// envResourceID, envNumSlots as roleTaskExecutor) whose transport records every call it makes to
// a JobMaster: its Service is the process's grpctransport.Service, and each JobMasterGateway stub
// Lookup returns is wrapped by one that forwards the call and prints what was sent and answered
// as a JSON line (jmCall) on stdout. It runs the task code "lm-emit" and "lm-sum" and reads
// commands from stdin, one a line (see runRecordingTaskExecutor); EOF ends it.
const roleRecordingTaskExecutor = "recording-taskexecutor"

// More parameters of roleRecordingTaskExecutor and roleJobManager.
const (
	// envHADir, if set, names an ha/file directory: the TaskExecutor follows the ResourceManager
	// leader through it (instead of envResourceManager), the JobManager campaigns in it.
	envHADir = "GRPCTRANSPORT_TEST_HA_DIR"
	// envHeartbeatTimeout, if set, is heartbeat.timeout (heartbeat.interval a fifth of it).
	envHeartbeatTimeout = "GRPCTRANSPORT_TEST_HEARTBEAT_TIMEOUT"
)

// roleJobManager is a cluster.JobManager on the process's grpctransport.Service over the ha/file
// directory envHADir (heartbeats envHeartbeatTimeout); it prints "DISPATCHER <address>" once it
// leads and runs until stdin closes (or it is killed).
const roleJobManager = "jobmanager"

// haPollInterval is the ha/file poll interval of every client of the tests' directories.
const haPollInterval = 100 * time.Millisecond

// heartbeats returns envHeartbeatTimeout's heartbeat interval and timeout (zero: the defaults).
func heartbeats() (interval, timeout time.Duration, err error) {
	v := os.Getenv(envHeartbeatTimeout)
	if v == "" {
		return 0, 0, nil
	}
	timeout, err = time.ParseDuration(v)
	return timeout / 5, timeout, err
}

// runJobManager is roleJobManager.
func runJobManager() error {
	interval, timeout, err := heartbeats()
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	svc, err := grpctransport.New(grpctransport.Options{Logger: log})
	if err != nil {
		return err
	}
	defer svc.Close()
	services, err := file.New(file.Options{Dir: os.Getenv(envHADir), PollInterval: haPollInterval})
	if err != nil {
		return err
	}
	defer services.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	jm, err := cluster.RunJobManager(ctx, cluster.JobManagerConfig{RPC: svc, HA: services, Logger: log,
		HeartbeatInterval: interval, HeartbeatTimeout: timeout})
	if err != nil {
		return err
	}
	if err := jm.AwaitLeadership(ctx); err != nil {
		return errors.Join(err, jm.Close())
	}
	fmt.Println("DISPATCHER", jm.DispatcherAddress())
	_, _ = io.Copy(io.Discard, os.Stdin)
	return jm.Close()
}

// The commands a recording TaskExecutor reads from stdin.
const (
	// cmdRelease lets every "lm-emit" task, running or to come, emit its records and finish.
	cmdRelease = "RELEASE"
	// cmdStale makes the calls of a TaskExecutor that still holds the first JobMasterID it saw:
	// UpdateTaskExecutionState and OfferSlots fenced with that token, sent to the JobMaster the
	// TaskExecutor last offered slots to (it answered), each printed as a jmCall with Stale set.
	cmdStale = "STALE"
)

// jmCall is one call the recording TaskExecutor's process made to a JobMaster, printed as a JSON
// line: the method, the JobMaster's address and the fencing token sent, what was sent (offers,
// the task state) and what came back across gRPC — the error's text and which of the library's
// sentinels and typed errors it matches on this side.
type jmCall struct {
	Method   string                       `json:"method"`
	Address  string                       `json:"address"`
	Token    jobgraph.JobMasterID         `json:"token"`
	Offers   []rpc.SlotOffer              `json:"offers,omitempty"`
	Accepted []rpc.SlotOffer              `json:"accepted,omitempty"`
	Attempt  *jobgraph.ExecutionAttemptID `json:"attempt,omitempty"`
	State    string                       `json:"state,omitempty"`
	Applied  bool                         `json:"applied,omitempty"`
	Stale    bool                         `json:"stale,omitempty"` // made by cmdStale, not by the TaskExecutor
	Err      string                       `json:"err,omitempty"`
	// Fencing: the error matches rpc.ErrFencingTokenMismatch; Expected and Got are its
	// *rpc.FencingError's fields (errors.As).
	Fencing  bool   `json:"fencing,omitempty"`
	Expected string `json:"expected,omitempty"`
	Got      string `json:"got,omitempty"`
	Closed   bool   `json:"closed,omitempty"`  // matches rpc.ErrClosed (a closed JobMaster's jobmaster.ErrClosed)
	Unknown  bool   `json:"unknown,omitempty"` // matches rpc.ErrUnknownAddress (no endpoint there any more)
}

// lmRecords is what each "lm-emit" subtask s emits: (s+1)·k for k in 1..lmRecords.
const lmRecords = 10

// runRecordingTaskExecutor is roleRecordingTaskExecutor; it prints "ADDRESS <address>" once its
// TaskExecutor registered with the ResourceManager.
func runRecordingTaskExecutor() error {
	slots, err := strconv.Atoi(os.Getenv(envNumSlots))
	if err != nil {
		return fmt.Errorf("%s: %w", envNumSlots, err)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	svc, err := grpctransport.New(grpctransport.Options{Logger: log})
	if err != nil {
		return err
	}
	defer svc.Close()
	rec := &callRecorder{Service: svc, out: os.Stdout}
	released := make(chan struct{})
	reg := taskexecutor.NewRegistry()
	reg.Register("lm-emit", func(ctx context.Context, env taskexecutor.Environment) error {
		select {
		case <-released:
		case <-ctx.Done():
			return ctx.Err()
		}
		s := env.Info().SubtaskIndex
		for k := 1; k <= lmRecords; k++ {
			if err := env.Output(0).Emit(ctx, 0, int64((s+1)*k)); err != nil {
				return err
			}
		}
		return nil
	})
	reg.Register("lm-sum", func(ctx context.Context, env taskexecutor.Environment) error {
		var sum, n int64
		for {
			r, err := env.Input(0).Next(ctx)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return err
			}
			sum += r.(int64)
			n++
		}
		for name, v := range map[string]int64{"sum": sum, "records": n} {
			c, err := env.AccumulatorRegistry().LongCounter(name)
			if err != nil {
				return err
			}
			c.Add(v)
		}
		return nil
	})
	id := jobgraph.ResourceID(os.Getenv(envResourceID))
	interval, timeout, err := heartbeats()
	if err != nil {
		return err
	}
	cfg := taskexecutor.Config{ResourceID: id, Address: svc.Address(string(id)), NumSlots: slots, Registry: reg,
		RPC: rec, ResourceManagerAddress: os.Getenv(envResourceManager), Logger: log,
		HeartbeatInterval: interval, HeartbeatTimeout: timeout}
	if dir := os.Getenv(envHADir); dir != "" {
		services, err := file.New(file.Options{Dir: dir, PollInterval: haPollInterval})
		if err != nil {
			return err
		}
		defer services.Close()
		cfg.ResourceManagerAddress, cfg.ResourceManagerRetrieval = "", services.ResourceManagerLeaderRetrieval()
	}
	te, err := taskexecutor.New(cfg)
	if err != nil {
		return err
	}
	if err := te.Start(context.Background()); err != nil {
		return err
	}
	if _, err := te.WaitRegistered(context.Background()); err != nil {
		return errors.Join(err, te.Close())
	}
	rec.print(fmt.Sprintf("ADDRESS %s", svc.Address(string(id))))
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		switch sc.Text() {
		case cmdRelease:
			close(released)
		case cmdStale:
			rec.staleCalls(id)
		}
	}
	return te.Close()
}

// callRecorder is an rpc.Service (and rpc.Addresser) that forwards everything to Service and
// wraps each JobMasterGateway it looks up in a recordingJobMaster.
type callRecorder struct {
	*grpctransport.Service
	out io.Writer

	mu        sync.Mutex // serializes out; guards the rest
	first     jobgraph.JobMasterID
	lastOffer *recordingJobMaster // the JobMaster that last accepted an offer, and its token
	lastToken jobgraph.JobMasterID
	running   map[string]jobgraph.ExecutionAttemptID // by JobMaster address: an attempt reported RUNNING there
}

func (r *callRecorder) Lookup(ctx context.Context, address string) (any, error) {
	ep, err := r.Service.Lookup(ctx, address)
	if jm, ok := ep.(rpc.JobMasterGateway); ok && err == nil {
		return &recordingJobMaster{JobMasterGateway: jm, address: address, rec: r}, nil
	}
	return ep, err
}

func (r *callRecorder) print(line string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintln(r.out, line)
}

// record classifies err as the caller sees it, remembers what cmdStale needs, and prints c.
func (r *callRecorder) record(jm *recordingJobMaster, c jmCall, err error) {
	c.Address = jm.address
	if err != nil {
		c.Err = err.Error()
		c.Fencing = errors.Is(err, rpc.ErrFencingTokenMismatch)
		var fe *rpc.FencingError
		if errors.As(err, &fe) {
			c.Expected, c.Got = fe.Expected, fe.Got
		}
		c.Closed = errors.Is(err, rpc.ErrClosed)
		c.Unknown = errors.Is(err, rpc.ErrUnknownAddress)
	}
	b, merr := json.Marshal(c)
	if merr != nil {
		panic(merr) // plain data: cannot fail
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !c.Stale {
		if r.first.IsZero() {
			r.first = c.Token
		}
		if c.Method == "OfferSlots" && err == nil && len(c.Accepted) > 0 {
			r.lastOffer, r.lastToken = jm, c.Token
		}
		if c.Method == "UpdateTaskExecutionState" && c.State == jobgraph.ExecutionStateRunning.String() && err == nil {
			if r.running == nil {
				r.running = map[string]jobgraph.ExecutionAttemptID{}
			}
			r.running[jm.address] = *c.Attempt
		}
	}
	fmt.Fprintln(r.out, string(b))
}

// staleCalls is cmdStale: the JobMaster that last accepted an offer is sent the first token this
// process ever sent, on an UpdateTaskExecutionState failing an attempt that runs for it and on
// an OfferSlots of slot 0 under a new allocation. With no such JobMaster (or only one token
// seen) it prints a jmCall with Err saying so.
func (r *callRecorder) staleCalls(te jobgraph.ResourceID) {
	r.mu.Lock()
	jm, token, current := r.lastOffer, r.first, r.lastToken
	var attempt jobgraph.ExecutionAttemptID
	if jm != nil {
		attempt = r.running[jm.address]
	}
	r.mu.Unlock()
	if jm == nil || token == current {
		r.print(`{"method":"STALE","stale":true,"err":"no second JobMaster to send a stale token to"}`)
		return
	}
	ctx := context.Background()
	failure := rpc.Failure(errors.New("a stale report"))
	_, err := jm.JobMasterGateway.UpdateTaskExecutionState(ctx, token, rpc.TaskExecutionState{ExecutionAttemptID: attempt,
		State: jobgraph.ExecutionStateFailed, Failure: failure})
	r.record(jm, jmCall{Method: "UpdateTaskExecutionState", Token: token, Attempt: &attempt, State: jobgraph.ExecutionStateFailed.String(), Stale: true}, err)
	offers := []rpc.SlotOffer{{AllocationID: jobgraph.NewAllocationID(), SlotIndex: 0, ResourceProfile: taskexecutor.DefaultSlotProfile}}
	accepted, err := jm.JobMasterGateway.OfferSlots(ctx, token, te, offers)
	r.record(jm, jmCall{Method: "OfferSlots", Token: token, Offers: offers, Accepted: accepted, Stale: true}, err)
}

// recordingJobMaster forwards every call to the gRPC stub it wraps and records the fenced calls
// a TaskExecutor makes.
type recordingJobMaster struct {
	rpc.JobMasterGateway
	address string
	rec     *callRecorder
}

func (g *recordingJobMaster) UpdateTaskExecutionState(ctx context.Context, token jobgraph.JobMasterID, state rpc.TaskExecutionState) (bool, error) {
	applied, err := g.JobMasterGateway.UpdateTaskExecutionState(ctx, token, state)
	attempt := state.ExecutionAttemptID
	g.rec.record(g, jmCall{Method: "UpdateTaskExecutionState", Token: token, Attempt: &attempt, State: state.State.String(), Applied: applied}, err)
	return applied, err
}

func (g *recordingJobMaster) RegisterTaskExecutor(ctx context.Context, token jobgraph.JobMasterID, reg rpc.TaskExecutorRegistration) error {
	err := g.JobMasterGateway.RegisterTaskExecutor(ctx, token, reg)
	g.rec.record(g, jmCall{Method: "RegisterTaskExecutor", Token: token}, err)
	return err
}

func (g *recordingJobMaster) OfferSlots(ctx context.Context, token jobgraph.JobMasterID, te jobgraph.ResourceID, offers []rpc.SlotOffer) ([]rpc.SlotOffer, error) {
	accepted, err := g.JobMasterGateway.OfferSlots(ctx, token, te, offers)
	g.rec.record(g, jmCall{Method: "OfferSlots", Token: token, Offers: offers, Accepted: accepted}, err)
	return accepted, err
}

// recordingProcess is a recording TaskExecutor process (roleRecordingTaskExecutor) and the
// jmCalls it printed, in order.
type recordingProcess struct {
	addr  string
	stdin io.WriteCloser
	calls chan jmCall
}

// startRecordingTaskExecutor starts the process with slots slots registering with the
// ResourceManager at rm, with the environment env added; it is stopped (stdin closed, waited
// for, its exit checked) when the test ends.
func startRecordingTaskExecutor(t *testing.T, id jobgraph.ResourceID, rm string, slots int, env ...string) *recordingProcess {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(append(os.Environ(), roleEnv+"="+roleRecordingTaskExecutor, envResourceManager+"="+rm,
		envResourceID+"="+string(id), envNumSlots+"="+strconv.Itoa(slots)), env...)
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	p := &recordingProcess{stdin: stdin, calls: make(chan jmCall, 1024)}
	sc := bufio.NewScanner(stdout)
	copied := make(chan struct{})
	t.Cleanup(func() {
		_ = stdin.Close()
		<-copied
		assert.NoError(t, cmd.Wait(), "the TaskExecutor process: %s", stderr.String())
	})
	if !sc.Scan() {
		close(copied)
		require.FailNow(t, "the TaskExecutor process said nothing", "%v: %s", sc.Err(), stderr.String())
	}
	addr, ok := strings.CutPrefix(sc.Text(), "ADDRESS ")
	if !ok {
		close(copied)
		require.FailNow(t, "the TaskExecutor process said "+sc.Text(), stderr.String())
	}
	p.addr = addr
	go func() {
		defer close(copied)
		defer close(p.calls)
		for sc.Scan() {
			var c jmCall
			if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
				t.Errorf("the TaskExecutor process printed %q: %v", sc.Text(), err)
				continue
			}
			p.calls <- c
		}
	}()
	return p
}

// send writes a command line to the process.
func (p *recordingProcess) send(t *testing.T, cmd string) {
	t.Helper()
	_, err := io.WriteString(p.stdin, cmd+"\n")
	require.NoError(t, err)
}

// next returns the next call the process printed, failing the test once ctx ends first.
func (p *recordingProcess) next(ctx context.Context, t *testing.T, waitingFor string) jmCall {
	t.Helper()
	select {
	case c, ok := <-p.calls:
		require.True(t, ok, "the TaskExecutor process ended while waiting for %s", waitingFor)
		return c
	case <-ctx.Done():
		require.FailNow(t, "timed out waiting for "+waitingFor)
		return jmCall{}
	}
}

// leaders follows a job's JobMaster leader retrieval: each confirmed leader's address and session
// (its JobMasterID) in order.
type leaders struct{ ch chan leader }

type leader struct {
	address string
	token   jobgraph.JobMasterID
}

func (l leaders) NotifyLeaderAddress(address string, session ha.SessionID) {
	if address != "" {
		l.ch <- leader{address, jobgraph.JobMasterID(session)}
	}
}

func (l leaders) HandleError(error) {}

func (l leaders) next(ctx context.Context, t *testing.T) leader {
	t.Helper()
	select {
	case ld := <-l.ch:
		return ld
	case <-ctx.Done():
		require.FailNow(t, "timed out waiting for a JobMaster leader")
		return leader{}
	}
}

// A JobMaster's leadership moves to a new session while its tasks run on a TaskExecutor in
// another process (issue 13's scenario): the job's JobMaster election is revoked and granted again
// with a new session, so the job's runner closes the first JobMaster (job SUSPENDED there) and
// starts a second one with a new JobMasterID. The TaskExecutor's process records every fenced call
// it makes to a JobMaster, as its side of gRPC sees it. Asserted, with the exact tokens:
//
//   - before the move it offered both slots to the first JobMaster (its address, its JobMasterID),
//     which accepted them, and the three tasks ran there;
//   - the first session's tasks, stopped (canceled, or failed by their canceled input), each
//     reported its final state once to the first JobMaster with the old JobMasterID, and every one
//     of those calls was refused (that JobMaster is closed or gone: jobmaster.ErrClosed or
//     rpc.ErrUnknownAddress across gRPC), none applied;
//   - it then offered both slots (slot indices 0 and 1, under new allocations) to the second
//     JobMaster with the new JobMasterID, which accepted them: its slot pool holds exactly 2
//     slots, and the job's three tasks run there on this TaskExecutor;
//   - calls from that process fenced with the old JobMasterID to the second JobMaster — a
//     FAILED report of one of its running attempts, an offer of a slot — are refused with the
//     library's fencing error, matched with errors.Is and errors.As on the calling side after
//     crossing gRPC (expected the new JobMasterID, got the old), and change nothing: the attempt
//     still runs, the pool still holds 2 slots (the TaskExecutor itself never sends the old token
//     to the new JobMaster: each session's JobMaster has an address of its own,
//     "jobmaster/<job>/<session>", and a task reports to the one that deployed it, so the test
//     has its process make these calls, cmdStale);
//   - released, the job finishes on the second session with its exact result (sum 165 of 20
//     records), no failure in its exception history, every task's first attempt on this
//     TaskExecutor.
func TestJobMasterLeadershipMovesToANewSessionWithARemoteTaskExecutor(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	svc := newService(t, grpctransport.Options{})
	defer svc.Close()
	services := embedded.New()
	defer services.Close()
	jm, err := cluster.RunJobManager(ctx, cluster.JobManagerConfig{RPC: svc, HA: services, Logger: quiet})
	require.NoError(t, err)
	defer func() { assert.NoError(t, jm.Close()) }()
	require.NoError(t, jm.AwaitLeadership(ctx))

	const teID = jobgraph.ResourceID("te-remote")
	te := startRecordingTaskExecutor(t, teID, jm.ResourceManagerAddress(), 2)
	hostPort, _, _ := strings.Cut(te.addr, "/")
	require.NotEqual(t, svc.HostPort(), hostPort, "the TaskExecutor serves on another process's listener")

	// emit (2 subtasks) → PIPELINED → sum (1), one region in one slot-sharing group: 2 slots.
	g := jobgraph.New("leadership moves", jobgraph.Batch)
	src := g.AddVertex("emit", "lm-emit", 2)
	snk := g.AddVertex("sum", "lm-sum", 1)
	g.Connect(src, snk, jobgraph.AllToAll, jobgraph.Pipelined)
	ls := leaders{ch: make(chan leader, 8)}
	retrieval := services.JobMasterLeaderRetrieval(g.JobID)
	require.NoError(t, retrieval.Start(ls))
	defer func() { assert.NoError(t, retrieval.Stop()) }()
	d := jm.LeaderDispatcher()
	require.NoError(t, d.SubmitJob(ctx, g))
	first := ls.next(ctx, t)

	// Session 1: the TaskExecutor registers with the first JobMaster, offers both slots, and its
	// three tasks report INITIALIZING and RUNNING there, all with the first JobMasterID.
	firstAllocations, firstAttempts := awaitSession(ctx, t, te, first, "the first JobMaster")
	pool, err := jm.SlotPoolStatus(ctx, g.JobID)
	require.NoError(t, err)
	assert.Equal(t, 2, pool.Allocated, "the first JobMaster holds the TaskExecutor's two slots")

	// The move: the job's JobMaster election is revoked and granted again with a new session.
	services.JobMasterElection(g.JobID).Revoke()
	second := ls.next(ctx, t)
	require.NotEqual(t, first.token, second.token, "a new session, a new JobMasterID")
	require.NotEqual(t, first.address, second.address)

	// Until the TaskExecutor offers its slots to the second JobMaster: the first session's tasks
	// end (canceled), and their reports, fenced with the old token, are refused. (A task is
	// unregistered before it reports its final state, so a report may also come later: every
	// call read from here on that goes to the first JobMaster is collected here.)
	var stale []jmCall
	oldSession := func(c jmCall) bool {
		if c.Stale || c.Address != first.address {
			return false
		}
		require.Equal(t, first.token, c.Token, "%+v", c)
		stale = append(stale, c)
		return true
	}
	next := func(waitingFor string) jmCall {
		for {
			if c := te.next(ctx, t, waitingFor); !oldSession(c) {
				return c
			}
		}
	}
	secondAllocations, secondAttempts := awaitSession(ctx, t, te, second, "the second JobMaster", func(c jmCall) {
		require.True(t, oldSession(c), "a call to neither JobMaster: %+v", c)
	})
	assert.Len(t, secondAllocations, 2)
	for _, a := range secondAttempts {
		assert.NotContains(t, firstAttempts, a, "the second session runs attempts of its own")
	}
	for a := range secondAllocations {
		assert.NotContains(t, firstAllocations, a, "the slots are offered to the new session under new allocations")
	}
	pool, err = jm.SlotPoolStatus(ctx, g.JobID)
	require.NoError(t, err)
	assert.Equal(t, 2, pool.Allocated+pool.Free, "the second JobMaster holds exactly the TaskExecutor's two slots: %+v", pool)
	arc, err := jm.Dispatcher().RequestJob(ctx, g.JobID)
	require.NoError(t, err)
	assert.Equal(t, jobgraph.JobStatusRunning, arc.Status)
	for _, v := range arc.JobVertices {
		for _, s := range v.Subtasks {
			assert.Equal(t, jobgraph.ExecutionStateRunning, s.State, "%s %d", v.Name, s.Subtask)
			assert.Equal(t, teID, s.Location, "%s %d", v.Name, s.Subtask)
		}
	}

	// Calls from the TaskExecutor's process fenced with the old JobMasterID, to the new JobMaster.
	te.send(t, cmdStale)
	for _, method := range []string{"UpdateTaskExecutionState", "OfferSlots"} {
		c := next("the stale " + method)
		require.True(t, c.Stale, "%+v", c)
		assert.Equal(t, method, c.Method)
		assert.Equal(t, second.address, c.Address, "sent to the second JobMaster")
		assert.Equal(t, first.token, c.Token, "with the first JobMasterID")
		if method == "UpdateTaskExecutionState" {
			assert.Contains(t, secondAttempts, *c.Attempt, "a FAILED report of an attempt running for the second JobMaster")
		}
		assert.True(t, c.Fencing, "refused with rpc.ErrFencingTokenMismatch (errors.Is across gRPC): %+v", c)
		assert.Equal(t, second.token.String(), c.Expected, "the *rpc.FencingError's expected token (errors.As across gRPC)")
		assert.Equal(t, first.token.String(), c.Got, "the *rpc.FencingError's token got")
		assert.False(t, c.Applied)
		assert.Empty(t, c.Accepted)
	}
	pool, err = jm.SlotPoolStatus(ctx, g.JobID)
	require.NoError(t, err)
	assert.Equal(t, 2, pool.Allocated+pool.Free, "the stale offer added no slot: %+v", pool)
	arc, err = jm.Dispatcher().RequestJob(ctx, g.JobID)
	require.NoError(t, err)
	assert.Equal(t, jobgraph.JobStatusRunning, arc.Status, "the stale FAILED report changed nothing")
	for _, v := range arc.JobVertices {
		for _, s := range v.Subtasks {
			assert.Equal(t, jobgraph.ExecutionStateRunning, s.State, "%s %d", v.Name, s.Subtask)
			assert.Equal(t, 0, s.AttemptNumber, "%s %d", v.Name, s.Subtask)
		}
	}

	// Released, the job finishes on the second session with its exact result.
	te.send(t, cmdRelease)
	res, err := d.RequestJobResult(ctx, g.JobID)
	require.NoError(t, err)
	require.Equal(t, jobgraph.JobStatusFinished, res.Status, "%v", res.Failure)
	sum, err := jobgraph.AccumulatorValue[int64](res.Accumulators, "sum")
	require.NoError(t, err)
	assert.Equal(t, int64(55*(1+2)), sum)
	n, err := jobgraph.AccumulatorValue[int64](res.Accumulators, "records")
	require.NoError(t, err)
	assert.Equal(t, int64(2*lmRecords), n)
	assert.Empty(t, res.ExceptionHistory, "the move is no failure of the second session's job")
	arc, err = jm.Dispatcher().RequestJob(ctx, g.JobID)
	require.NoError(t, err)
	for _, v := range arc.JobVertices {
		for _, s := range v.Subtasks {
			assert.Equal(t, jobgraph.ExecutionStateFinished, s.State, "%s %d", v.Name, s.Subtask)
			assert.Equal(t, 0, s.AttemptNumber, "%s %d", v.Name, s.Subtask)
			assert.Equal(t, teID, s.Location, "%s %d", v.Name, s.Subtask)
		}
	}
	// The finished tasks reported to the second JobMaster only, with its token, and were heard.
	var finished []jobgraph.ExecutionAttemptID
	for range secondAttempts {
		c := next("a FINISHED report")
		assert.Equal(t, "UpdateTaskExecutionState", c.Method, "%+v", c)
		assert.Equal(t, jobgraph.ExecutionStateFinished.String(), c.State, "%+v", c)
		assert.Equal(t, second.address, c.Address)
		assert.Equal(t, second.token, c.Token)
		assert.Empty(t, c.Err)
		finished = append(finished, *c.Attempt)
	}
	assert.ElementsMatch(t, secondAttempts, finished)

	// The first session's final reports, all with the old token to the old JobMaster: refused.
	for len(stale) < len(firstAttempts) {
		c := te.next(ctx, t, "the first session's final reports")
		require.True(t, oldSession(c), "%+v", c)
	}
	var reported []jobgraph.ExecutionAttemptID
	for _, c := range stale {
		require.Equal(t, "UpdateTaskExecutionState", c.Method, "%+v", c)
		assert.True(t, c.Closed || c.Unknown, "a final report to the closed JobMaster of the old session is refused: %+v", c)
		assert.False(t, c.Applied, "%+v", c)
		assert.NotEqual(t, jobgraph.ExecutionStateFinished.String(), c.State, "%+v", c)
		reported = append(reported, *c.Attempt)
	}
	assert.ElementsMatch(t, firstAttempts, reported, "each of the first session's tasks reported its end once: %+v", stale)
}

// awaitSession reads the TaskExecutor's calls until it registered with ld, offered it both slots
// (slot indices 0 and 1), which it accepted, and reported each of the job's three tasks
// INITIALIZING and then RUNNING to it, every call with ld's token and answered without error. A
// call to another JobMaster goes to other (or fails the test when there is none). It returns the
// allocations offered and the attempts that ran.
func awaitSession(ctx context.Context, t *testing.T, te *recordingProcess, ld leader, name string, other ...func(jmCall)) (map[jobgraph.AllocationID]int, []jobgraph.ExecutionAttemptID) {
	t.Helper()
	allocations := map[jobgraph.AllocationID]int{}
	registered := false
	states := map[jobgraph.ExecutionAttemptID][]string{}
	running := func() int {
		n := 0
		for _, s := range states {
			if slices.Equal(s, []string{"INITIALIZING", "RUNNING"}) {
				n++
			}
		}
		return n
	}
	for !registered || len(allocations) < 2 || running() < 3 {
		c := te.next(ctx, t, "the TaskExecutor's calls to "+name)
		if c.Address != ld.address || c.Token != ld.token {
			require.NotEmpty(t, other, "a call to another JobMaster than %s: %+v", name, c)
			other[0](c)
			continue
		}
		require.Empty(t, c.Err, "%s refused a call: %+v", name, c)
		switch c.Method {
		case "RegisterTaskExecutor":
			require.False(t, registered, "registered twice with %s", name)
			registered = true
		case "OfferSlots":
			require.True(t, registered, "offered before registering")
			require.Equal(t, c.Offers, c.Accepted, "%s accepted every slot offered", name)
			for _, o := range c.Offers {
				allocations[o.AllocationID] = o.SlotIndex
			}
		case "UpdateTaskExecutionState":
			require.True(t, c.Applied, "%+v", c)
			states[*c.Attempt] = append(states[*c.Attempt], c.State)
		}
	}
	assert.ElementsMatch(t, []int{0, 1}, slices.Collect(maps.Values(allocations)), "both slots offered to %s", name)
	assert.Len(t, states, 3, "three tasks ran for %s: %v", name, states)
	return allocations, slices.Collect(maps.Keys(states))
}

// startJobManagerProcess starts a JobManager process (roleJobManager) over the ha/file directory
// dir with heartbeat.timeout heartbeat, waits until it leads and returns its Dispatcher's address
// and a function that SIGKILLs it and waits for it to be gone. It is stopped (stdin closed,
// waited for) when the test ends.
func startJobManagerProcess(t *testing.T, dir string, heartbeat time.Duration) (string, func()) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), roleEnv+"="+roleJobManager, envHADir+"="+dir, envHeartbeatTimeout+"="+heartbeat.String())
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	var once sync.Once
	wait := func() { once.Do(func() { _ = cmd.Wait() }) }
	t.Cleanup(func() {
		_ = stdin.Close()
		wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err, "the JobManager process said nothing: %s", stderr.String())
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "DISPATCHER ")
	require.True(t, ok, "the JobManager process said %q", line)
	return addr, func() {
		require.NoError(t, cmd.Process.Kill())
		wait()
	}
}

// A JobMaster's leadership moves to a new session because its JobManager's process is
// SIGKILLed (issue 13's scenario, as a JobManager failover): JobManager A runs in another process
// and leads through an ha/file directory, JobManager B (this process) is its standby over the
// same directory, and the recording TaskExecutor (a third process) follows the ResourceManager
// leader through it too, with heartbeat.timeout 4 s everywhere. A's JobMaster runs the job's
// three tasks on the TaskExecutor's two slots; A is killed. Asserted:
//
//   - B takes the lock and recovers the job from the ExecutionPlanStore: its JobMaster has a new
//     JobMasterID, at another address;
//   - the first session's tasks, failed once the TaskExecutor's heartbeat.timeout for A's
//     JobMaster ran out, each reported its end once to A's JobMaster with the old JobMasterID,
//     and each of those calls was refused (the process is gone), none applied;
//   - the TaskExecutor registered with B's JobMaster and offered it both slots (indices 0 and 1,
//     new allocations) with the new JobMasterID, which accepted them, and the job's three tasks
//     ran there;
//   - calls from the TaskExecutor's process fenced with the old JobMasterID to B's JobMaster are
//     refused with the fencing error (errors.Is and errors.As across gRPC: expected the new
//     JobMasterID, got the old) and change nothing;
//   - released, the job finishes under B with its exact result, every task's first attempt of
//     the new session on this TaskExecutor.
//
// Where we differ from Flink: Flink's TaskExecutor follows each job's JobMaster leader
// (JobLeaderService) and offers the slots it holds for the job to the new leader at once, under
// their allocations; ours learns of the new JobMaster only when the ResourceManager asks it for
// slots, which it can give once it dropped the old JobMaster (its heartbeat.timeout) and freed
// them.
func TestJobMasterLeadershipMovesWhenItsJobManagerProcessIsKilled(t *testing.T) {
	const heartbeat = 4 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	dispatcherA, killA := startJobManagerProcess(t, dir, heartbeat)

	svc := newService(t, grpctransport.Options{})
	defer svc.Close()
	services, err := file.New(file.Options{Dir: dir, PollInterval: haPollInterval})
	require.NoError(t, err)
	defer func() { assert.NoError(t, services.Close()) }()
	jmB, err := cluster.RunJobManager(ctx, cluster.JobManagerConfig{RPC: svc, HA: services, Logger: quiet,
		HeartbeatInterval: heartbeat / 5, HeartbeatTimeout: heartbeat})
	require.NoError(t, err)
	defer func() { assert.NoError(t, jmB.Close()) }()

	const teID = jobgraph.ResourceID("te-follower")
	te := startRecordingTaskExecutor(t, teID, "", 2, envHADir+"="+dir, envHeartbeatTimeout+"="+heartbeat.String())

	g := jobgraph.New("leadership moves to a standby", jobgraph.Batch)
	src := g.AddVertex("emit", "lm-emit", 2)
	snk := g.AddVertex("sum", "lm-sum", 1)
	g.Connect(src, snk, jobgraph.AllToAll, jobgraph.Pipelined)
	ls := leaders{ch: make(chan leader, 8)}
	retrieval := services.JobMasterLeaderRetrieval(g.JobID)
	require.NoError(t, retrieval.Start(ls))
	defer func() { assert.NoError(t, retrieval.Stop()) }()
	dA, err := rpc.Connect[rpc.DispatcherGateway](ctx, svc, dispatcherA)
	require.NoError(t, err)
	require.NoError(t, dA.SubmitJob(ctx, g))
	first := ls.next(ctx, t)
	hostA, _, _ := strings.Cut(dispatcherA, "/")
	require.True(t, strings.HasPrefix(first.address, hostA+"/"), "the first JobMaster is A's: %s", first.address)
	firstAllocations, firstAttempts := awaitSession(ctx, t, te, first, "A's JobMaster")

	killA()
	require.NoError(t, jmB.AwaitLeadership(ctx))
	second := ls.next(ctx, t)
	require.True(t, strings.HasPrefix(second.address, svc.HostPort()+"/"), "the second JobMaster is B's: %s", second.address)
	require.NotEqual(t, first.token, second.token, "a new session, a new JobMasterID")

	var stale []jmCall
	oldSession := func(c jmCall) bool {
		if c.Stale || c.Address != first.address {
			return false
		}
		require.Equal(t, first.token, c.Token, "%+v", c)
		stale = append(stale, c)
		return true
	}
	next := func(waitingFor string) jmCall {
		for {
			if c := te.next(ctx, t, waitingFor); !oldSession(c) {
				return c
			}
		}
	}
	secondAllocations, secondAttempts := awaitSession(ctx, t, te, second, "B's JobMaster", func(c jmCall) {
		require.True(t, oldSession(c), "a call to neither JobMaster: %+v", c)
	})
	assert.Len(t, secondAllocations, 2)
	for a := range secondAllocations {
		assert.NotContains(t, firstAllocations, a, "the slots are offered to the new session under new allocations")
	}
	for _, a := range secondAttempts {
		assert.NotContains(t, firstAttempts, a)
	}
	pool, err := jmB.SlotPoolStatus(ctx, g.JobID)
	require.NoError(t, err)
	assert.Equal(t, 2, pool.Allocated+pool.Free, "B's JobMaster holds exactly the TaskExecutor's two slots: %+v", pool)

	te.send(t, cmdStale)
	for _, method := range []string{"UpdateTaskExecutionState", "OfferSlots"} {
		c := next("the stale " + method)
		require.True(t, c.Stale, "%+v", c)
		assert.Equal(t, method, c.Method)
		assert.Equal(t, second.address, c.Address)
		assert.Equal(t, first.token, c.Token)
		assert.True(t, c.Fencing, "refused with rpc.ErrFencingTokenMismatch (errors.Is across gRPC): %+v", c)
		assert.Equal(t, second.token.String(), c.Expected)
		assert.Equal(t, first.token.String(), c.Got)
		assert.False(t, c.Applied)
		assert.Empty(t, c.Accepted)
	}
	pool, err = jmB.SlotPoolStatus(ctx, g.JobID)
	require.NoError(t, err)
	assert.Equal(t, 2, pool.Allocated+pool.Free, "the stale offer added no slot: %+v", pool)

	te.send(t, cmdRelease)
	res, err := jmB.LeaderDispatcher().RequestJobResult(ctx, g.JobID)
	require.NoError(t, err)
	require.Equal(t, jobgraph.JobStatusFinished, res.Status, "%v", res.Failure)
	sum, err := jobgraph.AccumulatorValue[int64](res.Accumulators, "sum")
	require.NoError(t, err)
	assert.Equal(t, int64(55*(1+2)), sum)
	n, err := jobgraph.AccumulatorValue[int64](res.Accumulators, "records")
	require.NoError(t, err)
	assert.Equal(t, int64(2*lmRecords), n)
	assert.Empty(t, res.ExceptionHistory)
	arc, err := jmB.Dispatcher().RequestJob(ctx, g.JobID)
	require.NoError(t, err)
	for _, v := range arc.JobVertices {
		for _, s := range v.Subtasks {
			assert.Equal(t, jobgraph.ExecutionStateFinished, s.State, "%s %d", v.Name, s.Subtask)
			assert.Equal(t, 0, s.AttemptNumber, "%s %d", v.Name, s.Subtask)
			assert.Equal(t, teID, s.Location, "%s %d", v.Name, s.Subtask)
		}
	}
	var finished []jobgraph.ExecutionAttemptID
	for range secondAttempts {
		c := next("a FINISHED report")
		assert.Equal(t, jobgraph.ExecutionStateFinished.String(), c.State, "%+v", c)
		assert.Equal(t, second.address, c.Address)
		assert.Equal(t, second.token, c.Token)
		assert.Empty(t, c.Err)
		finished = append(finished, *c.Attempt)
	}
	assert.ElementsMatch(t, secondAttempts, finished)

	for len(stale) < len(firstAttempts) {
		c := te.next(ctx, t, "the first session's final reports")
		require.True(t, oldSession(c), "%+v", c)
	}
	var reported []jobgraph.ExecutionAttemptID
	for _, c := range stale {
		require.Equal(t, "UpdateTaskExecutionState", c.Method, "%+v", c)
		assert.NotEmpty(t, c.Err, "a report to the killed JobManager's JobMaster is refused: %+v", c)
		assert.False(t, c.Applied, "%+v", c)
		reported = append(reported, *c.Attempt)
	}
	assert.ElementsMatch(t, firstAttempts, reported, "each of the first session's tasks reported its end once: %+v", stale)
}

package grpctransport_test

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph/rpc"
	"github.com/jobgraph/jobgraph/taskexecutor/tetest"
	grpctransport "github.com/jobgraph/jobgraph/transport/grpc"
)

// startTaskExecutorProcess re-executes the test binary as a TaskExecutor process (roleTaskExecutor)
// registering with the ResourceManager at env.ResourceManagerAddress, and returns the address it
// serves at. The process is stopped (stdin closed, waited for) when the test ends.
func startTaskExecutorProcess(t *testing.T, env tetest.Env, tlsDir string) string {
	addr, _ := startTaskExecutorProcessKillable(t, env, tlsDir)
	return addr
}

// startTaskExecutorProcessKillable is startTaskExecutorProcess that also returns a function
// SIGKILLing the process and waiting for it to be gone.
func startTaskExecutorProcessKillable(t *testing.T, env tetest.Env, tlsDir string) (string, func()) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), roleEnv+"="+roleTaskExecutor, envResourceManager+"="+env.ResourceManagerAddress,
		envResourceID+"="+string(env.ResourceID), envNumSlots+"="+strconv.Itoa(env.NumSlots), envTLSDir+"="+tlsDir)
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	var once sync.Once
	var waitErr error
	wait := func() { once.Do(func() { waitErr = cmd.Wait() }) }
	killed := false
	kill := func() {
		killed = true
		require.NoError(t, cmd.Process.Kill())
		wait()
	}
	t.Cleanup(func() {
		_ = stdin.Close()
		wait()
		if !killed {
			assert.NoError(t, waitErr, "the TaskExecutor process: %s", stderr.String())
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err, "the TaskExecutor process said nothing: %s", stderr.String())
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "ADDRESS ")
	require.True(t, ok, "the TaskExecutor process said %q", line)
	return addr, kill
}

// Calls to a TaskExecutor whose process was SIGKILLed fail at once with the transport's error
// (gRPC's fail-fast), neither hanging until their deadline nor matching rpc.ErrUnknownAddress;
// a Lookup of it fails the same way.
func TestCallsToAKilledProcessFail(t *testing.T) {
	svc := newService(t, grpctransport.Options{})
	defer svc.Close()
	rm := &fakeResourceManager{}
	require.NoError(t, svc.Register("resourcemanager", rm))
	addr, kill := startTaskExecutorProcessKillable(t, tetest.Env{ResourceID: "te-killed", ResourceManagerAddress: svc.Address("resourcemanager"), NumSlots: 1}, "")
	gw, err := rpc.Connect[rpc.TaskExecutorGateway](t.Context(), svc, addr)
	require.NoError(t, err)
	require.NoError(t, gw.HeartbeatFromResourceManager(t.Context(), "rm-1"), "the process serves")

	kill()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	err = gw.HeartbeatFromResourceManager(ctx, "rm-1")
	require.Error(t, err)
	assert.NoError(t, ctx.Err(), "the call failed before its deadline: %v", err)
	assert.NotErrorIs(t, err, rpc.ErrUnknownAddress)
	assert.NotErrorIs(t, err, rpc.ErrServiceClosed)
	_, err = svc.Lookup(ctx, addr)
	require.Error(t, err)
	assert.NoError(t, ctx.Err())
}

// lockedBuffer is a bytes.Buffer safe to read while a process's output is copied into it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// The TaskExecutorGateway conformance suite against a real TaskExecutor in another process: the
// suite's fake ResourceManager and JobMaster serve on this process's Service, the TaskExecutor
// on the child's, and every call between them crosses loopback gRPC both ways.
func TestTaskExecutorInAnotherProcess(t *testing.T) {
	testTaskExecutorInAnotherProcess(t, grpctransport.Options{}, "")
}

// The same over mutual TLS: the child reads its keystore and truststore from PEM files, this
// process's Service has certificates of the same CA.
func TestTaskExecutorInAnotherProcessOverMutualTLS(t *testing.T) {
	ca := newCA(t, "cluster CA")
	dir := t.TempDir()
	_, certPEM, keyPEM := ca.issue(t, "taskexecutor")
	for name, data := range map[string][]byte{"cert.pem": certPEM, "key.pem": keyPEM, "ca.pem": ca.pem} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), data, 0o600))
	}
	cert, _, _ := ca.issue(t, "jobmanager")
	testTaskExecutorInAnotherProcess(t, grpctransport.Options{TLS: &grpctransport.TLSOptions{Enabled: true, Certificate: cert, CAs: ca.pool}}, dir)
}

func testTaskExecutorInAnotherProcess(t *testing.T, opts grpctransport.Options, tlsDir string) {
	tetest.TestTaskExecutorOver(t, tetest.Transport{
		NewService: func(t *testing.T) rpc.Service { return newService(t, opts) },
		Address:    func(svc rpc.Service, name string) string { return svc.(*grpctransport.Service).Address(name) },
	}, func(t *testing.T, env tetest.Env) rpc.TaskExecutorGateway {
		addr := startTaskExecutorProcess(t, env, tlsDir)
		hostPort, _, _ := strings.Cut(addr, "/")
		require.NotEqual(t, env.RPC.(*grpctransport.Service).HostPort(), hostPort, "the TaskExecutor serves on another process's listener")
		gw, err := rpc.Connect[rpc.TaskExecutorGateway](t.Context(), env.RPC, addr)
		require.NoError(t, err)
		return gw
	})
}

package grpctransport_test

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph/rpc"
	"github.com/jobgraph/jobgraph/taskexecutor/tetest"
	grpctransport "github.com/jobgraph/jobgraph/transport/grpc"
)

// startTaskExecutorProcess re-executes the test binary as a TaskExecutor process (roleTaskExecutor)
// registering with the ResourceManager at rm, and returns the address it serves at. The
// process is stopped (stdin closed, waited for) when the test ends.
func startTaskExecutorProcess(t *testing.T, env tetest.Env, tlsDir string) string {
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
	t.Cleanup(func() {
		_ = stdin.Close()
		err := cmd.Wait()
		assert.NoError(t, err, "the TaskExecutor process: %s", stderr.String())
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err, "the TaskExecutor process said nothing: %s", stderr.String())
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "ADDRESS ")
	require.True(t, ok, "the TaskExecutor process said %q", line)
	return addr
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

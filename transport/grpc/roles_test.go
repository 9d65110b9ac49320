package grpctransport_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/taskexecutor"
	"github.com/jobgraph/jobgraph/taskexecutor/tetest"
	grpctransport "github.com/jobgraph/jobgraph/transport/grpc"
)

// A test binary re-executed with roleEnv set plays that role instead of running tests (see
// TestMain). The role's parameters come in the environment; it prints "ADDRESS <address>" on
// stdout once it serves, and stops when its stdin is closed.
const (
	roleEnv = "GRPCTRANSPORT_TEST_ROLE"
	// roleTaskExecutor: a real taskexecutor.TaskExecutor on its own grpctransport.Service.
	roleTaskExecutor = "taskexecutor"
	// Its parameters: the ResourceManager's address, the ResourceID, the number of slots.
	envResourceManager = "GRPCTRANSPORT_TEST_RM"
	envResourceID      = "GRPCTRANSPORT_TEST_RESOURCE_ID"
	envNumSlots        = "GRPCTRANSPORT_TEST_SLOTS"
	// envTLSDir, if set, names a directory with cert.pem, key.pem and ca.pem: the role's
	// Service uses mutual TLS with them (TLSOptions' keystore and truststore files).
	envTLSDir = "GRPCTRANSPORT_TEST_TLS_DIR"
)

func runRole(role string) int {
	var err error
	switch role {
	case roleTaskExecutor:
		err = runTaskExecutor()
	case roleRecordingTaskExecutor:
		err = runRecordingTaskExecutor()
	case roleJobManager:
		err = runJobManager()
	default:
		err = fmt.Errorf("unknown role %q", role)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "role", role+":", err)
		return 1
	}
	return 0
}

// runTaskExecutor starts a TaskExecutor that runs tetest's task code, registered with the
// ResourceManager at $GRPCTRANSPORT_TEST_RM, and serves it until stdin closes.
func runTaskExecutor() error {
	slots, err := strconv.Atoi(os.Getenv(envNumSlots))
	if err != nil {
		return fmt.Errorf("%s: %w", envNumSlots, err)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	opts := grpctransport.Options{Logger: log}
	if dir := os.Getenv(envTLSDir); dir != "" {
		opts.TLS = &grpctransport.TLSOptions{Enabled: true, KeystoreCertFile: filepath.Join(dir, "cert.pem"),
			KeystoreKeyFile: filepath.Join(dir, "key.pem"), TruststoreFile: filepath.Join(dir, "ca.pem")}
	}
	svc, err := grpctransport.New(opts)
	if err != nil {
		return err
	}
	defer svc.Close()
	reg := taskexecutor.NewRegistry()
	reg.Register(tetest.InvokableFinish, func(context.Context, taskexecutor.Environment) error { return nil })
	reg.Register(tetest.InvokableBlock, func(ctx context.Context, _ taskexecutor.Environment) error { <-ctx.Done(); return ctx.Err() })
	reg.Register(tetest.InvokableEvents, func(ctx context.Context, env taskexecutor.Environment) error {
		env.SetOperatorEventHandler(func(event []byte) error {
			if string(event) == tetest.EventFail {
				return errors.New(tetest.HandlerRefused)
			}
			return env.SendEventToCoordinator(event)
		})
		for {
			if err := env.Yield(ctx); err != nil {
				return err
			}
		}
	})
	id := jobgraph.ResourceID(os.Getenv(envResourceID))
	te, err := taskexecutor.New(taskexecutor.Config{ResourceID: id, Address: svc.Address(string(id)), NumSlots: slots, Registry: reg,
		RPC: svc, ResourceManagerAddress: os.Getenv(envResourceManager), Logger: log})
	if err != nil {
		return err
	}
	if err := te.Start(context.Background()); err != nil {
		return err
	}
	fmt.Println("ADDRESS", svc.Address(string(id)))
	_, _ = io.Copy(io.Discard, bufio.NewReader(os.Stdin))
	return te.Close()
}

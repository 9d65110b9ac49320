package grpctransport_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain runs a test role when the test binary was re-executed as one (see roleEnv), else the
// tests with goleak.
func TestMain(m *testing.M) {
	if role := os.Getenv(roleEnv); role != "" {
		os.Exit(runRole(role))
	}
	goleak.VerifyTestMain(m)
}

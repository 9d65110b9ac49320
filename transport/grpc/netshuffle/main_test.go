package netshuffle_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if os.Getenv(roleEnv) == "producer" {
		os.Exit(runProducerProcess())
	}
	goleak.VerifyTestMain(m)
}

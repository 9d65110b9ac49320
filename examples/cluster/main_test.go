package main

import (
	"context"
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// The launcher re-executes its own binary with -role: under go test that is the test binary,
// which then plays the role instead of running tests.
func TestMain(m *testing.M) {
	if len(os.Args) > 2 && os.Args[1] == "-role" {
		if err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
			fmt.Fprintln(os.Stderr, "cluster:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

//go:build !unix

package netshuffle_test

import "time"

// processCPU: not measured on this platform.
func processCPU() (time.Duration, bool) { return 0, false }

//go:build !unix

package main

// cpuSeconds is not known here: the benchmarks then report no CPU time.
func cpuSeconds() (float64, bool) { return 0, false }

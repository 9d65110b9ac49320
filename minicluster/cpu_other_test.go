//go:build !unix

package minicluster_test

// processCPUSeconds is not known here: BenchmarkCancelRunningJob then reports no cpu-s/op.
func processCPUSeconds() (float64, bool) { return 0, false }

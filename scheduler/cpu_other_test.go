//go:build !unix

package scheduler

// processCPUSeconds is not known here: BenchmarkCancelRunningJob then reports no cpu-s/op.
func processCPUSeconds() (float64, bool) { return 0, false }

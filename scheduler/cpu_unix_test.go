//go:build unix

package scheduler

import "syscall"

// processCPUSeconds is the user and system CPU time the process has used, in seconds; false
// when the OS does not say.
func processCPUSeconds() (float64, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9, true
}

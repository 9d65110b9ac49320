//go:build unix

package main

import "syscall"

// cpuSeconds is the user and system CPU time this process and its children that were waited
// for (the role processes, once stopped) have used, in seconds; false when the OS does not say.
func cpuSeconds() (float64, bool) {
	var self, children syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &self) != nil || syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children) != nil {
		return 0, false
	}
	return float64(self.Utime.Nano()+self.Stime.Nano()+children.Utime.Nano()+children.Stime.Nano()) / 1e9, true
}

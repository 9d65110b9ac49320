//go:build !linux

package main

import "os/exec"

// dieWithParent does nothing here: only Linux kills a child when its parent dies; a JobManager
// process outlives a parent that was killed.
func dieWithParent(*exec.Cmd) {}

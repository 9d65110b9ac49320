package main

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the kernel SIGKILL the JobManager process when the parent dies, so that no
// standby is left waiting for a leadership nobody will take from it (Linux's PR_SET_PDEATHSIG).
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

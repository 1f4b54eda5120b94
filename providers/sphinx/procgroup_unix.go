//go:build unix

package sphinx

import (
	"os/exec"
	"syscall"
)

// killGroup starts cmd in a process group of its own and makes the
// context's cancel kill the whole group.
func killGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}

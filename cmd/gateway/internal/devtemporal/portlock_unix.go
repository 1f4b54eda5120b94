//go:build unix

package devtemporal

import (
	"os"
	"path/filepath"
	"syscall"
)

// lockPorts holds, across the processes of this machine, the span between
// picking free ports and the Temporal server binding them, so that two dev
// servers starting at once (parallel tests) cannot pick the same port: the
// server panics when a port it was given is taken. Best effort: without
// the lock file, starts are not serialised.
func lockPorts() (unlock func()) {
	f, err := os.OpenFile(filepath.Join(os.TempDir(), "gateway-devtemporal-ports.lock"), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return func() {}
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		_ = f.Close()
		return func() {}
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		_ = f.Close()
	}
}

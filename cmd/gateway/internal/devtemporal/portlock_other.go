//go:build !unix

package devtemporal

// lockPorts does nothing where flock(2) is missing.
func lockPorts() (unlock func()) { return func() {} }

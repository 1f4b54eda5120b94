package activities

// HeartbeatTickerRunning reports whether a's shared heartbeat ticker runs.
func HeartbeatTickerRunning(a *Activities) bool {
	a.beats.mu.Lock()
	defer a.beats.mu.Unlock()
	return a.beats.running
}

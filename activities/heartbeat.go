package activities

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"go.temporal.io/sdk/activity"
)

// heartbeats keeps every running provider call of a worker alive from one
// ticker, so a call in flight costs no goroutine of its own. The ticker
// stops when no call is left.
type heartbeats struct {
	mu      sync.Mutex
	calls   map[*heartbeatCall]struct{}
	running bool
}

// heartbeatCall is one provider call and the progress it reports.
type heartbeatCall struct {
	ctx      context.Context
	progress *atomic.Int64
	// sent is set after the call's first heartbeat; the ticker goroutine
	// alone reads and writes it.
	sent bool
}

// add heartbeats ctx's activity with progress every interval until remove.
func (h *heartbeats) add(ctx context.Context, progress *atomic.Int64, interval time.Duration) (remove func()) {
	ctx, cancel := context.WithCancel(ctx)
	call := &heartbeatCall{ctx: ctx, progress: progress}
	h.mu.Lock()
	if h.calls == nil {
		h.calls = map[*heartbeatCall]struct{}{}
	}
	h.calls[call] = struct{}{}
	if !h.running {
		h.running = true
		go h.run(interval)
	}
	h.mu.Unlock()
	return func() {
		cancel()
		h.mu.Lock()
		delete(h.calls, call)
		h.mu.Unlock()
	}
}

func (h *heartbeats) run(interval time.Duration) {
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	var calls []*heartbeatCall
	for range ticker.C {
		h.mu.Lock()
		if len(h.calls) == 0 {
			h.running = false
			h.mu.Unlock()
			return
		}
		calls = calls[:0]
		for c := range h.calls {
			calls = append(calls, c)
		}
		h.mu.Unlock()
		for _, c := range calls {
			if c.ctx.Err() != nil {
				continue
			}
			p := int(c.progress.Load())
			if !c.sent {
				// The SDK sends a call's first heartbeat at once, a
				// round trip; later ones only update what its own timer
				// sends. Keep the round trips off this loop.
				c.sent = true
				go activity.RecordHeartbeat(c.ctx, p)
				continue
			}
			activity.RecordHeartbeat(c.ctx, p)
		}
	}
}

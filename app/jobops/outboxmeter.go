package jobops

import (
	"context"
	"errors"
	"time"

	"golang.org/x/time/rate"
)

// How serve measures the rate starts leave the outbox, every process's
// together, for the pacing of the workers' starts (pacer.go): it reads the
// count of starts cleared every outboxReadEvery, and measures over the
// reads of the last outboxSpan, once they span outboxMinSpan. A rate
// measured longer ago than outboxRateStale is no longer reported: the
// workers then judge by their own starts.
const (
	outboxReadEvery   = 500 * time.Millisecond
	outboxReadTimeout = 2 * time.Second
	outboxSpan        = 2 * time.Second
	outboxMinSpan     = time.Second
	outboxRateStale   = time.Second
)

// outboxRead is one read of the count of starts cleared from the outbox.
type outboxRead struct {
	at      time.Time
	cleared int64
}

// outboxMeter measures how fast starts leave the outbox from successive
// reads of the database's count of them (every process's). A span of a
// few reads, not the last interval alone, keeps one stall of the database
// (its deletes held, then made at once) from reading as a spike.
type outboxMeter struct {
	reads []outboxRead // of the last outboxSpan, oldest first
}

// add records a read and returns the rate starts left the outbox at over
// the reads kept; false until they span outboxMinSpan.
func (m *outboxMeter) add(read outboxRead) (rate.Limit, bool) {
	m.reads = append(m.reads, read)
	for len(m.reads) > 1 && read.at.Sub(m.reads[0].at) > outboxSpan {
		m.reads = m.reads[1:]
	}
	first := m.reads[0]
	span := read.at.Sub(first.at)
	if span < outboxMinSpan {
		return 0, false
	}
	// A count that fell (its sequence was reset) measures nothing left.
	left := max(read.cleared-first.cleared, 0)
	return rate.Limit(float64(left) / span.Seconds()), true
}

// measureOutbox reads the count of starts cleared every outboxReadEvery
// until ctx ends, and tells the pacer and the next reports how fast starts
// leave the outbox. A read that fails is skipped, the rate going stale; a
// database that keeps no count (SQLite) ends the measuring.
func (d *Dispatcher) measureOutbox(ctx context.Context) {
	var meter outboxMeter
	ticker := time.NewTicker(outboxReadEvery)
	defer ticker.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		rctx, cancel := context.WithTimeout(ctx, outboxReadTimeout)
		cleared, err := d.cfg.Store.JobStartsCleared(rctx)
		cancel()
		switch {
		case errors.Is(err, errors.ErrUnsupported):
			return
		case err != nil:
			if ctx.Err() == nil && !failing {
				d.cfg.Logger.Warn("count the starts cleared from the outbox; the workers pace by their own starts until it answers", "error", err)
			}
			failing = true
			continue
		}
		failing = false
		at := d.cfg.Now()
		if r, ok := meter.add(outboxRead{at: at, cleared: cleared}); ok {
			d.outboxLeft(r, at)
		}
	}
}

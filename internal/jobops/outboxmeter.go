package jobops

import (
	"context"
	"time"

	"golang.org/x/time/rate"
)

// How serve measures the rate starts leave the outbox, every process's
// together, for the pacing of the workers' starts (pacer.go): it reads
// the jobs and the starts waiting every outboxReadEvery, and measures over
// the reads of the last outboxSpan, once they span outboxMinSpan. A rate
// measured longer ago than outboxRateStale is no longer reported.
const (
	outboxReadEvery = 500 * time.Millisecond
	outboxSpan      = 2 * time.Second
	outboxMinSpan   = time.Second
	outboxRateStale = 2 * time.Second
)

// outboxRead is one read of the jobs and the starts waiting.
type outboxRead struct {
	at            time.Time
	jobs, waiting int64
}

// outboxMeter measures how fast starts leave the outbox from successive
// reads. A read spans the whole database: the jobs every serve added, the
// starts every process made. A span of a few reads, not the last interval
// alone, keeps one stall of the database (its deletes held, then made at
// once) from reading as a spike.
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
	// The jobs added, less the starts added: the starts that left. Jobs
	// deleted meanwhile (retention) make it less, never below nothing.
	left := (read.jobs - first.jobs) - (read.waiting - first.waiting)
	return rate.Limit(float64(max(left, 0)) / span.Seconds()), true
}

// measureOutbox reads the outbox every outboxReadEvery until ctx ends, and
// tells the pacer and the next reports how fast starts leave it. A read
// that fails is skipped; the rate it would have refreshed goes stale.
func (d *Dispatcher) measureOutbox(ctx context.Context) {
	var meter outboxMeter
	ticker := time.NewTicker(outboxReadEvery)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		at := d.cfg.Now()
		rctx, cancel := context.WithTimeout(ctx, outboxReadEvery)
		jobs, waiting, err := d.cfg.Store.JobStartFlow(rctx)
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				d.cfg.Logger.Debug("read the outbox's flow; the pace's rate goes stale", "error", err)
			}
			continue
		}
		if r, ok := meter.add(outboxRead{at: at, jobs: jobs, waiting: waiting}); ok {
			d.outboxLeft(r, at)
		}
	}
}

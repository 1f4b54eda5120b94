package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// sample is one operation: when it was due, how long it took from then,
// and what it returned.
type sample struct {
	due time.Time
	lat time.Duration
	id  string
	err error
}

// stats summarises latencies in milliseconds.
type stats struct {
	N      int     `json:"n"`
	Errors int     `json:"errors"`
	P50    float64 `json:"p50_ms"`
	P95    float64 `json:"p95_ms"`
	P99    float64 `json:"p99_ms"`
	Max    float64 `json:"max_ms"`
}

// summarise computes nearest-rank percentiles of the successful samples'
// latencies.
func summarise(lats []time.Duration, errors int) stats {
	s := stats{N: len(lats), Errors: errors}
	if len(lats) == 0 {
		return s
	}
	sorted := slices.Clone(lats)
	slices.Sort(sorted)
	at := func(q float64) float64 {
		i := int(q*float64(len(sorted))+0.999999) - 1
		i = max(0, min(i, len(sorted)-1))
		return ms(sorted[i])
	}
	s.P50, s.P95, s.P99, s.Max = at(0.50), at(0.95), at(0.99), ms(sorted[len(sorted)-1])
	return s
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// split separates successful samples' latencies from errors, remembering
// the first few error messages.
func split(samples []sample) (lats []time.Duration, errs int, firstErrs []string) {
	for _, s := range samples {
		if s.err != nil {
			errs++
			if len(firstErrs) < 3 {
				firstErrs = append(firstErrs, s.err.Error())
			}
			continue
		}
		lats = append(lats, s.lat)
	}
	return lats, errs, firstErrs
}

// maxInFlight bounds the open-loop generator; a request due while this
// many are outstanding is counted as an error rather than sent late.
const maxInFlight = 4000

// openLoop sends rate operations per second for d, each due at a fixed
// time whatever the previous ones are doing (no coordinated omission:
// latency runs from the due time, so a stalled server is charged for the
// requests it delays).
func openLoop(ctx context.Context, rate int, d time.Duration, op func(context.Context) (string, error)) []sample {
	n := int(float64(rate) * d.Seconds())
	interval := time.Second / time.Duration(rate)
	samples := make([]sample, n)
	var wg sync.WaitGroup
	var inFlight atomic.Int64
	start := time.Now()
	for i := range n {
		due := start.Add(time.Duration(i) * interval)
		if wait := time.Until(due); wait > 0 {
			select {
			case <-ctx.Done():
				samples = samples[:i]
				wg.Wait()
				return samples
			case <-time.After(wait):
			}
		}
		if inFlight.Load() >= maxInFlight {
			samples[i] = sample{due: due, err: fmt.Errorf("generator: %d requests outstanding", maxInFlight)}
			continue
		}
		inFlight.Add(1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer inFlight.Add(-1)
			id, err := op(ctx)
			samples[i] = sample{due: due, lat: time.Since(due), id: id, err: err}
		}()
	}
	wg.Wait()
	return samples
}

// closedLoop runs workers clients, each starting its next operation when
// the previous one returns, for d. It returns the samples and the time
// from the start to the last operation's end.
func closedLoop(ctx context.Context, workers int, d time.Duration, op func(context.Context) (string, error)) ([]sample, time.Duration) {
	start := time.Now()
	deadline := start.Add(d)
	var mu sync.Mutex
	var samples []sample
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []sample
			for time.Now().Before(deadline) && ctx.Err() == nil {
				due := time.Now()
				id, err := op(ctx)
				mine = append(mine, sample{due: due, lat: time.Since(due), id: id, err: err})
			}
			mu.Lock()
			samples = append(samples, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return samples, time.Since(start)
}

// forEach runs fn over items with n goroutines.
func forEach[T any](items []T, n int, fn func(int, T)) {
	var wg sync.WaitGroup
	var next atomic.Int64
	for range min(n, len(items)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(items) {
					return
				}
				fn(i, items[i])
			}
		}()
	}
	wg.Wait()
}

package activities

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"time"
)

// Sweeps remove what crashed steps and finished jobs left behind; the
// housekeeping rounds run them (result files go with their job's
// retention: Retention) (docs/operations.md, Housekeeping).
type Sweeps struct {
	// Files holds the media stage's and results' files and this worker's
	// scratch directory.
	Files Blobs
	// Callbacks holds vendors' posts; nil: this gateway takes none.
	Callbacks CallbackStore
}

// Media sweep periods (docs/media.md, Where files live).
const (
	// WorkFilesMaxAge is how long media stage files may outlive a crash
	// before the sweep removes them; no job takes that long to route.
	WorkFilesMaxAge = 24 * time.Hour
	// scratchMaxAge is how long a worker's local scratch directory may
	// stay; no media step runs that long.
	scratchMaxAge = 6 * time.Hour
)

// SweepWorkFiles removes the blob store's media stage files older than
// WorkFilesMaxAge, which crashed media steps left behind, and returns how
// many it removed. The blob store is shared: one worker of the deployment
// runs it each round (docs/operations.md, Housekeeping).
func (s *Sweeps) SweepWorkFiles(ctx context.Context, now time.Time) (int, error) {
	if s.Files.Store == nil {
		return 0, nil
	}
	return s.Files.Store.Sweep(ctx, "work/", now.Add(-WorkFilesMaxAge))
}

// SweepScratch removes this worker's local scratch directories older than
// scratchMaxAge, which crashed media steps left behind, and returns how
// many it removed. Every worker runs it: the directory is its own.
func (s *Sweeps) SweepScratch(_ context.Context, now time.Time) (int, error) {
	if s.Files.ScratchDir == "" {
		return 0, nil
	}
	entries, err := os.ReadDir(s.Files.ScratchDir)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	var errs []error
	removed := 0
	for _, e := range entries {
		info, err := e.Info()
		if err != nil || !info.ModTime().Before(now.Add(-scratchMaxAge)) {
			continue
		}
		if err := os.RemoveAll(filepath.Join(s.Files.ScratchDir, e.Name())); err != nil {
			errs = append(errs, err)
			continue
		}
		removed++
	}
	return removed, errors.Join(errs...)
}

// callbackAge is when a vendor's post is swept: a waiting workflow reads
// a post within a minute, and a post stays until then so that a check
// that runs again still finds it (docs/providers.md, Vendor callbacks).
const callbackAge = 24 * time.Hour

// SweepProviderCallbacks removes vendors' posts older than callbackAge and
// returns how many it removed. One worker of the deployment runs it each
// round (docs/operations.md, Housekeeping).
func (s *Sweeps) SweepProviderCallbacks(ctx context.Context, now time.Time) (int, error) {
	if s.Callbacks == nil {
		return 0, nil
	}
	n, err := s.Callbacks.DeleteProviderCallbacksBefore(ctx, now.Add(-callbackAge))
	return int(n), err
}

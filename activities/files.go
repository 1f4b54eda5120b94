package activities

import (
	"context"
	"errors"
	"io"
	"os"
	"path"
	"path/filepath"
	"sync/atomic"

	"go.temporal.io/sdk/temporal"

	"github.com/ai-job-gateway/gateway/internal/blobstore"
)

// Blobs moves a job's files between the blob store and a worker's local
// scratch directory; the media steps, provider calls and sweeps share it.
type Blobs struct {
	// Store is the blob store of media and result files (docs/media.md);
	// nil: jobs with media fail with MEDIA_PROCESSING_UNAVAILABLE.
	Store *blobstore.Store
	// ScratchDir holds local copies while a step runs (default the
	// system's temporary directory).
	ScratchDir string
}

// scratch makes a fresh local directory for one media step of a job.
func (b Blobs) scratch(jobID string) (string, error) {
	dir := b.ScratchDir
	if dir == "" {
		dir = os.TempDir()
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	return os.MkdirTemp(dir, jobID+"-")
}

// localCopy downloads a media stage file into a scratch directory; done
// removes it.
func (b Blobs) localCopy(ctx context.Context, jobID string, file MediaFile) (string, func(), error) {
	if b.Store == nil {
		return "", nil, unavailable("this gateway has no blob store for media (docs/media.md: --blob-url)")
	}
	scratch, err := b.scratch(jobID)
	if err != nil {
		return "", nil, err
	}
	done := func() { _ = os.RemoveAll(scratch) }
	local := filepath.Join(scratch, path.Base(file.Key))
	if _, err := b.Store.Download(ctx, file.Key, local); err != nil {
		done()
		if errors.Is(err, blobstore.ErrNotFound) {
			// Swept or never written: the workflow fetches again.
			return "", nil, temporal.NewNonRetryableApplicationError("media file "+file.Key+" is gone", ErrTypeMediaGone, err)
		}
		return "", nil, err
	}
	return local, done, nil
}

// ErrTypeMediaGone: a media stage file the step needs is no longer in the
// blob store.
const ErrTypeMediaGone = "MediaGone"

// putFile uploads a local file to the blob store, counting the bytes read
// into sent when it is not nil.
func (b Blobs) putFile(ctx context.Context, key, contentType, local string, sent *atomic.Int64) error {
	f, err := os.Open(local)
	if err != nil {
		return err
	}
	defer f.Close()
	var body io.Reader = f
	if sent != nil {
		body = &countingBody{ReadCloser: f, n: sent}
	}
	_, err = b.Store.Put(ctx, key, contentType, body)
	return err
}

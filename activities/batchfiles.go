package activities

import (
	"context"
	"errors"

	"go.temporal.io/sdk/activity"
)

// BatchFileReader reads a file batch's items into the batch (the API's
// parsing and the job operations, docs/api.md, Batches). progress is
// called after each chunk recorded.
type BatchFileReader interface {
	ReadBatchFile(ctx context.Context, batchID string, progress func(itemsRead int)) error
	FailBatchFile(ctx context.Context, batchID, message string) error
}

// BatchFiles reads the items of file batches.
type BatchFiles struct {
	// Reader is nil on a worker that reads no batch files.
	Reader BatchFileReader
}

// errNoBatchFiles is the failure of a worker without a Reader, retried
// (another worker may have one).
var errNoBatchFiles = errors.New("this worker reads no batch files")

// ReadBatchFile reads the items of file batch batchID, from where an
// earlier attempt stopped; each chunk heartbeats.
func (b *BatchFiles) ReadBatchFile(ctx context.Context, batchID string) error {
	if b.Reader == nil {
		return errNoBatchFiles
	}
	return b.Reader.ReadBatchFile(ctx, batchID, func(n int) { activity.RecordHeartbeat(ctx, n) })
}

// FailBatchFile fails a file batch whose reading gave up.
func (b *BatchFiles) FailBatchFile(ctx context.Context, batchID, message string) error {
	if b.Reader == nil {
		return errNoBatchFiles
	}
	return b.Reader.FailBatchFile(ctx, batchID, message)
}

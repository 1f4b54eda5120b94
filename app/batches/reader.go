package batches

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/ai-job-gateway/gateway/app/jobops"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/internal/strictjson"
	"github.com/ai-job-gateway/gateway/store"
)

// batchFileChunk is how many of a file's items one transaction records.
const batchFileChunk = 1000

// FileOps checks, admits and records a file batch's items
// (jobops.Service).
type FileOps interface {
	PlanFileItems(ctx context.Context, b *store.Batch, items []jobops.BatchItem) *jobops.BatchPlan
	RecordFileItems(ctx context.Context, plan *jobops.BatchPlan, from, to int, services []string, refused []store.BatchRefusal) (bool, []string, error)
	AbandonBatch(ctx context.Context, plan *jobops.BatchPlan)
}

// FileStore reads file batches and ends their reading (*store.Store).
type FileStore interface {
	GetBatch(ctx context.Context, id string) (*store.Batch, error)
	EndBatchFile(ctx context.Context, id, code, message string, refused []store.BatchRefusal) error
}

// FileReader reads the items of file batches into them, as the workers'
// batch file activity (docs/api.md, Batches): each item is parsed and
// checked as an inline item is, and recorded 1,000 at a time.
type FileReader struct {
	Ops   FileOps
	Store FileStore
	// Client fetches the files (netguard's media client).
	Client *http.Client
	// ScratchDir holds a file while it is read (default the system's
	// temporary directory).
	ScratchDir string
	Logger     *slog.Logger
}

// fileChunk is the items of a file being checked together.
type fileChunk struct {
	from  int
	items []jobops.BatchItem
	lines []int
	plan  *jobops.BatchPlan
}

// ReadBatchFile reads batch id's file, from the item its last reading
// stopped at; progress is told the items read after each chunk. A file
// that cannot be read, or whose items are all refused (one, when atomic),
// fails the batch; an error returned is worth a retry.
func (r *FileReader) ReadBatchFile(ctx context.Context, id string, progress func(int)) error {
	b, err := r.Store.GetBatch(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil || b.State != store.BatchValidating {
		return err
	}
	if b.CancelRequestedAt != nil {
		return r.Store.EndBatchFile(ctx, id, "", "", nil) // cancelled: read no more
	}
	if r.ScratchDir != "" {
		if err := os.MkdirAll(r.ScratchDir, 0o700); err != nil {
			return err
		}
	}
	f, err := os.CreateTemp(r.ScratchDir, "batch-*.jsonl")
	if err != nil {
		return err
	}
	defer func() {
		f.Close()
		os.Remove(f.Name())
	}()
	var fileErr *FileError
	n := 0
	err = Fetch(ctx, r.Client, b.InputFileURL, MaxFileBytes, f)
	if err == nil {
		if _, err = f.Seek(0, 0); err == nil {
			n, err = CountItems(f, MaxFileItems)
		}
	}
	switch {
	case errors.As(err, &fileErr):
		return r.Store.EndBatchFile(ctx, id, CodeFileUnreadable, fileErr.Reason, nil)
	case err != nil:
		return err
	case n == 0:
		return r.Store.EndBatchFile(ctx, id, CodeFileUnreadable, "input_file_url has no items", nil)
	}

	mayWrite := func(scope string) bool {
		svc, access, _ := strings.Cut(scope, ":")
		return access == "write" && slices.Contains(strings.Fields(b.Writable), svc)
	}
	seen := make(map[string]int, n)
	services := strings.Fields(b.Services)
	from, created := b.ItemsRead, b.Total
	var held []*fileChunk // an atomic batch's, recorded once all passed
	var refusedAll []store.BatchRefusal
	chunk := &fileChunk{from: from}
	flush := func(to int) error {
		if len(chunk.items) == 0 {
			return nil
		}
		chunk.plan = r.Ops.PlanFileItems(ctx, b, chunk.items)
		refused, err := fileRefusals(chunk)
		if err != nil {
			r.Ops.AbandonBatch(ctx, chunk.plan)
			return err
		}
		if b.Atomic {
			held, refusedAll = append(held, chunk), append(refusedAll, refused...)
		} else {
			if err := r.record(ctx, chunk, to, &services, refused); err != nil {
				return err
			}
			created += chunk.plan.Admitted()
			progress(to)
		}
		chunk = &fileChunk{from: to}
		return nil
	}
	err = ReadItems(f, MaxFileItems, func(l Line) error {
		item := parseFileItem(l, seen, mayWrite)
		if r := item.Request; r != nil {
			// As an inline item's: its own body stands for it.
			r.Tenant, r.User, r.Application = b.Tenant, b.UserID, b.Application
		}
		if l.Item < from {
			return nil // recorded by an earlier reading
		}
		chunk.items, chunk.lines = append(chunk.items, item), append(chunk.lines, l.Number)
		if len(chunk.items) == batchFileChunk {
			return flush(l.Item + 1)
		}
		return nil
	})
	if err == nil {
		err = flush(n)
	}
	if err != nil {
		for _, c := range held {
			r.Ops.AbandonBatch(ctx, c.plan)
		}
		return err
	}
	if b.Atomic && len(refusedAll) > 0 {
		for _, c := range held {
			r.Ops.AbandonBatch(ctx, c.plan)
		}
		return r.Store.EndBatchFile(ctx, id, CodeRefused,
			fmt.Sprintf("%d of the %d items were refused; the batch creates none of them", len(refusedAll), n), refusedAll)
	}
	for i, c := range held {
		to := n
		if i+1 < len(held) {
			to = held[i+1].from
		}
		if err := r.record(ctx, c, to, &services, nil); err != nil {
			for _, rest := range held[i+1:] {
				r.Ops.AbandonBatch(ctx, rest.plan)
			}
			return err
		}
		created += c.plan.Admitted()
		progress(to)
	}
	if created == 0 {
		return r.Store.EndBatchFile(ctx, id, CodeRefused, fmt.Sprintf("all %d items were refused", n), nil)
	}
	return r.Store.EndBatchFile(ctx, id, "", "", nil)
}

// record records a chunk's items up to to.
func (r *FileReader) record(ctx context.Context, c *fileChunk, to int, services *[]string, refused []store.BatchRefusal) error {
	recorded, next, err := r.Ops.RecordFileItems(ctx, c.plan, c.from, to, *services, refused)
	if err != nil {
		return err
	}
	if !recorded {
		// Another reading went on, or the batch was cancelled: the next
		// try reads again from where the batch stands, or ends it.
		return fmt.Errorf("items %d to %d were not recorded: another reading of the file went on, or the batch was cancelled", c.from, to)
	}
	*services = next
	return nil
}

// FailBatchFile fails a file batch whose reading gave up; the items
// recorded by then stay.
func (r *FileReader) FailBatchFile(ctx context.Context, id, message string) error {
	return r.Store.EndBatchFile(ctx, id, CodeFileUnreadable, message, nil)
}

// parseFileItem parses a line of a batch file as an inline item is
// parsed; what would refuse an inline batch refuses the item alone.
func parseFileItem(l Line, seen map[string]int, mayWrite func(string) bool) jobops.BatchItem {
	if l.Err != nil {
		return jobops.BatchItem{Err: invalidItem("input_file_url", "%v", l.Err)}
	}
	item, err := strictjson.Object(l.Data, "")
	if err != nil || item == nil {
		return jobops.BatchItem{Err: invalidItem("input_file_url", "line %d is not a JSON object", l.Number)}
	}
	customID, _, err := strictjson.String(item, "custom_id", "")
	if err != nil {
		return jobops.BatchItem{Err: err}
	}
	if n := utf8.RuneCountInString(customID); n < 1 || n > MaxCustomIDLength {
		return jobops.BatchItem{Err: invalidItem("/custom_id", "is required: 1 to %d characters", MaxCustomIDLength)}
	}
	if first, dup := seen[customID]; dup {
		return jobops.BatchItem{CustomID: customID, Err: invalidItem("/custom_id",
			"repeats the custom_id of line %d; each item's is unique in its batch", first)}
	}
	seen[customID] = l.Number
	delete(item, "custom_id")
	next := jobops.BatchItem{CustomID: customID}
	next.Request, next.Err = ParseItem(mayWrite, item)
	return next
}

// fileRefusals lists a checked chunk's refused items; an error that is
// no refusal (the store failed) is returned instead.
func fileRefusals(c *fileChunk) ([]store.BatchRefusal, error) {
	refused, err := Refusals(c.items, c.plan.Errors)
	if err != nil {
		return nil, err
	}
	out := make([]store.BatchRefusal, len(refused))
	for i, e := range refused {
		out[i] = store.BatchRefusal{Item: c.from + e.Index, Line: c.lines[e.Index], CustomID: e.CustomID,
			Status: e.Status, Code: e.Error.Code, Message: e.Error.Message}
	}
	return out, nil
}

// invalidItem refuses a file's item as a create with the member at
// pointer at fault would be refused (422).
func invalidItem(pointer, format string, args ...any) *jobs.RequestError {
	return &jobs.RequestError{Pointer: pointer, Code: jobs.RequestInvalid, Message: fmt.Sprintf(format, args...)}
}

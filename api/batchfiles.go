package api

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/ai-job-gateway/gateway/api/apierror"
	"github.com/ai-job-gateway/gateway/app/batches"
	"github.com/ai-job-gateway/gateway/app/jobops"
	"github.com/ai-job-gateway/gateway/store"
)

// CodeBatchFileUnreadable fails a file batch whose file cannot be read
// as a whole (docs/api.md, Batches).
const CodeBatchFileUnreadable = "BATCH_FILE_UNREADABLE"

// batchFileChunk is how many of a file's items one transaction records.
const batchFileChunk = 1000

// BatchFileOps checks, admits and records a file batch's items
// (jobops.Service).
type BatchFileOps interface {
	PlanFileItems(ctx context.Context, b *store.Batch, items []jobops.BatchItem) *jobops.BatchPlan
	RecordFileItems(ctx context.Context, plan *jobops.BatchPlan, from, to int, services []string, refused []store.BatchRefusal) (bool, []string, error)
	AbandonBatch(ctx context.Context, plan *jobops.BatchPlan)
}

// BatchFileStore reads file batches and ends their reading (*store.Store).
type BatchFileStore interface {
	GetBatch(ctx context.Context, id string) (*store.Batch, error)
	EndBatchFile(ctx context.Context, id, code, message string, refused []store.BatchRefusal) error
}

// BatchFiles reads the items of file batches into them, as the workers'
// batch file activity (docs/api.md, Batches): each item is parsed and
// checked as an inline item is, and recorded 1,000 at a time.
type BatchFiles struct {
	Ops   BatchFileOps
	Store BatchFileStore
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
func (r *BatchFiles) ReadBatchFile(ctx context.Context, id string, progress func(int)) error {
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
	var fileErr *batches.FileError
	n := 0
	err = batches.Fetch(ctx, r.Client, b.InputFileURL, batches.MaxFileBytes, f)
	if err == nil {
		if _, err = f.Seek(0, 0); err == nil {
			n, err = batches.CountItems(f, batches.MaxFileItems)
		}
	}
	switch {
	case errors.As(err, &fileErr):
		return r.Store.EndBatchFile(ctx, id, CodeBatchFileUnreadable, fileErr.Reason, nil)
	case err != nil:
		return err
	case n == 0:
		return r.Store.EndBatchFile(ctx, id, CodeBatchFileUnreadable, "input_file_url has no items", nil)
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
	err = batches.ReadItems(f, batches.MaxFileItems, func(l batches.Line) error {
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
		return r.Store.EndBatchFile(ctx, id, CodeBatchRefused,
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
		return r.Store.EndBatchFile(ctx, id, CodeBatchRefused, fmt.Sprintf("all %d items were refused", n), nil)
	}
	return r.Store.EndBatchFile(ctx, id, "", "", nil)
}

// record records a chunk's items up to to.
func (r *BatchFiles) record(ctx context.Context, c *fileChunk, to int, services *[]string, refused []store.BatchRefusal) error {
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
func (r *BatchFiles) FailBatchFile(ctx context.Context, id, message string) error {
	return r.Store.EndBatchFile(ctx, id, CodeBatchFileUnreadable, message, nil)
}

// parseFileItem parses a line of a batch file as an inline item is
// parsed; what would refuse an inline batch refuses the item alone.
func parseFileItem(l batches.Line, seen map[string]int, mayWrite func(string) bool) jobops.BatchItem {
	if l.Err != nil {
		return jobops.BatchItem{Err: apierror.Validation("input_file_url", "%v", l.Err)}
	}
	item, err := object(l.Data, "")
	if err != nil || item == nil {
		return jobops.BatchItem{Err: apierror.Validation("input_file_url", "line %d is not a JSON object", l.Number)}
	}
	customID, _, err := stringMember(item, "custom_id", "")
	if err != nil {
		return jobops.BatchItem{Err: err}
	}
	if n := utf8.RuneCountInString(customID); n < 1 || n > maxCustomIDLength {
		return jobops.BatchItem{Err: apierror.Validation("/custom_id", "is required: 1 to %d characters", maxCustomIDLength)}
	}
	if first, dup := seen[customID]; dup {
		return jobops.BatchItem{CustomID: customID, Err: apierror.Validation("/custom_id",
			"repeats the custom_id of line %d; each item's is unique in its batch", first)}
	}
	seen[customID] = l.Number
	delete(item, "custom_id")
	next := jobops.BatchItem{CustomID: customID}
	next.Request, next.Err = parseBatchItem(mayWrite, item)
	return next
}

// fileRefusals lists a checked chunk's refused items; an error that is
// no refusal (the store failed) is returned instead.
func fileRefusals(c *fileChunk) ([]store.BatchRefusal, error) {
	refused, err := itemErrors(c.items, c.plan.Errors)
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

// refusalLine is a line of GET /v1/batches/{id}/errors.
type refusalLine struct {
	Index    int            `json:"index"`
	Line     int            `json:"line,omitempty"`
	CustomID string         `json:"custom_id"`
	Status   int            `json:"status"`
	Error    itemErrorError `json:"error"`
}

// errors handles GET /v1/batches/{id}/errors: the refused items, one JSON
// line each, in order; ?after=<index> resumes after an item.
func (h batchesHandler) errors(c *gin.Context) error {
	b, err := h.visible(c, "read")
	if err != nil {
		return err
	}
	after, err := afterIndex(c)
	if err != nil {
		return err
	}
	var lines []refusalLine
	if b.InputFileURL == "" && b.Refused != "" {
		if err := json.Unmarshal([]byte(b.Refused), &lines); err != nil {
			return err
		}
		lines = slices.DeleteFunc(lines, func(l refusalLine) bool { return l.Index <= after })
	}
	mediaType := "application/x-ndjson"
	if strings.Contains(c.GetHeader("Accept"), "application/jsonl") {
		mediaType = "application/jsonl"
	}
	c.Header("Content-Type", mediaType)
	c.Header("Vary", "Accept")
	ctx := c.Request.Context()
	w := bufio.NewWriter(c.Writer)
	for first := true; ; first = false {
		if b.InputFileURL != "" {
			page, err := h.batches.BatchRefusals(ctx, b.ID, after, batchResultsPage)
			if err != nil {
				if first {
					return err
				}
				return h.streamEnded(c, w, err)
			}
			lines = lines[:0]
			for _, r := range page {
				lines = append(lines, refusalLine{Index: r.Item, Line: r.Line, CustomID: r.CustomID, Status: r.Status,
					Error: itemErrorError{Code: r.Code, Message: r.Message}})
			}
		}
		if first {
			c.Status(http.StatusOK)
		}
		for _, l := range lines {
			line, err := json.Marshal(l)
			if err != nil {
				return h.streamEnded(c, w, err)
			}
			if _, err := w.Write(append(line, '\n')); err != nil {
				return nil // the client is gone
			}
		}
		if b.InputFileURL == "" || len(lines) < batchResultsPage {
			break
		}
		after = lines[len(lines)-1].Index
	}
	_ = w.Flush()
	return nil
}

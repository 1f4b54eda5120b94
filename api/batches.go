package api

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/ai-job-gateway/gateway/api/apierror"
	"github.com/ai-job-gateway/gateway/api/auth"
	"github.com/ai-job-gateway/gateway/app/batches"
	"github.com/ai-job-gateway/gateway/app/jobops"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/store"
)

// BatchMaxBodyBytes is the largest body of POST /v1/batches (docs/api.md,
// Batches).
const BatchMaxBodyBytes = 32 << 20

// batchResultsPage is how many results one read of GET
// /v1/batches/{id}/results takes from the store.
const batchResultsPage = 500

// BatchOps plans, records and cancels batches (jobops.Service).
type BatchOps interface {
	PlanBatch(ctx context.Context, req jobops.BatchRequest) (*jobops.BatchPlan, error)
	RecordBatch(ctx context.Context, plan *jobops.BatchPlan, refused json.RawMessage) (*store.Batch, error)
	AbandonBatch(ctx context.Context, plan *jobops.BatchPlan)
	CreateFileBatch(ctx context.Context, req jobops.FileBatchRequest) (*store.Batch, error)
	CancelBatch(ctx context.Context, id string) (*store.Batch, error)
}

// BatchReader reads batches, their jobs and their refusals
// (*store.BatchStore).
type BatchReader interface {
	GetBatch(ctx context.Context, id string) (*store.Batch, error)
	BatchCounts(ctx context.Context, id string) (map[jobs.Status]int, error)
	LastBatchCompletion(ctx context.Context, id string) (*time.Time, error)
	BatchJobs(ctx context.Context, id string, finished bool, after string, limit int) ([]jobs.Record, error)
	BatchRefusals(ctx context.Context, id string, after, limit int) ([]store.BatchRefusal, error)
}

// batchesHandler serves /v1/batches (docs/api.md, Batches).
type batchesHandler struct {
	ops        BatchOps
	batches    BatchReader
	deliveries DeliveryStore
	views      jobViews
	logger     *slog.Logger
}

func (h batchesHandler) routes(v1 gin.IRouter) {
	v1.POST("/batches", handle(h.create))
	v1.GET("/batches/:id", handle(h.get))
	v1.GET("/batches/:id/results", handle(h.results))
	v1.GET("/batches/:id/errors", handle(h.errors))
	v1.POST("/batches/:id/cancel", handle(h.cancel))
	v1.GET("/batches/:id/webhook-deliveries", handle(h.batchDeliveries))
}

// create handles POST /v1/batches.
func (h batchesHandler) create(c *gin.Context) error {
	by, err := creatorOf(c)
	if err != nil {
		return err
	}
	if by.IdempotencyKey == "" {
		return apierror.New(http.StatusUnprocessableEntity, apierror.CodeValidation,
			"header Idempotency-Key: is required; it names the batch, so that sending it again creates nothing twice")
	}
	body, err := io.ReadAll(c.Request.Body)
	if err != nil {
		return err
	}
	received := time.Now()
	req, fileURL, err := parseBatchRequest(c, body)
	if err != nil {
		return err
	}
	if fileURL != "" {
		return h.createFromFile(c, by, body, req, fileURL)
	}
	req.Requester = by
	req.Body, req.Received = body, received
	for i := range req.Items {
		if r := req.Items[i].Request; r != nil {
			// Its own body stands for it; the batch's key names its job.
			r.Tenant, r.User, r.Application, r.Received = by.Tenant, by.User, by.Application, received
		}
	}
	plan, err := h.ops.PlanBatch(c.Request.Context(), *req)
	if err != nil {
		return jobopsError(err)
	}
	if plan.Existing != nil {
		return h.answer(c, http.StatusAccepted, plan.Existing)
	}
	refused, err := batches.Refusals(req.Items, plan.Errors)
	if err != nil {
		h.ops.AbandonBatch(c.Request.Context(), plan)
		return err
	}
	if (req.Atomic && len(refused) > 0) || plan.Admitted() == 0 {
		h.ops.AbandonBatch(c.Request.Context(), plan)
		message := fmt.Sprintf("%d of the %d items were refused; the batch creates none of them", len(refused), len(req.Items))
		if !req.Atomic {
			message = fmt.Sprintf("all %d items were refused", len(req.Items))
		}
		c.JSON(http.StatusUnprocessableEntity, gin.H{"error": gin.H{"code": batches.CodeRefused, "message": message,
			"items": refused, "request_id": RequestID(c.Request.Context())}})
		return nil
	}
	list, err := json.Marshal(refused)
	if err != nil {
		return err
	}
	b, err := h.ops.RecordBatch(c.Request.Context(), plan, list)
	if err != nil {
		return jobopsError(err)
	}
	c.Header("Location", "/v1/batches/"+b.ID)
	return h.answer(c, http.StatusAccepted, b)
}

// createFromFile records a batch whose items are read from a JSONL file,
// validating until a worker has read it (docs/api.md, Batches).
func (h batchesHandler) createFromFile(c *gin.Context, by jobops.Requester, body []byte, req *jobops.BatchRequest, fileURL string) error {
	var writable []string
	for _, svc := range jobs.Services() {
		if auth.CallerFrom(c).HasScope(string(svc.ID) + ":write") {
			writable = append(writable, string(svc.ID))
		}
	}
	by.Body = body
	b, err := h.ops.CreateFileBatch(c.Request.Context(), jobops.FileBatchRequest{Requester: by, Atomic: req.Atomic,
		Webhook: req.Webhook, URL: fileURL, Writable: writable})
	if err != nil {
		return jobopsError(err)
	}
	c.Header("Location", "/v1/batches/"+b.ID)
	return h.answer(c, http.StatusAccepted, b)
}

// parseBatchRequest reads a batch's body: its items, each parsed as a
// single create of its type is (batches.ParseItem), and atomic and webhook.
// A malformed batch, or an item without a valid and unique custom_id, is
// refused as a whole; an item that breaks a create's rules is refused on
// its own.
//
// A batch with input_file_url instead of items returns the URL, and no
// items.
func parseBatchRequest(c *gin.Context, body []byte) (*jobops.BatchRequest, string, error) {
	env, err := parseEnvelope(body, envelopeSpec{
		Type:               "batch",
		Members:            []string{"type", "attributes"},
		Attributes:         []string{"items", "input_file_url", "atomic", "webhook"},
		AttributesRequired: true,
	})
	if err != nil {
		return nil, "", err
	}
	req := &jobops.BatchRequest{}
	attrs := env.Attributes
	if raw, ok := attrs["atomic"]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &req.Atomic); err != nil {
			return nil, "", apierror.Validation(ptrAttributes+"/atomic", "must be a boolean")
		}
	}
	if req.Webhook, err = jobs.ParseWebhook(attrs["webhook"]); err != nil {
		return nil, "", err
	}
	const ptrItems = ptrAttributes + "/items"
	if raw, ok := attrs["input_file_url"]; ok {
		if _, both := attrs["items"]; both {
			return nil, "", apierror.Validation(ptrItems, "and input_file_url: give exactly one of them")
		}
		fileURL, err := parseFileURL(raw)
		return req, fileURL, err
	}
	var items []json.RawMessage
	if err := json.Unmarshal(attrs["items"], &items); err != nil || items == nil {
		return nil, "", apierror.Validation(ptrItems, "is required and must be an array")
	}
	if len(items) == 0 || len(items) > jobops.MaxBatchItems {
		return nil, "", apierror.Validation(ptrItems, "has %d items; a batch has 1 to %d", len(items), jobops.MaxBatchItems)
	}
	seen := make(map[string]int, len(items))
	for i, raw := range items {
		pointer := ptrItems + "/" + strconv.Itoa(i)
		item, err := object(raw, pointer)
		if err != nil || item == nil {
			return nil, "", apierror.Validation(pointer, "must be an object")
		}
		customID, _, err := stringMember(item, "custom_id", pointer)
		if err != nil {
			return nil, "", err
		}
		if n := utf8.RuneCountInString(customID); n < 1 || n > batches.MaxCustomIDLength {
			return nil, "", apierror.Validation(pointer+"/custom_id", "is required: 1 to %d characters", batches.MaxCustomIDLength)
		}
		if first, dup := seen[customID]; dup {
			return nil, "", apierror.Validation(pointer+"/custom_id", "repeats the custom_id of item %d; each item's is unique in its batch", first)
		}
		seen[customID] = i
		delete(item, "custom_id")
		next := jobops.BatchItem{CustomID: customID}
		next.Request, next.Err = batches.ParseItem(auth.CallerFrom(c).HasScope, item)
		req.Items = append(req.Items, next)
	}
	return req, "", nil
}

// parseFileURL reads input_file_url: an absolute http or https URL.
func parseFileURL(raw json.RawMessage) (string, error) {
	const pointer = ptrAttributes + "/input_file_url"
	var s string
	if err := json.Unmarshal(raw, &s); err != nil || s == "" {
		return "", apierror.Validation(pointer, "must be the URL of a JSONL file")
	}
	if len(s) > MaxWebhookURLBytes {
		return "", apierror.Validation(pointer, "is %d bytes; it is limited to %d", len(s), MaxWebhookURLBytes)
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", apierror.Validation(pointer, "must be an absolute http or https URL")
	}
	return s, nil
}

// get handles GET /v1/batches/{id}.
func (h batchesHandler) get(c *gin.Context) error {
	b, err := h.visible(c, "read")
	if err != nil {
		return err
	}
	return h.answer(c, http.StatusOK, b)
}

// cancel handles POST /v1/batches/{id}/cancel.
func (h batchesHandler) cancel(c *gin.Context) error {
	b, err := h.visible(c, "write")
	if err != nil {
		return err
	}
	if b, err = h.ops.CancelBatch(c.Request.Context(), b.ID); err != nil {
		return jobopsError(err)
	}
	return h.answer(c, http.StatusAccepted, b)
}

// visible loads the batch the path names as the caller may see it: its
// tenant's (or any for a cross-tenant caller not acting as one), with the
// scope of access (read or write) of every service its jobs are of.
func (h batchesHandler) visible(c *gin.Context, access string) (*store.Batch, error) {
	tenant, _, err := auth.EffectiveIdentity(c)
	if err != nil {
		return nil, err
	}
	id := strings.ToLower(c.Param("id"))
	notFound := apierror.NotFound("no batch with id %s", c.Param("id"))
	if _, err := uuid.Parse(id); err != nil || len(id) != 36 {
		return nil, notFound
	}
	b, err := h.batches.GetBatch(c.Request.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, notFound
	}
	if err != nil {
		return nil, err
	}
	if !mayAccess(c, anyService, tenant, "", b.Tenant) {
		return nil, notFound
	}
	services := b.Services
	if services == "" {
		// A file batch still being read has no jobs yet: the services
		// its creator could write stand for them.
		services = b.Writable
	}
	for _, svc := range strings.Fields(services) {
		if scope := svc + ":" + access; !auth.CallerFrom(c).HasScope(scope) {
			return nil, apierror.InsufficientScope(scope)
		}
	}
	return b, nil
}

// answer renders a batch with its counts now.
func (h batchesHandler) answer(c *gin.Context, status int, b *store.Batch) error {
	doc, err := batches.Show(c.Request.Context(), h.batches, b)
	if err != nil {
		return err
	}
	c.JSON(status, gin.H{"data": doc})
	return nil
}

// resultLine is one line of a batch's results.
type resultLine struct {
	CustomID string          `json:"custom_id"`
	JobID    string          `json:"job_id"`
	Status   jobs.Status     `json:"status"`
	Result   json.RawMessage `json:"result,omitempty"`
	Error    *jobs.Error     `json:"error,omitempty"`
}

// results handles GET /v1/batches/{id}/results: one JSON line per finished
// job, streamed in job id order; ?after=<job id> resumes after a job.
func (h batchesHandler) results(c *gin.Context) error {
	b, err := h.visible(c, "read")
	if err != nil {
		return err
	}
	mediaType := "application/x-ndjson"
	if strings.Contains(c.GetHeader("Accept"), "application/jsonl") {
		mediaType = "application/jsonl"
	}
	after, err := afterJobID(c)
	if err != nil {
		return err
	}
	ctx := c.Request.Context()
	page, err := h.batches.BatchJobs(ctx, b.ID, true, after, batchResultsPage)
	if err != nil {
		return err
	}
	c.Header("Content-Type", mediaType)
	c.Header("Vary", "Accept")
	c.Status(http.StatusOK)
	w := bufio.NewWriter(c.Writer)
	memo := retentions{}
	for len(page) > 0 {
		for i := range page {
			line, err := h.resultLine(ctx, &page[i], memo)
			if err != nil {
				return h.streamEnded(c, w, err)
			}
			if _, err := w.Write(append(line, '\n')); err != nil {
				return nil // the client is gone
			}
		}
		if err := w.Flush(); err != nil {
			return nil
		}
		c.Writer.Flush()
		if len(page) < batchResultsPage {
			break
		}
		if page, err = h.batches.BatchJobs(ctx, b.ID, true, page[len(page)-1].ID, batchResultsPage); err != nil {
			return h.streamEnded(c, w, err)
		}
	}
	_ = w.Flush()
	return nil
}

// resultLine renders a finished job as its results line: its result as
// GET /v1/{resource}/{id} shows it, or its error.
func (h batchesHandler) resultLine(ctx context.Context, job *jobs.Record, memo retentions) ([]byte, error) {
	doc, err := h.views.resource(ctx, job, jobs.Full, memo)
	if err != nil {
		return nil, err
	}
	return json.Marshal(resultLine{CustomID: job.CustomID, JobID: job.ID, Status: job.Status,
		Result: doc.Attributes.Result, Error: doc.Attributes.Error})
}

// streamEnded ends a results stream that failed after its status was
// sent: the lines so far stand, and the client resumes with ?after=.
func (h batchesHandler) streamEnded(c *gin.Context, w *bufio.Writer, err error) error {
	_ = w.Flush()
	h.logger.Error("batch results stream ended early", "path", c.Request.URL.Path, "request_id", RequestID(c.Request.Context()), "error", err)
	return nil
}

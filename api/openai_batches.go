package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
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
	"github.com/ai-job-gateway/gateway/internal/blobstore"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/store"
)

// The one endpoint and completion window a batch may name, and the one
// purpose a file may have (docs/openai.md, Files and batches).
const (
	openAIBatchEndpoint = "/v1/chat/completions"
	openAIBatchWindow   = "24h"
	openAIBatchPurpose  = "batch"
)

// openAIFormMemory is how much of an uploaded file is kept in memory; the
// rest waits on disk until it is stored.
const openAIFormMemory = 1 << 20

// openAIMetadataKeys bounds a batch's metadata, as OpenAI does.
const openAIMetadataKeys = 16

// openAIBlobFiles keeps uploaded files (blobstore.Store).
type openAIBlobFiles interface {
	Put(ctx context.Context, key, contentType string, r io.Reader) (int64, error)
	Open(ctx context.Context, key string) (io.ReadCloser, error)
	Delete(ctx context.Context, key string) error
}

// openAIObjects keeps the files' metadata and the batches' OpenAI
// attributes, and lists them (store.BatchStore).
type openAIObjects interface {
	PutOpenAIObject(ctx context.Context, o store.OpenAIObject) error
	GetOpenAIObject(ctx context.Context, tenant, kind, id string) (*store.OpenAIObject, error)
	DeleteOpenAIObject(ctx context.Context, tenant, kind, id string) error
	ListOpenAIObjects(ctx context.Context, tenant, kind, after string, limit int) ([]store.OpenAIObject, error)
	ListOpenAIObjectsOldestFirst(ctx context.Context, tenant, kind, after string, limit int) ([]store.OpenAIObject, error)
}

// openAIBatches serves OpenAI's files and batches under /openai/v1: a
// file is kept in the blob store under its tenant's prefix, its metadata
// in the store; a batch is one gateway batch of llm-tasks, its OpenAI
// attributes in the store, its output and error files derived from its
// jobs when read (docs/openai.md, Files and batches).
type openAIBatches struct {
	// files keeps the files' contents, objects their metadata and the
	// batches' attributes; either nil answers every route 503.
	files   openAIBlobFiles
	objects openAIObjects
	// ops and batches are the gateway's batches; nil answers the batch
	// routes 503.
	ops     BatchOps
	batches BatchReader
	// namedPolicy is the routing policy a line's model names, as a chat
	// completion's (openAIHandler.namedPolicy).
	namedPolicy func(c *gin.Context, tenant, model string) (string, error)
}

// newOpenAIBatches is openAIBatches on cfg's batches (whose store keeps
// the objects) and blob store.
func newOpenAIBatches(cfg Config) openAIBatches {
	b := openAIBatches{batches: cfg.Batches,
		namedPolicy: openAIHandler{catalog: cfg.Catalog, policies: cfg.Policies}.namedPolicy}
	b.files, _ = cfg.Files.(openAIBlobFiles)
	b.objects, _ = cfg.Batches.(openAIObjects)
	if b.objects == nil {
		b.files = nil
	}
	b.ops, _ = cfg.Jobs.(BatchOps)
	if b.batches == nil {
		b.ops = nil
	}
	return b
}

// routes registers the files and batches routes on the authenticated
// /openai/v1 group.
func (b openAIBatches) routes(g gin.IRouter) {
	write := auth.RequireScope(string(jobs.LLMTasks) + ":write")
	read := auth.RequireScope(string(jobs.LLMTasks) + ":read")
	g.POST("/files", write, handle(b.upload))
	g.GET("/files", read, handle(b.listFiles))
	g.GET("/files/:id", read, handle(b.getFile))
	g.GET("/files/:id/content", read, handle(b.content))
	g.DELETE("/files/:id", write, handle(b.deleteFile))
	g.POST("/batches", write, handle(b.create))
	g.GET("/batches", read, handle(b.list))
	g.GET("/batches/:id", read, handle(b.get))
	g.POST("/batches/:id/cancel", write, handle(b.cancel))
}

// openAIFile is OpenAI's file object.
type openAIFile struct {
	ID        string `json:"id"`
	Object    string `json:"object"`
	Bytes     int64  `json:"bytes"`
	CreatedAt int64  `json:"created_at"`
	Filename  string `json:"filename"`
	Purpose   string `json:"purpose"`
	Status    string `json:"status"`
}

// openAIBatchAttributes is what a batch keeps of its OpenAI request, as
// its store.OpenAIObject.
type openAIBatchAttributes struct {
	InputFileID      string            `json:"input_file_id"`
	Endpoint         string            `json:"endpoint"`
	CompletionWindow string            `json:"completion_window"`
	Metadata         map[string]string `json:"metadata"`
	// Models are the model each line asked for, by custom_id: the
	// chat.completion of its answer names it.
	Models map[string]string `json:"models"`
	// Refused are the lines of the error file of the lines refused at
	// creation.
	Refused []json.RawMessage `json:"refused"`
}

// Ids: a file is "file-" and 32 hex digits; a batch is "batch_" and its
// gateway batch's id; a batch's output and error files are derived from
// the batch's id.
const (
	openAIBatchPrefix   = "batch_"
	derivedFilePrefix   = "file-batch_"
	derivedOutputSuffix = "_output"
	derivedErrorsSuffix = "_errors"
)

var openAIUploadedFileID = regexp.MustCompile(`^file-[0-9a-f]{32}$`)

// openAITenantPrefix is where a tenant's files are kept.
func openAITenantPrefix(tenant string) string { return "openai/" + url.PathEscape(tenant) + "/" }

// openAIFileKey is where an uploaded file's content is kept.
func openAIFileKey(tenant, id string) string { return openAITenantPrefix(tenant) + "files/" + id }

// openAINoFileStore answers the routes when the gateway keeps no files.
func openAINoFileStore() *openAIError {
	return &openAIError{status: http.StatusServiceUnavailable, typ: openAIServerError, code: "files_unavailable",
		message: "this gateway has no file store configured, so it keeps no files nor OpenAI batches; send the batch's items to POST /v1/batches instead (docs/openai.md, Files and batches)"}
}

func openAINoSuchFile(id string) *openAIError {
	return &openAIError{status: http.StatusNotFound, typ: openAIInvalidRequest, param: "id", message: fmt.Sprintf("No such File object: %s", id)}
}

func openAINoSuchBatch(id string) *openAIError {
	return &openAIError{status: http.StatusNotFound, typ: openAIInvalidRequest, param: "id", message: fmt.Sprintf("No such Batch object: %s", id)}
}

// openAITenant is the caller's tenant, which files and batches belong to.
func openAITenant(c *gin.Context) (string, error) {
	tenant, _, err := auth.EffectiveIdentity(c)
	if err != nil {
		return "", err
	}
	if tenant == "" {
		return "", apierror.Forbidden("the token carries no tenant_id claim; files and batches belong to a tenant")
	}
	return tenant, nil
}

// upload handles POST /openai/v1/files: a JSONL file of purpose batch,
// kept under the caller's tenant.
func (b openAIBatches) upload(c *gin.Context) error {
	tenant, err := openAITenant(c)
	if err != nil {
		return err
	}
	if b.files == nil {
		return openAINoFileStore()
	}
	defer func() {
		if form := c.Request.MultipartForm; form != nil {
			_ = form.RemoveAll()
		}
	}()
	allowUpload(c)
	if err := c.Request.ParseMultipartForm(openAIFormMemory); err != nil {
		var maxErr *http.MaxBytesError
		var bodyErr *bodyReadError
		if errors.As(err, &maxErr) || errors.As(err, &bodyErr) {
			return err // 413, or the client's stalled or broken body
		}
		return invalidParam("", "The request must be a multipart/form-data form with the fields file and purpose.")
	}
	form := c.Request.MultipartForm
	purpose := ""
	if v := form.Value["purpose"]; len(v) > 0 {
		purpose = v[0]
	}
	if purpose != openAIBatchPurpose {
		e := invalidParam("purpose", "Invalid value for 'purpose': %q; this gateway takes files of purpose 'batch' only (docs/openai.md, Files and batches).", purpose)
		if purpose == "" {
			e = invalidParam("purpose", "Missing required parameter: 'purpose'.")
		}
		return e
	}
	headers := form.File["file"]
	if len(headers) == 0 {
		return invalidParam("file", "Missing required parameter: 'file'.")
	}
	f, err := headers[0].Open()
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	obj := openAIFile{ID: "file-" + strings.ReplaceAll(uuid.Must(uuid.NewV7()).String(), "-", ""), Object: "file",
		CreatedAt: time.Now().Unix(), Filename: headers[0].Filename, Purpose: purpose, Status: "processed"}
	ctx := c.Request.Context()
	if obj.Bytes, err = b.files.Put(ctx, openAIFileKey(tenant, obj.ID), "application/jsonl", f); err != nil {
		return err
	}
	if err := b.putObject(ctx, tenant, store.OpenAIFile, obj.ID, time.Time{}, obj); err != nil {
		_ = b.files.Delete(ctx, openAIFileKey(tenant, obj.ID))
		return err
	}
	c.JSON(http.StatusOK, obj)
	return nil
}

// putObject keeps v as tenant's object of kind and id, created at
// created (zero: now).
func (b openAIBatches) putObject(ctx context.Context, tenant, kind, id string, created time.Time, v any) error {
	doc, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return b.objects.PutOpenAIObject(ctx, store.OpenAIObject{Tenant: tenant, Kind: kind, ID: id, CreatedAt: created, Document: string(doc)})
}

// object reads tenant's object of kind and id into v; store.ErrNotFound
// when there is none.
func (b openAIBatches) object(ctx context.Context, tenant, kind, id string, v any) error {
	o, err := b.objects.GetOpenAIObject(ctx, tenant, kind, id)
	if err != nil {
		return err
	}
	return json.Unmarshal([]byte(o.Document), v)
}

// read is the blob at key.
func (b openAIBatches) read(ctx context.Context, key string) ([]byte, error) {
	r, err := b.files.Open(ctx, key)
	if err != nil {
		return nil, err
	}
	defer func() { _ = r.Close() }()
	return io.ReadAll(r)
}

// openAIListPage is a page of a listing read with one object more than
// limit: at most limit, and whether more follow.
func openAIListPage(objs []store.OpenAIObject, limit int) ([]store.OpenAIObject, bool) {
	if len(objs) > limit {
		return objs[:limit], true
	}
	return objs, false
}

// openAIListLimit reads ?limit=, 1 to most, def when absent.
func openAIListLimit(c *gin.Context, def, most int) (int, error) {
	s := c.Query("limit")
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > most {
		return 0, invalidParam("limit", "Invalid 'limit': must be an integer from 1 to %d.", most)
	}
	return n, nil
}

// file is the file id names, of the caller's tenant, and its content
// when content is set; a batch's output or error file is derived from
// its jobs. Another tenant's file is not found.
func (b openAIBatches) file(c *gin.Context, id string, content bool) (*openAIFile, []byte, error) {
	tenant, err := openAITenant(c)
	if err != nil {
		return nil, nil, err
	}
	if b.files == nil {
		return nil, nil, openAINoFileStore()
	}
	ctx := c.Request.Context()
	if rest, ok := strings.CutPrefix(id, derivedFilePrefix); ok {
		return b.derivedFile(c, tenant, id, rest)
	}
	if !openAIUploadedFileID.MatchString(id) {
		return nil, nil, openAINoSuchFile(id)
	}
	var obj openAIFile
	if err := b.object(ctx, tenant, store.OpenAIFile, id, &obj); errors.Is(err, store.ErrNotFound) {
		return nil, nil, openAINoSuchFile(id)
	} else if err != nil {
		return nil, nil, err
	}
	if !content {
		return &obj, nil, nil
	}
	data, err := b.read(ctx, openAIFileKey(tenant, id))
	if errors.Is(err, blobstore.ErrNotFound) {
		return nil, nil, openAINoSuchFile(id)
	}
	return &obj, data, err
}

// derivedFile is a finished batch's output or error file, built from its
// jobs and its refused lines.
func (b openAIBatches) derivedFile(c *gin.Context, tenant, id, rest string) (*openAIFile, []byte, error) {
	batchID, output := strings.CutSuffix(rest, derivedOutputSuffix)
	if !output {
		var errs bool
		if batchID, errs = strings.CutSuffix(rest, derivedErrorsSuffix); !errs {
			return nil, nil, openAINoSuchFile(id)
		}
	}
	if b.ops == nil {
		return nil, nil, openAINoSuchFile(id)
	}
	gb, attrs, err := b.load(c.Request.Context(), tenant, batchID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, openAINoSuchFile(id)
	}
	if err != nil {
		return nil, nil, err
	}
	view, err := b.render(c.Request.Context(), gb, attrs)
	if err != nil {
		return nil, nil, err
	}
	named := view.ErrorFileID
	if output {
		named = view.OutputFileID
	}
	if named == nil || *named != id {
		return nil, nil, openAINoSuchFile(id)
	}
	out, errs, err := b.outputs(c.Request.Context(), gb, attrs)
	if err != nil {
		return nil, nil, err
	}
	data, purpose, name := out, "batch_output", openAIBatchPrefix+gb.ID+derivedOutputSuffix+".jsonl"
	if !output {
		data, name = errs, openAIBatchPrefix+gb.ID+derivedErrorsSuffix+".jsonl"
	}
	created := view.CreatedAt
	if view.CompletedAt != nil {
		created = *view.CompletedAt
	} else if view.CancelledAt != nil {
		created = *view.CancelledAt
	}
	return &openAIFile{ID: id, Object: "file", Bytes: int64(len(data)), CreatedAt: created, Filename: name,
		Purpose: purpose, Status: "processed"}, data, nil
}

// getFile handles GET /openai/v1/files/{id}.
func (b openAIBatches) getFile(c *gin.Context) error {
	obj, _, err := b.file(c, c.Param("id"), false)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, obj)
	return nil
}

// content handles GET /openai/v1/files/{id}/content.
func (b openAIBatches) content(c *gin.Context) error {
	_, data, err := b.file(c, c.Param("id"), true)
	if err != nil {
		return err
	}
	c.Data(http.StatusOK, "application/jsonl", data)
	return nil
}

// deleteFile handles DELETE /openai/v1/files/{id}; a batch's output and
// error files go with its jobs, not on their own.
func (b openAIBatches) deleteFile(c *gin.Context) error {
	id := c.Param("id")
	obj, _, err := b.file(c, id, false)
	if err != nil {
		return err
	}
	if strings.HasPrefix(id, derivedFilePrefix) {
		return invalidParam("id", "The file %s is derived from its batch's jobs; it goes when they are deleted (docs/openai.md, Files and batches).", id)
	}
	tenant, _ := openAITenant(c)
	ctx := c.Request.Context()
	// The content first: should the row's deletion fail, the file is
	// still listed and deleted again.
	if err := b.files.Delete(ctx, openAIFileKey(tenant, obj.ID)); err != nil {
		return err
	}
	if err := b.objects.DeleteOpenAIObject(ctx, tenant, store.OpenAIFile, obj.ID); err != nil {
		return err
	}
	c.JSON(http.StatusOK, gin.H{"id": obj.ID, "object": "file", "deleted": true})
	return nil
}

// listFiles handles GET /openai/v1/files: the tenant's uploaded files,
// newest first; ?purpose=, ?limit= and ?after= as OpenAI's.
func (b openAIBatches) listFiles(c *gin.Context) error {
	tenant, err := openAITenant(c)
	if err != nil {
		return err
	}
	if b.files == nil {
		return openAINoFileStore()
	}
	limit, err := openAIListLimit(c, 10000, 10000)
	if err != nil {
		return err
	}
	if p := c.Query("purpose"); p != "" && p != openAIBatchPurpose {
		c.JSON(http.StatusOK, gin.H{"object": "list", "data": []openAIFile{}, "has_more": false})
		return nil
	}
	ctx := c.Request.Context()
	listing := b.objects.ListOpenAIObjects
	if c.Query("order") == "asc" {
		listing = b.objects.ListOpenAIObjectsOldestFirst
	}
	objs, err := listing(ctx, tenant, store.OpenAIFile, c.Query("after"), limit+1)
	if err != nil {
		return err
	}
	objs, more := openAIListPage(objs, limit)
	data := make([]openAIFile, 0, len(objs))
	for _, o := range objs {
		var obj openAIFile
		if err := json.Unmarshal([]byte(o.Document), &obj); err != nil {
			return err
		}
		data = append(data, obj)
	}
	answer := gin.H{"object": "list", "data": data, "has_more": more}
	if len(data) > 0 {
		answer["first_id"], answer["last_id"] = data[0].ID, data[len(data)-1].ID
	}
	c.JSON(http.StatusOK, answer)
	return nil
}

// openAIBatchRequest is OpenAI's create batch request.
type openAIBatchRequest struct {
	InputFileID      string            `json:"input_file_id"`
	Endpoint         string            `json:"endpoint"`
	CompletionWindow string            `json:"completion_window"`
	Metadata         map[string]string `json:"metadata"`
}

// openAIBatchLine is a line of a batch's input file.
type openAIBatchLine struct {
	CustomID *string         `json:"custom_id"`
	Method   string          `json:"method"`
	URL      string          `json:"url"`
	Body     json.RawMessage `json:"body"`
}

// create handles POST /openai/v1/batches: each line of the input file is
// an llm-task item of one gateway batch, its body turned into the task as
// a chat completion's is; a line refused is listed in the error file.
func (b openAIBatches) create(c *gin.Context) error {
	by, err := creatorOf(c)
	if err != nil {
		return err
	}
	if b.files == nil || b.ops == nil {
		return openAINoFileStore()
	}
	body, err := io.ReadAll(c.Request.Body)
	if err != nil {
		return err
	}
	received := time.Now()
	var req openAIBatchRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return invalidParam("", "We could not parse the JSON body of your request: it must be a JSON object with input_file_id, endpoint and completion_window.")
	}
	switch {
	case req.InputFileID == "":
		return invalidParam("input_file_id", "Missing required parameter: 'input_file_id'.")
	case req.Endpoint != openAIBatchEndpoint:
		return invalidParam("endpoint", "Invalid value for 'endpoint': %q; this gateway batches %s only (docs/openai.md, Files and batches).", req.Endpoint, openAIBatchEndpoint)
	case req.CompletionWindow != openAIBatchWindow:
		return invalidParam("completion_window", "Invalid value for 'completion_window': %q; supported: '24h'.", req.CompletionWindow)
	case len(req.Metadata) > openAIMetadataKeys:
		return invalidParam("metadata", "Invalid 'metadata': at most %d keys.", openAIMetadataKeys)
	}
	file, data, err := b.file(c, req.InputFileID, true)
	var notFound *openAIError
	if errors.As(err, &notFound) && notFound.status == http.StatusNotFound {
		notFound.param = "input_file_id"
		return notFound
	}
	if err != nil {
		return err
	}
	if file.Purpose != openAIBatchPurpose {
		return invalidParam("input_file_id", "The file %s has purpose %q, not 'batch'.", file.ID, file.Purpose)
	}
	attrs := openAIBatchAttributes{InputFileID: file.ID, Endpoint: req.Endpoint, CompletionWindow: req.CompletionWindow,
		Metadata: req.Metadata, Models: map[string]string{}}
	items, openAIErrs, err := b.items(c, data, attrs.Models)
	if err != nil {
		return err
	}
	key := "openai-batch:" + uuid.NewString()
	if by.IdempotencyKey != "" {
		key = "openai-batch:" + by.IdempotencyKey
	}
	batch := jobops.BatchRequest{Requester: by, Items: items}
	batch.IdempotencyKey, batch.Body, batch.Received = key, body, received
	for i := range batch.Items {
		if r := batch.Items[i].Request; r != nil {
			r.Tenant, r.User, r.Application, r.Received = by.Tenant, by.User, by.Application, received
		}
	}
	ctx := c.Request.Context()
	plan, err := b.ops.PlanBatch(ctx, batch)
	if err != nil {
		return jobopsError(err)
	}
	if plan.Existing != nil {
		return b.answer(c, plan.Existing)
	}
	id := jobops.BatchID(by.Tenant, key)
	refused, err := batches.Refusals(batch.Items, plan.Errors)
	if err != nil {
		b.ops.AbandonBatch(ctx, plan)
		return err
	}
	for _, r := range refused {
		e := openAIErrs[r.Index]
		if e == nil {
			e = openAIRefusal(r)
		}
		line, err := json.Marshal(gin.H{"id": "batch_req_" + id + "_" + strconv.Itoa(r.Index), "custom_id": r.CustomID,
			"response": gin.H{"status_code": e.status, "request_id": nil, "body": openAIErrorBody(e)}, "error": nil})
		if err != nil {
			b.ops.AbandonBatch(ctx, plan)
			return err
		}
		attrs.Refused = append(attrs.Refused, line)
	}
	if plan.Admitted() == 0 {
		b.ops.AbandonBatch(ctx, plan)
		first := openAIErrs[refused[0].Index]
		if first == nil {
			first = openAIRefusal(refused[0])
		}
		return invalidParam("input_file_id", "All %d lines of the file %s were refused; the first, %s: %s", len(items), file.ID, refused[0].CustomID, first.message)
	}
	list, err := json.Marshal(refused)
	if err != nil {
		b.ops.AbandonBatch(ctx, plan)
		return err
	}
	// The attributes first: a batch recorded is always shown and listed.
	if err := b.putObject(ctx, by.Tenant, store.OpenAIBatch, id, received, attrs); err != nil {
		b.ops.AbandonBatch(ctx, plan)
		return err
	}
	gb, err := b.ops.RecordBatch(ctx, plan, list)
	if err != nil {
		// The attributes stay: the batch may have been recorded after
		// all; listed without it, they are skipped.
		return jobopsError(err)
	}
	// Recorded: an SDK retrying this answer would make another batch.
	c.Header("X-Should-Retry", "false")
	return b.answer(c, gb)
}

// items are the input file's lines as batch items, the OpenAI errors of
// the lines refused here by index; a file that is not JSONL, or whose
// lines lack a unique custom_id, is refused as a whole. models gets each
// line's model.
func (b openAIBatches) items(c *gin.Context, data []byte, models map[string]string) ([]jobops.BatchItem, map[int]*openAIError, error) {
	var items []jobops.BatchItem
	refused := map[int]*openAIError{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), BatchMaxBodyBytes)
	for n := 1; sc.Scan(); n++ {
		raw := bytes.TrimSpace(sc.Bytes())
		if len(raw) == 0 {
			continue
		}
		var line openAIBatchLine
		if err := json.Unmarshal(raw, &line); err != nil {
			return nil, nil, invalidParam("input_file_id", "Line %d of the input file is not a JSON object: the file must be JSONL.", n)
		}
		if line.CustomID == nil || *line.CustomID == "" || utf8.RuneCountInString(*line.CustomID) > batches.MaxCustomIDLength {
			return nil, nil, invalidParam("input_file_id", "Line %d of the input file has no custom_id of 1 to %d characters.", n, batches.MaxCustomIDLength)
		}
		customID := *line.CustomID
		if _, dup := models[customID]; dup {
			return nil, nil, invalidParam("input_file_id", "Line %d of the input file repeats the custom_id %q; each line's is unique.", n, customID)
		}
		if len(items) == jobops.MaxBatchItems {
			return nil, nil, invalidParam("input_file_id", "The input file has more than %d lines, the most a batch of this gateway takes.", jobops.MaxBatchItems)
		}
		item := jobops.BatchItem{CustomID: customID}
		req, refusal, err := b.item(c, line, customID, models)
		if err != nil {
			return nil, nil, err
		}
		item.Request, item.Err = req, refusal
		if e := (*openAIError)(nil); errors.As(refusal, &e) {
			refused[len(items)] = e
			// Listed among the batch's refusals as the gateway lists them.
			item.Err = &jobs.RequestError{Code: jobs.RequestInvalid, Message: e.message}
		}
		items = append(items, item)
	}
	if err := sc.Err(); err != nil {
		return nil, nil, invalidParam("input_file_id", "The input file cannot be read as JSONL: %v.", err)
	}
	if len(items) == 0 {
		return nil, nil, invalidParam("input_file_id", "The input file has no lines.")
	}
	return items, refused, nil
}

// item is a line as an llm-task item, built as a chat completion's job
// is, or why the line is refused (an *openAIError, or an item's refusal
// as batches.Refusals lists it); err fails the request.
func (b openAIBatches) item(c *gin.Context, line openAIBatchLine, customID string, models map[string]string) (req *jobops.SubmitRequest, refusal, err error) {
	models[customID] = ""
	if line.Method != http.MethodPost {
		return nil, invalidParam("method", "Invalid 'method': %q; a line's method is POST.", line.Method), nil
	}
	if line.URL != openAIBatchEndpoint {
		return nil, invalidParam("url", "Invalid 'url': %q; the batch's endpoint is %s.", line.URL, openAIBatchEndpoint), nil
	}
	tenant, err := openAITenant(c)
	if err != nil {
		return nil, nil, err
	}
	chat, refusal := parseChatRequest(line.Body)
	if refusal != nil {
		return nil, refusal, nil
	}
	models[customID] = chat.Model
	policyID, err := b.namedPolicy(c, tenant, chat.Model)
	if err != nil {
		return nil, nil, err
	}
	envelope, refusal := chatJobBody(chat, policyID)
	if refusal != nil {
		return nil, refusal, nil
	}
	var doc struct {
		Data map[string]json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(envelope, &doc); err != nil {
		return nil, nil, err
	}
	req, refusal = batches.ParseItem(auth.CallerFrom(c).HasScope, doc.Data)
	return req, refusal, nil
}

// openAIRefusal is an item's refusal as OpenAI answers it: a 422 is a 400
// naming the parameter (docs/openai.md, Errors).
func openAIRefusal(r batches.Refusal) *openAIError {
	e := &openAIError{status: r.Status, typ: openAIInvalidRequest, code: strings.ToLower(r.Error.Code), message: r.Error.Message}
	switch {
	case r.Status == http.StatusUnprocessableEntity:
		e.status = http.StatusBadRequest
	case r.Status == http.StatusPaymentRequired:
		e.typ = "insufficient_quota"
	case r.Status == http.StatusTooManyRequests:
		e.typ = "requests"
	case r.Status >= 500:
		e.typ = openAIServerError
	}
	if pointer, rest, ok := strings.Cut(r.Error.Message, ": "); ok && strings.HasPrefix(pointer, jobs.PtrAttributes+"/") {
		if e.param = openAIParam(pointer, "max_tokens"); e.param != "" {
			e.message = fmt.Sprintf("Invalid '%s': %s", e.param, rest)
		}
	}
	return e
}

// openAIErrorBody is e as OpenAI's error body.
func openAIErrorBody(e *openAIError) gin.H {
	return gin.H{"error": gin.H{"message": e.message, "type": e.typ, "param": nullIfEmpty(e.param), "code": nullIfEmpty(e.code)}}
}

// openAIBatch is OpenAI's batch object.
type openAIBatch struct {
	ID               string            `json:"id"`
	Object           string            `json:"object"`
	Endpoint         string            `json:"endpoint"`
	Errors           any               `json:"errors"`
	InputFileID      string            `json:"input_file_id"`
	CompletionWindow string            `json:"completion_window"`
	Status           string            `json:"status"`
	OutputFileID     *string           `json:"output_file_id"`
	ErrorFileID      *string           `json:"error_file_id"`
	CreatedAt        int64             `json:"created_at"`
	InProgressAt     *int64            `json:"in_progress_at"`
	ExpiresAt        *int64            `json:"expires_at"`
	FinalizingAt     *int64            `json:"finalizing_at"`
	CompletedAt      *int64            `json:"completed_at"`
	FailedAt         *int64            `json:"failed_at"`
	ExpiredAt        *int64            `json:"expired_at"`
	CancellingAt     *int64            `json:"cancelling_at"`
	CancelledAt      *int64            `json:"cancelled_at"`
	RequestCounts    openAIBatchCounts `json:"request_counts"`
	Metadata         map[string]string `json:"metadata"`
}

type openAIBatchCounts struct {
	Total     int `json:"total"`
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
}

// load is the gateway batch an OpenAI batch id (or the gateway's id)
// names, of tenant's, with its attributes; store.ErrNotFound when there
// is none.
func (b openAIBatches) load(ctx context.Context, tenant, id string) (*store.Batch, *openAIBatchAttributes, error) {
	id = strings.TrimPrefix(id, openAIBatchPrefix)
	if u, err := uuid.Parse(id); err != nil || u.String() != id {
		return nil, nil, store.ErrNotFound
	}
	o, err := b.objects.GetOpenAIObject(ctx, tenant, store.OpenAIBatch, id)
	if err != nil {
		return nil, nil, err
	}
	return b.loaded(ctx, o)
}

// loaded is the gateway batch of o, a batch's attributes, with them;
// store.ErrNotFound when there is none.
func (b openAIBatches) loaded(ctx context.Context, o *store.OpenAIObject) (*store.Batch, *openAIBatchAttributes, error) {
	gb, err := b.batches.GetBatch(ctx, o.ID)
	if err != nil {
		return nil, nil, err
	}
	if gb.Tenant != o.Tenant {
		return nil, nil, store.ErrNotFound
	}
	var attrs openAIBatchAttributes
	if err := json.Unmarshal([]byte(o.Document), &attrs); err != nil {
		return nil, nil, err
	}
	return gb, &attrs, nil
}

// visible is the batch the path names, of the caller's tenant.
func (b openAIBatches) visible(c *gin.Context) (*store.Batch, *openAIBatchAttributes, error) {
	tenant, err := openAITenant(c)
	if err != nil {
		return nil, nil, err
	}
	if b.files == nil || b.ops == nil {
		return nil, nil, openAINoFileStore()
	}
	gb, attrs, err := b.load(c.Request.Context(), tenant, c.Param("id"))
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, openAINoSuchBatch(c.Param("id"))
	}
	return gb, attrs, err
}

// render is a gateway batch as OpenAI's batch: its status is the
// gateway's (docs/api.md, Batches), its refused lines count as failed,
// its output and error files are named once it is finished.
func (b openAIBatches) render(ctx context.Context, gb *store.Batch, attrs *openAIBatchAttributes) (*openAIBatch, error) {
	doc, err := batches.Show(ctx, b.batches, gb)
	if err != nil {
		return nil, err
	}
	a := doc.Attributes
	created := gb.CreatedAt.Unix()
	expires := gb.CreatedAt.Add(24 * time.Hour).Unix()
	out := &openAIBatch{ID: openAIBatchPrefix + gb.ID, Object: "batch", Endpoint: attrs.Endpoint, InputFileID: attrs.InputFileID,
		CompletionWindow: attrs.CompletionWindow, Status: a.Status, CreatedAt: created, InProgressAt: &created, ExpiresAt: &expires,
		Metadata: attrs.Metadata,
		RequestCounts: openAIBatchCounts{Total: gb.Total + len(attrs.Refused), Completed: a.Counts[string(jobs.StatusCompleted)],
			Failed: a.Counts[string(jobs.StatusFailed)] + len(attrs.Refused)}}
	unix := func(t *time.Time) *int64 {
		if t == nil {
			return nil
		}
		s := t.Unix()
		return &s
	}
	out.CancellingAt = unix(a.CancelRequestedAt)
	switch a.Status {
	case batches.StatusCompleted:
		out.CompletedAt = unix(a.CompletedAt)
	case batches.StatusCancelled:
		out.CancelledAt = unix(a.CompletedAt)
	case batches.StatusFailed:
		out.FailedAt = unix(a.CompletedAt)
	}
	if a.Status == batches.StatusCompleted || a.Status == batches.StatusCancelled {
		if out.RequestCounts.Completed > 0 {
			id := derivedFilePrefix + gb.ID + derivedOutputSuffix
			out.OutputFileID = &id
		}
		if out.RequestCounts.Failed > 0 {
			id := derivedFilePrefix + gb.ID + derivedErrorsSuffix
			out.ErrorFileID = &id
		}
	}
	return out, nil
}

// answer renders a batch.
func (b openAIBatches) answer(c *gin.Context, gb *store.Batch) error {
	var attrs openAIBatchAttributes
	if err := b.object(c.Request.Context(), gb.Tenant, store.OpenAIBatch, gb.ID, &attrs); err != nil {
		return err
	}
	view, err := b.render(c.Request.Context(), gb, &attrs)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, view)
	return nil
}

// outputs are a batch's output and error files: a line per finished job
// in job id order, the refused lines first in the error file.
func (b openAIBatches) outputs(ctx context.Context, gb *store.Batch, attrs *openAIBatchAttributes) ([]byte, []byte, error) {
	var out, errs bytes.Buffer
	for _, line := range attrs.Refused {
		errs.Write(append(line, '\n'))
	}
	after := ""
	for {
		page, err := b.batches.BatchJobs(ctx, gb.ID, true, after, batchResultsPage)
		if err != nil {
			return nil, nil, err
		}
		for i := range page {
			job := &page[i]
			line := gin.H{"id": "batch_req_" + job.ID, "custom_id": job.CustomID, "response": nil, "error": nil}
			target := &errs
			switch {
			case job.Status == jobs.StatusCompleted:
				completion, err := chatCompletionOf(job, attrs.Models[job.CustomID])
				if err != nil {
					// Its result is gone (retention): an error line.
					line["error"] = gin.H{"code": "result_unavailable", "message": fmt.Sprintf("the result of job %s is no longer kept", job.ID)}
					break
				}
				line["response"] = gin.H{"status_code": http.StatusOK, "request_id": job.ID, "body": completion}
				target = &out
			case job.ErrorCode == jobs.CodeCancelled:
				line["error"] = gin.H{"code": "batch_cancelled", "message": "This request was cancelled with its batch before it finished."}
			default:
				e := jobFailure(job)
				line["response"] = gin.H{"status_code": e.status, "request_id": job.ID, "body": openAIErrorBody(e)}
			}
			doc, err := json.Marshal(line)
			if err != nil {
				return nil, nil, err
			}
			target.Write(append(doc, '\n'))
		}
		if len(page) < batchResultsPage {
			return out.Bytes(), errs.Bytes(), nil
		}
		after = page[len(page)-1].ID
	}
}

// get handles GET /openai/v1/batches/{id}.
func (b openAIBatches) get(c *gin.Context) error {
	gb, attrs, err := b.visible(c)
	if err != nil {
		return err
	}
	view, err := b.render(c.Request.Context(), gb, attrs)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, view)
	return nil
}

// cancel handles POST /openai/v1/batches/{id}/cancel: the batch's jobs
// not finished are cancelled as POST /v1/batches/{id}/cancel does.
func (b openAIBatches) cancel(c *gin.Context) error {
	gb, attrs, err := b.visible(c)
	if err != nil {
		return err
	}
	if gb, err = b.ops.CancelBatch(c.Request.Context(), gb.ID); err != nil {
		return jobopsError(err)
	}
	view, err := b.render(c.Request.Context(), gb, attrs)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, view)
	return nil
}

// list handles GET /openai/v1/batches: the tenant's batches made here,
// newest first; ?limit= (1 to 100, default 20) and ?after=.
func (b openAIBatches) list(c *gin.Context) error {
	tenant, err := openAITenant(c)
	if err != nil {
		return err
	}
	if b.files == nil || b.ops == nil {
		return openAINoFileStore()
	}
	limit, err := openAIListLimit(c, 20, 100)
	if err != nil {
		return err
	}
	ctx := c.Request.Context()
	after := strings.TrimPrefix(c.Query("after"), openAIBatchPrefix)
	data := make([]*openAIBatch, 0, limit)
	more := false
	// A batch not recorded, or deleted with its jobs, is skipped: the
	// page is filled from the rows after it.
	for {
		objs, err := b.objects.ListOpenAIObjects(ctx, tenant, store.OpenAIBatch, after, limit+1)
		if err != nil {
			return err
		}
		for i := range objs {
			if len(data) == limit {
				more = true
				break
			}
			gb, attrs, err := b.loaded(ctx, &objs[i])
			if errors.Is(err, store.ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			view, err := b.render(ctx, gb, attrs)
			if err != nil {
				return err
			}
			data = append(data, view)
		}
		if more || len(objs) <= limit {
			break
		}
		after = objs[len(objs)-1].ID
	}
	answer := gin.H{"object": "list", "data": data, "has_more": more, "first_id": nil, "last_id": nil}
	if len(data) > 0 {
		answer["first_id"], answer["last_id"] = data[0].ID, data[len(data)-1].ID
	}
	c.JSON(http.StatusOK, answer)
	return nil
}

package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/ai-job-gateway/gateway/activities"
	"github.com/ai-job-gateway/gateway/app/jobops"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/providers"
)

// OpenAIAudioMaxFileBytes is the largest audio file the OpenAI-compatible
// transcriptions accept, OpenAI's own limit (docs/openai.md, Audio).
const OpenAIAudioMaxFileBytes = 25 << 20

// openAIAudioMaxBodyBytes bounds the whole form: the file and its fields.
const openAIAudioMaxBodyBytes = OpenAIAudioMaxFileBytes + 1<<20

// openAIAudioRouteLimit is the transcriptions route's limit in limitBody:
// none, its handler bounds the body to answer in OpenAI's shape.
const openAIAudioRouteLimit = 1<<63 - 1

// openAIAudioFormMemory is how much of a form is kept in memory; the rest
// of the file waits on disk until it is stored.
const openAIAudioFormMemory = 1 << 20

// openAIUploadLinkTTL is how long the job's link to its uploaded audio
// stays valid: long enough for a queued job, or a retry, to fetch it
// (docs/openai.md, Audio).
const openAIUploadLinkTTL = 24 * time.Hour

// whisperModel is OpenAI's transcription model name, taken as "auto".
const whisperModel = "whisper-1"

// blobUploads stores uploaded files and links jobs to them
// (blobstore.Store).
type blobUploads interface {
	FileLinks
	Put(ctx context.Context, key, contentType string, r io.Reader) (int64, error)
	Delete(ctx context.Context, key string) error
}

// uploadKey is where a job's uploaded audio is kept: among the job's result
// files, so that the job's deletion and retention remove it
// (docs/openai.md, Audio).
func uploadKey(jobID, filename string) string {
	return activities.ResultPrefix(jobID) + "upload" + safeExtension(filename)
}

// safeExtension is filename's extension when it is short and
// alphanumeric, lower-cased; "" otherwise.
func safeExtension(filename string) string {
	ext := strings.ToLower(filepath.Ext(filename))
	if len(ext) < 2 || len(ext) > 8 {
		return ""
	}
	for _, r := range ext[1:] {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') {
			return ""
		}
	}
	return ext
}

// audioRequest is the part of OpenAI's transcription or translation form
// the gateway reads; prompt and temperature are ignored (docs/openai.md,
// Audio).
type audioRequest struct {
	file           *multipart.FileHeader
	model          string
	provider       string
	language       string
	responseFormat string
	words          bool
	// translate asks for the transcript in English (audio/translations).
	translate bool
}

// transcriptions handles POST /openai/v1/audio/transcriptions: the
// uploaded file is stored under a new transcription job of the caller's
// tenant, which fetches it through a signed link; the answer waits for
// the job.
func (h openAIHandler) transcriptions(c *gin.Context) error { return h.audio(c, false) }

// translations handles POST /openai/v1/audio/translations as transcriptions,
// the job's transcript in English (options.translate_to_english;
// docs/openai.md, Audio).
func (h openAIHandler) translations(c *gin.Context) error { return h.audio(c, true) }

// audio makes the transcription job an audio form stands for, translated
// into English when translate, and answers with its transcript.
func (h openAIHandler) audio(c *gin.Context, translate bool) error {
	by, err := creatorOf(c)
	if err != nil {
		return err
	}
	if h.uploads == nil {
		return &openAIError{status: http.StatusServiceUnavailable, typ: openAIServerError, code: "uploads_unavailable",
			message: "this gateway has no file store configured, so it cannot take audio uploads; send the audio's URL to POST /v1/transcriptions instead (docs/openai.md, Audio)"}
	}
	received := time.Now()
	defer func() {
		// The server removes the form's files from its own request only,
		// which the middleware replaced.
		if form := c.Request.MultipartForm; form != nil {
			_ = form.RemoveAll()
		}
	}()
	req, err := h.parseAudioForm(c, translate)
	if err != nil {
		return err
	}
	svc, _ := jobs.ServiceOf(jobs.Transcriptions)
	jobID := uuid.Must(uuid.NewV7()).String()
	key := uploadKey(jobID, req.file.Filename)
	link, digest, err := h.storeUpload(c, key, req.file)
	if form := c.Request.MultipartForm; form != nil {
		_ = form.RemoveAll() // stored: the request's temporary copy is not waited on
	}
	if err != nil {
		return err
	}
	envelope, err := transcriptionJobBody(req, link)
	if err != nil {
		return err
	}
	submit, err := parseJobRequest(svc, envelope)
	if err != nil {
		h.dropUpload(c, key)
		return h.audioJobError(c, err)
	}
	submit.Requester = by
	submit.Body, submit.Received = audioRequestBody(req, digest), received
	submit.JobID = jobID
	job, err := h.ops.Submit(c.Request.Context(), *submit)
	if err != nil {
		// With an Idempotency-Key, a job refused as unavailable may have
		// been recorded after all, on this upload: it stays.
		if submit.IdempotencyKey == "" || !errors.Is(err, jobops.ErrUnavailable) {
			h.dropUpload(c, key)
		}
		return h.audioJobError(c, jobopsError(err))
	}
	if !strings.Contains(job.Input, key) {
		// An Idempotency-Key's repeat: the first job has its own upload.
		// (A job recorded under an earlier claim of the key, but on this
		// upload, keeps it.)
		h.dropUpload(c, key)
	}
	c.Header(JobIDHeader, job.ID)
	// A job was made: an SDK retrying this answer would make another
	// (the OpenAI SDKs honour this header; docs/openai.md).
	c.Header("X-Should-Retry", "false")
	h.metrics.JobCreated(string(svc.ID))
	job, err = h.await(c, job)
	if err != nil || c.Request.Context().Err() != nil {
		return err // the client is gone when err is nil: nobody reads the answer
	}
	switch job.Status {
	case jobs.StatusCompleted:
		return writeTranscription(c, job, req)
	case jobs.StatusFailed:
		return jobFailure(job)
	}
	return &openAIError{status: http.StatusGatewayTimeout, typ: openAIServerError, code: "job_still_running",
		message: fmt.Sprintf("the job %s is still %s after %s; its answer will be at GET %s/%s/result",
			job.ID, job.Status, openAIWait, svc.Endpoint(), job.ID)}
}

// uploadReadTimeout is how long an authenticated upload's body may take
// to arrive: 32 MiB at 2.3 Mbit/s, as other routes' 8 MiB in the
// server's 30 s (docs/openai.md).
const uploadReadTimeout = 2 * time.Minute

// allowUpload gives the request's body uploadReadTimeout to arrive.
func allowUpload(c *gin.Context) {
	_ = http.NewResponseController(c.Writer).SetReadDeadline(time.Now().Add(uploadReadTimeout))
}

// parseAudioForm reads and checks a transcription form, or a translation
// form when translate (which has no language and no timestamp
// granularities), its body bounded here so that an oversized one is
// answered in OpenAI's shape.
func (h openAIHandler) parseAudioForm(c *gin.Context, translate bool) (*audioRequest, error) {
	if c.Request.ContentLength > openAIAudioMaxBodyBytes {
		return nil, audioTooLarge()
	}
	c.Request.Body = &trackedBody{ReadCloser: http.MaxBytesReader(c.Writer, c.Request.Body, openAIAudioMaxBodyBytes)}
	allowUpload(c)
	if err := c.Request.ParseMultipartForm(openAIAudioFormMemory); err != nil {
		var maxErr *http.MaxBytesError
		var bodyErr *bodyReadError
		switch {
		case errors.As(err, &maxErr):
			return nil, audioTooLarge()
		case errors.As(err, &bodyErr):
			return nil, err
		}
		return nil, invalidParam("", "We could not parse the multipart form of your request: %v.", err)
	}
	if b, ok := c.Request.Body.(*trackedBody); ok {
		b.done = true // the form was read to its end
	}
	form := c.Request.MultipartForm
	value := func(name string) string {
		if v := form.Value[name]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	req := &audioRequest{model: value("model"), responseFormat: value("response_format"), translate: translate}
	var granularities []string
	if !translate {
		req.language = value("language")
		granularities = append(form.Value["timestamp_granularities[]"], form.Value["timestamp_granularities"]...)
	}
	files := form.File["file"]
	switch {
	case len(files) == 0:
		return nil, invalidParam("file", "Missing required parameter: 'file'.")
	case files[0].Size > OpenAIAudioMaxFileBytes:
		return nil, audioTooLarge()
	case req.model == "":
		return nil, invalidParam("model", "Missing required parameter: 'model'.")
	case value("stream") == "true":
		e := invalidParam("stream", "Unsupported value: 'stream': streaming is not offered by this gateway; leave it out (docs/openai.md).")
		e.code = "unsupported_value"
		return nil, e
	}
	req.file = files[0]
	if req.responseFormat == "" {
		req.responseFormat = "json"
	}
	switch req.responseFormat {
	case "json", "text", "srt", "vtt", "verbose_json":
	default:
		e := invalidParam("response_format", "Invalid value: '%s'. Supported values are: 'json', 'text', 'srt', 'verbose_json', and 'vtt'.", req.responseFormat)
		e.code = "invalid_value"
		return nil, e
	}
	for _, g := range granularities {
		switch g {
		case "word":
			req.words = true
		case "segment":
		default:
			e := invalidParam("timestamp_granularities", "Invalid value: '%s'. Supported values are: 'word' and 'segment'.", g)
			e.code = "invalid_value"
			return nil, e
		}
	}
	if len(granularities) > 0 && req.responseFormat != "verbose_json" {
		return nil, invalidParam("timestamp_granularities", "timestamp_granularities is only supported with response_format 'verbose_json'.")
	}
	switch capability := h.transcriptionsOf(req.model); {
	case req.model == autoModel || req.model == whisperModel:
	case capability != nil && translate && !capability.TranslatesToEnglish:
		e := invalidParam("model", "The provider '%s' does not translate into English (its transcriptions capability has no translates_to_english): send 'auto', '%s' or a provider that does (docs/openai.md, Audio).", req.model, whisperModel)
		e.code = "unsupported_value"
		return nil, e
	case capability != nil:
		req.provider = req.model
	default:
		e := invalidParam("model", "The model '%s' does not exist: send 'auto', '%s' or the id of a provider of transcriptions (docs/openai.md, Audio).", req.model, whisperModel)
		e.code = "model_not_found"
		return nil, e
	}
	return req, nil
}

// transcriptionsOf is the transcriptions capability of the catalog's
// provider of that id, nil when there is none.
func (h openAIHandler) transcriptionsOf(id string) *providers.Capability {
	if p, ok := h.catalog.Lookup(id); ok {
		return p.Services[jobs.Transcriptions]
	}
	return nil
}

func audioTooLarge() *openAIError {
	return &openAIError{status: http.StatusRequestEntityTooLarge, typ: openAIInvalidRequest, param: "file", code: "file_too_large",
		message: fmt.Sprintf("Maximum content size limit (%d) exceeded.", OpenAIAudioMaxFileBytes)}
}

// audioRequestBody stands for the request as sent, for its
// Idempotency-Key: the form's fields and the file's SHA-256 (the job's
// link differs with each request).
func audioRequestBody(req *audioRequest, digest string) []byte {
	body, _ := json.Marshal(map[string]any{"file_sha256": digest, "filename": req.file.Filename, "model": req.model,
		"language": req.language, "response_format": req.responseFormat, "words": req.words, "translate": req.translate})
	return body
}

// storeUpload puts the uploaded file under key and returns the job's
// signed link to it and the file's SHA-256, in hex.
func (h openAIHandler) storeUpload(c *gin.Context, key string, header *multipart.FileHeader) (link, digest string, err error) {
	file, err := header.Open()
	if err != nil {
		return "", "", fmt.Errorf("open the uploaded file: %w", err)
	}
	defer func() { _ = file.Close() }()
	contentType := header.Header.Get("Content-Type")
	if contentType == "application/octet-stream" {
		contentType = "" // sniffed by the store
	}
	ctx := c.Request.Context()
	hash := sha256.New()
	if _, err := h.uploads.Put(ctx, key, contentType, io.TeeReader(file, hash)); err != nil {
		return "", "", fmt.Errorf("store the uploaded file: %w", err)
	}
	link, err = h.uploads.SignedURL(ctx, key, openAIUploadLinkTTL)
	if err != nil {
		h.dropUpload(c, key)
		return "", "", fmt.Errorf("sign the link to the uploaded file: %w", err)
	}
	return link, hex.EncodeToString(hash.Sum(nil)), nil
}

// dropUpload removes the upload of a job that was not made.
func (h openAIHandler) dropUpload(c *gin.Context, key string) {
	if err := h.uploads.Delete(context.WithoutCancel(c.Request.Context()), key); err != nil {
		h.logger.Warn("uploaded file of a refused job not removed", "key", key, "error", err)
	}
}

// audioJobError is err, a refusal of the transcription job, as OpenAI
// answers it: what the job's input is refused for, the file is.
func (h openAIHandler) audioJobError(c *gin.Context, err error) error {
	e := asOpenAIError(c, h.logger, err)
	if e.param == "messages" { // the pointer named the job's input
		e.param = "file"
		e.message = strings.Replace(e.message, "'messages'", "'file'", 1)
	}
	return e
}

// transcriptionJobBody is the transcription create request (docs/api.md,
// Transcriptions) a transcription or translation form stands for:
// timestamps only when the answer shows them.
func transcriptionJobBody(req *audioRequest, link string) ([]byte, error) {
	inputType := "audio"
	if strings.HasPrefix(req.file.Header.Get("Content-Type"), "video/") {
		inputType = "video"
	}
	timestamps := req.responseFormat != "json" && req.responseFormat != "text"
	options := map[string]any{"timestamps": timestamps}
	switch req.responseFormat {
	case "srt", "vtt":
		options["format"] = req.responseFormat
	}
	if req.language != "" {
		options["language"] = req.language
	}
	if req.translate {
		options["translate_to_english"] = true
	}
	attributes := map[string]any{"input": map[string]any{"type": inputType, "url": link}, "options": options}
	if req.provider != "" {
		attributes["provider"] = req.provider
	}
	return json.Marshal(map[string]any{"data": map[string]any{"type": "transcription-job", "attributes": attributes}})
}

// verboseTranscription is OpenAI's verbose_json transcription.
type verboseTranscription struct {
	Task     string           `json:"task"`
	Language string           `json:"language"`
	Duration float64          `json:"duration"`
	Text     string           `json:"text"`
	Segments []verboseSegment `json:"segments"`
	Words    []verboseWord    `json:"words,omitempty"`
}

type verboseSegment struct {
	ID    int     `json:"id"`
	Start float64 `json:"start"`
	End   float64 `json:"end"`
	Text  string  `json:"text"`
}

type verboseWord struct {
	Word  string  `json:"word"`
	Start float64 `json:"start"`
	End   float64 `json:"end"`
}

// writeTranscription answers the completed job in the response_format
// asked for.
func writeTranscription(c *gin.Context, job *jobs.Record, req *audioRequest) error {
	var result jobs.TranscriptionResult
	if err := json.Unmarshal([]byte(job.Result), &result); err != nil {
		return fmt.Errorf("read the result of job %s: %w", job.ID, err)
	}
	text := transcriptText(result)
	switch req.responseFormat {
	case "text":
		c.Data(http.StatusOK, "text/plain; charset=utf-8", []byte(text))
	case "srt", "vtt":
		mediaType := jobs.MediaSRT
		if req.responseFormat == "vtt" {
			mediaType = jobs.MediaVTT
		}
		body, err := (&jobs.Transcription{}).Render(mediaType, []byte(job.Result))
		if err != nil {
			return fmt.Errorf("render the result of job %s: %w", job.ID, err)
		}
		c.Data(http.StatusOK, "text/plain; charset=utf-8", body)
	case "verbose_json":
		out := verboseTranscription{Task: "transcribe", Language: result.Language, Duration: result.Duration, Text: text,
			Segments: []verboseSegment{}}
		if req.translate {
			out.Task, out.Language = "translate", "english" // as OpenAI names it
		}
		for i, s := range result.Segments {
			out.Segments = append(out.Segments, verboseSegment{ID: i, Start: s.Start, End: s.End, Text: s.Text})
			if req.words {
				for _, w := range s.Words {
					out.Words = append(out.Words, verboseWord{Word: w.Text, Start: w.Start, End: w.End})
				}
			}
		}
		c.JSON(http.StatusOK, out)
	default:
		c.JSON(http.StatusOK, gin.H{"text": text})
	}
	return nil
}

// transcriptText is the whole transcript: the result's text, or its
// segments' joined.
func transcriptText(r jobs.TranscriptionResult) string {
	if r.Text != "" {
		return r.Text
	}
	texts := make([]string, 0, len(r.Segments))
	for _, s := range r.Segments {
		texts = append(texts, strings.TrimSpace(s.Text))
	}
	return strings.Join(texts, " ")
}

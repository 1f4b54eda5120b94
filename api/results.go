package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/ai-job-gateway/gateway/api/apierror"
	"github.com/ai-job-gateway/gateway/internal/jobs"
)

// Result content types.
const (
	mimeJSON = jobs.MediaJSON
	mimeSRT  = jobs.MediaSRT
	mimeVTT  = jobs.MediaVTT
	mimeText = jobs.MediaText
)

// resultsHandler serves jobs' results (docs/api.md, Results).
type resultsHandler struct {
	jobs  jobReader
	views jobViews
}

// get handles GET /v1/{resource}/{id}/result: the result object itself,
// or a rendering of it that options.format or Accept asks for.
func (h resultsHandler) get(svc jobs.Service) gin.HandlerFunc {
	return handle(func(c *gin.Context) error {
		job, err := visibleJob(c, h.jobs, svc)
		if err != nil {
			return err
		}
		switch job.Status {
		case jobs.StatusFailed:
			return apierror.New(http.StatusNotFound, apierror.CodeJobFailed, "job %s failed (%s): it has no result", job.ID, job.ErrorCode)
		case jobs.StatusCompleted:
		default:
			return apierror.New(http.StatusNotFound, apierror.CodeResultNotReady, "job %s is %s; its result is not ready yet", job.ID, job.Status)
		}
		expires, err := h.views.resultExpiry(c.Request.Context(), job, nil)
		if err != nil {
			return err
		}
		if !expires.IsZero() && h.views.expired(expires) {
			return apierror.New(http.StatusGone, apierror.CodeResultExpired, "the result of job %s expired at %s by its tenant's retention",
				job.ID, expires.Format(time.RFC3339))
		}
		spec, ok := jobs.ServiceOf(svc.ID)
		if !ok {
			return fmt.Errorf("no job spec for %s", svc.ID)
		}
		// The job was validated when accepted; what no longer decodes
		// keeps its zero value.
		recorded, _ := spec.Load(json.RawMessage(job.Input), json.RawMessage(job.Options))
		offered, preferred := recorded.ResultTypes()
		mediaType := negotiate(c.GetHeader("Accept"), offered, preferred)
		result := []byte(job.Result)
		if mediaType == mimeJSON {
			if result, err = h.views.linkResultFile(c.Request.Context(), job, result); err != nil {
				return err
			}
		}
		body, err := recorded.Render(mediaType, result)
		if err != nil {
			return err
		}
		c.Header("Vary", "Accept")
		c.Data(http.StatusOK, mediaType+"; charset=utf-8", body)
		return nil
	})
}

// negotiate picks the offered type Accept ranks highest; without a usable
// Accept the preferred type wins.
func negotiate(accept string, offered []string, preferred string) string {
	best, bestQ := "", 0.0
	for _, part := range strings.Split(accept, ",") {
		fields := strings.Split(strings.TrimSpace(part), ";")
		mediaType := strings.ToLower(strings.TrimSpace(fields[0]))
		q := 1.0
		for _, param := range fields[1:] {
			if v, ok := strings.CutPrefix(strings.TrimSpace(param), "q="); ok {
				_, _ = fmt.Sscanf(v, "%g", &q)
			}
		}
		if mediaType == "" || mediaType == "*/*" || strings.HasSuffix(mediaType, "/*") || q <= bestQ {
			continue
		}
		if slices.Contains(offered, mediaType) {
			best, bestQ = mediaType, q
		}
	}
	if best == "" {
		return preferred
	}
	return best
}

package api

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/ai-job-gateway/gateway/api/apierror"
	"github.com/ai-job-gateway/gateway/api/auth"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/store"
)

// jobFilterNames are the filter[…] query parameters of GET /v1/jobs.
var jobFilterNames = []string{"tenant", "user_id", "service", "provider", "status", "batch", "webhook", "error_code", "application",
	"custom_id", "created_from", "created_before"}

// jobLister lists jobs.
type jobLister interface {
	ListJobs(ctx context.Context, f store.JobFilter, offset, limit int) ([]jobs.Record, int64, error)
}

// jobListing serves GET /v1/jobs.
type jobListing struct {
	jobs  jobLister
	views jobViews
}

// list handles GET /v1/jobs: the jobs of every service, newest first,
// without input, options and result. A caller without admin:cross-tenant
// sees its own tenant only and may not name one; a caller with it sees
// every tenant unless it names one (or acts as one with
// X-Effective-Tenant-Id).
func (h jobListing) list(c *gin.Context) error {
	tenant, err := jobListTenant(c)
	if err != nil {
		return err
	}
	filter, err := parseJobFilter(c)
	if err != nil {
		return err
	}
	filter.Tenant = tenant
	page, err := parsePage(c)
	if err != nil {
		return err
	}
	offset := math.MaxInt // a page this far out is past the last one
	if page.Number-1 <= math.MaxInt/page.Size {
		offset = page.Offset()
	}
	records, total, err := h.jobs.ListJobs(c.Request.Context(), filter, offset, page.Size)
	if err != nil {
		return err
	}
	out := make([]jobs.Document, 0, len(records))
	memo := retentions{} // a page's jobs share a few tenants
	for i := range records {
		doc, err := h.views.resource(c.Request.Context(), &records[i], jobs.Listing, memo)
		if err != nil {
			return err
		}
		out = append(out, doc)
	}
	c.JSON(http.StatusOK, collection(c, out, page, total))
	return nil
}

// jobListTenant is the tenant a listing is confined to; "" means every
// tenant.
func jobListTenant(c *gin.Context) (string, error) {
	tenant, _, err := auth.EffectiveIdentity(c)
	if err != nil {
		return "", err
	}
	requested, named := c.GetQuery("filter[tenant]")
	caller := auth.CallerFrom(c)
	switch {
	case !caller.CrossTenant():
		if named {
			return "", apierror.Forbidden("query filter[tenant]: needs the %s scope; without it the listing shows the token's tenant", auth.ScopeCrossTenant)
		}
		if tenant == "" {
			return "", apierror.Forbidden("the token carries no tenant_id claim; it may list jobs only with the %s scope", auth.ScopeCrossTenant)
		}
		return tenant, nil
	case strings.TrimSpace(c.GetHeader(auth.HeaderEffectiveTenant)) != "":
		// Acting as a tenant shows what that tenant sees.
		if named && requested != tenant {
			return "", apierror.Forbidden("query filter[tenant]: acting as tenant %q (%s), the listing shows that tenant only", tenant, auth.HeaderEffectiveTenant)
		}
		return tenant, nil
	default:
		return requested, nil
	}
}

// parseJobFilter reads the filter[…] query parameters other than tenant:
// each at most once, not empty, service and status from their enums.
// Unknown filters are rejected rather than ignored, so a typo cannot pass
// for an empty result.
func parseJobFilter(c *gin.Context) (store.JobFilter, error) {
	var f store.JobFilter
	invalid := func(name, format string, args ...any) error {
		return apierror.New(http.StatusUnprocessableEntity, apierror.CodeValidation, "query %s: %s", name, fmt.Sprintf(format, args...))
	}
	query := c.Request.URL.Query()
	keys := make([]string, 0, len(query))
	for key := range query {
		keys = append(keys, key)
	}
	slices.Sort(keys) // the same request always names the same culprit
	for _, key := range keys {
		field, ok := strings.CutPrefix(key, "filter[")
		if !ok {
			continue
		}
		field, ok = strings.CutSuffix(field, "]")
		if !ok || !slices.Contains(jobFilterNames, field) {
			return f, invalid(key, "unknown filter; the filters are filter[%s]", strings.Join(jobFilterNames, "], filter["))
		}
		values := query[key]
		if len(values) > 1 {
			return f, invalid(key, "must be given once")
		}
		value := values[0]
		if value == "" {
			return f, invalid(key, "must not be empty")
		}
		if !utf8.ValidString(value) || strings.ContainsRune(value, 0) {
			return f, invalid(key, "must be UTF-8 text without NUL")
		}
		switch field {
		case "user_id":
			f.UserID = value
		case "service":
			if _, ok := jobs.LookupService(value); !ok {
				return f, invalid(key, "must be one of %s", serviceIDs())
			}
			f.Service = jobs.ServiceID(value)
		case "provider":
			f.Provider = value
		case "batch":
			f.Batch = strings.ToLower(value)
		case "status":
			status := jobs.Status(value)
			if !status.Valid() {
				return f, invalid(key, "must be one of %s", statusList())
			}
			f.Status = status
		case "error_code":
			// A code of docs/api.md, Job error codes; any other lists none.
			f.ErrorCode = value
		case "application":
			// The X-Application jobs were created with.
			if !auth.SlugPattern.MatchString(value) {
				return f, invalid(key, "must be an application name (pattern %s)", auth.SlugPattern)
			}
			f.Application = value
		case "custom_id":
			// The custom_id a batch item gave its job (docs/api.md, Batches).
			f.CustomID = value
		case "created_from", "created_before":
			at, err := time.Parse(time.RFC3339Nano, value)
			if err != nil {
				return f, invalid(key, "must be an RFC 3339 time, such as 2026-12-01T00:00:00Z")
			}
			if field == "created_from" {
				f.CreatedFrom = at
			} else {
				f.CreatedBefore = at
			}
		case "webhook":
			// Jobs with a given-up webhook event (docs/webhooks.md).
			if value != "failed" {
				return f, invalid(key, "must be failed")
			}
			f.WebhookFailed = true
		}
	}
	return f, nil
}

// statusList names the job statuses for an error message.
func statusList() string {
	var names []string
	for _, s := range jobs.Statuses() {
		names = append(names, string(s))
	}
	return strings.Join(names, ", ")
}

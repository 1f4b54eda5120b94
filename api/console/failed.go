package console

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/ai-job-gateway/gateway/internal/jobs"
)

// failedPageSize is how many failed jobs a page lists: the API's most
// (docs/api.md, Pagination).
const failedPageSize = 100

// maxRetries bounds the jobs one "retry selected" retries.
const maxRetries = failedPageSize

// failedGroup is the failed jobs of one error code on a page.
type failedGroup struct {
	Code string
	Jobs []jobDoc
}

// retryOutcome is the API's answer to one job's retry.
type retryOutcome struct {
	ID      string
	Status  int
	Message string
}

// OK reports whether the retry was accepted.
func (o retryOutcome) OK() bool { return o.Status == http.StatusAccepted }

// failedPage is templates/failed.html's data.
type failedPage struct {
	// Filters go to the API as filter[tenant], filter[service] and
	// filter[error_code]; an API without filter[error_code] has code
	// applied to the listed page alone (CodeOnPage).
	Filters    map[string]string
	CodeOnPage bool
	Services   []string
	Groups     []failedGroup
	Listed     int
	Total      int64
	Prev, Next string
	// Outcomes are the retries just asked for, one per job.
	Outcomes []retryOutcome
}

// failed serves GET /console/failed: GET /v1/jobs?filter[status]=failed,
// every tenant's for a caller with admin:cross-tenant, grouped by error
// code.
func (c *Console) failed(w http.ResponseWriter, r *http.Request, s *session) error {
	in := r.URL.Query()
	p := failedPage{Filters: map[string]string{}, Services: serviceIDs()}
	query := url.Values{"filter[status]": {"failed"}, "page[size]": {strconv.Itoa(failedPageSize)}}
	kept := url.Values{}
	for name, filter := range map[string]string{"tenant": "tenant", "service": "service", "code": "error_code"} {
		if v := strings.TrimSpace(in.Get(name)); v != "" {
			p.Filters[name], kept[name] = v, []string{v}
			query.Set("filter["+filter+"]", v)
		}
	}
	if n := in.Get("page"); n != "" {
		query.Set("page[number]", n)
	}
	a, err := c.callAs(r, s, http.MethodGet, "/v1/jobs", query, nil)
	if err == nil && a.Status == http.StatusUnprocessableEntity && query.Has("filter[error_code]") &&
		strings.Contains(a.message(), "unknown filter") {
		// An API without filter[error_code]: the code filters the page.
		query.Del("filter[error_code]")
		p.CodeOnPage = true
		a, err = c.callAs(r, s, http.MethodGet, "/v1/jobs", query, nil)
	}
	if err != nil {
		return err
	}
	if a.Status != http.StatusOK {
		c.problem(w, a.Status, s, "The gateway refused", a.message())
		return nil
	}
	list, err := decodeList[jobDoc](a.Body)
	if err != nil {
		return err
	}
	p.Total, p.Listed = list.Meta.Total, len(list.Data)
	p.Prev, p.Next = list.pageLinks("failed", kept)
	p.Groups = groupByCode(list.Data, p.Filters["code"])
	c.render(w, http.StatusOK, "failed", layout{Title: "Failed jobs", Nav: "failed", Tenant: s.Tenant, CSRF: s.CSRFToken, Page: p})
	return nil
}

// groupByCode groups jobs by error code, codes in order; only code's
// when code is not "".
func groupByCode(list []jobDoc, code string) []failedGroup {
	byCode := map[string][]jobDoc{}
	for _, j := range list {
		c := ""
		if j.Attributes.Error != nil {
			c = j.Attributes.Error.Code
		}
		if code != "" && c != code {
			continue
		}
		byCode[c] = append(byCode[c], j)
	}
	var groups []failedGroup
	for _, c := range sortedKeys(byCode) {
		groups = append(groups, failedGroup{Code: c, Jobs: byCode[c]})
	}
	return groups
}

// retryFailed serves POST /console/failed/retry: POST
// /v1/jobs/{id}/retry for each selected job, showing each answer.
func (c *Console) retryFailed(w http.ResponseWriter, r *http.Request, s *session) error {
	var ids []string
	for _, id := range r.PostForm["job"] {
		if id = strings.TrimSpace(id); id != "" && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	switch {
	case len(ids) == 0:
		c.problem(w, http.StatusUnprocessableEntity, s, "Nothing retried", "Select the jobs to retry.")
		return nil
	case len(ids) > maxRetries:
		c.problem(w, http.StatusUnprocessableEntity, s, "Nothing retried", "Select at most "+strconv.Itoa(maxRetries)+" jobs at once.")
		return nil
	case !confirmed(r):
		c.problem(w, http.StatusUnprocessableEntity, s, "Nothing retried", "Tick the confirmation to retry the selected jobs.")
		return nil
	}
	p := failedPage{Filters: map[string]string{}}
	for _, id := range ids {
		a, err := c.callAs(r, s, http.MethodPost, "/v1/jobs/"+url.PathEscape(id)+"/retry", nil, nil)
		if err != nil {
			return err
		}
		o := retryOutcome{ID: id, Status: a.Status, Message: "retry started"}
		if !o.OK() {
			o.Message = a.message()
		}
		p.Outcomes = append(p.Outcomes, o)
	}
	c.render(w, http.StatusOK, "failed", layout{Title: "Retried jobs", Nav: "failed", Tenant: s.Tenant, CSRF: s.CSRFToken, Page: p})
	return nil
}

// serviceIDs are the services' ids, in the catalog's order.
func serviceIDs() []string {
	var ids []string
	for _, svc := range jobs.Services() {
		ids = append(ids, string(svc.ID))
	}
	return ids
}

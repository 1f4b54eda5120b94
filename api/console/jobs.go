package console

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/ai-job-gateway/gateway/internal/jobs"
)

// jobFilters are the console's filters of the jobs page, each passed to
// GET /v1/jobs as filter[name] (docs/api.md, Jobs).
var jobFilters = []string{"service", "status", "error_code", "provider", "application", "batch", "custom_id"}

// jobDays are the page's day filters, UTC days (YYYY-MM-DD), and the API's
// time filters they become: from the start of from, before the start of
// to.
var jobDays = map[string]string{"from": "created_from", "to": "created_before"}

// jobsPageSize is how many jobs a page lists.
const jobsPageSize = 25

// jobDoc is a job as the API shows it (docs/api.md, Jobs).
type jobDoc struct {
	ID         string `json:"id"`
	Type       string `json:"type"`
	Attributes struct {
		Tenant   string `json:"tenant"`
		UserID   string `json:"user_id"`
		Provider string `json:"provider"`
		Status   string `json:"status"`
		Progress *int   `json:"progress"`
		Error    *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
		RoutingHistory []jobs.RoutingInfo `json:"routing_history"`
		CreatedAt      time.Time          `json:"created_at"`
		ProcessedAt    *time.Time         `json:"processed_at"`
		CompletedAt    *time.Time         `json:"completed_at"`
		PolicyID       string             `json:"policy_id"`
		Input          json.RawMessage    `json:"input"`
		Options        json.RawMessage    `json:"options"`
		Result         json.RawMessage    `json:"result"`
		Usage          json.RawMessage    `json:"usage"`
		Waiting        json.RawMessage    `json:"waiting"`
	} `json:"attributes"`
	Meta struct {
		Client json.RawMessage `json:"client"`
	} `json:"meta"`
}

// Service is the job's service, from its type.
func (d *jobDoc) Service() string {
	for _, s := range jobs.Services() {
		if s.JobType == d.Type {
			return string(s.ID)
		}
	}
	return ""
}

// jobsPage is templates/jobs.html's data.
type jobsPage struct {
	Filters  map[string]string
	Services []string
	Statuses []string
	Jobs     []jobDoc
	Total    int64
	// Error is the API's refusal of the filters.
	Error      string
	Prev, Next string // console links; "" at the ends
	// Deleted is the id of a job just deleted from its page.
	Deleted string
}

// jobs serves GET /console/jobs: the jobs GET /v1/jobs lists for the
// session, newest first, with the page's filters.
func (c *Console) jobs(w http.ResponseWriter, r *http.Request, s *session) error {
	// The search box: a job's id opens its page.
	if id := strings.TrimSpace(r.URL.Query().Get("id")); id != "" {
		http.Redirect(w, r, Path+"jobs/"+url.PathEscape(id), http.StatusSeeOther)
		return nil
	}
	p := jobsPage{Filters: map[string]string{}, Deleted: notice(r, "deleted")}
	for _, svc := range jobs.Services() {
		p.Services = append(p.Services, string(svc.ID))
	}
	for _, st := range jobs.Statuses() {
		p.Statuses = append(p.Statuses, string(st))
	}
	in := r.URL.Query()
	query := url.Values{"page[size]": {strconv.Itoa(jobsPageSize)}}
	for _, name := range jobFilters {
		if v := in.Get(name); v != "" {
			p.Filters[name] = v
			query.Set("filter["+name+"]", v)
		}
	}
	for name, filter := range jobDays {
		if v := in.Get(name); v != "" {
			p.Filters[name] = v
			query.Set("filter["+filter+"]", v+"T00:00:00Z")
		}
	}
	if n := in.Get("page"); n != "" {
		query.Set("page[number]", n)
	}
	a, err := c.callAs(r, s, http.MethodGet, "/v1/jobs", query, nil)
	if err != nil {
		return err
	}
	if a.Status != http.StatusOK {
		p.Error = a.message()
	} else {
		list, err := decodeList[jobDoc](a.Body)
		if err != nil {
			return err
		}
		kept := url.Values{}
		for name, v := range p.Filters {
			kept.Set(name, v)
		}
		p.Jobs, p.Total = list.Data, list.Meta.Total
		p.Prev, p.Next = list.pageLinks("jobs", kept)
	}
	c.render(w, a.Status, "jobs", layout{Title: "Jobs", Nav: "jobs", Tenant: s.Tenant, CSRF: s.CSRFToken, Page: p})
	return nil
}

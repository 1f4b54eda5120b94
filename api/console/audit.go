package console

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// auditFilters are the audit page's filters, each passed to GET
// /v1/audit-events as filter[name] (docs/api.md, Audit log); from and
// to are times.
var auditFilters = []string{"tenant", "action", "actor", "target", "from", "to"}

// auditPageSize is how many events a page lists.
const auditPageSize = 50

// auditEventDoc is an event as GET /v1/audit-events shows it.
type auditEventDoc struct {
	ID         string `json:"id"`
	Attributes struct {
		At        time.Time       `json:"at"`
		Tenant    *string         `json:"tenant"`
		Actor     string          `json:"actor"`
		Action    string          `json:"action"`
		Target    string          `json:"target"`
		Changes   json.RawMessage `json:"changes"`
		RequestID *string         `json:"request_id"`
	} `json:"attributes"`
}

// auditPage is templates/audit.html's data.
type auditPage struct {
	Filters map[string]string
	Events  []auditEventDoc
	// First is the first page's link when this is a later one.
	First, Next string
}

// audit serves GET /console/audit: GET /v1/audit-events with the
// page's filters, newest first, by cursor (page[after]).
func (c *Console) audit(w http.ResponseWriter, r *http.Request, s *session) error {
	in := r.URL.Query()
	p := auditPage{Filters: map[string]string{}}
	query := url.Values{"page[size]": {strconv.Itoa(auditPageSize)}}
	kept := url.Values{}
	for _, name := range auditFilters {
		v := strings.TrimSpace(in.Get(name))
		if v == "" {
			continue
		}
		p.Filters[name], kept[name] = v, []string{v}
		if name == "from" || name == "to" {
			v = apiTime(v)
		}
		query.Set("filter["+name+"]", v)
	}
	if after := in.Get("after"); after != "" {
		query.Set("page[after]", after)
		p.First = Path + "audit?" + kept.Encode()
	}
	a, err := c.callAs(r, s, http.MethodGet, "/v1/audit-events", query, nil)
	if err != nil {
		return err
	}
	if a.Status != http.StatusOK {
		c.problem(w, a.Status, s, "The gateway refused", a.message())
		return nil
	}
	var list struct {
		Data  []auditEventDoc `json:"data"`
		Links struct {
			Next *string `json:"next"`
		} `json:"links"`
	}
	if err := json.Unmarshal(a.Body, &list); err != nil {
		return err
	}
	p.Events = list.Data
	if list.Links.Next != nil {
		if u, err := url.Parse(*list.Links.Next); err == nil && u.Query().Get("page[after]") != "" {
			next := url.Values{}
			for k, v := range kept {
				next[k] = v
			}
			next.Set("after", u.Query().Get("page[after]"))
			p.Next = Path + "audit?" + next.Encode()
		}
	}
	c.render(w, http.StatusOK, "audit", layout{Title: "Audit log", Nav: "audit", Tenant: s.Tenant, CSRF: s.CSRFToken, Page: p})
	return nil
}

// apiTime is a time the form took as the API takes it (RFC 3339): a
// browser's datetime-local value (no zone) is taken as UTC; anything
// else is passed as it is, for the API to judge.
func apiTime(v string) string {
	for _, layout := range []string{"2006-01-02T15:04", "2006-01-02T15:04:05"} {
		if t, err := time.Parse(layout, v); err == nil {
			return t.UTC().Format(time.RFC3339)
		}
	}
	return v
}

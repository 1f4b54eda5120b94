package console

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
)

// tenantsPageSize is how many tenants a page lists.
const tenantsPageSize = 50

// tenantDoc is a tenant as GET /v1/tenants shows it (docs/api.md,
// Tenants).
type tenantDoc struct {
	ID         string `json:"id"`
	Attributes struct {
		DefaultPolicyID *string `json:"default_policy_id"`
		Services        map[string]struct {
			Enabled bool `json:"enabled"`
		} `json:"services"`
		Providers map[string]struct {
			Enabled bool `json:"enabled"`
		} `json:"providers"`
		Retention struct {
			ResultsSeconds *int64 `json:"results_seconds"`
			JobsSeconds    *int64 `json:"jobs_seconds"`
			Effective      struct {
				ResultsSeconds *int64 `json:"results_seconds"`
				JobsSeconds    *int64 `json:"jobs_seconds"`
			} `json:"effective"`
		} `json:"retention"`
		FairnessWeight  float64         `json:"fairness_weight"`
		Budgets         json.RawMessage `json:"budgets"`
		NotificationURL *string         `json:"notification_url"`
		MaxInFlight     *int            `json:"max_in_flight"`
	} `json:"attributes"`
}

// tenantsPage is templates/tenants.html's data.
type tenantsPage struct {
	Tenants    []tenantDoc
	Total      int64
	Prev, Next string
}

// tenants serves GET /console/tenants: GET /v1/tenants, a page at a time.
func (c *Console) tenants(w http.ResponseWriter, r *http.Request, s *session) error {
	query := url.Values{"page[size]": {strconv.Itoa(tenantsPageSize)}}
	if n := r.URL.Query().Get("page"); n != "" {
		query.Set("page[number]", n)
	}
	a, err := c.callAs(r, s, http.MethodGet, "/v1/tenants", query, nil)
	if err != nil {
		return err
	}
	if a.Status != http.StatusOK {
		c.problem(w, a.Status, s, "The gateway refused", a.message())
		return nil
	}
	list, err := decodeList[tenantDoc](a.Body)
	if err != nil {
		return err
	}
	p := tenantsPage{Tenants: list.Data, Total: list.Meta.Total}
	p.Prev, p.Next = list.pageLinks("tenants", nil)
	c.render(w, http.StatusOK, "tenants", layout{Title: "Tenants", Nav: "tenants", Tenant: s.Tenant, CSRF: s.CSRFToken, Page: p})
	return nil
}

// tenant serves GET /console/tenants/{slug}: GET /v1/tenants/{slug},
// read only.
func (c *Console) tenant(w http.ResponseWriter, r *http.Request, s *session) error {
	slug := r.PathValue("slug")
	a, err := c.callAs(r, s, http.MethodGet, "/v1/tenants/"+url.PathEscape(slug), nil, nil)
	if err != nil {
		return err
	}
	if a.Status != http.StatusOK {
		c.problem(w, a.Status, s, "The gateway refused", a.message())
		return nil
	}
	doc, err := decodeData[tenantDoc](a.Body)
	if err != nil {
		return err
	}
	c.render(w, http.StatusOK, "tenant", layout{Title: "Tenant " + doc.ID, Nav: "tenants", Tenant: s.Tenant, CSRF: s.CSRFToken, Page: doc})
	return nil
}

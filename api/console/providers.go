package console

import (
	"net/http"
	"net/url"
	"slices"
	"time"
)

// breakerStates are the states an operator may force a breaker to
// (docs/api.md, Service and provider status).
var breakerStates = []string{"open", "closed", "auto"}

// breakerHealthDoc is a service's circuit breaker on a provider as the
// API shows it (docs/api.md, Service and provider status).
type breakerHealthDoc struct {
	State               string     `json:"state"`
	Since               *time.Time `json:"since"`
	FailureRate         float64    `json:"failure_rate"`
	CallsInWindow       int        `json:"calls_in_window"`
	ConsecutiveFailures int        `json:"consecutive_failures"`
	Opens               int        `json:"opens"`
	NextProbeAt         *time.Time `json:"next_probe_at"`
	Forced              string     `json:"forced"`
	ForcedBy            string     `json:"forced_by"`
	ForcedAt            *time.Time `json:"forced_at"`
	Enabled             bool       `json:"enabled"`
}

// FailurePercent is the failure rate in percent.
func (h *breakerHealthDoc) FailurePercent() float64 { return h.FailureRate * 100 }

// providerDoc is a provider as GET /v1/providers shows it.
type providerDoc struct {
	ID         string `json:"id"`
	Attributes struct {
		Name         string `json:"name"`
		Status       string `json:"status"`
		StatusReason string `json:"status_reason"`
		Services     map[string]struct {
			Status string            `json:"status"`
			Health *breakerHealthDoc `json:"health"`
		} `json:"services"`
	} `json:"attributes"`
}

// providerRow is a provider on the page, its services in order.
type providerRow struct {
	ID, Name, Status, StatusReason string
	Services                       []providerServiceRow
}

type providerServiceRow struct {
	ID, Status string
	Health     *breakerHealthDoc
}

// providersPage is templates/providers.html's data.
type providersPage struct {
	Providers []providerRow
	States    []string
	// Forced names the breaker just forced ("alpha/translations").
	Forced string
}

// providers serves GET /console/providers: each provider of GET
// /v1/providers with each service's breaker, and a form to force it.
func (c *Console) providers(w http.ResponseWriter, r *http.Request, s *session) error {
	a, err := c.callAs(r, s, http.MethodGet, "/v1/providers", nil, nil)
	if err != nil {
		return err
	}
	if a.Status != http.StatusOK {
		c.problem(w, a.Status, s, "The gateway refused", a.message())
		return nil
	}
	list, err := decodeList[providerDoc](a.Body)
	if err != nil {
		return err
	}
	p := providersPage{States: breakerStates, Forced: notice(r, "forced")}
	for _, d := range list.Data {
		row := providerRow{ID: d.ID, Name: d.Attributes.Name, Status: d.Attributes.Status, StatusReason: d.Attributes.StatusReason}
		for _, id := range sortedKeys(d.Attributes.Services) {
			svc := d.Attributes.Services[id]
			row.Services = append(row.Services, providerServiceRow{ID: id, Status: svc.Status, Health: svc.Health})
		}
		p.Providers = append(p.Providers, row)
	}
	c.render(w, http.StatusOK, "providers", layout{Title: "Providers", Nav: "providers", Tenant: s.Tenant, CSRF: s.CSRFToken, Page: p})
	return nil
}

// forceBreaker serves POST /console/providers/{id}/services/{service}/breaker:
// PUT /v1/providers/{id}/services/{service}/breaker with the form's
// state, once the form's confirmation is ticked.
func (c *Console) forceBreaker(w http.ResponseWriter, r *http.Request, s *session) error {
	id, service, state := r.PathValue("id"), r.PathValue("service"), r.PostFormValue("state")
	if !slices.Contains(breakerStates, state) {
		c.problem(w, http.StatusUnprocessableEntity, s, "Not forced", "Choose open, closed or auto.")
		return nil
	}
	if !confirmed(r) {
		c.problem(w, http.StatusUnprocessableEntity, s, "Not forced", "Tick the confirmation to force the breaker of "+id+"/"+service+".")
		return nil
	}
	body := map[string]any{"data": map[string]any{"type": "circuit_breaker", "attributes": map[string]any{"state": state}}}
	a, err := c.callAs(r, s, http.MethodPut, "/v1/providers/"+url.PathEscape(id)+"/services/"+url.PathEscape(service)+"/breaker", nil, body)
	if err != nil {
		return err
	}
	if a.Status != http.StatusOK {
		c.problem(w, a.Status, s, "The gateway refused", a.message())
		return nil
	}
	http.Redirect(w, r, Path+"providers?"+url.Values{"forced": {id + "/" + service}}.Encode(), http.StatusSeeOther)
	return nil
}

// confirmed reports whether a write's form has its confirmation ticked.
func confirmed(r *http.Request) bool { return r.PostFormValue("confirm") == "yes" }

// sortedKeys is m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

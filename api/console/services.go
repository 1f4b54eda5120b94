package console

import (
	"net/http"
	"net/url"
	"slices"
)

// serviceStatuses are the statuses PATCH /v1/services/{id} takes
// (docs/api.md, Service and provider status).
var serviceStatuses = []string{"active", "deprecated", "disabled"}

// serviceDoc is a service as GET /v1/services shows it.
type serviceDoc struct {
	ID         string `json:"id"`
	Attributes struct {
		Name        string `json:"name"`
		Description string `json:"description"`
		Endpoint    string `json:"endpoint"`
		Status      string `json:"status"`
	} `json:"attributes"`
}

// servicesPage is templates/services.html's data.
type servicesPage struct {
	Services []serviceDoc
	Statuses []string
	// Updated names the service just set.
	Updated string
}

// services serves GET /console/services: GET /v1/services with a form
// per service to set its status.
func (c *Console) services(w http.ResponseWriter, r *http.Request, s *session) error {
	a, err := c.callAs(r, s, http.MethodGet, "/v1/services", nil, nil)
	if err != nil {
		return err
	}
	if a.Status != http.StatusOK {
		c.problem(w, a.Status, s, "The gateway refused", a.message())
		return nil
	}
	list, err := decodeList[serviceDoc](a.Body)
	if err != nil {
		return err
	}
	p := servicesPage{Services: list.Data, Statuses: serviceStatuses, Updated: notice(r, "updated")}
	c.render(w, http.StatusOK, "services", layout{Title: "Services", Nav: "services", Tenant: s.Tenant, CSRF: s.CSRFToken, Page: p})
	return nil
}

// setServiceStatus serves POST /console/services/{id}: PATCH
// /v1/services/{id} with the form's status, once confirmed.
func (c *Console) setServiceStatus(w http.ResponseWriter, r *http.Request, s *session) error {
	id, status := r.PathValue("id"), r.PostFormValue("status")
	if !slices.Contains(serviceStatuses, status) {
		c.problem(w, http.StatusUnprocessableEntity, s, "Not changed", "Choose active, deprecated or disabled.")
		return nil
	}
	if !confirmed(r) {
		c.problem(w, http.StatusUnprocessableEntity, s, "Not changed", "Tick the confirmation to set the status of "+id+".")
		return nil
	}
	body := map[string]any{"data": map[string]any{"id": id, "type": "service", "attributes": map[string]any{"status": status}}}
	a, err := c.callAs(r, s, http.MethodPatch, "/v1/services/"+url.PathEscape(id), nil, body)
	if err != nil {
		return err
	}
	if a.Status != http.StatusOK {
		c.problem(w, a.Status, s, "The gateway refused", a.message())
		return nil
	}
	http.Redirect(w, r, Path+"services?"+url.Values{"updated": {id}}.Encode(), http.StatusSeeOther)
	return nil
}

package console

import (
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/ai-job-gateway/gateway/internal/jobs"
)

// jobPage is templates/job.html's data.
type jobPage struct {
	Job     jobDoc
	Service string
}

// job serves GET /console/jobs/{id}: the job as GET /v1/{resource}/{id}
// shows it, tried under the ?service= the jobs page links with first,
// then under each other service (a person may read some services only).
func (c *Console) job(w http.ResponseWriter, r *http.Request, s *session) error {
	id := r.PathValue("id")
	services := jobs.Services()
	if hint, ok := jobs.LookupService(r.URL.Query().Get("service")); ok {
		services = append([]jobs.Service{hint}, services...)
	}
	tried := map[jobs.ServiceID]bool{}
	for _, svc := range services {
		if tried[svc.ID] {
			continue
		}
		tried[svc.ID] = true
		a, err := c.callAs(r, s, http.MethodGet, svc.Endpoint()+"/"+url.PathEscape(id), nil, nil)
		if err != nil {
			return err
		}
		switch a.Status {
		case http.StatusOK:
			var doc struct {
				Data jobDoc `json:"data"`
			}
			if err := json.Unmarshal(a.Body, &doc); err != nil {
				return err
			}
			c.render(w, http.StatusOK, "job", layout{Title: "Job " + doc.Data.ID, Nav: "jobs", Tenant: s.Tenant, CSRF: s.CSRFToken,
				Page: jobPage{Job: doc.Data, Service: string(svc.ID)}})
			return nil
		case http.StatusGone:
			c.problem(w, http.StatusGone, s, "Job deleted", a.message())
			return nil
		case http.StatusNotFound, http.StatusForbidden:
			// Not a job of this service (or of this tenant), or a
			// service the session may not read: the next one.
			continue
		default:
			c.problem(w, a.Status, s, "The gateway refused", a.message())
			return nil
		}
	}
	c.problem(w, http.StatusNotFound, s, "No such job", "There is no job "+id+" that this session may read.")
	return nil
}

package console

import (
	"net/http"
	"net/url"

	"github.com/ai-job-gateway/gateway/internal/jobs"
)

// jobPage is templates/job.html's data.
type jobPage struct {
	Job     jobDoc
	Service string
	// Actions are the confirmed actions the job's status allows.
	Actions []jobAction
	// Deliveries are the job's webhook attempts, oldest first;
	// DeliveriesError is the API's refusal to list them.
	Deliveries      []delivery
	DeliveriesError string
	// Resent is the number of events a resend just sent again ("" when
	// the page does not follow one).
	Resent string
	// DownloadURL is the result's download link; TemporalURL the job's
	// workflow in the Temporal UI. "" for none.
	DownloadURL, TemporalURL string
	// EventPrefix is the service's event names' prefix, for the live
	// status of a job not yet ended (assets/live.js).
	EventPrefix string
}

// job serves GET /console/jobs/{id}: the job as GET /v1/{resource}/{id}
// shows it, with its webhook attempts and actions.
func (c *Console) job(w http.ResponseWriter, r *http.Request, s *session) error {
	doc, svc, ok, err := c.findJob(w, r, s, r.PathValue("id"), r.URL.Query().Get("service"))
	if err != nil || !ok {
		return err
	}
	p := jobPage{Job: doc, Service: string(svc.ID), EventPrefix: svc.EventPrefix}
	if err := c.jobExtras(r, s, svc, &p); err != nil {
		return err
	}
	c.render(w, http.StatusOK, "job", layout{Title: "Job " + doc.ID, Nav: "jobs", Tenant: s.Tenant, CSRF: s.CSRFToken, Page: p})
	return nil
}

// findJob reads job id as GET /v1/{resource}/{id} shows it, tried under
// the service hint (the jobs page links with it) first, then under each
// other service (a person may read some services only). When there is no
// such job the session may read, it renders the problem and says !ok.
func (c *Console) findJob(w http.ResponseWriter, r *http.Request, s *session, id, hint string) (jobDoc, jobs.Service, bool, error) {
	services := jobs.Services()
	if svc, ok := jobs.LookupService(hint); ok {
		services = append([]jobs.Service{svc}, services...)
	}
	tried := map[jobs.ServiceID]bool{}
	for _, svc := range services {
		if tried[svc.ID] {
			continue
		}
		tried[svc.ID] = true
		a, err := c.callAs(r, s, http.MethodGet, svc.Endpoint()+"/"+url.PathEscape(id), nil, nil)
		if err != nil {
			return jobDoc{}, svc, false, err
		}
		switch a.Status {
		case http.StatusOK:
			doc, err := decodeData[jobDoc](a.Body)
			if err != nil {
				return jobDoc{}, svc, false, err
			}
			return doc, svc, true, nil
		case http.StatusGone:
			c.problem(w, http.StatusGone, s, "Job deleted", a.message())
			return jobDoc{}, svc, false, nil
		case http.StatusNotFound, http.StatusForbidden:
			// Not a job of this service (or of this tenant), or a
			// service the session may not read: the next one.
			continue
		default:
			c.problem(w, a.Status, s, "The gateway refused", a.message())
			return jobDoc{}, svc, false, nil
		}
	}
	c.problem(w, http.StatusNotFound, s, "No such job", "There is no job "+id+" that this session may read.")
	return jobDoc{}, jobs.Service{}, false, nil
}

package console

import (
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/workflows"
)

// What a job page does besides showing the job (docs/console.md, Job
// actions): its webhook attempts with a resend, cancel, retry and delete
// each after a confirmation, its download link and its workflow in the
// Temporal UI.

// resendWait bounds how long a resend waits for its first new attempt
// before the job page is shown again.
const resendWait = 3 * time.Second

// delivery is a webhook delivery attempt as GET
// /v1/{resource}/{id}/webhook-deliveries shows it (docs/webhooks.md,
// Delivery log).
type delivery struct {
	ID         string `json:"id"`
	Attributes struct {
		Event       string    `json:"event"`
		MessageID   string    `json:"message_id"`
		Attempt     int       `json:"attempt"`
		AttemptedAt time.Time `json:"attempted_at"`
		StatusCode  int       `json:"status_code"`
		Error       string    `json:"error"`
		DurationMS  int64     `json:"duration_ms"`
		Trigger     string    `json:"trigger"`
	} `json:"attributes"`
}

// jobAction is one of the confirmed actions on a job.
type jobAction struct {
	// Name is the action's path segment.
	Name string
	// Method and suffix make the API's route: method
	// {resource}/{id}{suffix}.
	Method, suffix          string
	Title, Question, Button string
}

// jobActions are the job page's confirmed actions (docs/api.md, Cancel
// and idempotency, Retrying a failed job, Deleting a job).
var jobActions = []jobAction{
	{Name: "cancel", Method: http.MethodPost, suffix: "/cancel", Title: "Cancel job", Button: "Cancel the job",
		Question: "The job stops where it is and ends failed with CANCELLED. A provider already working on it may still charge for it."},
	{Name: "retry", Method: http.MethodPost, suffix: "/retry", Title: "Retry job", Button: "Retry the job",
		Question: "The failed job runs again from the start, under the same id, and may be charged again."},
	{Name: "delete", Method: http.MethodDelete, suffix: "", Title: "Delete job", Button: "Delete the job",
		Question: "The job, its input and its result are erased for good; its id answers 410 from now on. This cannot be undone."},
}

// confirmPage is templates/job-confirm.html's data.
type confirmPage struct {
	Job     jobDoc
	Service string
	Action  jobAction
}

// jobActionRoutes registers the job page's actions on mux, with their
// template.
func (c *Console) jobActionRoutes(mux *http.ServeMux) error {
	t, err := template.New("layout.html").Funcs(templateFuncs).ParseFS(templateFiles, "templates/layout.html", "templates/job-confirm.html")
	if err != nil {
		return fmt.Errorf("console: template job-confirm: %w", err)
	}
	c.pages["job-confirm"] = t
	for _, a := range jobActions {
		mux.HandleFunc("GET "+Path+"jobs/{id}/"+a.Name, c.signedIn(c.confirmJobAction(a)))
		mux.HandleFunc("POST "+Path+"jobs/{id}/"+a.Name, c.signedIn(c.doJobAction(a)))
	}
	mux.HandleFunc("POST "+Path+"jobs/{id}/webhooks/resend", c.signedIn(c.resendWebhooks))
	return nil
}

// jobExtras fills what the job page shows besides the job: its webhook
// attempts, download link and workflow link.
func (c *Console) jobExtras(r *http.Request, s *session, svc jobs.Service, p *jobPage) error {
	p.Actions = jobActionsFor(p.Job.Attributes.Status)
	var result struct {
		DownloadURL string `json:"download_url"`
	}
	if len(p.Job.Attributes.Result) > 0 && json.Unmarshal(p.Job.Attributes.Result, &result) == nil {
		p.DownloadURL = result.DownloadURL
	}
	if c.cfg.TemporalUIURL != "" {
		p.TemporalURL = c.cfg.TemporalUIURL + "/" + url.PathEscape(workflows.JobWorkflowID(p.Job.ID))
	}
	list, status, message, err := c.deliveries(r, s, svc, p.Job.ID)
	if err != nil {
		return err
	}
	if status != http.StatusOK {
		p.DeliveriesError = message
	}
	p.Deliveries = list
	p.Resent = notice(r, "resent")
	return nil
}

// jobActionsFor are the actions a job of status may take.
func jobActionsFor(status string) []jobAction {
	var out []jobAction
	for _, a := range jobActions {
		switch a.Name {
		case "cancel":
			if status != string(jobs.StatusPending) && status != string(jobs.StatusProcessing) {
				continue
			}
		case "retry":
			if status != string(jobs.StatusFailed) {
				continue
			}
		}
		out = append(out, a)
	}
	return out
}

// deliveries reads the job's webhook attempts, oldest first; a refusal
// comes back as its status and message.
func (c *Console) deliveries(r *http.Request, s *session, svc jobs.Service, id string) ([]delivery, int, string, error) {
	a, err := c.callAs(r, s, http.MethodGet, svc.Endpoint()+"/"+url.PathEscape(id)+"/webhook-deliveries", nil, nil)
	if err != nil {
		return nil, 0, "", err
	}
	if a.Status != http.StatusOK {
		return nil, a.Status, a.message(), nil
	}
	doc, err := decodeData[[]delivery](a.Body)
	if err != nil {
		return nil, 0, "", err
	}
	return doc, http.StatusOK, "", nil
}

// formService is the service a job action's form names (the job page
// sends it), or the job's found by asking each service.
func (c *Console) formService(w http.ResponseWriter, r *http.Request, s *session) (jobDoc, jobs.Service, bool, error) {
	hint := r.URL.Query().Get("service")
	if r.Method == http.MethodPost {
		hint = r.PostFormValue("service")
	}
	return c.findJob(w, r, s, r.PathValue("id"), hint)
}

// confirmJobAction serves GET /console/jobs/{id}/{action}: what the
// action does, and a form that does it.
func (c *Console) confirmJobAction(a jobAction) page {
	return func(w http.ResponseWriter, r *http.Request, s *session) error {
		doc, svc, ok, err := c.formService(w, r, s)
		if err != nil || !ok {
			return err
		}
		c.render(w, http.StatusOK, "job-confirm", layout{Title: a.Title + " " + doc.ID, Nav: "jobs", Tenant: s.Tenant, CSRF: s.CSRFToken,
			Page: confirmPage{Job: doc, Service: string(svc.ID), Action: a}})
		return nil
	}
}

// doJobAction serves POST /console/jobs/{id}/{action}: the API's route
// of the action, then the job page (the jobs after a delete), or the
// API's refusal.
func (c *Console) doJobAction(a jobAction) page {
	return func(w http.ResponseWriter, r *http.Request, s *session) error {
		doc, svc, ok, err := c.formService(w, r, s)
		if err != nil || !ok {
			return err
		}
		ans, err := c.callAs(r, s, a.Method, svc.Endpoint()+"/"+url.PathEscape(doc.ID)+a.suffix, nil, nil)
		if err != nil {
			return err
		}
		if ans.Status != http.StatusAccepted && ans.Status != http.StatusOK {
			c.problem(w, ans.Status, s, a.Title+": refused", ans.message())
			return nil
		}
		if a.Name == "delete" {
			http.Redirect(w, r, Path+"jobs?deleted="+url.QueryEscape(doc.ID), http.StatusSeeOther)
			return nil
		}
		http.Redirect(w, r, jobLink(doc.ID, svc), http.StatusSeeOther)
		return nil
	}
}

// resendWebhooks serves POST /console/jobs/{id}/webhooks/resend: the
// API's resend, then the job page once the resend's first attempt is in
// the delivery log (or after resendWait).
func (c *Console) resendWebhooks(w http.ResponseWriter, r *http.Request, s *session) error {
	doc, svc, ok, err := c.formService(w, r, s)
	if err != nil || !ok {
		return err
	}
	before, _, _, err := c.deliveries(r, s, svc, doc.ID)
	if err != nil {
		return err
	}
	ans, err := c.callAs(r, s, http.MethodPost, svc.Endpoint()+"/"+url.PathEscape(doc.ID)+"/webhooks/resend", nil, nil)
	if err != nil {
		return err
	}
	if ans.Status != http.StatusAccepted {
		c.problem(w, ans.Status, s, "Resend refused", ans.message())
		return nil
	}
	var resend struct {
		Data struct {
			Attributes struct {
				Count int `json:"count"`
			} `json:"attributes"`
		} `json:"data"`
	}
	if err := json.Unmarshal(ans.Body, &resend); err != nil {
		return err
	}
	count := resend.Data.Attributes.Count
	// The resend runs as a workflow (docs/webhooks.md, Resending a job's
	// events): wait a little for its first attempt.
	deadline := time.Now().Add(resendWait)
	for count > 0 && time.Now().Before(deadline) {
		after, _, _, err := c.deliveries(r, s, svc, doc.ID)
		if err != nil {
			return err
		}
		if len(after) > len(before) {
			break
		}
		select {
		case <-r.Context().Done():
			return r.Context().Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	http.Redirect(w, r, jobLink(doc.ID, svc)+"&resent="+strconv.Itoa(count), http.StatusSeeOther)
	return nil
}

// jobLink is the job page of id, with its service.
func jobLink(id string, svc jobs.Service) string {
	return Path + "jobs/" + url.PathEscape(id) + "?service=" + url.QueryEscape(string(svc.ID))
}

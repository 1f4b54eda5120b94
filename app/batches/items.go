package batches

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/ai-job-gateway/gateway/app/jobops"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/internal/strictjson"
)

// Codes of a batch refused as a whole (docs/api.md, Batches).
const (
	// CodeRefused: none of the batch's items is created.
	CodeRefused = "BATCH_REFUSED"
	// CodeFileUnreadable: a file batch's file cannot be read as a whole.
	CodeFileUnreadable = "BATCH_FILE_UNREADABLE"
)

// MaxCustomIDLength bounds an item's custom_id, in characters.
const MaxCustomIDLength = 64

// ScopeError refuses an item of a service its creator may not write.
type ScopeError struct{ Scope string }

func (e *ScopeError) Error() string { return fmt.Sprintf("the token lacks the scope %q", e.Scope) }

// ParseItem parses an item, custom_id left out, as the body {"data":
// item} of a create of its type (jobs.ParseCreateBody), by a creator who
// needs that service's write scope. Its refusals are those Refusals
// lists.
func ParseItem(mayWrite func(scope string) bool, item map[string]json.RawMessage) (*jobops.SubmitRequest, error) {
	typ, _, err := strictjson.String(item, "type", jobs.PtrData)
	if err != nil {
		return nil, err
	}
	svc, ok := serviceOfType(typ)
	if !ok {
		return nil, &jobs.RequestError{Pointer: jobs.PtrData + "/type", Code: jobs.RequestInvalid,
			Message: "must be the type of a job: " + jobTypes()}
	}
	scope := string(svc.ID) + ":write"
	if !mayWrite(scope) {
		return nil, &ScopeError{Scope: scope}
	}
	body, err := json.Marshal(map[string]any{"data": item})
	if err != nil {
		return nil, err
	}
	job, err := jobs.ParseCreateBody(svc, body)
	if err != nil {
		return nil, err
	}
	req := jobops.NewSubmitRequest(svc, job)
	req.Body = body
	return req, nil
}

// serviceOfType is the service whose jobs are of data.type typ.
func serviceOfType(typ string) (jobs.Service, bool) {
	for _, svc := range jobs.Services() {
		if svc.JobType == typ {
			return svc, true
		}
	}
	return jobs.Service{}, false
}

// jobTypes names the job types for an error message.
func jobTypes() string {
	var names []string
	for _, svc := range jobs.Services() {
		names = append(names, svc.JobType)
	}
	return strings.Join(names, ", ")
}

// Refusal is a refused item as its batch lists it: the status and error
// a single create of the item would have been answered with
// (docs/api.md, Batches).
type Refusal struct {
	Index    int    `json:"index"`
	CustomID string `json:"custom_id"`
	Status   int    `json:"status"`
	Error    Error  `json:"error"`
}

// Refusals lists the refused items, errs holding each item's refusal by
// index (nil for one admitted); an error that is no refusal (the store
// failed) is returned instead.
func Refusals(items []jobops.BatchItem, errs []error) ([]Refusal, error) {
	out := []Refusal{}
	for i, err := range errs {
		if err == nil {
			continue
		}
		status, refusal, ok := refusalOf(err)
		if !ok {
			return nil, err
		}
		out = append(out, Refusal{Index: i, CustomID: items[i].CustomID, Status: status, Error: refusal})
	}
	return out, nil
}

// refusalOf is the status and error of an item's refusal: by jobops (its
// own status and code), by the job model or the JSON checks (422), or
// for want of a scope (403).
func refusalOf(err error) (int, Error, bool) {
	var refusal *jobops.Error
	var reqErr *jobs.RequestError
	var jsonErr *strictjson.Error
	var scopeErr *ScopeError
	switch {
	case errors.As(err, &refusal) && refusal.Status() != 0:
		return refusal.Status(), Error{Code: refusal.Code(), Message: refusal.ClientMessage()}, true
	case errors.As(err, &reqErr):
		return http.StatusUnprocessableEntity, Error{Code: reqErr.Code, Message: reqErr.Error()}, true
	case errors.As(err, &jsonErr):
		return http.StatusUnprocessableEntity, Error{Code: jobs.RequestInvalid, Message: jsonErr.Error()}, true
	case errors.As(err, &scopeErr):
		return http.StatusForbidden, Error{Code: "INSUFFICIENT_SCOPE", Message: scopeErr.Error()}, true
	}
	return 0, Error{}, false
}

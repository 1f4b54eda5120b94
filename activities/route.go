package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/ai-job-gateway/gateway/policy"
	"github.com/ai-job-gateway/gateway/providers"
)

// RouteInput asks for the provider of one attempt of a job.
type RouteInput struct {
	JobID    string              `json:"job_id"`
	Service  providers.ServiceID `json:"service"`
	Tenant   string              `json:"tenant"`
	Input    json.RawMessage     `json:"input"`
	Options  json.RawMessage     `json:"options,omitempty"`
	Explicit string              `json:"explicit_provider,omitempty"`
	// Failed lists providers earlier attempts failed on.
	Failed  []string `json:"failed,omitempty"`
	Attempt int      `json:"attempt"`
}

// RouteOutput is the decision: a routing, or the error the job fails with
// when no provider is left.
type RouteOutput struct {
	Routing  policy.RoutingInfo `json:"routing"`
	Error    *JobError          `json:"error,omitempty"`
	WorkerID string             `json:"worker_id"`
}

// DecideRoute picks the provider for one attempt of a job.
func (a *Activities) DecideRoute(_ context.Context, in RouteInput) (RouteOutput, error) {
	needs, err := policy.RequirementsOf(in.Service, in.Input, in.Options)
	if err != nil {
		return RouteOutput{}, fmt.Errorf("job %s: read requirements: %w", in.JobID, err)
	}
	routing, err := policy.Decide(policy.Request{
		Needs:    needs,
		Catalog:  a.Providers.Catalog().Providers,
		Explicit: in.Explicit,
		Failed:   in.Failed,
		Attempt:  in.Attempt,
		Now:      time.Now().UTC(),
	})
	out := RouteOutput{Routing: routing, WorkerID: a.WorkerID}
	var noCandidate *policy.NoCandidateError
	if errors.As(err, &noCandidate) {
		out.Routing.ProviderEvaluations = noCandidate.Evaluations
		out.Error = &JobError{Code: noCandidate.Code, Message: noCandidate.Error()}
		return out, nil
	}
	return out, err
}

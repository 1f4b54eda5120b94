package workflows

import (
	"go.temporal.io/sdk/workflow"

	"github.com/ai-job-gateway/gateway/activities"
	"github.com/ai-job-gateway/gateway/internal/jobs"
)

// budgetChange names the GetVersion marker of reserving a job against
// its tenant's budgets before its provider is called (docs/api.md,
// Budgets). Only jobs whose tenant has budgets hold it.
const budgetChange = "budget-reservation"

var budgetSteps *activities.Budgets

// reserveBudget reserves the job's estimate, with its media's duration
// once probed; it returns BUDGET_EXCEEDED when a budget refuses it.
func (j *job) reserveBudget(ctx workflow.Context) (*jobs.Error, error) {
	if !j.in.Budgeted || j.version(ctx, budgetChange, 1) == workflow.DefaultVersion {
		return nil, nil
	}
	_, duration := j.mediaFacts()
	options := projectionOptions
	options.Summary = "reserve against the budgets"
	var out activities.BudgetOutput
	err := workflow.ExecuteLocalActivity(workflow.WithLocalActivityOptions(ctx, options), budgetSteps.ReserveBudget, activities.BudgetInput{
		JobID: j.in.JobID, Tenant: j.in.Tenant, Application: j.in.Application, Service: j.in.Service,
		Provider: j.in.Provider, Input: j.in.Input, MediaSeconds: duration,
	}).Get(ctx, &out)
	return out.Error, err
}

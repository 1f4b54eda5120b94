package main

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/ai-job-gateway/gateway/app/jobops"
	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/store"
	"github.com/ai-job-gateway/gateway/workflows"
)

// retentionDeleter is the job operations the retention sweep deletes
// expired jobs with, as DELETE does (docs/api.md, Retention). Its
// dispatcher starts no job: Delete does not start any.
func retentionDeleter(cfg config, st *store.Cache, tc client.Client, registry *providers.Registry, logger *slog.Logger) (*jobops.Service, error) {
	return jobops.New(jobops.Config{
		Jobs: st.Store.Jobs, Tenants: st, Statuses: st, Policies: st, Rates: st, Batches: st.Store.Batches,
		Catalog: registry.Catalog(), Temporal: tc, DataConverter: cfg.temporal.DataConverter, Logger: logger,
		Starts: jobops.NewDispatcher(jobops.DispatcherConfig{Store: st.Store.Jobs, Temporal: tc, Logger: logger}),
	})
}

// retentionSchedule is the schedule of the retention sweep: every
// RetentionEvery, a run skipped while the last one runs.
func retentionSchedule() (client.ScheduleSpec, *client.ScheduleWorkflowAction) {
	return client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: workflows.RetentionEvery}}},
		&client.ScheduleWorkflowAction{
			ID:        workflows.RetentionWorkflowID,
			Workflow:  workflows.RetentionWorkflowName,
			Args:      []any{workflows.RetentionInput{}},
			TaskQueue: workflows.TaskQueue,
		}
}

// ensureRetentionSchedule creates the retention sweep's schedule, or
// brings an existing one's spec, action and overlap policy up to date;
// every worker does at start. An error is returned for the worker to log:
// the sweep waits for the next start, jobs still run.
func ensureRetentionSchedule(ctx context.Context, tc client.Client) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	spec, action := retentionSchedule()
	schedules := tc.ScheduleClient()
	_, err := schedules.Create(ctx, client.ScheduleOptions{
		ID:      workflows.RetentionScheduleID,
		Spec:    spec,
		Action:  action,
		Overlap: enumspb.SCHEDULE_OVERLAP_POLICY_SKIP,
		Note:    "the gateway's retention sweep (docs/operations.md, Retention)",
	})
	if !errors.Is(err, temporal.ErrScheduleAlreadyRunning) {
		return err
	}
	return schedules.GetHandle(ctx, workflows.RetentionScheduleID).Update(ctx, client.ScheduleUpdateOptions{
		DoUpdate: func(in client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
			s := in.Description.Schedule
			s.Spec, s.Action = &spec, action
			if s.Policy == nil {
				s.Policy = &client.SchedulePolicies{}
			}
			s.Policy.Overlap = enumspb.SCHEDULE_OVERLAP_POLICY_SKIP
			return &client.ScheduleUpdate{Schedule: &s}, nil
		},
	})
}

package main

import (
	"flag"
	"fmt"
	"strconv"

	"go.temporal.io/sdk/worker"
)

// workerConcurrency is how much a worker runs at once: the Temporal SDK's
// slots and pollers (docs/operations.md, Sizing workers). Zero keeps the
// SDK's default.
type workerConcurrency struct {
	// Activities bounds regular activities: provider calls over a second,
	// media steps, webhooks.
	Activities int
	// LocalActivities bounds local activities: routing, projections and
	// short provider calls (a second or less).
	LocalActivities int
	// WorkflowTasks bounds workflow tasks; a short provider call holds its
	// job's workflow task while it runs.
	WorkflowTasks int
	// ActivityPollers and WorkflowTaskPollers are the long polls for
	// tasks that were not handed to the worker eagerly.
	ActivityPollers     int
	WorkflowTaskPollers int
}

// workerConcurrencyFlags are the flags of workerConcurrency: name, env,
// field and usage.
func (c *config) workerConcurrencyFlags() []struct {
	name, env string
	p         *int
	usage     string
} {
	w := &c.WorkerConcurrency
	return []struct {
		name, env string
		p         *int
		usage     string
	}{
		{"max-concurrent-activities", "GATEWAY_MAX_CONCURRENT_ACTIVITIES", &w.Activities,
			"activities this worker runs at once (provider calls over a second, media steps, webhooks); 0: the SDK's default, 1000"},
		{"max-concurrent-local-activities", "GATEWAY_MAX_CONCURRENT_LOCAL_ACTIVITIES", &w.LocalActivities,
			"local activities this worker runs at once (routing, projections, provider calls of a second or less); 0: the SDK's default, 1000"},
		{"max-concurrent-workflow-tasks", "GATEWAY_MAX_CONCURRENT_WORKFLOW_TASKS", &w.WorkflowTasks,
			"workflow tasks this worker runs at once; a short provider call holds one while it runs; 0: the SDK's default, 1000; not 1"},
		{"activity-pollers", "GATEWAY_ACTIVITY_POLLERS", &w.ActivityPollers,
			"long polls for activity tasks; 0: the SDK's default, 2"},
		{"workflow-task-pollers", "GATEWAY_WORKFLOW_TASK_POLLERS", &w.WorkflowTaskPollers,
			"long polls for workflow tasks; 0: the SDK's default, 2; not 1"},
	}
}

// registerWorkerConcurrencyFlags binds the worker's concurrency flags
// (dev and worker).
func (c *config) registerWorkerConcurrencyFlags(fs *flag.FlagSet) {
	for _, f := range c.workerConcurrencyFlags() {
		fs.IntVar(f.p, f.name, envOr(f.env, 0, strconv.Atoi, -1), f.usage+" (env "+f.env+")")
	}
}

// validateWorkerConcurrency: every value is 0 or more, and the workflow
// task settings are not 1, which the SDK refuses.
func (c *config) validateWorkerConcurrency() []string {
	var problems []string
	for _, f := range c.workerConcurrencyFlags() {
		notOne := f.p == &c.WorkerConcurrency.WorkflowTasks || f.p == &c.WorkerConcurrency.WorkflowTaskPollers
		switch {
		case *f.p < 0:
			problems = append(problems, fmt.Sprintf("--%s (%s) must be a whole number of at least 0 (0: the SDK's default)", f.name, f.env))
		case notOne && *f.p == 1:
			problems = append(problems, fmt.Sprintf("--%s (%s) cannot be 1 (the SDK alternates between the sticky and the shared queue): use 0 for the default or 2 and more", f.name, f.env))
		}
	}
	return problems
}

// workerOptions are the job worker's options: its identity, stop timeout
// and concurrency.
func workerOptions(cfg config, identity string) worker.Options {
	w := cfg.WorkerConcurrency
	return worker.Options{
		Identity:                                identity,
		WorkerStopTimeout:                       cfg.WorkerStopTimeout,
		MaxConcurrentActivityExecutionSize:      w.Activities,
		MaxConcurrentLocalActivityExecutionSize: w.LocalActivities,
		MaxConcurrentWorkflowTaskExecutionSize:  w.WorkflowTasks,
		MaxConcurrentActivityTaskPollers:        w.ActivityPollers,
		MaxConcurrentWorkflowTaskPollers:        w.WorkflowTaskPollers,
	}
}

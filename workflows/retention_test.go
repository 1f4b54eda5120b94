package workflows_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/ai-job-gateway/gateway/activities"
	"github.com/ai-job-gateway/gateway/workflows"
)

// retentionEnv is a test environment for RetentionWorkflow whose batches
// answer from batches (by activity name, in order) and that records the
// sweep's outcome.
func retentionEnv(t *testing.T, batches map[string][]activities.RetentionBatchResult, nows *[]time.Time, outcome *string) *testsuite.TestWorkflowEnvironment {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(workflows.RetentionWorkflow, workflow.RegisterOptions{Name: workflows.RetentionWorkflowName})
	answer := func(name string) func(context.Context, activities.RetentionBatch) (activities.RetentionBatchResult, error) {
		return func(_ context.Context, b activities.RetentionBatch) (activities.RetentionBatchResult, error) {
			*nows = append(*nows, b.Now)
			left := batches[name]
			if len(left) == 0 {
				return activities.RetentionBatchResult{}, nil
			}
			batches[name] = left[1:]
			if left[0].Selected < 0 {
				return activities.RetentionBatchResult{}, temporal.NewNonRetryableApplicationError("store away", "x", errors.New("store away"))
			}
			return left[0], nil
		}
	}
	env.OnActivity(acts.Retention.ExpireJobs, mock.Anything, mock.Anything).Return(answer("jobs"))
	env.OnActivity(acts.Retention.ExpireResults, mock.Anything, mock.Anything).Return(answer("results"))
	env.OnActivity(acts.Retention.RestartErasures, mock.Anything, mock.Anything).Return(answer("erasures"))
	env.OnActivity(acts.Retention.RecordRetentionSweep, mock.Anything, mock.Anything).Return(func(_ context.Context, o string) error {
		*outcome = o
		return nil
	})
	return env
}

func TestRetentionWorkflowRunsBatchesUntilNoneIsFull(t *testing.T) {
	t.Parallel()
	var nows []time.Time
	var outcome string
	env := retentionEnv(t, map[string][]activities.RetentionBatchResult{
		"jobs":     {{Selected: 500, Expired: 500}, {Selected: 500, Expired: 499}, {Selected: 3, Expired: 3}},
		"results":  {{Selected: 7, Expired: 6}},
		"erasures": {{Selected: 1, Expired: 1}},
	}, &nows, &outcome)
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	env.ExecuteWorkflow(workflows.RetentionWorkflow, workflows.RetentionInput{Now: at})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var counts workflows.RetentionCounts
	require.NoError(t, env.GetWorkflowResult(&counts))
	require.Equal(t, workflows.RetentionCounts{Jobs: 1002, Results: 6, Erasures: 1}, counts)
	require.Len(t, nows, 5, "three batches of jobs, one of results, one of erasures")
	for _, n := range nows {
		require.True(t, n.Equal(at), "every batch at the input's now")
	}
	require.Equal(t, "ok", outcome)
}

func TestRetentionWorkflowTakesItsStartAsNow(t *testing.T) {
	t.Parallel()
	var nows []time.Time
	var outcome string
	env := retentionEnv(t, map[string][]activities.RetentionBatchResult{}, &nows, &outcome)
	start := time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC)
	env.SetStartTime(start)
	env.ExecuteWorkflow(workflows.RetentionWorkflow, workflows.RetentionInput{})
	require.NoError(t, env.GetWorkflowError())
	require.Len(t, nows, 3)
	require.True(t, nows[0].Equal(start), "%s", nows[0])
}

func TestRetentionWorkflowFailsAndCountsIt(t *testing.T) {
	t.Parallel()
	var nows []time.Time
	var outcome string
	env := retentionEnv(t, map[string][]activities.RetentionBatchResult{"results": {{Selected: -1}}}, &nows, &outcome)
	env.ExecuteWorkflow(workflows.RetentionWorkflow, workflows.RetentionInput{Now: time.Now()})
	require.ErrorContains(t, env.GetWorkflowError(), "store away")
	require.Equal(t, "failed", outcome)
}

func TestRetentionWorkflowContinuesAsNewWhenHuge(t *testing.T) {
	t.Parallel()
	full := make([]activities.RetentionBatchResult, 250)
	for i := range full {
		full[i] = activities.RetentionBatchResult{Selected: 500, Expired: 500}
	}
	var nows []time.Time
	var outcome string
	env := retentionEnv(t, map[string][]activities.RetentionBatchResult{"jobs": full}, &nows, &outcome)
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	env.ExecuteWorkflow(workflows.RetentionWorkflow, workflows.RetentionInput{Now: at})
	var cont *workflow.ContinueAsNewError
	require.ErrorAs(t, env.GetWorkflowError(), &cont)
	require.Equal(t, workflows.RetentionWorkflowName, cont.WorkflowType.Name)
	require.Len(t, nows, 200)
	var next workflows.RetentionInput
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(cont.Input, &next))
	require.Equal(t, workflows.RetentionInput{Now: at, Counts: workflows.RetentionCounts{Jobs: 200 * 500}}, next, "the same now, and the counts so far")
	require.Empty(t, outcome, "counted when the last run ends")
}

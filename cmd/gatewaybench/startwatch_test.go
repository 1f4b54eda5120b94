package main

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/store"
	"github.com/ai-job-gateway/gateway/store/storetest"
)

func TestStartWatchAnswersOnceTheStartLeftTheOutbox(t *testing.T) {
	t.Parallel()
	st := storetest.SQLite(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	watch := newStartWatch(st)
	go watch.run(ctx)

	job := &jobs.Record{ID: uuid.NewString(), Service: jobs.LLMTasks, Tenant: "acme", UserID: "u", Status: jobs.StatusPending,
		Input: "{}", Options: "{}", CreatedAt: time.Now().UTC()}
	_, err := st.CreateJob(ctx, job, &store.JobStart{Input: "{}", NextAttemptAt: time.Now()})
	require.NoError(t, err)
	started := make(chan error, 1)
	go func() { started <- watch.await(ctx, job.ID) }()
	select {
	case <-started:
		t.Fatal("answered while the start is in the outbox")
	case <-time.After(5 * startPoll):
	}
	require.NoError(t, st.DeleteJobStarts(ctx, []string{job.ID}))
	select {
	case err := <-started:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("not answered once the start left the outbox")
	}
}

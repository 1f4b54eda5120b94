package api_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/store"
)

// delta writes a piece of the projector's job's answer, as a provider
// call streams it.
func (p *projector) delta(call, provider, text string) {
	p.t.Helper()
	require.NoError(p.t, p.b.store.Jobs.AppendJobDelta(context.Background(),
		store.JobDelta{JobID: p.job.ID, CallID: call, Provider: provider, Text: text}))
}

// streamedTask seeds a pending llm-task that asked for a stream.
func (b *bundle) streamedTask(t *testing.T) *projector {
	t.Helper()
	job := b.seed(t, jobs.Record{Service: jobs.LLMTasks, Status: jobs.StatusPending, Options: `{"stream":true}`})
	return &projector{t: t, b: b, job: *job}
}

// A streamed llm-task's event stream carries its answer as it is written:
// llm-task.delta events in order, an llm-task.restarted event before the
// pieces of another call (here a failover), then the completed event;
// every event's id resumes the stream where it was.
func TestEventStreamCarriesAStreamedAnswer(t *testing.T) {
	t.Parallel()
	b := setupStreaming(t)
	p := b.streamedTask(t)
	path := jobPath("llm-tasks", p.job.ID, "/events")
	s := openEvents(t, b.server.URL, path, b.readToken(t))

	p.save(jobs.StatusProcessing, 0)
	p.delta("call-1", "alpha", "Dur")
	e, ok := s.next(t)
	require.True(t, ok)
	require.Equal(t, "llm-task.delta", e.Event)
	require.Equal(t, "0.1", e.ID)
	_, data := e.payload(t)
	require.Equal(t, p.job.ID, data["id"])
	require.Equal(t, "llm-task-job", data["type"])
	require.Equal(t, map[string]any{"provider": "alpha", "text": "Dur"}, data["attributes"])
	p.delta("call-1", "alpha", "able")
	e, ok = s.next(t)
	require.True(t, ok)
	require.Equal(t, "0.2", e.ID)
	_, data = e.payload(t)
	require.Equal(t, "able", data["attributes"].(map[string]any)["text"])
	require.NoError(t, s.resp.Body.Close())

	// The provider failed mid-answer; the next one starts it again.
	p.delta("call-2", "beta", "Durable ")
	p.delta("call-2", "beta", "jobs.")
	s = openEvents(t, b.server.URL, path, b.readToken(t), "Last-Event-ID", "0.2")
	var got []string
	for range 3 {
		e, ok := s.next(t)
		require.True(t, ok)
		_, data := e.payload(t)
		attrs := data["attributes"].(map[string]any)
		got = append(got, strings.TrimSpace(e.ID+" "+e.Event+" "+attrs["provider"].(string)+" "+stringOr(attrs["text"])))
	}
	require.Equal(t, []string{
		"0.2 llm-task.restarted beta",
		"0.3 llm-task.delta beta Durable",
		"0.4 llm-task.delta beta jobs.",
	}, got, "the restart before the new call's pieces")

	p.save(jobs.StatusCompleted, 100)
	evs := s.rest(t)
	require.Len(t, evs, 1)
	require.Equal(t, "llm-task.completed", evs[0].Event)
	require.Equal(t, "1.4", evs[0].ID)

	t.Run("a client that comes after the end gets the answer in the completed event", func(t *testing.T) {
		evs := openEvents(t, b.server.URL, path, b.readToken(t)).rest(t)
		require.Len(t, evs, 1)
		require.Equal(t, "llm-task.completed", evs[0].Event)
		require.Equal(t, "1", evs[0].ID)
		_, data := evs[0].payload(t)
		require.NotNil(t, data["attributes"].(map[string]any)["result"])
	})
}

// The pieces written before the job ended all come before its end, even
// when the stream sees the end first.
func TestEventStreamSendsTheLastPiecesBeforeTheEnd(t *testing.T) {
	t.Parallel()
	b := setupStreaming(t)
	p := b.streamedTask(t)
	p.save(jobs.StatusProcessing, 0)
	s := openEvents(t, b.server.URL, jobPath("llm-tasks", p.job.ID, "/events"), b.readToken(t))
	for _, piece := range []string{"a", "b", "c"} {
		p.delta("call-1", "alpha", piece)
	}
	p.save(jobs.StatusCompleted, 100)
	var kinds []string
	for _, e := range s.rest(t) {
		kinds = append(kinds, e.Event)
	}
	require.Equal(t, []string{"llm-task.delta", "llm-task.delta", "llm-task.delta", "llm-task.completed"}, kinds)
}

func TestEventStreamRefusesABadLastEventID(t *testing.T) {
	t.Parallel()
	b := setupStreaming(t)
	p := b.streamedTask(t)
	for _, id := range []string{"x", "1.x", "-1", "1.-2", "1.2.3"} {
		resp := b.do(t, "GET", jobPath("llm-tasks", p.job.ID, "/events"), b.readToken(t), nil, "Accept", "text/event-stream", "Last-Event-ID", id)
		require.Equal(t, 422, resp.Status, "%s: %s", id, resp.Body)
		require.Contains(t, string(resp.Body), "Last-Event-ID")
	}
}

func stringOr(v any) string {
	s, _ := v.(string)
	return s
}

// A piece an abandoned attempt writes after its retry began is left out.
func TestEventStreamLeavesOutAReplacedCallsPieces(t *testing.T) {
	t.Parallel()
	b := setupStreaming(t)
	p := b.streamedTask(t)
	p.save(jobs.StatusProcessing, 0)
	s := openEvents(t, b.server.URL, jobPath("llm-tasks", p.job.ID, "/events"), b.readToken(t))
	p.delta("call-1", "alpha", "a")
	p.delta("call-2", "alpha", "b")
	p.delta("call-1", "alpha", "stale")
	p.delta("call-2", "alpha", "c")
	p.save(jobs.StatusCompleted, 100)
	var got []string
	for _, e := range s.rest(t) {
		_, data := e.payload(t)
		got = append(got, strings.TrimSpace(e.ID+" "+e.Event+" "+stringOr(data["attributes"].(map[string]any)["text"])))
	}
	require.Equal(t, []string{
		"0.1 llm-task.delta a",
		"0.1 llm-task.restarted",
		"0.2 llm-task.delta b",
		"0.4 llm-task.delta c",
		"1.4 llm-task.completed",
	}, got)
}

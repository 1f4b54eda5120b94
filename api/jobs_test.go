package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"

	"github.com/ai-job-gateway/gateway/api"
	"github.com/ai-job-gateway/gateway/app/jobops"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/store"
	"github.com/ai-job-gateway/gateway/store/storetest"
)

func TestGetJob(t *testing.T) {
	t.Parallel()
	b := setup(t)
	read := b.readToken(t)

	t.Run("a created job reads back unchanged", func(t *testing.T) {
		t.Parallel()
		for _, res := range resources {
			created := b.do(t, http.MethodPost, "/v1/"+res.id, b.writeToken(t),
				body(t, res.id, set("/data/meta/client", map[string]any{"k": []any{1, "two"}})))
			created.requireStatus(t, http.StatusAccepted)
			id := created.data(t)["id"].(string)
			got := b.do(t, http.MethodGet, jobPath(res.id, id), read, nil)
			got.requireStatus(t, http.StatusOK)
			require.JSONEq(t, string(created.Body), string(got.Body))
			// Ids are matched without regard to case.
			upper := b.do(t, http.MethodGet, jobPath(res.id, strings.ToUpper(id)), read, nil)
			upper.requireStatus(t, http.StatusOK)
			require.Equal(t, id, upper.data(t)["id"])
		}
	})

	notFound := []struct{ name, id string }{
		{"not a UUID", "job-1"},
		{"number", "12345"},
		{"UUID without hyphens", strings.ReplaceAll(uuid.NewString(), "-", "")},
		{"UUID in braces", "{" + uuid.NewString() + "}"},
		{"UUID one character short", uuid.NewString()[:35]},
		{"unknown UUID v7", uuid.Must(uuid.NewV7()).String()},
		{"unknown UUID v4", uuid.NewString()},
		{"nil UUID", uuid.Nil.String()},
	}
	for _, res := range resources {
		for _, tc := range notFound {
			for _, suffix := range []string{"", "/result", "/cancel", "/retry"} {
				t.Run(res.id+suffix+"/"+tc.name, func(t *testing.T) {
					t.Parallel()
					method, token := http.MethodGet, read
					if suffix == "/cancel" || suffix == "/retry" {
						method, token = http.MethodPost, b.writeToken(t)
					}
					r := b.do(t, method, jobPath(res.id, tc.id, suffix), token, nil)
					requireError(t, r, http.StatusNotFound, "NOT_FOUND")
				})
			}
		}
	}

	t.Run("another service's job under the wrong resource", func(t *testing.T) {
		t.Parallel()
		for _, owner := range resources {
			job := b.seed(t, jobs.Record{Service: jobs.ServiceID(owner.id), Status: jobs.StatusCompleted, Result: `{"content":"x"}`})
			for _, res := range resources {
				if res.id == owner.id {
					b.do(t, http.MethodGet, jobPath(res.id, job.ID), read, nil).requireStatus(t, http.StatusOK)
					continue
				}
				requireError(t, b.do(t, http.MethodGet, jobPath(res.id, job.ID), read, nil), http.StatusNotFound, "NOT_FOUND")
				requireError(t, b.do(t, http.MethodGet, jobPath(res.id, job.ID, "/result"), read, nil), http.StatusNotFound, "NOT_FOUND")
				requireError(t, b.do(t, http.MethodPost, jobPath(res.id, job.ID, "/cancel"), b.writeToken(t), nil), http.StatusNotFound, "NOT_FOUND")
				requireError(t, b.do(t, http.MethodPost, jobPath(res.id, job.ID, "/retry"), b.writeToken(t), nil), http.StatusNotFound, "NOT_FOUND")
			}
		}
	})
	t.Cleanup(func() { assert.Empty(t, b.cancelled(), "no workflow may be cancelled") })
}

// TestJobRepresentationByStatus checks which attributes appear in each
// state (docs/api.md, Envelopes and representation): what does not apply
// yet is omitted, not null.
func TestJobRepresentationByStatus(t *testing.T) {
	t.Parallel()
	b := setup(t)
	read := b.readToken(t)
	routing := `{"provider_id":"alpha","reason":"policy_rule","policy_id":"0195a3c4-7b1e-7c2d-9e3f-4a5b6c7d8e9f","policy_version":2,"policy_source":"tenant_default","attempt":1,"decided_at":"2025-03-04T05:06:09Z","provider_evaluations":[{"provider_id":"alpha","selected":true,"reason":"selected","message":"cheapest","evaluated_at":"2025-03-04T05:06:09Z"}]}`
	processed := fixedNow.Add(2 * time.Second)
	completed := fixedNow.Add(90 * time.Second)

	cases := []struct {
		name    string
		job     jobs.Record
		raw     bool // store the job as given, without seed's routing
		present []string
		check   func(t *testing.T, attrs map[string]json.RawMessage)
	}{
		{
			name:    "pending",
			job:     jobs.Record{Status: jobs.StatusPending},
			present: []string{"tenant", "user_id", "status", "routing_history", "created_at", "input"},
		},
		{
			name:    "processing",
			job:     jobs.Record{Status: jobs.StatusProcessing, Progress: 40, Routing: routing, RoutingHistory: "[" + routing + "]", ProcessedAt: &processed, WorkerID: "worker-3"},
			present: []string{"tenant", "user_id", "provider", "status", "progress", "routing", "routing_history", "created_at", "processed_at", "input"},
			check: func(t *testing.T, attrs map[string]json.RawMessage) {
				require.JSONEq(t, `40`, string(attrs["progress"]))
				require.JSONEq(t, routing, string(attrs["routing"]))
				require.JSONEq(t, "["+routing+"]", string(attrs["routing_history"]))
				require.JSONEq(t, `"2025-03-04T05:06:09.089Z"`, string(attrs["processed_at"]))
			},
		},
		{
			name:    "processing at 0 percent",
			job:     jobs.Record{Status: jobs.StatusProcessing, Progress: 0, Routing: routing, RoutingHistory: "[" + routing + "]", ProcessedAt: &processed},
			present: []string{"tenant", "user_id", "provider", "status", "progress", "routing", "routing_history", "created_at", "processed_at", "input"},
			check: func(t *testing.T, attrs map[string]json.RawMessage) {
				require.JSONEq(t, `0`, string(attrs["progress"]))
			},
		},
		{
			name:    "completed",
			job:     jobs.Record{Status: jobs.StatusCompleted, Progress: 100, Routing: routing, RoutingHistory: "[" + routing + "]", ProcessedAt: &processed, CompletedAt: &completed, Result: `{"content":"Hallo Welt","source_language":"en","target_language":"de","character_count":11}`},
			present: []string{"tenant", "user_id", "provider", "status", "progress", "routing", "routing_history", "created_at", "processed_at", "completed_at", "input", "result"},
			check: func(t *testing.T, attrs map[string]json.RawMessage) {
				require.JSONEq(t, `{"content":"Hallo Welt","source_language":"en","target_language":"de","character_count":11}`, string(attrs["result"]))
				require.JSONEq(t, `"2025-03-04T05:07:37.089Z"`, string(attrs["completed_at"]))
			},
		},
		{
			name:    "failed after routing",
			job:     jobs.Record{Status: jobs.StatusFailed, Progress: 30, Routing: routing, RoutingHistory: "[" + routing + "]", ProcessedAt: &processed, CompletedAt: &completed, ErrorCode: "AUDIO_UNREADABLE", ErrorMessage: "no audio track"},
			present: []string{"tenant", "user_id", "provider", "status", "progress", "error", "routing", "routing_history", "created_at", "processed_at", "completed_at", "input"},
			check: func(t *testing.T, attrs map[string]json.RawMessage) {
				require.JSONEq(t, `{"code":"AUDIO_UNREADABLE","message":"no audio track"}`, string(attrs["error"]))
			},
		},
		{
			name:    "failed before routing",
			job:     jobs.Record{Status: jobs.StatusFailed, CompletedAt: &completed, ErrorCode: "NO_ELIGIBLE_PROVIDER", ErrorMessage: "no provider"},
			raw:     true,
			present: []string{"tenant", "user_id", "status", "error", "routing_history", "created_at", "completed_at", "input"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			job := tc.job
			job.Service = "translations"
			if tc.raw {
				job = *b.seedRaw(t, job)
			} else {
				job = *b.seed(t, job)
			}
			r := b.do(t, http.MethodGet, jobPath("translations", job.ID), read, nil)
			r.requireStatus(t, http.StatusOK)
			var doc struct {
				Data struct {
					Attributes map[string]json.RawMessage `json:"attributes"`
					Meta       map[string]json.RawMessage `json:"meta"`
				} `json:"data"`
			}
			require.NoError(t, json.Unmarshal(r.Body, &doc))
			require.ElementsMatch(t, tc.present, keys(doc.Data.Attributes))
			require.JSONEq(t, `"`+string(tc.job.Status)+`"`, string(doc.Data.Attributes["status"]))
			for key, value := range doc.Data.Attributes {
				require.NotEqual(t, "null", string(value), "attribute %s is null instead of omitted", key)
			}
			workerID := testNodeID
			if job.WorkerID != "" {
				workerID = job.WorkerID
			}
			require.JSONEq(t, `{"region":"`+testRegion+`","worker_id":"`+workerID+`"}`, string(doc.Data.Meta["system"]))
			if tc.check != nil {
				tc.check(t, doc.Data.Attributes)
			}
		})
	}
}

// seedRaw stores job exactly as given, apart from the defaults of seed for
// identity and input.
func (b *bundle) seedRaw(t *testing.T, job jobs.Record) *jobs.Record {
	t.Helper()
	if job.ID == "" {
		job.ID = uuid.Must(uuid.NewV7()).String()
	}
	job.Tenant, job.UserID = tenantA, userA
	if job.Input == "" {
		job.Input = seedInputs[string(job.Service)]
	}
	job.CreatedAt = fixedNow
	require.NoError(t, b.store.Jobs.SaveJob(t.Context(), &job))
	return &job
}

func TestResultNotAvailable(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, res := range resources {
		for _, tc := range []struct {
			status jobs.Status
			code   string
		}{
			{jobs.StatusPending, "RESULT_NOT_READY"},
			{jobs.StatusProcessing, "RESULT_NOT_READY"},
			{jobs.StatusFailed, "JOB_FAILED"},
		} {
			t.Run(res.id+"/"+string(tc.status), func(t *testing.T) {
				t.Parallel()
				job := b.seed(t, jobs.Record{Service: jobs.ServiceID(res.id), Status: tc.status, Progress: 50, ErrorCode: "PROVIDERS_EXHAUSTED", ErrorMessage: "all failed"})
				r := b.do(t, http.MethodGet, jobPath(res.id, job.ID, "/result"), b.readToken(t), nil,
					"Accept", "text/plain, text/vtt, */*")
				requireError(t, r, http.StatusNotFound, tc.code, job.ID)
			})
		}
	}
}

const transcriptResult = `{"format":"%s","duration":3661.5,"language":"en","download_url":"https://files.example.com/t.srt?sig=x",
	"segments":[
		{"start":0,"end":1.5,"text":"Hello there.","confidence":0.98},
		{"start":1.5,"end":3661.5,"text":"A <b> & c --> d","speaker":"spk_1"}
	]}`

const wantSRT = "1\n00:00:00,000 --> 00:00:01,500\nHello there.\n\n" +
	"2\n00:00:01,500 --> 01:01:01,500\nspk_1: A <b> & c -> d\n\n"

const wantVTT = "WEBVTT\n\n" +
	"1\n00:00:00.000 --> 00:00:01.500\nHello there.\n\n" +
	"2\n00:00:01.500 --> 01:01:01.500\n<v spk_1>A &lt;b&gt; &amp; c --&gt; d\n\n"

func TestTranscriptionResult(t *testing.T) {
	t.Parallel()
	b := setup(t)
	seed := func(t *testing.T, format string) *jobs.Record {
		options := ""
		if format != "" {
			options = `{"format":"` + format + `"}`
		}
		resultFormat := format
		if resultFormat == "" {
			resultFormat = "json"
		}
		return b.seed(t, jobs.Record{Service: "transcriptions", Status: jobs.StatusCompleted, Options: options,
			Result: strings.Replace(transcriptResult, "%s", resultFormat, 1)})
	}
	cases := []struct {
		name, format, accept string
		wantType, wantBody   string // wantBody empty: the stored JSON
	}{
		{"default format is json", "", "", "application/json", ""},
		{"format json", "json", "", "application/json", ""},
		{"format srt", "srt", "", "text/srt", wantSRT},
		{"format vtt", "vtt", "", "text/vtt", wantVTT},
		{"Accept text/vtt on a json job", "json", "text/vtt", "text/vtt", wantVTT},
		{"Accept text/srt on a default job", "", "text/srt", "text/srt", wantSRT},
		{"Accept application/json on an srt job", "srt", "application/json", "application/json", ""},
		{"Accept by q-value", "json", "text/srt;q=0.4, text/vtt;q=0.8, application/json;q=0.1", "text/vtt", wantVTT},
		{"Accept wildcard keeps the format", "vtt", "*/*", "text/vtt", wantVTT},
		{"unsatisfiable Accept keeps the format", "srt", "application/xml", "text/srt", wantSRT},
		{"Accept with q=0 is refused", "srt", "text/srt;q=0, application/json", "application/json", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			job := seed(t, tc.format)
			var headers []string
			if tc.accept != "" {
				headers = []string{"Accept", tc.accept}
			}
			r := b.do(t, http.MethodGet, jobPath("transcriptions", job.ID, "/result"), b.readToken(t), nil, headers...)
			r.requireStatus(t, http.StatusOK)
			require.Equal(t, tc.wantType+"; charset=utf-8", r.Header.Get("Content-Type"))
			require.Contains(t, r.Header.Values("Vary"), "Accept")
			if tc.wantBody == "" {
				require.JSONEq(t, job.Result, string(r.Body), "the result is returned unwrapped")
				require.NotContains(t, r.object(t), "data")
				return
			}
			require.Equal(t, tc.wantBody, string(r.Body))
		})
	}
}

func TestTranscriptionResultWithoutSegments(t *testing.T) {
	t.Parallel()
	b := setup(t)
	job := b.seed(t, jobs.Record{Service: "transcriptions", Status: jobs.StatusCompleted,
		Options: `{"format":"srt","timestamps":false}`,
		Result:  `{"format":"srt","duration":75.25,"language":"de","text":"Guten Morgen.\nWie geht's?"}`})
	r := b.do(t, http.MethodGet, jobPath("transcriptions", job.ID, "/result"), b.readToken(t), nil)
	r.requireStatus(t, http.StatusOK)
	require.Equal(t, "1\n00:00:00,000 --> 00:01:15,250\nGuten Morgen.\nWie geht's?\n\n", string(r.Body))
}

func TestTranslationResult(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const result = `{"source_language":"en","target_language":"de","content":"Hallo Welt\nZeile zwei","character_count":22}`
	text := b.seed(t, jobs.Record{Service: "translations", Status: jobs.StatusCompleted, Result: result})
	document := b.seed(t, jobs.Record{Service: "translations", Status: jobs.StatusCompleted,
		Input:  `{"type":"document","url":"https://docs.example.com/a.docx","target_language":"de"}`,
		Result: `{"source_language":"en","target_language":"de","download_url":"https://files.example.com/a.de.docx?sig=y","character_count":5000}`})

	cases := []struct {
		name     string
		job      *jobs.Record
		accept   string
		wantType string
		wantBody string // empty: the stored JSON
	}{
		{"json by default", text, "", "application/json", ""},
		{"Accept text/plain gives the bare text", text, "text/plain", "text/plain", "Hallo Welt\nZeile zwei"},
		{"Accept text/plain among others", text, "application/json;q=0.5, text/plain", "text/plain", "Hallo Welt\nZeile zwei"},
		{"Accept application/json", text, "application/json", "application/json", ""},
		{"Accept text/srt is not offered", text, "text/srt", "application/json", ""},
		{"a document has no plain text", document, "text/plain", "application/json", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var headers []string
			if tc.accept != "" {
				headers = []string{"Accept", tc.accept}
			}
			r := b.do(t, http.MethodGet, jobPath("translations", tc.job.ID, "/result"), b.readToken(t), nil, headers...)
			r.requireStatus(t, http.StatusOK)
			require.Equal(t, tc.wantType+"; charset=utf-8", r.Header.Get("Content-Type"))
			if tc.wantBody == "" {
				require.JSONEq(t, tc.job.Result, string(r.Body))
				return
			}
			require.Equal(t, tc.wantBody, string(r.Body))
		})
	}
}

func TestVideoAndLLMResults(t *testing.T) {
	t.Parallel()
	b := setup(t)
	results := map[string]string{
		"video-analyses": `{"video_metadata":{"duration":12.5,"width":1920,"height":1080,"frame_rate":25,"format":"mp4","codec":"h264"},
			"labels":[{"name":"dog","confidence":0.91,"instances":[{"start":0,"end":2.5,"confidence":0.91}]}],
			"content_moderation":{"is_safe":true,"signals":[]},"summary":"A dog runs."}`,
		"llm-tasks": `{"content":"A fox jumps.","finish_reason":"completed","usage":{"input_tokens":12,"output_tokens":4}}`,
	}
	for resource, result := range results {
		for _, accept := range []string{"", "application/json", "text/plain", "text/vtt"} {
			t.Run(resource+"/Accept "+accept, func(t *testing.T) {
				t.Parallel()
				job := b.seed(t, jobs.Record{Service: jobs.ServiceID(resource), Status: jobs.StatusCompleted, Result: result})
				var headers []string
				if accept != "" {
					headers = []string{"Accept", accept}
				}
				r := b.do(t, http.MethodGet, jobPath(resource, job.ID, "/result"), b.readToken(t), nil, headers...)
				r.requireStatus(t, http.StatusOK)
				require.Equal(t, "application/json; charset=utf-8", r.Header.Get("Content-Type"))
				require.JSONEq(t, result, string(r.Body), "the result is returned unwrapped")
			})
		}
	}
}

func TestCancelJob(t *testing.T) {
	t.Parallel()

	t.Run("finished jobs conflict", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		for _, res := range resources {
			for _, status := range []jobs.Status{jobs.StatusCompleted, jobs.StatusFailed} {
				job := b.seed(t, jobs.Record{Service: jobs.ServiceID(res.id), Status: status, Result: `{"content":"x"}`, ErrorCode: "PROVIDERS_EXHAUSTED"})
				r := b.do(t, http.MethodPost, jobPath(res.id, job.ID, "/cancel"), b.writeToken(t), nil)
				requireError(t, r, http.StatusConflict, "JOB_FINISHED", job.ID)
				stored, err := b.store.Jobs.GetJob(t.Context(), job.ID)
				require.NoError(t, err)
				require.Equal(t, status, stored.Status, "a finished job stays as it was")
			}
		}
		require.Empty(t, b.cancelled(), "a finished job's workflow is not cancelled")
	})

	t.Run("processing job", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		for _, res := range resources {
			job := b.seed(t, jobs.Record{Service: jobs.ServiceID(res.id), Status: jobs.StatusProcessing, Progress: 20})
			r := b.do(t, http.MethodPost, jobPath(res.id, job.ID, "/cancel"), b.writeToken(t), nil)
			r.requireStatus(t, http.StatusAccepted)
			require.Contains(t, b.cancelled(), job.ID, "CancelWorkflow is called with the job id")

			data := r.data(t)
			require.Equal(t, job.ID, data["id"])
			require.Equal(t, res.jobType, data["type"])
			attrs := data["attributes"].(map[string]any)
			require.Equal(t, "failed", attrs["status"])
			require.Equal(t, map[string]any{"code": "CANCELLED", "message": "the job was cancelled"}, attrs["error"])
			require.Contains(t, attrs, "routing", "a job cancelled while processing keeps its routing")
			require.Contains(t, attrs, "completed_at")
		}
		require.Len(t, b.cancelled(), len(resources))
	})

	t.Run("pending job", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		data := b.create(t, "video-analyses", b.writeToken(t), body(t, "video-analyses"))
		id := data["id"].(string)
		r := b.do(t, http.MethodPost, jobPath("video-analyses", id, "/cancel"), b.writeToken(t), nil)
		r.requireStatus(t, http.StatusAccepted)
		require.Equal(t, []string{id}, b.cancelled())
		attrs := r.data(t)["attributes"].(map[string]any)
		require.Equal(t, "failed", attrs["status"])
		require.Equal(t, "CANCELLED", attrs["error"].(map[string]any)["code"])
		for _, absent := range []string{"routing", "processed_at", "progress", "result"} {
			require.NotContains(t, attrs, absent, "a job cancelled while pending was never routed")
		}

		// Cancelling again: the job is finished now.
		requireError(t, b.do(t, http.MethodPost, jobPath("video-analyses", id, "/cancel"), b.writeToken(t), nil),
			http.StatusConflict, "JOB_FINISHED")
	})

	t.Run("pending job whose workflow is not started yet", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		id := b.seedUnstarted(t, "llm-tasks")
		r := b.do(t, http.MethodPost, jobPath("llm-tasks", id, "/cancel"), b.writeToken(t), nil)
		r.requireStatus(t, http.StatusAccepted)
		require.Equal(t, id, b.startedFor(t, id).Options.ID, "the workflow is started so that it can end the job")
		require.Equal(t, []string{id}, b.cancelled())
		require.Equal(t, "CANCELLED", r.data(t)["attributes"].(map[string]any)["error"].(map[string]any)["code"])
		_, err := b.store.Jobs.GetJobStart(t.Context(), id)
		require.ErrorIs(t, err, store.ErrNotFound)
	})

	t.Run("pending job whose workflow cannot be started now", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		id := b.seedUnstarted(t, "llm-tasks")
		b.setFailStarts(1)
		r := b.do(t, http.MethodPost, jobPath("llm-tasks", id, "/cancel"), b.writeToken(t), nil)
		requireError(t, r, http.StatusServiceUnavailable, "SERVICE_UNAVAILABLE")
		require.Empty(t, b.cancelled())
		job, err := b.store.Jobs.GetJob(t.Context(), id)
		require.NoError(t, err)
		require.Equal(t, jobs.StatusPending, job.Status)
		require.Len(t, b.started(), 2, "the failed start is retried from the outbox")
	})

	t.Run("pending job whose workflow Temporal refuses", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.setStartErr(serviceerror.NewInvalidArgument("Blob data size exceeds limit."))
		requireNotStarted := func(id string) {
			t.Helper()
			r := b.do(t, http.MethodGet, jobPath("llm-tasks", id), b.readToken(t), nil)
			r.requireStatus(t, http.StatusOK)
			attrs := r.data(t)["attributes"].(map[string]any)
			require.Equal(t, "failed", attrs["status"])
			require.Equal(t, "JOB_NOT_STARTED", attrs["error"].(map[string]any)["code"])
			require.Contains(t, attrs["error"].(map[string]any)["message"], "Blob data size exceeds limit.")
			require.Contains(t, attrs, "completed_at")
			for _, absent := range []string{"routing", "processed_at", "progress"} {
				require.NotContains(t, attrs, absent, "a job that never started was never routed")
			}
		}

		// The cancel makes the start, which fails the job: it is finished.
		id := b.seedUnstarted(t, "llm-tasks")
		r := b.do(t, http.MethodPost, jobPath("llm-tasks", id, "/cancel"), b.writeToken(t), nil)
		requireError(t, r, http.StatusConflict, "JOB_FINISHED", id)
		requireNotStarted(id)

		// A job the dispatcher failed: cancel answers as for any finished job.
		data := b.create(t, "llm-tasks", b.writeToken(t), body(t, "llm-tasks"))
		id = data["id"].(string)
		b.started()
		requireNotStarted(id)
		r = b.do(t, http.MethodPost, jobPath("llm-tasks", id, "/cancel"), b.writeToken(t), nil)
		requireError(t, r, http.StatusConflict, "JOB_FINISHED", id)
		require.Empty(t, b.cancelled())
	})

	t.Run("workflow already gone", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.setCancelErr(serviceerror.NewNotFound("workflow not found"))
		job := b.seed(t, jobs.Record{Service: "llm-tasks", Status: jobs.StatusProcessing})
		r := b.do(t, http.MethodPost, jobPath("llm-tasks", job.ID, "/cancel"), b.writeToken(t), nil)
		r.requireStatus(t, http.StatusAccepted)
		require.Equal(t, []string{job.ID}, b.cancelled())
	})
}

// interactiveStore records whether the API's store calls were marked as a
// client's (store.Interactive), which puts them first on SQLite; the
// ordering itself is tested in the store (write_test.go, and
// store/internal/sqlitewrite).
type interactiveStore struct {
	*store.JobStore
	created, read atomic.Bool
}

func (s *interactiveStore) CreateJob(ctx context.Context, job *jobs.Record, start *store.JobStart, limits ...store.InFlightLimit) (bool, error) {
	s.created.Store(store.IsInteractive(ctx))
	return s.JobStore.CreateJob(ctx, job, start, limits...)
}

func (s *interactiveStore) GetJob(ctx context.Context, id string) (*jobs.Record, error) {
	s.read.Store(store.IsInteractive(ctx))
	return s.JobStore.GetJob(ctx, id)
}

func TestRequestsAreMarkedInteractiveForTheStore(t *testing.T) {
	t.Parallel()
	var recorder *interactiveStore
	b := setupJobOps(t, storetest.SQLite, func(cfg *jobops.Config) {
		recorder = &interactiveStore{JobStore: cfg.Jobs.(*store.JobStore)}
		cfg.Jobs = recorder
	}, func(cfg *api.Config) { cfg.Store = recorder })
	data := b.create(t, "llm-tasks", b.writeToken(t), body(t, "llm-tasks"))
	require.True(t, recorder.created.Load(), "create")
	b.do(t, http.MethodGet, "/v1/llm-tasks/"+data["id"].(string), b.readToken(t), nil).requireStatus(t, http.StatusOK)
	require.True(t, recorder.read.Load(), "get")
}

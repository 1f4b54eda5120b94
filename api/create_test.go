package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/api"
	"github.com/ai-job-gateway/gateway/app/jobops"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/policy"
	"github.com/ai-job-gateway/gateway/store"
	"github.com/ai-job-gateway/gateway/store/storetest"
	"github.com/ai-job-gateway/gateway/workflows"
)

// fullBodies are create requests with every part a client may send.
var fullBodies = map[string]struct {
	input, options, provider string
}{
	"transcriptions": {
		input:    `{"type": "video", "url": "https://media.example.com/talk.mp4?sig=a%2Fb", "audio_track": 1}`,
		options:  `{"language": "en", "timestamps": true, "format": "srt", "diarization": true, "priority": "high", "include_usage": true}`,
		provider: "alpha",
	},
	"translations": {
		input:    `{"type": "text", "content": "Guten Morgen <b>&</b>", "target_language": "pt-BR"}`,
		options:  `{"source_language": "auto", "formality": "formal", "priority": "low", "include_usage": false}`,
		provider: "half-off",
	},
	"video-analyses": {
		input:    `{"url": "https://media.example.com/clip.mp4", "features": ["labels", "summary", "faces"], "audio_track": 0}`,
		options:  `{"language": "auto", "confidence_threshold": 0.75, "priority": "standard", "include_usage": true}`,
		provider: "alpha",
	},
	"llm-tasks": {
		input:    `{"type": "text", "text": "Fox text.", "prompt": "Summarise.", "system_prompt": "Be terse."}`,
		options:  `{"creativity": "precise", "include_usage": true, "model": "model-b"}`,
		provider: "llm-only",
	},
}

const clientMeta = `{"trace": {"ids": [1, 2.5, {"deep": null}], "tags": ["a", "b"]}, "flag": false, "order": "A-17", "empty": {}}`

func TestCreateJob(t *testing.T) {
	t.Parallel()
	b := setup(t)
	eachResource(t, func(t *testing.T, res resource) {
		full := fullBodies[res.id]
		req := `{"data": {"type": "` + res.jobType + `", "attributes": {
			"input": ` + full.input + `,
			"options": ` + full.options + `,
			"provider": "` + full.provider + `",
			"webhook": {"url": "https://hooks.example.com/jobs", "headers": {"Authorization": "Bearer hook-secret"}}},
			"meta": {"client": ` + clientMeta + `}}}`

		r := b.do(t, http.MethodPost, "/v1/"+res.id, b.writeToken(t), req, "X-Application", "my-app")
		r.requireStatus(t, http.StatusAccepted)
		require.Contains(t, r.Header.Get("Content-Type"), "application/json")
		require.NotContains(t, string(r.Body), "hook-secret", "the webhook must never be returned")

		// The raw envelope: exactly data, with id, type, attributes, meta.
		var raw struct {
			Data struct {
				ID         string                     `json:"id"`
				Type       string                     `json:"type"`
				Attributes map[string]json.RawMessage `json:"attributes"`
				Meta       map[string]json.RawMessage `json:"meta"`
			} `json:"data"`
		}
		var top map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(r.Body, &top))
		require.Equal(t, []string{"data"}, keys(top))
		var data map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(top["data"], &data))
		require.ElementsMatch(t, []string{"id", "type", "attributes", "meta"}, keys(data))
		require.NoError(t, json.Unmarshal(r.Body, &raw))

		id, err := uuid.Parse(raw.Data.ID)
		require.NoError(t, err)
		require.Equal(t, uuid.Version(7), id.Version())
		require.Equal(t, id.String(), raw.Data.ID, "ids are lowercase canonical UUIDs")
		require.Equal(t, "/v1/"+res.id+"/"+raw.Data.ID, r.Header.Get("Location"))
		require.Equal(t, res.jobType, raw.Data.Type)

		attrs := raw.Data.Attributes
		require.ElementsMatch(t,
			[]string{"tenant", "user_id", "provider", "status", "routing_history", "created_at", "input", "options"},
			keys(attrs), "attributes that do not apply yet are omitted, webhook is never returned")
		require.JSONEq(t, `"`+tenantA+`"`, string(attrs["tenant"]))
		require.JSONEq(t, `"`+userA+`"`, string(attrs["user_id"]))
		require.JSONEq(t, `"`+full.provider+`"`, string(attrs["provider"]))
		require.JSONEq(t, `"pending"`, string(attrs["status"]))
		require.JSONEq(t, `[]`, string(attrs["routing_history"]))
		require.JSONEq(t, `"`+fixedNowJSON+`"`, string(attrs["created_at"]))
		require.JSONEq(t, full.input, string(attrs["input"]))
		require.JSONEq(t, full.options, string(attrs["options"]))

		require.ElementsMatch(t, []string{"client", "system"}, keys(raw.Data.Meta))
		require.JSONEq(t, clientMeta, string(raw.Data.Meta["client"]))
		require.JSONEq(t, `{"region": "`+testRegion+`", "worker_id": "`+testNodeID+`"}`, string(raw.Data.Meta["system"]))

		// The workflow was started for exactly this job.
		started := b.startedFor(t, raw.Data.ID)
		require.Equal(t, raw.Data.ID, started.Options.ID, "workflow id is the job id")
		require.Equal(t, workflows.TaskQueue, started.Options.TaskQueue)
		require.Equal(t, workflows.JobWorkflowName, started.Workflow)
		in := started.Input
		require.Equal(t, raw.Data.ID, in.JobID)
		require.Equal(t, jobs.ServiceID(res.id), in.Service)
		require.Equal(t, tenantA, in.Tenant)
		require.Equal(t, userA, in.UserID)
		require.Equal(t, "my-app", in.Application)
		require.Equal(t, full.provider, in.Provider)
		require.Empty(t, in.PolicyID)
		require.JSONEq(t, full.input, string(in.Input))
		require.JSONEq(t, full.options, string(in.Options))
		require.JSONEq(t, clientMeta, string(in.ClientMeta))
		require.True(t, fixedNow.Equal(in.CreatedAt), "created at %s", in.CreatedAt)

		// The job is in the store, as accepted.
		job, err := b.store.Jobs.GetJob(t.Context(), raw.Data.ID)
		require.NoError(t, err)
		require.Equal(t, jobs.ServiceID(res.id), job.Service)
		require.Equal(t, jobs.StatusPending, job.Status)
		require.Equal(t, tenantA, job.Tenant)
		require.Equal(t, userA, job.UserID)
		require.Equal(t, full.provider, job.Provider)
		require.Equal(t, "my-app", job.Application)
		require.JSONEq(t, full.input, job.Input)
		require.JSONEq(t, full.options, job.Options)
		require.JSONEq(t, clientMeta, job.ClientMeta)
		require.True(t, fixedNow.Equal(job.CreatedAt), "created at %s", job.CreatedAt)

		// GET returns the same representation.
		g := b.do(t, http.MethodGet, jobPath(res.id, raw.Data.ID), b.readToken(t), nil)
		g.requireStatus(t, http.StatusOK)
		require.JSONEq(t, string(r.Body), string(g.Body))
	})
}

func TestCreateMinimalJob(t *testing.T) {
	t.Parallel()
	b := setup(t)
	eachResource(t, func(t *testing.T, res resource) {
		r := b.do(t, http.MethodPost, "/v1/"+res.id, b.writeToken(t), body(t, res.id))
		r.requireStatus(t, http.StatusAccepted)
		data := r.data(t)
		attrs := data["attributes"].(map[string]any)
		require.ElementsMatch(t,
			[]string{"tenant", "user_id", "status", "routing_history", "created_at", "input"}, keys(attrs),
			"no provider, options or policy_id when none was given")
		meta := data["meta"].(map[string]any)
		require.ElementsMatch(t, []string{"system"}, keys(meta), "no meta.client when none was given")

		in := b.startedFor(t, data["id"].(string)).Input
		require.Empty(t, in.Provider)
		require.Empty(t, in.Application)
		require.Empty(t, in.Options)
		require.Empty(t, in.ClientMeta)
	})
}

func TestCreateIDsAreUniqueAndOrdered(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var ids []string
	for range 5 {
		ids = append(ids, b.create(t, "llm-tasks", b.writeToken(t), body(t, "llm-tasks"))["id"].(string))
	}
	require.True(t, slices.IsSorted(ids), "UUID v7 ids sort by creation: %v", ids)
	require.Len(t, slices.Compact(slices.Clone(ids)), 5)
}

// TestCreateAcceptsValidVariants covers valid values at the edges of each
// rule, so the validation tests cannot pass by rejecting everything.
func TestCreateAcceptsValidVariants(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const (
		in   = "/data/attributes/input"
		opts = "/data/attributes/options"
		attr = "/data/attributes"
	)
	cases := []struct {
		resource string
		name     string
		edits    []edit
		headers  []string
	}{
		{"transcriptions", "video input", []edit{set(in+"/type", "video")}, nil},
		{"transcriptions", "http url", []edit{set(in+"/url", "http://media.example.com:8080/a.wav")}, nil},
		{"transcriptions", "audio_track 0", []edit{set(in+"/audio_track", 0)}, nil},
		{"transcriptions", "audio_track 3", []edit{set(in+"/audio_track", 3)}, nil},
		{"transcriptions", "language with region", []edit{set(opts+"/language", "pt-BR")}, nil},
		{"transcriptions", "language with script", []edit{set(opts+"/language", "zh-Hant")}, nil},
		{"transcriptions", "format srt", []edit{set(opts+"/format", "srt")}, nil},
		{"transcriptions", "format vtt", []edit{set(opts+"/format", "vtt")}, nil},
		{"transcriptions", "format json", []edit{set(opts+"/format", "json")}, nil},
		{"transcriptions", "timestamps false", []edit{set(opts+"/timestamps", false)}, nil},
		{"transcriptions", "diarization false", []edit{set(opts+"/diarization", false)}, nil},
		{"transcriptions", "priority low", []edit{set(opts+"/priority", "low")}, nil},
		{"transcriptions", "empty options", []edit{set(opts, map[string]any{})}, nil},
		{"transcriptions", "null options", []edit{set(opts, nil)}, nil},
		{"transcriptions", "null meta.client", []edit{set("/data/meta", map[string]any{"client": nil})}, nil},
		{"transcriptions", "empty meta", []edit{set("/data/meta", map[string]any{})}, nil},
		{"transcriptions", "null webhook", []edit{set(attr+"/webhook", nil)}, nil},
		{"transcriptions", "null provider", []edit{set(attr+"/provider", nil)}, nil},
		{"transcriptions", "null policy_id", []edit{set(attr+"/policy_id", nil)}, nil},
		{"transcriptions", "narrow provider, regional form of a listed language", []edit{set(attr+"/provider", "narrow"), set(opts+"/language", "en-GB")}, nil},
		{"transcriptions", "narrow provider, language detection", []edit{set(attr+"/provider", "narrow")}, nil},
		{"transcriptions", "narrow provider, diarization false", []edit{set(attr+"/provider", "narrow"), set(opts+"/diarization", false)}, nil},
		{"translations", "document input", []edit{set(in+"/type", "document"), del(in + "/content"), set(in+"/url", "https://docs.example.com/a.docx")}, nil},
		{"translations", "source_language auto", []edit{set(opts+"/source_language", "auto")}, nil},
		{"translations", "source_language code", []edit{set(opts+"/source_language", "en-US")}, nil},
		{"translations", "formality default", []edit{set(opts+"/formality", "default")}, nil},
		{"translations", "formality informal", []edit{set(opts+"/formality", "informal")}, nil},
		{"translations", "narrow provider, listed languages", []edit{set(attr+"/provider", "narrow"), set(opts+"/source_language", "en"), set(in+"/target_language", "fr")}, nil},
		{"translations", "narrow provider, formality default", []edit{set(attr+"/provider", "narrow"), set(opts+"/formality", "default")}, nil},
		{"translations", "provider active for translations, disabled for transcriptions", []edit{set(attr+"/provider", "half-off")}, nil},
		{"video-analyses", "every feature", []edit{set(in+"/features", toAny(jobs.VideoAnalysisFeatures))}, nil},
		{"video-analyses", "confidence_threshold 0", []edit{set(opts+"/confidence_threshold", 0)}, nil},
		{"video-analyses", "confidence_threshold 1", []edit{set(opts+"/confidence_threshold", 1)}, nil},
		{"video-analyses", "language auto", []edit{set(opts+"/language", "auto")}, nil},
		{"video-analyses", "language code", []edit{set(opts+"/language", "de")}, nil},
		{"video-analyses", "audio_track 0", []edit{set(in+"/audio_track", 0)}, nil},
		{"video-analyses", "narrow provider, offered features", []edit{set(attr+"/provider", "narrow"), set(in+"/features", []any{"scenes", "labels"})}, nil},
		{"llm-tasks", "system prompt", []edit{set(in+"/system_prompt", "You are terse.")}, nil},
		{"llm-tasks", "document input", []edit{set(in+"/type", "document"), del(in + "/text"), set(in+"/url", "https://docs.example.com/a.pdf")}, nil},
		{"llm-tasks", "creativity creative", []edit{set(opts+"/creativity", "creative")}, nil},
		{"llm-tasks", "degraded provider with a listed model", []edit{set(attr+"/provider", "llm-only"), set(opts+"/model", "model-b")}, nil},
		{"llm-tasks", "model without provider", []edit{set(opts+"/model", "model-a")}, nil},
		{"transcriptions", "X-Application two characters", nil, []string{"X-Application", "ab"}},
		{"transcriptions", "X-Application 63 characters", nil, []string{"X-Application", "a" + strings.Repeat("b1-", 20) + "z9"}},
		{"transcriptions", "X-Application my-app", nil, []string{"X-Application", "my-app"}},
		{"transcriptions", "Idempotency-Key 255 characters", nil, []string{"Idempotency-Key", strings.Repeat("k", 255)}},
		{"transcriptions", "unknown top-level member is ignored", []edit{set("/jsonapi", map[string]any{"version": "1.1"})}, nil},
		{"transcriptions", "webhook with headers", []edit{set(attr+"/webhook", map[string]any{"url": "http://hooks.example.com:9000/cb?x=1", "headers": map[string]any{"Authorization": "Basic abc", "X-Trace": ""}})}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.resource+"/"+tc.name, func(t *testing.T) {
			t.Parallel()
			r := b.do(t, http.MethodPost, "/v1/"+tc.resource, b.writeToken(t), body(t, tc.resource, tc.edits...), tc.headers...)
			r.requireStatus(t, http.StatusAccepted)
			data := r.data(t)
			require.Equal(t, "pending", data["attributes"].(map[string]any)["status"])
			in := b.startedFor(t, data["id"].(string)).Input
			if len(tc.headers) == 2 && tc.headers[0] == "X-Application" {
				require.Equal(t, tc.headers[1], in.Application)
			}
		})
	}
}

func TestCreatePriorityMapsToTaskPriority(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for priority, key := range map[string]int{"high": 1, "standard": 3, "low": 5, "": 3} {
		t.Run("priority "+priority, func(t *testing.T) {
			t.Parallel()
			var edits []edit
			if priority != "" {
				edits = append(edits, set("/data/attributes/options/priority", priority))
			}
			data := b.create(t, "transcriptions", b.writeToken(t), body(t, "transcriptions", edits...))
			require.Equal(t, key, b.startedFor(t, data["id"].(string)).Options.Priority.PriorityKey)
		})
	}
}

func TestCreatePriorityIsTheDecodedOption(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// JSON escapes spell the same priority: the task priority follows the
	// decoded option, not its spelling in the request.
	for spelled, key := range map[string]int{
		`"priority":"hig\u0068"`: 1,
		`"\u0070riority":"low"`:  5,
		`"priority" : "high"`:    1,
		`"priority":"standard"`:  3,
	} {
		t.Run(spelled, func(t *testing.T) {
			t.Parallel()
			raw, err := json.Marshal(body(t, "transcriptions", set("/data/attributes/options/priority", "@P@")))
			require.NoError(t, err)
			doc := strings.Replace(string(raw), `"priority":"@P@"`, spelled, 1)
			require.NotEqual(t, string(raw), doc)
			data := b.create(t, "transcriptions", b.writeToken(t), doc)
			require.Equal(t, key, b.startedFor(t, data["id"].(string)).Options.Priority.PriorityKey)
		})
	}
}

func TestCreateWorkflowStartFailure(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.setFailStarts(2)

	// Accepting a job does not wait for Temporal: the start is retried
	// from the outbox until it is made.
	data := b.create(t, "transcriptions", b.writeToken(t), body(t, "transcriptions"))
	id := data["id"].(string)
	require.Equal(t, "pending", data["attributes"].(map[string]any)["status"])
	starts := b.started()
	require.Len(t, starts, 3, "two failed starts, then one that is made")
	for _, s := range starts {
		require.Equal(t, id, s.Options.ID)
		require.Equal(t, id, s.Input.JobID)
	}
	_, err := b.store.Jobs.GetJob(t.Context(), id)
	require.NoError(t, err)
	_, err = b.store.Jobs.GetJobStart(t.Context(), id)
	require.ErrorIs(t, err, store.ErrNotFound, "a made start leaves the outbox")
}

func TestIdempotencyKey(t *testing.T) {
	t.Parallel()

	t.Run("same key and request returns the first job", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		first := b.do(t, http.MethodPost, "/v1/translations", b.writeToken(t), body(t, "translations"), "Idempotency-Key", "order-17")
		first.requireStatus(t, http.StatusAccepted)
		// Another token of the same user, with only the scope it needs.
		second := b.do(t, http.MethodPost, "/v1/translations", b.token(t, "translations:write"), body(t, "translations"), "Idempotency-Key", "order-17")
		second.requireStatus(t, http.StatusAccepted)

		require.Equal(t, first.data(t)["id"], second.data(t)["id"])
		require.Equal(t, first.Header.Get("Location"), second.Header.Get("Location"))
		require.JSONEq(t, string(first.Body), string(second.Body))
		require.Len(t, b.started(), 1, "one workflow only")
	})

	t.Run("same key with another request is a conflict", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		first := b.create(t, "translations", b.writeToken(t), body(t, "translations"), "Idempotency-Key", "order-17", "X-Application", "shop")
		for name, retry := range map[string]struct {
			token   string
			body    any
			headers []string
		}{
			"another body": {b.writeToken(t), body(t, "translations", set("/data/attributes/input/content", "Other text")),
				[]string{"X-Application", "shop"}},
			"another X-Application": {b.writeToken(t), body(t, "translations"), []string{"X-Application", "billing"}},
			"no X-Application":      {b.writeToken(t), body(t, "translations"), nil},
			"another user":          {b.tokenFor(t, tenantA, "another-user", "translations:write"), body(t, "translations"), []string{"X-Application", "shop"}},
			"another effective user": {b.token(t, "translations:write", "admin:cross-tenant"), body(t, "translations"),
				[]string{"X-Application", "shop", "X-Effective-User-Id", "another-user"}},
		} {
			t.Run(name, func(t *testing.T) {
				r := b.do(t, http.MethodPost, "/v1/translations", retry.token, retry.body, append([]string{"Idempotency-Key", "order-17"}, retry.headers...)...)
				msg := requireError(t, r, http.StatusConflict, "IDEMPOTENCY_KEY_REUSED", "Idempotency-Key")
				require.Contains(t, msg, "different request")
				require.NotContains(t, string(r.Body), first["id"].(string))
			})
		}
		require.Len(t, b.started(), 1, "one workflow only")
		// The key still stands for the first request.
		again := b.create(t, "translations", b.writeToken(t), body(t, "translations"), "Idempotency-Key", "order-17", "X-Application", "shop")
		require.Equal(t, first["id"], again["id"])
	})

	t.Run("concurrent requests with the same key create one job", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		token := b.writeToken(t)
		responses := make([]*response, 8)
		var wg sync.WaitGroup
		for i := range responses {
			wg.Go(func() {
				responses[i] = b.do(t, http.MethodPost, "/v1/llm-tasks", token, body(t, "llm-tasks"), "Idempotency-Key", "burst")
			})
		}
		wg.Wait()
		var ids []string
		for _, r := range responses {
			r.requireStatus(t, http.StatusAccepted)
			ids = append(ids, r.data(t)["id"].(string))
		}
		for _, id := range ids {
			require.Equal(t, ids[0], id)
		}
		require.Equal(t, ids[0], b.startedFor(t, ids[0]).Options.ID, "one workflow only")
	})

	t.Run("another tenant with the same key gets a new job", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		first := b.create(t, "translations", b.writeToken(t), body(t, "translations"), "Idempotency-Key", "order-17")
		second := b.create(t, "translations", b.tokenFor(t, tenantB, userB, "translations:write"), body(t, "translations"), "Idempotency-Key", "order-17")
		require.NotEqual(t, first["id"], second["id"])
		require.Equal(t, tenantB, second["attributes"].(map[string]any)["tenant"])
		require.Len(t, b.started(), 2)
	})

	t.Run("another key gets a new job", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		first := b.create(t, "translations", b.writeToken(t), body(t, "translations"), "Idempotency-Key", "order-17")
		second := b.create(t, "translations", b.writeToken(t), body(t, "translations"), "Idempotency-Key", "order-18")
		third := b.create(t, "translations", b.writeToken(t), body(t, "translations"))
		require.NotEqual(t, first["id"], second["id"])
		require.NotEqual(t, second["id"], third["id"])
		require.Len(t, b.started(), 3)
	})

	t.Run("a job recorded by a concurrent request is the answer", func(t *testing.T) {
		t.Parallel()
		var late *lateJobStore
		b := setupJobOps(t, storetest.SQLite, func(cfg *jobops.Config) {
			late = &lateJobStore{JobStore: cfg.Jobs.(*store.JobStore)}
			cfg.Jobs = late
		}, nil)
		first := b.create(t, "llm-tasks", b.writeToken(t), body(t, "llm-tasks"), "Idempotency-Key", "race")
		// The retry finds the key claimed but, at first, no job: it records
		// its own under the claimed id, and finds the first one there.
		late.missNext.Store(true)
		second := b.create(t, "llm-tasks", b.writeToken(t), body(t, "llm-tasks"), "Idempotency-Key", "race")
		require.False(t, late.missNext.Load(), "the retry must have looked for the job")
		require.Equal(t, first, second)
		require.Len(t, b.started(), 1, "one workflow only")
	})

	t.Run("a retry after the first request died records the job under the claimed id", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		// The first request claimed the key and died before it recorded its job.
		raw, err := json.Marshal(body(t, "llm-tasks"))
		require.NoError(t, err)
		claimedID := uuid.Must(uuid.NewV7()).String()
		_, claimed, err := b.store.Jobs.ClaimIdempotencyKey(t.Context(), store.IdempotencyKey{Tenant: tenantA, Service: "llm-tasks", Key: "retry-me",
			Fingerprint: jobops.Fingerprint(userA, "", raw), JobID: claimedID, CreatedAt: fixedNow}, jobops.IdempotencyTTL)
		require.NoError(t, err)
		require.True(t, claimed)

		data := b.create(t, "llm-tasks", b.writeToken(t), raw, "Idempotency-Key", "retry-me")
		require.Equal(t, claimedID, data["id"])
		require.Equal(t, claimedID, b.startedFor(t, claimedID).Options.ID)
		_, err = b.store.Jobs.GetJob(t.Context(), claimedID)
		require.NoError(t, err)
	})

	t.Run("a key claimed before requests were fingerprinted matches any request", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		first := b.seed(t, jobs.Record{Service: "translations", Status: jobs.StatusPending})
		_, claimed, err := b.store.Jobs.ClaimIdempotencyKey(t.Context(), store.IdempotencyKey{Tenant: tenantA, Service: "translations", Key: "upgrade",
			JobID: first.ID, CreatedAt: fixedNow}, jobops.IdempotencyTTL)
		require.NoError(t, err)
		require.True(t, claimed)

		data := b.create(t, "translations", b.writeToken(t), body(t, "translations"), "Idempotency-Key", "upgrade")
		require.Equal(t, first.ID, data["id"])
		b.assertNoStarts(t)
	})

	t.Run("a rejected request does not use up the key", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		r := b.do(t, http.MethodPost, "/v1/transcriptions", b.writeToken(t),
			body(t, "transcriptions", del("/data/attributes/input/url")), "Idempotency-Key", "k1")
		requireError(t, r, http.StatusUnprocessableEntity, "VALIDATION_ERROR", "/data/attributes/input/url")
		data := b.create(t, "transcriptions", b.writeToken(t), body(t, "transcriptions"), "Idempotency-Key", "k1")
		require.Len(t, b.started(), 1)
		require.Equal(t, data["id"], b.started()[0].Input.JobID)
	})

	t.Run("the same key on another resource is its own", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		llm := b.create(t, "llm-tasks", b.writeToken(t), body(t, "llm-tasks"), "Idempotency-Key", "shared")
		// A token that may only create translations must never see the
		// llm-task job, nor its input.
		r := b.do(t, http.MethodPost, "/v1/translations", b.token(t, "translations:write"), body(t, "translations"), "Idempotency-Key", "shared")
		r.requireStatus(t, http.StatusAccepted)
		translation := r.data(t)
		require.NotEqual(t, llm["id"], translation["id"])
		require.Equal(t, "translation-job", translation["type"])
		require.NotContains(t, string(r.Body), "quick brown fox")
		require.Equal(t, "/v1/translations/"+translation["id"].(string), r.Header.Get("Location"))
		require.Len(t, b.started(), 2)

		// Each resource's key still stands for its own job.
		again := b.create(t, "llm-tasks", b.writeToken(t), body(t, "llm-tasks"), "Idempotency-Key", "shared")
		require.Equal(t, llm["id"], again["id"])
		again = b.create(t, "translations", b.writeToken(t), body(t, "translations"), "Idempotency-Key", "shared")
		require.Equal(t, translation["id"], again["id"])
		require.Len(t, b.started(), 2)
	})

	t.Run("too long", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		r := b.do(t, http.MethodPost, "/v1/llm-tasks", b.writeToken(t), body(t, "llm-tasks"), "Idempotency-Key", strings.Repeat("k", 256))
		requireError(t, r, http.StatusUnprocessableEntity, "VALIDATION_ERROR", "Idempotency-Key")
		b.assertNoStarts(t)
	})
}

// lateJobStore is a store whose next GetJob, once armed, misses: the job
// of a concurrent request is recorded just after it was looked for.
type lateJobStore struct {
	*store.JobStore
	missNext atomic.Bool
}

func (s *lateJobStore) GetJob(ctx context.Context, id string) (*jobs.Record, error) {
	if s.missNext.CompareAndSwap(true, false) {
		return nil, store.ErrNotFound
	}
	return s.JobStore.GetJob(ctx, id)
}

// keys lists a map's keys.
func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func toAny(list []string) []any {
	out := make([]any, len(list))
	for i, s := range list {
		out[i] = s
	}
	return out
}

// TestCreateAndReadOnPostgres runs the round trip through PostgreSQL:
// timestamps, JSON documents and idempotency keys must come back as they
// went in, as they do on SQLite.
func TestCreateAndReadOnPostgres(t *testing.T) {
	t.Parallel()
	b := setupWith(t, storetest.Postgres)
	eachResource(t, func(t *testing.T, res resource) {
		full := fullBodies[res.id]
		req := `{"data": {"type": "` + res.jobType + `", "attributes": {"input": ` + full.input + `, "options": ` + full.options + `,
			"provider": "` + full.provider + `"}, "meta": {"client": ` + clientMeta + `}}}`
		created := b.do(t, http.MethodPost, "/v1/"+res.id, b.writeToken(t), req, "Idempotency-Key", "pg-"+res.id)
		created.requireStatus(t, http.StatusAccepted)
		id := created.data(t)["id"].(string)
		require.Equal(t, fixedNowJSON, created.data(t)["attributes"].(map[string]any)["created_at"])

		got := b.do(t, http.MethodGet, jobPath(res.id, id), b.readToken(t), nil)
		got.requireStatus(t, http.StatusOK)
		require.JSONEq(t, string(created.Body), string(got.Body))

		again := b.do(t, http.MethodPost, "/v1/"+res.id, b.writeToken(t), req, "Idempotency-Key", "pg-"+res.id)
		again.requireStatus(t, http.StatusAccepted)
		require.JSONEq(t, string(created.Body), string(again.Body))
		b.startedFor(t, id) // exactly one start
	})
}

func TestCreateWithPolicyID(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	mk := func(tenant string, services ...jobs.ServiceID) string {
		p, err := b.store.Routing.CreatePolicy(ctx, policy.Policy{Tenant: tenant, Name: "p", Strategy: policy.StrategyPrice, Services: services,
			Providers: []policy.Entry{{ProviderID: "alpha", Priority: 1, Weight: 1}}})
		require.NoError(t, err)
		return p.ID
	}
	own := mk(tenantA, jobs.Transcriptions)
	global := mk("", jobs.Transcriptions)
	foreign := mk("globex", jobs.Transcriptions)
	otherService := mk(tenantA, jobs.LLMTasks)
	token := b.writeToken(t)

	for name, id := range map[string]string{"own": own, "global": global} {
		r := b.do(t, http.MethodPost, "/v1/transcriptions", token, body(t, "transcriptions", set(ptrAttrs+"/policy_id", id)))
		r.requireStatus(t, http.StatusAccepted)
		require.Equal(t, id, b.startedFor(t, r.data(t)["id"].(string)).Input.PolicyID, name)
	}
	r := b.do(t, http.MethodPost, "/v1/transcriptions", token, body(t, "transcriptions", set(ptrAttrs+"/policy_id", foreign)))
	requireError(t, r, http.StatusUnprocessableEntity, "UNKNOWN_POLICY", ptrAttrs+"/policy_id")
	r = b.do(t, http.MethodPost, "/v1/transcriptions", token, body(t, "transcriptions", set(ptrAttrs+"/policy_id", otherService)))
	requireError(t, r, http.StatusUnprocessableEntity, "VALIDATION_ERROR", ptrAttrs+"/policy_id")
}

func TestSizeLimits(t *testing.T) {
	t.Parallel()
	b := setup(t)
	token := b.writeToken(t)
	big := strings.Repeat("x", api.MaxInputBytes)
	r := b.do(t, http.MethodPost, "/v1/llm-tasks", token, body(t, "llm-tasks", set(ptrAttrs+"/input/text", big)))
	requireError(t, r, http.StatusUnprocessableEntity, "VALIDATION_ERROR", ptrAttrs+"/input")
	r = b.do(t, http.MethodPost, "/v1/llm-tasks", token, body(t, "llm-tasks", set(ptrAttrs+"/input/text", big[:api.MaxInputBytes-1024])))
	r.requireStatus(t, http.StatusAccepted)

	r = b.do(t, http.MethodPost, "/v1/llm-tasks", token, body(t, "llm-tasks", set("/data/meta/client", map[string]any{"blob": strings.Repeat("y", api.MaxClientMetaBytes)})))
	requireError(t, r, http.StatusUnprocessableEntity, "VALIDATION_ERROR", "/data/meta/client")
}

// TestWebhookSizeLimits: the webhook travels in the workflow input and
// every webhook event, so it is bounded at create (docs/api.md).
func TestWebhookSizeLimits(t *testing.T) {
	t.Parallel()
	b := setup(t)
	token := b.writeToken(t)
	const hook = ptrAttrs + "/webhook"
	create := func(t *testing.T, url string, headers map[string]any) *response {
		t.Helper()
		w := map[string]any{"url": url}
		if headers != nil {
			w["headers"] = headers
		}
		return b.do(t, http.MethodPost, "/v1/llm-tasks", token, body(t, "llm-tasks", set(hook, w)))
	}
	okURL := "https://hooks.example.com/cb"
	manyHeaders := func(n int) map[string]any {
		h := make(map[string]any, n)
		for i := range n {
			h[fmt.Sprintf("X-H%06d", i)] = "v"
		}
		return h
	}
	// urlOf is a URL of exactly n bytes.
	urlOf := func(n int) string { return okURL + "/" + strings.Repeat("p", n-len(okURL)-1) }

	value := strings.Repeat("v", api.MaxWebhookHeaderValueBytes)
	longName := "X-" + strings.Repeat("n", api.MaxWebhookHeaderNameBytes-1)
	for _, tc := range []struct {
		name    string
		url     string
		headers map[string]any
		pointer string
	}{
		{"3 MB url", urlOf(3 << 20), nil, hook + "/url"},
		{"url one byte over", urlOf(api.MaxWebhookURLBytes + 1), nil, hook + "/url"},
		{"300k headers", okURL, manyHeaders(300_000), hook + "/headers"},
		{"one header too many", okURL, manyHeaders(api.MaxWebhookHeaders + 1), hook + "/headers"},
		{"3 MB header value", okURL, map[string]any{"Authorization": "t", "X-Big": strings.Repeat("v", 3<<20)}, hook + "/headers/X-Big"},
		{"header value one byte over", okURL, map[string]any{"X-Big": value + "v"}, hook + "/headers/X-Big"},
		{"header name one byte over", okURL, map[string]any{longName: "v"}, hook + "/headers/" + longName},
		// Each header within its limits, together over the total.
		{"headers over the total", okURL, map[string]any{"X-A": value, "X-B": value}, hook + "/headers"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			requireError(t, create(t, tc.url, tc.headers), http.StatusUnprocessableEntity, "VALIDATION_ERROR", tc.pointer)
		})
	}

	// At the limits, accepted and handed to the workflow whole.
	accepted := func(url string, headers map[string]any) {
		t.Helper()
		r := create(t, url, headers)
		r.requireStatus(t, http.StatusAccepted)
		in := b.startedFor(t, r.data(t)["id"].(string)).Input
		require.NotNil(t, in.Webhook)
		require.Equal(t, url, in.Webhook.URL)
		require.Len(t, in.Webhook.Headers, len(headers))
	}
	accepted(urlOf(api.MaxWebhookURLBytes), nil)
	accepted(okURL, manyHeaders(api.MaxWebhookHeaders))
	name := "X-" + strings.Repeat("n", api.MaxWebhookHeaderNameBytes-2)
	rest := api.MaxWebhookHeadersBytes - len(name) - api.MaxWebhookHeaderValueBytes - len("X-B")
	accepted(okURL, map[string]any{name: value, "X-B": strings.Repeat("v", rest)})
}

func TestWebhookHeaderValueErrorNamesTheHeader(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.do(t, http.MethodPost, "/v1/llm-tasks", b.writeToken(t), body(t, "llm-tasks",
		set(ptrAttrs+"/webhook", map[string]any{"url": "https://hooks.test/x", "headers": map[string]any{"X-Count": 1}})))
	requireError(t, r, http.StatusUnprocessableEntity, "VALIDATION_ERROR", ptrAttrs+"/webhook/headers/X-Count")
}

func TestExplicitProviderAtItsLimitIs429(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	token := b.writeToken(t)
	// alpha publishes 60 video-analysis requests a minute; routing used them.
	for range 60 {
		ok, err := b.store.Routing.ReserveRate(ctx, "alpha", "video-analyses", 60, 5000, fixedNow)
		require.NoError(t, err)
		require.True(t, ok)
	}
	r := b.do(t, http.MethodPost, "/v1/video-analyses", token, body(t, "video-analyses", set(ptrAttrs+"/provider", "alpha")))
	requireError(t, r, http.StatusTooManyRequests, "RATE_LIMITED", ptrAttrs+"/provider")
	require.Equal(t, "53", r.Header.Get("Retry-After"), "seconds until the minute's window ends")

	// Without a named provider the gateway routes around it.
	r = b.do(t, http.MethodPost, "/v1/video-analyses", token, body(t, "video-analyses"))
	r.requireStatus(t, http.StatusAccepted)
	// Another service of the same provider is unaffected.
	r = b.do(t, http.MethodPost, "/v1/llm-tasks", token, body(t, "llm-tasks", set(ptrAttrs+"/provider", "alpha")))
	r.requireStatus(t, http.StatusAccepted)
}

// TestJobsThatCouldNotStartAreRefused: a job whose workflow input would
// pass Temporal's payload limit is refused at create, not accepted to fail
// later: options have a limit of their own, and the input is judged as
// encoded for the workflow, where <, > and & take six bytes each.
func TestJobsThatCouldNotStartAreRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	token := b.writeToken(t)
	// create sends < as is, as a client's encoder may.
	create := func(t *testing.T, edits ...edit) *response {
		t.Helper()
		var raw bytes.Buffer
		enc := json.NewEncoder(&raw)
		enc.SetEscapeHTML(false)
		require.NoError(t, enc.Encode(body(t, "translations", edits...)))
		return b.do(t, http.MethodPost, "/v1/translations", token, raw.Bytes())
	}

	r := b.do(t, http.MethodPost, "/v1/llm-tasks", token, body(t, "llm-tasks", set(ptrAttrs+"/options/model", strings.Repeat("m", api.MaxOptionsBytes))))
	requireError(t, r, http.StatusUnprocessableEntity, "VALIDATION_ERROR", ptrAttrs+"/options")

	// 500 KiB of '<' is within the input limit, but 3 MB once encoded.
	r = create(t, set(ptrAttrs+"/input/content", strings.Repeat("<", 500<<10)))
	requireError(t, r, http.StatusUnprocessableEntity, "VALIDATION_ERROR", ptrAttrs+"/input")
	require.Contains(t, r.object(t)["error"].(map[string]any)["message"], "once encoded")

	// The same length of plain text is accepted and reaches its workflow.
	r = create(t, set(ptrAttrs+"/input/content", strings.Repeat("a", 500<<10)))
	r.requireStatus(t, http.StatusAccepted)
	require.NotNil(t, b.startedFor(t, r.data(t)["id"].(string)).Input)

	// A refused request uses up no Idempotency-Key: the corrected request
	// with the same key is accepted.
	keyed := func(content string) *response {
		var raw bytes.Buffer
		enc := json.NewEncoder(&raw)
		enc.SetEscapeHTML(false)
		require.NoError(t, enc.Encode(body(t, "translations", set(ptrAttrs+"/input/content", content))))
		return b.do(t, http.MethodPost, "/v1/translations", token, raw.Bytes(), "Idempotency-Key", "too-big-then-fixed")
	}
	requireError(t, keyed(strings.Repeat("<", 500<<10)), http.StatusUnprocessableEntity, "VALIDATION_ERROR", ptrAttrs+"/input")
	keyed("fixed").requireStatus(t, http.StatusAccepted)
}

// TestHeadersGoCannotSendAreRefused: a webhook header Go's HTTP client
// would refuse to send would fail every delivery for 24 h; an
// Idempotency-Key that is not printable ASCII would reach the store.
func TestHeadersGoCannotSendAreRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	token := b.writeToken(t)
	const headers = ptrAttrs + "/webhook/headers"
	for _, tc := range []struct {
		name, header, value string
	}{
		{"non-ASCII name", "X-Ä", "v"},
		{"separator in name", "X(y)", "v"},
		{"NUL in value", "X-A", "a\x00b"},
		{"DEL in value", "X-A", "a\x7fb"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := b.do(t, http.MethodPost, "/v1/llm-tasks", token, body(t, "llm-tasks",
				set(ptrAttrs+"/webhook", map[string]any{"url": "https://hooks.test/x", "headers": map[string]any{tc.header: tc.value}})))
			requireError(t, r, http.StatusUnprocessableEntity, "VALIDATION_ERROR", headers+"/"+tc.header)
		})
	}
	for _, key := range []string{"k\xff", "ключ"} {
		r := b.do(t, http.MethodPost, "/v1/llm-tasks", token, body(t, "llm-tasks"), "Idempotency-Key", key)
		requireError(t, r, http.StatusUnprocessableEntity, "VALIDATION_ERROR", "header Idempotency-Key")
	}
	r := b.do(t, http.MethodPost, "/v1/llm-tasks", token, body(t, "llm-tasks"), "Idempotency-Key", "order-17 retry#2")
	r.requireStatus(t, http.StatusAccepted)
}

// TestDuplicateMembersAreRefused: a member named twice would be read as its
// last value while the raw text, both values included, is stored and sent
// on; every body is refused with the object named.
func TestDuplicateMembersAreRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.do(t, http.MethodPost, "/v1/llm-tasks", b.writeToken(t),
		`{"data": {"type": "llm-task-job", "attributes": {"input": {"type": "text", "text": "x", "prompt": "y"},
		  "options": {"creativity": "creative", "creativity": "precise"}}}}`)
	msg := requireError(t, r, http.StatusUnprocessableEntity, "VALIDATION_ERROR", ptrAttrs+"/options")
	require.Contains(t, msg, `has the member "creativity" more than once`)

	r = b.do(t, http.MethodPost, "/v1/llm-tasks", b.writeToken(t),
		`{"data": {"type": "llm-task-job", "type": "llm-task-job", "attributes": {"input": {"type": "text", "text": "x", "prompt": "y"}}}}`)
	requireError(t, r, http.StatusUnprocessableEntity, "VALIDATION_ERROR", "/data")
}

// fixedBacklog counts the outbox as the test says.
type fixedBacklog map[string]int64

func (f fixedBacklog) JobStartBacklog(context.Context) (map[string]int64, error) { return f, nil }

func TestCreatesPastTheBacklogsBoundAre429(t *testing.T) {
	t.Parallel()
	guard := &jobops.BacklogGuard{Store: fixedBacklog{tenantA: 5, tenantB: 1}, Limits: jobops.BacklogLimits{PerTenant: 5, Total: 100}}
	guard.Refresh(context.Background())
	b := setupJobOps(t, storetest.SQLite, func(cfg *jobops.Config) { cfg.Backlog = guard }, nil)

	r := b.do(t, http.MethodPost, "/v1/llm-tasks", b.writeToken(t), body(t, "llm-tasks"))
	msg := requireError(t, r, http.StatusTooManyRequests, "RATE_LIMITED")
	require.Contains(t, msg, "tenant acme has 5 accepted jobs waiting to start")
	require.Equal(t, "1", r.Header.Get("Retry-After"))

	r = b.do(t, http.MethodPost, "/v1/llm-tasks", b.tokenFor(t, tenantB, userB, "llm-tasks:write"), body(t, "llm-tasks"))
	r.requireStatus(t, http.StatusAccepted) // another tenant's bound is its own
}

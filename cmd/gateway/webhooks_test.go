package main

import (
	"context"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/ai-job-gateway/gateway/internal/media/mediatest"
	"github.com/ai-job-gateway/gateway/internal/webhooksign"
	"github.com/ai-job-gateway/gateway/store/storetest"
)

func TestNetworkFlags(t *testing.T) {
	// Not parallel: it sets environment variables.
	for _, command := range []string{"dev", "serve", "worker"} {
		cfg := parse(t, command)
		require.Empty(t, cfg.WebhookSigningKey, command)
		require.False(t, cfg.AllowPrivateNetworks, command)
	}
	for _, command := range []string{"serve", "worker"} {
		require.True(t, parse(t, command, "--allow-private-networks").AllowPrivateNetworks, command)
	}
	fs := flag.NewFlagSet("dev", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var cfg config
	cfg.registerFlags(fs, "dev")
	require.Error(t, fs.Parse([]string{"--allow-private-networks"}), "dev allows private networks anyway")

	key := webhooksign.EncodeSecretKey(make([]byte, 32))
	t.Setenv("GATEWAY_WEBHOOK_SIGNING_KEY", key)
	t.Setenv("GATEWAY_ALLOW_PRIVATE_NETWORKS", "true")
	require.Equal(t, key, parse(t, "worker").WebhookSigningKey, "environment")
	require.True(t, parse(t, "worker").AllowPrivateNetworks)
	other := webhooksign.EncodeSecretKey([]byte(strings.Repeat("k", 32)))
	require.Equal(t, other, parse(t, "serve", "--webhook-signing-key", other).WebhookSigningKey, "flag over environment")

	// -h must not print the secret taken from the environment.
	var usage strings.Builder
	fs = flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(&usage)
	cfg = config{}
	cfg.registerFlags(fs, "serve")
	fs.PrintDefaults()
	require.Contains(t, usage.String(), "-webhook-signing-key")
	require.NotContains(t, usage.String(), key)
}

func TestValidateSigningKey(t *testing.T) {
	t.Parallel()
	cfg := config{LogLevel: "info", StartConcurrency: 1, DatabaseMaxConns: 4, LinkTTL: time.Hour, WebhookSigningKey: "whsk_tooshort"}
	require.ErrorContains(t, cfg.validate("dev"), "--webhook-signing-key / GATEWAY_WEBHOOK_SIGNING_KEY")
	cfg.WebhookSigningKey = webhooksign.EncodeSecretKey(make([]byte, 32))
	require.NoError(t, cfg.validate("dev"))
}

func TestWebhookSignerPrefersTheOperatorsKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.SQLite(t)

	stored, err := webhookSigner(ctx, config{}, st)
	require.NoError(t, err)
	again, err := webhookSigner(ctx, config{}, st)
	require.NoError(t, err)
	require.Equal(t, stored.PublicKey(), again.PublicKey(), "the stored key is reused")

	seed := []byte(strings.Repeat("s", 32))
	operator, err := webhookSigner(ctx, config{WebhookSigningKey: webhooksign.EncodeSecretKey(seed)}, st)
	require.NoError(t, err)
	want, err := webhooksign.NewSigner(seed)
	require.NoError(t, err)
	require.Equal(t, want.PublicKey(), operator.PublicKey())
	require.NotEqual(t, stored.PublicKey(), operator.PublicKey())
}

// hookCall is one webhook request a test receiver got.
type hookCall struct {
	header http.Header
	body   []byte
	event  string
}

// progress is the job's progress in a delivered event.
func (c hookCall) progress(t *testing.T) int {
	t.Helper()
	var doc struct {
		Data struct {
			Attributes struct {
				Progress int `json:"progress"`
			} `json:"attributes"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal(c.body, &doc))
	return doc.Data.Attributes.Progress
}

// hookReceiver answers webhook requests with the statuses of answer, in
// turn (the last one repeats), and remembers them.
type hookReceiver struct {
	*httptest.Server
	mu     sync.Mutex
	calls  []hookCall
	answer []int
}

func newHookReceiver(t *testing.T, answer ...int) *hookReceiver {
	t.Helper()
	r := &hookReceiver{answer: answer}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		var doc struct {
			Event string `json:"event"`
		}
		_ = json.Unmarshal(body, &doc)
		r.mu.Lock()
		status := r.answer[min(len(r.calls), len(r.answer)-1)]
		r.calls = append(r.calls, hookCall{header: req.Header.Clone(), body: body, event: doc.Event})
		r.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *hookReceiver) received() []hookCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]hookCall(nil), r.calls...)
}

// waitForEvent waits until the receiver got event.
func (r *hookReceiver) waitForEvent(t *testing.T, event string, timeout time.Duration) []hookCall {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		calls := r.received()
		for _, c := range calls {
			if c.event == event {
				return calls
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no %s event within %s; got %d requests", event, timeout, len(r.received()))
	return nil
}

// waitForCalls waits until the receiver got n requests.
func (r *hookReceiver) waitForCalls(t *testing.T, n int, timeout time.Duration) []hookCall {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if calls := r.received(); len(calls) >= n {
			return calls
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%d requests within %s, want %d", len(r.received()), timeout, n)
	return nil
}

// publicKey fetches the webhook public key as a receiver would: no token.
func (g *gateway) publicKey() []byte {
	g.t.Helper()
	resp, err := http.Get(g.url("/v1/webhooks/public-key"))
	require.NoError(g.t, err)
	defer resp.Body.Close()
	require.Equal(g.t, http.StatusOK, resp.StatusCode)
	var doc struct {
		Data struct {
			Attributes struct {
				PublicKey string `json:"public_key"`
			} `json:"attributes"`
		} `json:"data"`
	}
	require.NoError(g.t, json.NewDecoder(resp.Body).Decode(&doc))
	pub, err := webhooksign.DecodePublicKey(doc.Data.Attributes.PublicKey)
	require.NoError(g.t, err)
	return pub
}

type deliveryDoc struct {
	Data []struct {
		Attributes struct {
			Event      string `json:"event"`
			MessageID  string `json:"message_id"`
			Attempt    int    `json:"attempt"`
			StatusCode int    `json:"status_code"`
			Error      string `json:"error"`
		} `json:"attributes"`
	} `json:"data"`
}

// deliveries reads a job's delivery attempts once n are recorded (each is
// recorded just after the receiver answered).
func (g *gateway) deliveries(resource, id string, n int) deliveryDoc {
	g.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		status, b, _ := g.do(http.MethodGet, "/v1/"+resource+"/"+id+"/webhook-deliveries", "")
		require.Equal(g.t, http.StatusOK, status, "%s", b)
		var doc deliveryDoc
		require.NoError(g.t, json.Unmarshal(b, &doc))
		if len(doc.Data) >= n || time.Now().After(deadline) {
			return doc
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestWebhooksEndToEnd(t *testing.T) {
	t.Parallel()
	mediatest.RequireTools(t) // its transcriptions probe their media
	g := newGateway(t, "")
	pub := g.publicKey()

	t.Run("delivered in order, signed, with the client's headers", func(t *testing.T) {
		t.Parallel()
		recv := newHookReceiver(t, http.StatusNoContent)
		job := g.create("transcriptions", `{"data":{"type":"transcription-job","attributes":{
			"input":{"type":"audio","url":"`+g.url("/dev/samples/tone.wav")+`"},
			"webhook":{"url":"`+recv.URL+`/hooks","headers":{"X-Hook-Token":"s3cret"}}},
			"meta":{"client":{"ref":"w-1"}}}}`)
		calls := recv.waitForEvent(t, "transcription.completed", 60*time.Second)

		require.Equal(t, "transcription.progress", calls[0].event, "entering processing is the first event")
		last := -10
		for i, c := range calls[:len(calls)-1] {
			require.Equal(t, "transcription.progress", c.event)
			progress := c.progress(t)
			if i == 0 {
				require.Zero(t, progress)
			}
			require.GreaterOrEqual(t, progress, last+10, "progress events advance by 10 points or more")
			last = progress
		}
		require.Equal(t, "transcription.completed", calls[len(calls)-1].event, "completed is the last event")
		seen := map[string]bool{}
		for _, c := range calls {
			h := c.header
			require.Equal(t, "s3cret", h.Get("X-Hook-Token"))
			require.NoError(t, webhooksign.Verify(pub, h.Get("webhook-id"), h.Get("webhook-timestamp"), c.body, h.Get("webhook-signature"), time.Now(), 0))
			require.False(t, seen[h.Get("webhook-id")], "every event has its own webhook-id")
			seen[h.Get("webhook-id")] = true
			var doc struct {
				Data struct {
					ID   string                     `json:"id"`
					Meta map[string]json.RawMessage `json:"meta"`
				} `json:"data"`
			}
			require.NoError(t, json.Unmarshal(c.body, &doc))
			require.Equal(t, job.Data.ID, doc.Data.ID)
			require.JSONEq(t, `{"client":{"ref":"w-1"}}`, string(mustJSON(t, doc.Data.Meta)))
			require.NotContains(t, string(c.body), "s3cret")
		}

		deliveries := g.deliveries("transcriptions", job.Data.ID, len(calls))
		require.Len(t, deliveries.Data, len(calls))
		for i, d := range deliveries.Data {
			require.Equal(t, calls[i].event, d.Attributes.Event)
			require.Equal(t, calls[i].header.Get("webhook-id"), d.Attributes.MessageID)
			require.Equal(t, http.StatusNoContent, d.Attributes.StatusCode)
			require.Equal(t, 1, d.Attributes.Attempt)
		}
	})

	t.Run("retried after a failure", func(t *testing.T) {
		t.Parallel()
		recv := newHookReceiver(t, http.StatusServiceUnavailable, http.StatusOK)
		job := g.create("llm-tasks", `{"data":{"type":"llm-task-job","attributes":{
			"input":{"type":"text","text":"Webhooks.","prompt":"Summarise."},
			"webhook":{"url":"`+recv.URL+`"}}}}`)
		calls := recv.waitForCalls(t, 2, 60*time.Second)
		require.Len(t, calls, 2)
		require.Equal(t, "llm-task.completed", calls[0].event, "llm-tasks send no progress events")
		require.Equal(t, calls[0].header.Get("webhook-id"), calls[1].header.Get("webhook-id"))
		require.Equal(t, calls[0].body, calls[1].body)

		deliveries := g.deliveries("llm-tasks", job.Data.ID, 2)
		require.Len(t, deliveries.Data, 2)
		require.Equal(t, 1, deliveries.Data[0].Attributes.Attempt)
		require.Equal(t, http.StatusServiceUnavailable, deliveries.Data[0].Attributes.StatusCode)
		require.Contains(t, deliveries.Data[0].Attributes.Error, "503")
		require.Equal(t, 2, deliveries.Data[1].Attributes.Attempt)
		require.Equal(t, http.StatusOK, deliveries.Data[1].Attributes.StatusCode)
	})

	t.Run("410 Gone stops delivery", func(t *testing.T) {
		t.Parallel()
		recv := newHookReceiver(t, http.StatusGone)
		job := g.create("translations", `{"data":{"type":"translation-job","attributes":{
			"input":{"type":"text","content":"Hello","target_language":"de"},
			"webhook":{"url":"`+recv.URL+`"}}}}`)
		g.waitFor("translations", job.Data.ID, 60*time.Second, terminal)
		time.Sleep(2 * time.Second) // time for (wrong) further deliveries
		calls := recv.received()
		require.Len(t, calls, 1, "nothing is sent after a 410")
		deliveries := g.deliveries("translations", job.Data.ID, 1)
		require.Len(t, deliveries.Data, 1)
		require.Equal(t, http.StatusGone, deliveries.Data[0].Attributes.StatusCode)
	})
}

// accepted is the receiver's accepted (2xx) requests, one per webhook-id,
// in arrival order.
func (r *hookReceiver) accepted() []hookCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := map[string]bool{}
	var out []hookCall
	for i, c := range r.calls {
		status := r.answer[min(i, len(r.answer)-1)]
		id := c.header.Get("webhook-id")
		if status >= 200 && status < 300 && !seen[id] {
			seen[id] = true
			out = append(out, c)
		}
	}
	return out
}

// setAnswer changes what the receiver answers from now on.
func (r *hookReceiver) setAnswer(status int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for len(r.answer) < len(r.calls) {
		r.answer = append(r.answer, r.answer[len(r.answer)-1])
	}
	r.answer = append(r.answer[:len(r.calls)], status)
}

// requireOrderedLifecycle checks a job's accepted events: progress events
// first (from 0, rising), then exactly one completed event.
func requireOrderedLifecycle(t *testing.T, calls []hookCall, prefix string, withProgress bool) {
	t.Helper()
	require.NotEmpty(t, calls)
	require.Equal(t, prefix+".completed", calls[len(calls)-1].event, "completed comes last")
	last := -1
	for _, c := range calls[:len(calls)-1] {
		require.Equal(t, prefix+".progress", c.event)
		progress := c.progress(t)
		require.Greater(t, progress, last)
		last = progress
	}
	if withProgress {
		require.Greater(t, len(calls), 1, "a progress event on entering processing")
	} else {
		require.Len(t, calls, 1)
	}
}

func TestWebhooksEveryServiceAndFailingReceivers(t *testing.T) {
	t.Parallel()
	mediatest.RequireTools(t) // its transcriptions probe their media
	g := newGateway(t, "")
	pub := g.publicKey()
	wav := g.url("/dev/samples/tone.wav")
	jobs := map[string]struct{ body, prefix string }{
		"transcriptions": {`"input":{"type":"audio","url":"` + wav + `"}`, "transcription"},
		"translations":   {`"input":{"type":"text","content":"Hello","target_language":"de"}`, "translation"},
		"video-analyses": {`"input":{"url":"` + g.url("/dev/samples/speech.mp4") + `","features":["labels"]}`, "video-analysis"},
		"llm-tasks":      {`"input":{"type":"text","text":"x","prompt":"y"}`, "llm-task"},
	}
	create := func(resource, url string) string {
		j := jobs[resource]
		jobType := map[string]string{"transcriptions": "transcription-job", "translations": "translation-job",
			"video-analyses": "video-analysis-job", "llm-tasks": "llm-task-job"}[resource]
		return g.create(resource, `{"data":{"type":"`+jobType+`","attributes":{`+j.body+`,"webhook":{"url":"`+url+`"}}}}`).Data.ID
	}

	t.Run("every service, in order, signed", func(t *testing.T) {
		t.Parallel()
		for resource, j := range jobs {
			recv := newHookReceiver(t, http.StatusOK)
			create(resource, recv.URL)
			recv.waitForEvent(t, j.prefix+".completed", 60*time.Second)
			calls := recv.accepted()
			requireOrderedLifecycle(t, calls, j.prefix, resource != "llm-tasks")
			for _, c := range calls {
				require.NoError(t, webhooksign.Verify(pub, c.header.Get("webhook-id"), c.header.Get("webhook-timestamp"), c.body, c.header.Get("webhook-signature"), time.Now(), 0))
			}
		}
	})

	t.Run("a receiver answering 500 twice gets every event in order", func(t *testing.T) {
		t.Parallel()
		recv := newHookReceiver(t, http.StatusInternalServerError, http.StatusInternalServerError, http.StatusOK)
		create("transcriptions", recv.URL)
		recv.waitForEvent(t, "transcription.completed", 60*time.Second)
		require.GreaterOrEqual(t, len(recv.received()), 3)
		requireOrderedLifecycle(t, recv.accepted(), "transcription", true)
	})

	t.Run("retries of a large job keep the history small", func(t *testing.T) {
		t.Parallel()
		recv := newHookReceiver(t, http.StatusServiceUnavailable)
		content := strings.Repeat("Hello. ", 300<<10/7)
		id := g.create("translations", `{"data":{"type":"translation-job","attributes":{"input":{"type":"text","content":"`+
			content+`","target_language":"de"},"webhook":{"url":"`+recv.URL+`"}}}}`).Data.ID
		calls := recv.waitForCalls(t, 4, 60*time.Second)
		for _, c := range calls[:4] {
			require.Equal(t, "translation.progress", c.event, "the first event is retried")
			require.Equal(t, calls[0].header.Get("webhook-id"), c.header.Get("webhook-id"))
			require.Equal(t, calls[0].body, c.body, "every attempt sends the same body")
		}
		require.Contains(t, string(calls[0].body), content, "the body has the job's input")

		scheduled, attempts := 0, 0
		for _, event := range historyOf(context.Background(), t, temporalClient(t, g.temporal), id) {
			if a := event.GetActivityTaskScheduledEventAttributes(); a != nil && strings.HasPrefix(a.GetActivityType().GetName(), "DeliverWebhook") {
				scheduled += proto.Size(a.GetInput())
				attempts++
			}
		}
		require.GreaterOrEqual(t, attempts, 4)
		require.Less(t, scheduled, attempts*4<<10, "%d attempts hold %d bytes of a %d-byte body", attempts, scheduled, len(calls[0].body))
	})

	t.Run("a receiver down for the whole job does not delay it", func(t *testing.T) {
		t.Parallel()
		recv := newHookReceiver(t, http.StatusServiceUnavailable)
		id := create("translations", recv.URL)
		start := time.Now()
		done := g.waitFor("translations", id, 30*time.Second, terminal)
		require.Equal(t, "completed", done.Data.Attributes.Status)
		require.Less(t, time.Since(start), 15*time.Second)
		require.Empty(t, recv.accepted())
	})
}

func TestWebhookRetriesSurviveARestart(t *testing.T) {
	t.Parallel()
	mediatest.RequireTools(t) // its transcriptions probe their media
	g := newGateway(t, "")
	recv := newHookReceiver(t, http.StatusInternalServerError)
	job := g.create("transcriptions", `{"data":{"type":"transcription-job","attributes":{"input":{"type":"audio","url":"`+
		g.url("/dev/samples/tone.wav")+`"},"webhook":{"url":"`+recv.URL+`"}}}}`)
	g.waitFor("transcriptions", job.Data.ID, 30*time.Second, terminal)
	recv.waitForCalls(t, 2, 30*time.Second) // failing, and in a retry's backoff

	g.kill()
	recv.setAnswer(http.StatusOK)
	g.start()

	calls := recv.waitForEvent(t, "transcription.completed", 90*time.Second)
	require.NotEmpty(t, calls)
	requireOrderedLifecycle(t, recv.accepted(), "transcription", true)
}

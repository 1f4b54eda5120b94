package main

// End-to-end tests: they build the gateway binary, run `gateway dev` (with
// its embedded Temporal server, on SQLite and on PostgreSQL) and drive it
// over HTTP like a client would, including killing the process mid-job.

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"

	"github.com/ai-job-gateway/gateway/cmd/gateway/internal/devtemporal"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/internal/media/mediatest"
	"github.com/ai-job-gateway/gateway/providers/providertest"
	"github.com/ai-job-gateway/gateway/store"
	"github.com/ai-job-gateway/gateway/store/storetest"
)

var gatewayBin string

func TestMain(m *testing.M) {
	code := func() int {
		flag.Parse()
		if testing.Short() {
			return m.Run()
		}
		dir, err := os.MkdirTemp("", "gateway-e2e")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		gatewayBin = filepath.Join(dir, "gateway")
		build := exec.Command("go", "build", "-o", gatewayBin, ".")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "build gateway:", err)
			return 1
		}
		return m.Run()
	}()
	os.Exit(code)
}

const allJobScopes = "transcriptions:read transcriptions:write translations:read translations:write " +
	"video-analyses:read video-analyses:write llm-tasks:read llm-tasks:write"

// gateway is one `gateway dev` process.
type gateway struct {
	t *testing.T
	// bin is the gateway binary (gatewayBin unless a test built another).
	bin     string
	dataDir string
	env     []string
	listen  string
	ui      string
	args    []string
	cmd     *exec.Cmd
	logs    *bytes.Buffer
	token   string

	// temporal is the embedded Temporal frontend's address.
	temporal string
	// exited is closed when the process has exited.
	exited chan struct{}
}

func newGateway(t *testing.T, databaseURL string, extraArgs ...string) *gateway {
	t.Helper()
	return newGatewayOn(t, databaseURL, "", extraArgs...)
}

// newGatewayOn starts `gateway dev` with the embedded Temporal frontend on
// temporalAddr ("" for any free port).
func newGatewayOn(t *testing.T, databaseURL, temporalAddr string, extraArgs ...string) *gateway {
	t.Helper()
	return newGatewayEnv(t, databaseURL, temporalAddr, nil, extraArgs...)
}

// newGatewayEnv is newGatewayOn with env added to the process's
// environment (a later value of a variable wins).
func newGatewayEnv(t *testing.T, databaseURL, temporalAddr string, env []string, extraArgs ...string) *gateway {
	t.Helper()
	return newGatewayBin(t, gatewayBin, databaseURL, temporalAddr, env, extraArgs...)
}

// newGatewayBin is newGatewayEnv running the gateway binary bin.
func newGatewayBin(t *testing.T, bin, databaseURL, temporalAddr string, env []string, extraArgs ...string) *gateway {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test: runs the embedded Temporal server")
	}
	g := &gateway{t: t, bin: bin, dataDir: t.TempDir()}
	g.env = append(append(os.Environ(), "DATABASE_URL="+databaseURL), env...)
	// A port picked free may be taken by another test's process before
	// this one binds it: then pick others, a few times.
	for try := 1; ; try++ {
		g.listen, g.ui, g.temporal = freeAddr(t), freeAddr(t), temporalAddr
		if g.temporal == "" {
			g.temporal = freeAddr(t)
		}
		g.args = append([]string{"dev", "--data-dir", g.dataDir, "--listen", g.listen,
			"--temporal-dev-listen", g.temporal, "--temporal-ui-listen", g.ui}, extraArgs...)
		ready, output := g.tryStart()
		if ready {
			break
		}
		if try == 3 || !strings.Contains(output, "address already in use") {
			t.Fatalf("gateway dev did not become ready; its output:\n%s", output)
		}
	}
	t.Cleanup(g.stop)
	g.token = g.mint("acme", allJobScopes)
	return g
}

func freeAddr(t *testing.T) string {
	t.Helper()
	port, err := devtemporal.FreePort("127.0.0.1")
	require.NoError(t, err)
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}

// start starts the process again on its addresses. While it was down,
// another test's process may have taken its UI or API port: then that
// address alone is picked again, a few times.
func (g *gateway) start() {
	g.t.Helper()
	for try := 1; ; try++ {
		ready, output := g.tryStart()
		if ready {
			return
		}
		taken := false
		if try < 3 && strings.Contains(output, "address already in use") {
			for _, addr := range []*string{&g.ui, &g.listen} {
				if strings.Contains(output, *addr) {
					g.replaceAddr(addr)
					taken = true
				}
			}
		}
		if !taken {
			g.t.Fatalf("gateway dev did not become ready; its output:\n%s", output)
		}
	}
}

// replaceAddr picks a free address for *addr, in the arguments too.
func (g *gateway) replaceAddr(addr *string) {
	fresh := freeAddr(g.t)
	for i, arg := range g.args {
		if arg == *addr {
			g.args[i] = fresh
		}
	}
	*addr = fresh
}

// tryStart starts the process and waits until it is ready (true), or has
// exited or not become ready in 90 s (false, with its output).
func (g *gateway) tryStart() (bool, string) {
	g.t.Helper()
	if g.logs != nil {
		requireNoKeyLogged(g.t, g.logs.String()) // the run before a restart
	}
	g.logs = &bytes.Buffer{}
	g.cmd = exec.Command(g.bin, g.args...)
	g.cmd.Env = g.env
	g.cmd.Stdout, g.cmd.Stderr = g.logs, g.logs
	require.NoError(g.t, g.cmd.Start())
	exited := make(chan struct{})
	go func() {
		_ = g.cmd.Wait()
		close(exited)
	}()
	g.exited = exited
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(g.url("/readyz"))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return true, ""
			}
		}
		select {
		case <-exited:
			return false, g.logs.String()
		case <-time.After(200 * time.Millisecond):
		}
	}
	_ = g.cmd.Process.Kill()
	<-exited
	return false, g.logs.String()
}

// loggedKey is a line holding an API key's secret (docs/api.md, API
// keys).
var loggedKey = regexp.MustCompile(`(?m)^.*gwk_[a-z2-7]{16}_[a-z2-7]{52}.*$`)

// devKeyLine is the one line that shows a key: gateway dev prints its dev
// key once on the terminal (docs/operations.md, What gateway dev runs).
var devKeyLine = regexp.MustCompile(`^API key for tenant [a-z0-9-]+ \([^)]*\): gwk_[a-z2-7]{16}_[a-z2-7]{52}$`)

// requireNoKeyLogged fails t when a line of a process's output, but the
// dev key's, holds an API key's secret: keys never reach logs.
func requireNoKeyLogged(t *testing.T, output string) {
	t.Helper()
	if line := leakedKey(output); line != "" {
		t.Errorf("a line of the output holds an API key's secret:\n%s", line)
	}
}

// leakedKey is the first line of output, but the dev key's, that holds
// an API key's secret.
func leakedKey(output string) string {
	for _, line := range loggedKey.FindAllString(output, -1) {
		if !devKeyLine.MatchString(line) {
			return line
		}
	}
	return ""
}

// kill ends the process the hard way, as a crash would.
func (g *gateway) kill() {
	g.t.Helper()
	require.NoError(g.t, g.cmd.Process.Signal(syscall.SIGKILL))
	<-g.exited
}

func (g *gateway) stop() {
	if g.cmd == nil {
		return
	}
	defer func() { requireNoKeyLogged(g.t, g.logs.String()) }()
	select {
	case <-g.exited:
		return
	default:
	}
	_ = g.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-g.exited:
	case <-time.After(20 * time.Second):
		_ = g.cmd.Process.Kill()
		<-g.exited
	}
	if g.t.Failed() {
		g.t.Logf("gateway output:\n%s", g.logs.String())
	}
}

func (g *gateway) url(path string) string { return "http://" + g.listen + path }

// mint runs `gateway token`, as the README tells users to.
func (g *gateway) mint(tenant, scopes string) string {
	g.t.Helper()
	out, err := exec.Command(g.bin, "token", "--data-dir", g.dataDir, "--tenant", tenant, "--sub", "e2e-user", "--scope", scopes).Output()
	require.NoError(g.t, err)
	return strings.TrimSpace(string(out))
}

func (g *gateway) do(method, path, body string, header ...string) (int, []byte, http.Header) {
	g.t.Helper()
	req, err := http.NewRequest(method, g.url(path), strings.NewReader(body))
	require.NoError(g.t, err)
	req.Header.Set("Authorization", "Bearer "+g.token)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(g.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(g.t, err)
	return resp.StatusCode, b, resp.Header
}

type jobDoc struct {
	Data struct {
		ID         string `json:"id"`
		Type       string `json:"type"`
		Attributes struct {
			Status         string            `json:"status"`
			Provider       string            `json:"provider"`
			Progress       *int              `json:"progress"`
			Routing        map[string]any    `json:"routing"`
			RoutingHistory []json.RawMessage `json:"routing_history"`
			Result         json.RawMessage   `json:"result"`
			Error          *struct{ Code string }
			ProcessedAt    *time.Time `json:"processed_at"`
			CompletedAt    *time.Time `json:"completed_at"`
		} `json:"attributes"`
		Meta struct {
			Client map[string]any    `json:"client"`
			System map[string]string `json:"system"`
		} `json:"meta"`
	} `json:"data"`
}

// llmTaskBody creates the smallest llm-task.
const llmTaskBody = `{"data":{"type":"llm-task-job","attributes":{"input":{"type":"text","text":"x","prompt":"y"}}}}`

func (g *gateway) create(resource, body string) jobDoc {
	g.t.Helper()
	status, b, _ := g.do(http.MethodPost, "/v1/"+resource, body)
	require.Equal(g.t, http.StatusAccepted, status, "create %s: %s", resource, b)
	var doc jobDoc
	require.NoError(g.t, json.Unmarshal(b, &doc))
	require.Equal(g.t, "pending", doc.Data.Attributes.Status)
	return doc
}

func (g *gateway) get(resource, id string) jobDoc {
	g.t.Helper()
	status, b, _ := g.do(http.MethodGet, "/v1/"+resource+"/"+id, "")
	require.Equal(g.t, http.StatusOK, status, "get %s/%s: %s", resource, id, b)
	var doc jobDoc
	require.NoError(g.t, json.Unmarshal(b, &doc))
	return doc
}

// waitFor polls a job until cond holds.
func (g *gateway) waitFor(resource, id string, timeout time.Duration, cond func(jobDoc) bool) jobDoc {
	g.t.Helper()
	deadline := time.Now().Add(timeout)
	var doc jobDoc
	for time.Now().Before(deadline) {
		doc = g.get(resource, id)
		if cond(doc) {
			return doc
		}
		time.Sleep(100 * time.Millisecond)
	}
	g.t.Fatalf("job %s/%s: condition not met within %s; last state %+v", resource, id, timeout, doc.Data.Attributes)
	return doc
}

func terminal(doc jobDoc) bool {
	s := doc.Data.Attributes.Status
	return s == "completed" || s == "failed"
}

// waitEnded waits until a job has ended and requires that it ended with
// status ("completed" or "failed").
func (g *gateway) waitEnded(resource, id string, timeout time.Duration, status string) jobDoc {
	g.t.Helper()
	done := g.waitFor(resource, id, timeout, terminal)
	require.Equal(g.t, status, done.Data.Attributes.Status, "%s/%s: %+v", resource, id, done.Data.Attributes)
	return done
}

// waitFailed waits until a job has failed, and requires its error code.
func (g *gateway) waitFailed(resource, id string, timeout time.Duration, code string) jobDoc {
	g.t.Helper()
	failed := g.waitEnded(resource, id, timeout, "failed")
	require.NotNil(g.t, failed.Data.Attributes.Error)
	require.Equal(g.t, code, failed.Data.Attributes.Error.Code)
	return failed
}

// createPolicy creates a policy of acme's with a token of the policy
// scopes (g's own token stays) and returns its id.
func (g *gateway) createPolicy(attributes string) string {
	g.t.Helper()
	auth := "Bearer " + g.mint("acme", "policies:read policies:write")
	status, body, _ := g.do(http.MethodPost, "/v1/policies", `{"data":{"type":"policy","attributes":`+attributes+`}}`, "Authorization", auth)
	require.Equal(g.t, http.StatusCreated, status, "%s", body)
	var created struct {
		Data struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	require.NoError(g.t, json.Unmarshal(body, &created))
	return created.Data.ID
}

// writeCatalog writes a provider catalog for --providers and returns its
// path.
func writeCatalog(t *testing.T, yaml string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "providers.yaml")
	require.NoError(t, os.WriteFile(path, []byte(yaml), 0o644))
	return path
}

// sandboxLLMProvider is the catalog entry of a sandbox provider of
// llm-tasks alone.
func sandboxLLMProvider(id, name string, latencyMS, failRate int, pricePerToken string) string {
	return fmt.Sprintf(`  - id: %s
    name: %s
    adapter: sandbox
    settings: {latency_ms: %d, fail_rate: %d}
    services:
      llm-tasks:
        models: [sandbox-model]
        pricing: {unit: per_token, amount: %s, currency: USD}
`, id, name, latencyMS, failRate, pricePerToken)
}

// vendorProvider is the catalog entry of a fake transcription vendor
// served at baseURL, its API key in the environment variable keyEnv.
func vendorProvider(adapter, name, baseURL, keyEnv string) string {
	return `  - id: ` + adapter + `
    name: ` + name + `
    adapter: ` + adapter + `
    settings: {base_url: "` + baseURL + `", api_key_env: ` + keyEnv + `}
    services:
      transcriptions:
        features: [language_detection, diarization, timestamps]
        pricing: {unit: per_minute, amount: 0.5, currency: USD}
`
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

// routes is a job's routing history, an attempt as "provider_id reason".
func routes(t *testing.T, doc jobDoc) []string {
	t.Helper()
	var history []struct {
		ProviderID string `json:"provider_id"`
		Reason     string `json:"reason"`
	}
	decodeAs(t, doc.Data.Attributes.RoutingHistory, &history)
	var out []string
	for _, h := range history {
		out = append(out, h.ProviderID+" "+h.Reason)
	}
	return out
}

// temporalClient is a client of the Temporal frontend at addr, closed when
// the test ends.
func temporalClient(t *testing.T, addr string) client.Client {
	t.Helper()
	tc, err := client.Dial(client.Options{HostPort: addr})
	require.NoError(t, err)
	t.Cleanup(tc.Close)
	return tc
}

// historyOf is the events of a workflow's history.
func historyOf(ctx context.Context, t *testing.T, tc client.Client, id string) []*historypb.HistoryEvent {
	t.Helper()
	var events []*historypb.HistoryEvent
	iter := tc.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		event, err := iter.Next()
		require.NoError(t, err)
		events = append(events, event)
	}
	return events
}

// decodeAs decodes v (a result, a routing history) again into out, and
// returns its JSON.
func decodeAs(t *testing.T, v, out any) []byte {
	t.Helper()
	raw := mustJSON(t, v)
	require.NoError(t, json.Unmarshal(raw, out))
	return raw
}

// jobsOfEachService are create requests for the four services, using the
// sample media `gateway dev` serves.
func jobsOfEachService(g *gateway) map[string]string {
	wav := g.url("/dev/samples/tone.wav")
	return map[string]string{
		"transcriptions": `{"data":{"type":"transcription-job","attributes":{"input":{"type":"audio","url":"` + wav + `"},"options":{"format":"srt"}},"meta":{"client":{"ref":"t-1","nested":{"n":1}}}}}`,
		"translations":   `{"data":{"type":"translation-job","attributes":{"input":{"type":"text","content":"Hello world","target_language":"de"}}}}`,
		"video-analyses": `{"data":{"type":"video-analysis-job","attributes":{"input":{"url":"` + g.url("/dev/samples/speech.mp4") + `","features":["labels","summary"]}}}}`,
		"llm-tasks":      `{"data":{"type":"llm-task-job","attributes":{"input":{"type":"text","text":"The gateway routes jobs.","prompt":"Summarise."},"options":{"include_usage":true}}}}`,
	}
}

func TestEveryServiceEndToEnd(t *testing.T) {
	t.Parallel()
	mediatest.RequireTools(t) // its transcriptions probe their media
	for name, databaseURL := range map[string]func(*testing.T) string{
		"sqlite":   func(*testing.T) string { return "" },
		"postgres": func(t *testing.T) string { return storetest.FreshPostgresURL(t) },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			g := newGateway(t, databaseURL(t))
			for resource, body := range jobsOfEachService(g) {
				created := g.create(resource, body)
				require.NotEmpty(t, created.Data.Meta.System["worker_id"])
				done := g.waitEnded(resource, created.Data.ID, 60*time.Second, "completed")
				attrs := done.Data.Attributes
				require.NotEmpty(t, attrs.Provider)
				require.NotNil(t, attrs.ProcessedAt)
				require.NotNil(t, attrs.CompletedAt)
				require.Equal(t, attrs.Provider, attrs.Routing["provider_id"])
				require.Equal(t, "default", attrs.Routing["reason"])
				require.Len(t, attrs.RoutingHistory, 1)
				require.NotEmpty(t, attrs.Result)

				status, result, header := g.do(http.MethodGet, "/v1/"+resource+"/"+created.Data.ID+"/result", "")
				require.Equal(t, http.StatusOK, status, "%s result: %s", resource, result)
				switch resource {
				case "transcriptions":
					require.Equal(t, "t-1", done.Data.Meta.Client["ref"])
					require.Contains(t, header.Get("Content-Type"), "text/srt")
					require.Contains(t, string(result), " --> ")
					require.Equal(t, string(result), g.download(attrs.Result), "the download_url serves the same subtitles")
				case "llm-tasks":
					var r struct {
						Content      string         `json:"content"`
						FinishReason string         `json:"finish_reason"`
						Usage        map[string]any `json:"usage"`
					}
					require.NoError(t, json.Unmarshal(result, &r))
					require.NotEmpty(t, r.Content)
					require.Equal(t, "completed", r.FinishReason)
					require.NotEmpty(t, r.Usage, "include_usage was true")
				default:
					require.Contains(t, header.Get("Content-Type"), "application/json")
				}
			}

			// The Temporal Web UI is up for operators.
			resp, err := http.Get("http://" + g.ui + "/")
			require.NoError(t, err)
			resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode)
		})
	}
}

// slowCatalog has one sandbox provider for every service that takes
// seconds, so a test can kill the gateway while jobs are processing.
var slowCatalog = providertest.SandboxCatalog("sandbox-slow", 6000)

func TestRestartMidJobLosesNothing(t *testing.T) {
	t.Parallel()
	mediatest.RequireTools(t) // its transcriptions probe their media
	g := newGateway(t, "", "--providers", writeCatalog(t, slowCatalog))

	ids := map[string]string{}
	for resource, body := range jobsOfEachService(g) {
		ids[resource] = g.create(resource, body).Data.ID
	}
	for resource, id := range ids {
		g.waitFor(resource, id, 30*time.Second, func(d jobDoc) bool {
			return d.Data.Attributes.Status == "processing" && d.Data.Attributes.Progress != nil && *d.Data.Attributes.Progress > 0
		})
	}

	g.kill()
	g.start()

	for resource, id := range ids {
		done := g.waitEnded(resource, id, 90*time.Second, "completed")
		require.Equal(t, id, done.Data.ID)
		require.NotEmpty(t, done.Data.Attributes.Result)
	}
}

func TestFailoverEndToEnd(t *testing.T) {
	t.Parallel()
	mediatest.RequireTools(t) // its transcriptions probe their media
	g := newGateway(t, storetest.FreshPostgresURL(t), "--providers", writeCatalog(t, recordCatalog))

	created := g.create("transcriptions", `{"data":{"type":"transcription-job","attributes":{"input":{"type":"audio","url":"`+g.url("/dev/samples/tone.wav")+`"}}}}`)
	done := g.waitEnded("transcriptions", created.Data.ID, 60*time.Second, "completed")
	require.Equal(t, "sandbox-steady", done.Data.Attributes.Provider)

	require.Equal(t, []string{"sandbox-broken default", "sandbox-steady failover"}, routes(t, done),
		"the cheapest provider is tried first")
	var history []struct {
		Attempt     int `json:"attempt"`
		Evaluations []struct {
			ProviderID string `json:"provider_id"`
			Selected   bool   `json:"selected"`
			Reason     string `json:"reason"`
		} `json:"provider_evaluations"`
	}
	decodeAs(t, done.Data.Attributes.RoutingHistory, &history)
	require.Equal(t, 1, history[0].Attempt)
	require.Equal(t, 2, history[1].Attempt)
	reasons := map[string]string{}
	for _, e := range history[1].Evaluations {
		reasons[e.ProviderID] = e.Reason
	}
	require.Equal(t, map[string]string{
		"sandbox-broken": "failed", "sandbox-steady": "selected", "sandbox-quick": "service_not_supported",
	}, reasons)
	require.Equal(t, "failover", done.Data.Attributes.Routing["reason"])
}

func TestPolicyRoutingAndFailoverEndToEnd(t *testing.T) {
	t.Parallel()
	mediatest.RequireTools(t) // its transcriptions probe their media
	g := newGateway(t, "", "--providers", writeCatalog(t, recordCatalog))

	policyID := g.createPolicy(`{
		"name":"steady first on paper","routing_strategy":"quality","service":"transcriptions",
		"providers":[{"provider_id":"sandbox-broken","priority":1},{"provider_id":"sandbox-steady","priority":2}]}`)

	job := g.create("transcriptions", `{"data":{"type":"transcription-job","attributes":{"input":{"type":"audio","url":"`+g.url("/dev/samples/tone.wav")+`"}}}}`)
	done := g.waitEnded("transcriptions", job.Data.ID, 60*time.Second, "completed")

	// Both providers have no quality: priority breaks the tie, so the
	// broken one goes first and the job fails over within the policy.
	require.Equal(t, []string{"sandbox-broken policy_rule", "sandbox-steady failover"}, routes(t, done))
	var history []struct {
		PolicyID      string `json:"policy_id"`
		PolicyVersion int    `json:"policy_version"`
		PolicySource  string `json:"policy_source"`
	}
	decodeAs(t, done.Data.Attributes.RoutingHistory, &history)
	require.Equal(t, "tenant_latest", history[0].PolicySource)
	require.Equal(t, policyID, history[0].PolicyID)
	require.Equal(t, 1, history[0].PolicyVersion)
	require.Empty(t, history[1].PolicyID, "policy_id and policy_version only when the reason is policy_rule")
	require.Equal(t, "tenant_latest", history[1].PolicySource)
}

// TestJobsAcceptedBeforeACrashAreStarted: a job is accepted once it and
// its start are in the store; a process that dies before it starts the
// workflow leaves the start in the outbox, and the next process makes it
// once the lease of the one that died runs out.
func TestJobsAcceptedBeforeACrashAreStarted(t *testing.T) {
	t.Parallel()
	g := newGateway(t, "")
	g.stop()

	st, err := store.Open(t.Context(), "sqlite:"+filepath.Join(g.dataDir, "gateway.db"))
	require.NoError(t, err)
	now := time.Now().UTC()
	leasedUntil := now.Add(25 * time.Second)
	var ids []string
	for i := range 3 {
		id := uuid.Must(uuid.NewV7()).String()
		input := json.RawMessage(fmt.Sprintf(`{"type":"text","text":"Accepted before the crash, %d.","prompt":"Summarise."}`, i))
		in, err := json.Marshal(jobs.Submission{JobID: id, Service: jobs.LLMTasks, Tenant: "acme", UserID: "dev-user",
			Input: input, Options: json.RawMessage(`{}`), CreatedAt: now})
		require.NoError(t, err)
		job := &jobs.Record{ID: id, Service: jobs.LLMTasks, Tenant: "acme", UserID: "dev-user",
			Status: jobs.StatusPending, Input: string(input), Options: "{}", CreatedAt: now}
		// Leased to the process that died, for longer than a start-up.
		created, err := st.Jobs.CreateJob(t.Context(), job, &store.JobStart{Input: string(in), Priority: 3, NextAttemptAt: leasedUntil})
		require.NoError(t, err)
		require.True(t, created)
		ids = append(ids, id)
	}
	require.NoError(t, st.Close())

	g.start()
	for _, id := range ids {
		job := g.get("llm-tasks", id)
		if time.Until(leasedUntil) > time.Second {
			require.Equal(t, "pending", job.Data.Attributes.Status, "%s is the dead process's until its lease ends", id)
		}
	}
	for _, id := range ids {
		done := g.waitEnded("llm-tasks", id, 90*time.Second, "completed")
		require.NotEmpty(t, done.Data.Attributes.Result)
	}
}

// createUnroutable creates an llm-task that routing cannot place, so it
// fails NO_ELIGIBLE_PROVIDER: it names an application whose policy lists
// no provider (a policy of acme's, scoped to that application alone, so
// the test's other jobs are routed as before).
func (g *gateway) createUnroutable() jobDoc {
	g.t.Helper()
	auth := "Bearer " + g.mint("acme", "policies:write")
	status, body, _ := g.do(http.MethodPut, "/v1/services/llm-tasks/applications/nowhere/policy",
		`{"data":{"type":"policy","attributes":{"name":"nowhere","routing_strategy":"price","providers":[]}}}`, "Authorization", auth)
	require.Equal(g.t, http.StatusOK, status, "%s", body)
	status, body, _ = g.do(http.MethodPost, "/v1/llm-tasks",
		llmTaskBody, "X-Application", "nowhere")
	require.Equal(g.t, http.StatusAccepted, status, "%s", body)
	var doc jobDoc
	require.NoError(g.t, json.Unmarshal(body, &doc))
	return doc
}

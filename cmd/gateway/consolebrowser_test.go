package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// chromiumPath is Debian's Chromium, which make test's tool step installs
// (scripts/install-engines --browser).
const chromiumPath = "/usr/bin/chromium"

// browserCatalog fails every llm-task over: both providers always fail,
// so a job tries one, fails over to the other and ends
// PROVIDERS_EXHAUSTED with two attempts. Translations succeed, and are
// billed, for the usage chart.
var browserCatalog = "providers:\n" + sandboxLLMProvider("sandbox-broken-a", "Broken A", 0, 1, "0.000001") +
	sandboxLLMProvider("sandbox-broken-b", "Broken B", 0, 1, "0.000002") + `  - id: sandbox-translator
    name: Translator
    adapter: sandbox
    settings: {latency_ms: 0, fail_rate: 0}
    services:
      translations:
        features: [language_detection, formality]
        pricing: {unit: per_character, amount: 0.00002, currency: USD}
`

// TestConsoleInABrowser: a person signs in to gateway dev's console with
// its API key in headless Chromium, finds a failed job by its error code,
// reads its failover attempts, resends its webhook and sees the new
// attempt, and signs out; no page or asset comes from anywhere but the
// gateway (docs/console.md, Browser test).
func TestConsoleInABrowser(t *testing.T) {
	if _, err := os.Stat(chromiumPath); err != nil {
		if os.Getenv("GATEWAY_REQUIRE_BROWSER") == "1" {
			t.Fatalf("GATEWAY_REQUIRE_BROWSER=1 but %s is missing (make test-tools installs it): %v", chromiumPath, err)
		}
		t.Skipf("%s is missing (make test-tools installs it as root on Debian)", chromiumPath)
	}
	t.Parallel()
	g := newGateway(t, "", "--providers", writeCatalog(t, browserCatalog))
	key := devKeyOf(t, g)

	// The failed job, its webhook answered 500 each time, and one that
	// fails with another code.
	hook := newHookReceiver(t, http.StatusInternalServerError)
	g.token = key // the jobs are the key's tenant's
	failed := g.create("llm-tasks", `{"data":{"type":"llm-task-job","attributes":{"input":{"type":"text","text":"x","prompt":"y"},`+
		`"webhook":{"url":"`+hook.URL+`/hooks"}}}}`).Data.ID
	doc := g.waitFailed("llm-tasks", failed, 2*time.Minute, "PROVIDERS_EXHAUSTED")
	require.Len(t, doc.Data.Attributes.RoutingHistory, 2, "one failover")
	billed := g.create("translations", `{"data":{"type":"translation-job","attributes":{"input":{"type":"text","content":"Hello, team.","target_language":"de"}}}}`).Data.ID
	g.waitEnded("translations", billed, time.Minute, "completed")
	other := g.createUnroutable().Data.ID
	g.waitFailed("llm-tasks", other, time.Minute, "NO_ELIGIBLE_PROVIDER")
	require.Eventually(t, func() bool { return len(hook.received()) > 0 }, time.Minute, 100*time.Millisecond, "the webhook's first attempt")
	require.Eventually(t, func() bool { return len(deliveriesOf(t, g, failed)) > 0 }, time.Minute, 100*time.Millisecond, "in the delivery log")

	ctx := newBrowser(t)
	// No request leaves the gateway: every page, stylesheet and script
	// is its own.
	var mu sync.Mutex
	var requests, foreign []string
	require.NoError(t, chromedp.Listen(ctx, func(ev any) {
		e, ok := ev.(*network.EventRequestWillBeSent)
		if !ok {
			return
		}
		u, err := url.Parse(e.Request.URL)
		mu.Lock()
		defer mu.Unlock()
		requests = append(requests, e.Request.URL)
		// data: URLs are the browser's own (a date input's icon), not fetched.
		if err != nil || (u.Scheme != "data" && u.Host != g.listen) {
			foreign = append(foreign, e.Request.URL)
		}
	}))
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		require.NotEmpty(t, requests)
		require.Empty(t, foreign, "requests to hosts other than the gateway %s", g.listen)
	})

	// Sign in with the key.
	browserDo(t, ctx, chromedp.Navigate(g.url("/console/")), chromedp.WaitVisible(chromedp.ID("api_key")),
		chromedp.SendKeys(chromedp.ID("api_key"), key))
	browserLoad(t, ctx, chromedp.Click(chromedp.CSS(`form.sign-in button[type="submit"]`)))
	require.Equal(t, g.url("/console/jobs"), browserRun(t, ctx, chromedp.Location()))
	require.Contains(t, browserRun(t, ctx, chromedp.Text(chromedp.CSS("header .who"))), "acme")
	screenshot(t, ctx, "jobs")

	// Filter the jobs by the error code.
	browserDo(t, ctx, chromedp.SetValue(chromedp.ID("f-error_code"), "PROVIDERS_EXHAUSTED"))
	browserLoad(t, ctx, chromedp.Click(chromedp.CSS(`form.filters:not(.search) button[type="submit"]`)))
	listed := browserRun(t, ctx, chromedp.Text(chromedp.CSS("table.jobs")))
	require.Contains(t, listed, failed)
	require.NotContains(t, listed, other, "another error code")
	require.Contains(t, browserRun(t, ctx, chromedp.Location()), "error_code=PROVIDERS_EXHAUSTED")

	// Open the job: its failover attempts in the timeline.
	browserLoad(t, ctx, chromedp.Click(chromedp.CSS(`table.jobs a[href^="/console/jobs/`+failed+`"]`)))
	timeline := browserRun(t, ctx, chromedp.Text(chromedp.CSS("ol.timeline")))
	for _, want := range []string{"Attempt 1", "Attempt 2", "failover", "sandbox-broken-a", "sandbox-broken-b"} {
		require.Contains(t, timeline, want)
	}
	require.Contains(t, browserRun(t, ctx, chromedp.Text(chromedp.CSS("p.error"))), "PROVIDERS_EXHAUSTED")
	screenshot(t, ctx, "job")

	// Resend the webhook and see the resend's attempt.
	before := countResends(t, ctx)
	require.Zero(t, before)
	browserLoad(t, ctx, chromedp.Click(chromedp.ID("resend")))
	require.Contains(t, browserRun(t, ctx, chromedp.Location()), "resent=")
	deadline := time.Now().Add(30 * time.Second)
	for countResends(t, ctx) == 0 {
		require.True(t, time.Now().Before(deadline), "no resend attempt on the job page")
		time.Sleep(500 * time.Millisecond)
		browserLoad(t, ctx, chromedp.Reload())
	}

	// The usage chart is drawn: an SVG with a bar of the day's cost.
	browserLoad(t, ctx, chromedp.Navigate(g.url("/console/usage")))
	bars := browserRun(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll("svg.usage-chart rect.bar").length`))
	require.Positive(t, bars, "the usage chart has bars")
	width := browserRun(t, ctx, chromedp.Evaluate[float64](`document.querySelector("svg.usage-chart").getBoundingClientRect().width`))
	require.Positive(t, width, "and is laid out")
	screenshot(t, ctx, "usage")

	// On a phone's width, the pages fit: nothing wider than the screen.
	browserDo(t, ctx, chromedp.EmulateViewport(390, 844))
	for _, path := range []string{"/console/jobs", "/console/jobs/" + failed + "?service=llm-tasks", "/console/usage"} {
		browserLoad(t, ctx, chromedp.Navigate(g.url(path)))
		overflow := browserRun(t, ctx, chromedp.Evaluate[float64](`document.documentElement.scrollWidth - window.innerWidth`))
		require.LessOrEqual(t, overflow, 0.0, "%s is wider than a phone's screen", path)
	}
	browserDo(t, ctx, chromedp.EmulateViewport(1280, 900))

	// Sign out: back to the form, and the jobs are closed.
	browserLoad(t, ctx, chromedp.Click(chromedp.CSS(`header form button[type="submit"]`)))
	require.Equal(t, g.url("/console/sign-in"), browserRun(t, ctx, chromedp.Location()))
	browserLoad(t, ctx, chromedp.Navigate(g.url("/console/jobs")))
	require.Equal(t, g.url("/console/sign-in"), browserRun(t, ctx, chromedp.Location()))

	// Signed in again, the key is revoked: the next page ends the session.
	browserDo(t, ctx, chromedp.WaitVisible(chromedp.ID("api_key")), chromedp.SendKeys(chromedp.ID("api_key"), key))
	browserLoad(t, ctx, chromedp.Click(chromedp.CSS(`form.sign-in button[type="submit"]`)))
	require.Equal(t, g.url("/console/jobs"), browserRun(t, ctx, chromedp.Location()))
	keyID := strings.SplitN(strings.TrimPrefix(key, "gwk_"), "_", 2)[0]
	g.token = g.mint("acme", "keys:write")
	status, body, _ := g.do(http.MethodDelete, "/v1/api-keys/"+keyID, "")
	require.Equal(t, http.StatusNoContent, status, "%s", body)
	deadline = time.Now().Add(10 * time.Second)
	for {
		browserLoad(t, ctx, chromedp.Navigate(g.url("/console/jobs")))
		if browserRun(t, ctx, chromedp.Location()) == g.url("/console/sign-in?ended=1") {
			break
		}
		require.True(t, time.Now().Before(deadline), "the revoked key's session goes on")
		time.Sleep(200 * time.Millisecond)
	}
	require.Contains(t, browserRun(t, ctx, chromedp.Text(chromedp.CSS("main"))), "revoked or expired")
}

// screenshot saves the page as docs/console.md shows it, as
// $CONSOLE_SCREENSHOTS/console-<name>.png, when that is set (make
// console-screenshots).
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv("CONSOLE_SCREENSHOTS")
	if dir == "" {
		return
	}
	png := browserRun(t, ctx, chromedp.FullScreenshot(100))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "console-"+name+".png"), png, 0o644))
}

// newBrowser starts headless Chromium for t, in a profile of its own; on
// failure it saves a screenshot under t.TempDir() and logs its path.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromiumPath),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900))
	ctx, cancel := chromedp.NewContext(alloc, chromedp.WithLogf(t.Logf))
	t.Cleanup(cancelAlloc)
	t.Cleanup(cancel)
	screenshots := t.TempDir()
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		shotCtx, done := context.WithTimeout(ctx, 10*time.Second)
		defer done()
		png, err := chromedp.Run(shotCtx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Logf("no screenshot: %v", err)
			return
		}
		path := filepath.Join(screenshots, "console-failure.png")
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Logf("no screenshot: %v", err)
			return
		}
		t.Logf("screenshot of the page at the failure: %s", path)
	})
	return ctx
}

// browserStep bounds one step in the browser.
const browserStep = 30 * time.Second

// browserDo runs steps in the browser.
func browserDo(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	step, cancel := context.WithTimeout(ctx, browserStep)
	defer cancel()
	require.NoError(t, chromedp.Do(step, steps...))
}

// browserRun runs one action in the browser and returns its value.
func browserRun[T any](t *testing.T, ctx context.Context, a chromedp.Action[T]) T {
	t.Helper()
	step, cancel := context.WithTimeout(ctx, browserStep)
	defer cancel()
	v, err := chromedp.Run(step, a)
	require.NoError(t, err)
	return v
}

// browserLoad runs a step that loads a page, and waits until it has loaded.
func browserLoad(t *testing.T, ctx context.Context, a chromedp.Action[chromedp.Void]) {
	t.Helper()
	step, cancel := context.WithTimeout(ctx, browserStep)
	defer cancel()
	resp, err := chromedp.RunResponse(step, a)
	require.NoError(t, err)
	require.NotNil(t, resp)
	require.Less(t, resp.Status, int64(400), "%s answered %d", resp.URL, resp.Status)
}

// countResends counts the job page's webhook attempts a resend sent.
func countResends(t *testing.T, ctx context.Context) int {
	t.Helper()
	return browserRun(t, ctx, chromedp.Evaluate[int](
		`[...document.querySelectorAll("tr.delivery td.trigger")].filter(e => e.textContent.trim() === "resend").length`))
}

// deliveriesOf is the job's delivery log as the API shows it to g's token.
func deliveriesOf(t *testing.T, g *gateway, id string) []json.RawMessage {
	t.Helper()
	status, body, _ := g.do(http.MethodGet, "/v1/llm-tasks/"+id+"/webhook-deliveries", "")
	require.Equal(t, http.StatusOK, status, "%s", body)
	var list struct {
		Data []json.RawMessage `json:"data"`
	}
	require.NoError(t, json.Unmarshal(body, &list))
	return list.Data
}

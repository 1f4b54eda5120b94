package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestDevPrintsConsoleAndServesIt: gateway dev prints the console's
// address, and a person signs in there with the dev key and finds the
// job the key made (docs/console.md).
func TestDevPrintsConsoleAndServesIt(t *testing.T) {
	t.Parallel()
	g := newGateway(t, "")
	raw, err := os.ReadFile(filepath.Join(g.dataDir, "dev-api-key"))
	require.NoError(t, err)
	g.token = strings.TrimSpace(string(raw))
	status, body, _ := g.do(http.MethodPost, "/v1/translations",
		`{"data":{"type":"translation-job","attributes":{"input":{"type":"text","content":"Hello world","target_language":"de"}}}}`)
	require.Equal(t, http.StatusAccepted, status, "%s", body)
	var doc jobDoc
	require.NoError(t, json.Unmarshal(body, &doc))
	g.waitEnded("translations", doc.Data.ID, time.Minute, "completed")

	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	client := &http.Client{Jar: jar}
	get := func(path string) (*http.Response, string) {
		resp, err := client.Get(g.url(path))
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp, string(b)
	}
	resp, form := get("/console/")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "/console/sign-in", resp.Request.URL.Path)
	require.Contains(t, resp.Header.Get("Content-Security-Policy"), "script-src 'self'")
	token := regexp.MustCompile(`name="csrf_token" value="([^"]+)"`).FindStringSubmatch(form)
	require.NotNil(t, token, form)
	resp, err = client.PostForm(g.url("/console/sign-in"), url.Values{"csrf_token": {token[1]}, "api_key": {g.token}})
	require.NoError(t, err)
	page, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", page)
	require.Equal(t, "/console/jobs", resp.Request.URL.Path)
	require.Contains(t, string(page), doc.Data.ID)
	_, job := get("/console/jobs/" + doc.Data.ID)
	require.Contains(t, job, "Attempt 1")
	_, css := get("/console/assets/console.css")
	require.Contains(t, css, "body")

	g.stop()
	require.Contains(t, g.logs.String(), "\nconsole: http://"+g.listen+"/console/ (sign in with the API key above)\n")
}

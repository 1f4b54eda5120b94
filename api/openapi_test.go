package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	oaerrors "github.com/pb33f/libopenapi-validator/errors"
	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/api"
	"github.com/ai-job-gateway/gateway/app/jobwatch"
	"github.com/ai-job-gateway/gateway/internal/metrics"
	"github.com/ai-job-gateway/gateway/internal/payloadcodec"
	"github.com/ai-job-gateway/gateway/store"
	"github.com/ai-job-gateway/gateway/store/storetest"
)

// openAPI is the validator of the API's OpenAPI document, built once.
var openAPI = sync.OnceValues(func() (validator.Validator, error) {
	raw, err := api.OpenAPIDocument("", "", "")
	if err != nil {
		return nil, err
	}
	doc, err := libopenapi.NewDocument(raw)
	if err != nil {
		return nil, err
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		return nil, fmt.Errorf("%v", errs)
	}
	return v, nil
})

// checkAgainstOpenAPI validates an exchange of the API tests against the
// OpenAPI document: every response, and the request of every success (a
// request the API refuses is often invalid on purpose). Paths the
// document does not describe (dev's own routes, unknown paths) are left
// to TestEveryRouteIsDocumented.
func checkAgainstOpenAPI(t *testing.T, req *http.Request, body []byte, resp *response) {
	t.Helper()
	if strings.HasPrefix(req.URL.Path, "/dev/") || !documented(req.Method, req.URL.Path) {
		return
	}
	v, err := openAPI()
	require.NoError(t, err)
	clone := req.Clone(req.Context())
	clone.Body = io.NopCloser(bytes.NewReader(body))
	if resp.Status < 300 && body != nil {
		if ok, errs := v.ValidateHttpRequest(clone); !ok {
			t.Errorf("%s %s: the request does not match the OpenAPI document:\n%s", req.Method, req.URL, describe(errs))
		}
		clone.Body = io.NopCloser(bytes.NewReader(body))
	}
	answer := &http.Response{StatusCode: resp.Status, Header: resp.Header, Body: io.NopCloser(bytes.NewReader(resp.Body)), Request: clone}
	if ok, errs := v.ValidateHttpResponse(clone, answer); !ok {
		t.Errorf("%s %s answered %d, which does not match the OpenAPI document:\n%s\n%s", req.Method, req.URL, resp.Status, describe(errs), resp.Body)
	}
}

func describe(errs []*oaerrors.ValidationError) string {
	var b strings.Builder
	for _, e := range errs {
		fmt.Fprintf(&b, "  %s: %s\n", e.Message, e.Reason)
		for _, f := range e.SchemaValidationErrors {
			fmt.Fprintf(&b, "    at %s: %s\n", f.FieldPath, f.Reason)
		}
	}
	return b.String()
}

// documentedRoutes are the document's operations as "METHOD /path" with
// gin's parameter syntax.
var documentedRoutes = sync.OnceValue(func() []string {
	raw, err := api.OpenAPIDocument("", "", "")
	if err != nil {
		panic(err)
	}
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		panic(err)
	}
	param := regexp.MustCompile(`\{([^}]+)\}`)
	var out []string
	for path, item := range doc.Paths {
		for method := range item {
			out = append(out, strings.ToUpper(method)+" "+param.ReplaceAllString(path, ":$1"))
		}
	}
	sort.Strings(out)
	return out
})

// documented reports whether the document describes method and path.
func documented(method, path string) bool {
	for _, route := range documentedRoutes() {
		m, pattern, _ := strings.Cut(route, " ")
		if m != method {
			continue
		}
		re := "^" + regexp.MustCompile(`:[^/]+`).ReplaceAllString(regexp.QuoteMeta(pattern), `[^/]+`) + "$"
		if regexp.MustCompile(re).MatchString(path) {
			return true
		}
	}
	return false
}

func TestOpenAPIDocumentIsValid(t *testing.T) {
	t.Parallel()
	v, err := openAPI()
	require.NoError(t, err)
	ok, errs := v.ValidateDocument()
	require.True(t, ok, "%s", describe(errs))

	raw, err := api.OpenAPIDocument("my-audience", "https://issuer.example/realms/x/", "v1.4.2")
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(raw, &doc))
	require.Equal(t, "3.1.0", doc["openapi"])
	info := doc["info"].(map[string]any)
	require.Equal(t, "1", info["version"], "the API contract's version, as in openapi.yaml")
	require.Equal(t, "v1.4.2", info["x-gateway-version"], "the build's version")
	require.Equal(t, map[string]any{"name": "Apache 2.0", "identifier": "Apache-2.0"}, info["license"])
	require.Equal(t, "my-audience", doc["x-oidc-audience"])
	schemes := doc["components"].(map[string]any)["securitySchemes"].(map[string]any)
	require.Equal(t, "https://issuer.example/realms/x/.well-known/openid-configuration",
		schemes["openIdConnect"].(map[string]any)["openIdConnectUrl"])
	flows := schemes["oauth2"].(map[string]any)["flows"].(map[string]any)
	require.Contains(t, flows, "clientCredentials")
	require.Contains(t, flows, "authorizationCode")
}

// TestEveryRouteIsDocumented: every route gin serves is in the document,
// and every operation of the document is served (dev's own routes under
// /dev/ aside).
func TestEveryRouteIsDocumented(t *testing.T) {
	t.Parallel()
	var opened *store.Store
	b := setupConfigured(t, sqliteInto(&opened), func(c *api.Config) {
		c.Metrics = metrics.New()
		c.Codec = payloadcodec.New(codecKeys, payloadcodec.NewMemorySecrets(false), payloadcodec.Options{}).ReadOnly()
		c.Breakers = opened.Breakers
		c.Watcher, c.Events = jobwatch.New(opened.Jobs, 0, nil), opened.Jobs
	})
	engine, ok := b.handler.(*gin.Engine)
	require.True(t, ok, "Handler returns the gin engine")
	var served []string
	for _, r := range engine.Routes() {
		if strings.HasPrefix(r.Path, "/dev/") || strings.HasPrefix(r.Path, api.OpenAIPath+"/") { // OpenAI's format: docs/openai.md
			continue
		}
		served = append(served, r.Method+" "+r.Path)
	}
	sort.Strings(served)
	served = slices.Compact(served)
	require.Equal(t, documentedRoutes(), served, "routes served (right) and documented in api/openapi.yaml (left)")
}

// TestEveryOperationHasAUniqueID: every operation has an operationId,
// camelCase and unique, which names its method in the generated client
// (api/client).
func TestEveryOperationHasAUniqueID(t *testing.T) {
	t.Parallel()
	raw, err := api.OpenAPIDocument("", "", "")
	require.NoError(t, err)
	var doc struct {
		Paths map[string]map[string]struct {
			OperationID string `json:"operationId"`
		} `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(raw, &doc))
	camel := regexp.MustCompile(`^[a-z][A-Za-z0-9]*$`)
	byID := map[string]string{}
	for path, item := range doc.Paths {
		for method, op := range item {
			route := strings.ToUpper(method) + " " + path
			if !camel.MatchString(op.OperationID) {
				t.Errorf("%s: operationId %q is not camelCase", route, op.OperationID)
				continue
			}
			if other, ok := byID[op.OperationID]; ok {
				t.Errorf("%s and %s share operationId %q", other, route, op.OperationID)
			}
			byID[op.OperationID] = route
		}
	}
	require.Len(t, byID, len(documentedRoutes()), "one operationId an operation")
}

func TestOpenAPIIsServedWithoutAToken(t *testing.T) {
	t.Parallel()
	b := setupConfigured(t, storetest.SQLite, func(c *api.Config) { c.Version = "v2.0.1-test" })
	resp := b.do(t, http.MethodGet, "/openapi.json", "", nil)
	resp.requireStatus(t, http.StatusOK)
	require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	var doc map[string]any
	require.NoError(t, json.Unmarshal(resp.Body, &doc))
	require.Equal(t, "ai-job-gateway", doc["x-oidc-audience"], "the audience this server verifies")
	require.Contains(t, doc["paths"], "/v1/transcriptions")
	info := doc["info"].(map[string]any)
	require.Equal(t, "1", info["version"], "the API contract's version")
	require.Equal(t, "v2.0.1-test", info["x-gateway-version"], "the version of the build serving it")
}

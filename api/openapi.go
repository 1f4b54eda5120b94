package api

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"
	"go.yaml.in/yaml/v3"

	"github.com/ai-job-gateway/gateway/api/auth"
)

// openAPIYAML is the API's OpenAPI 3.1 document (docs/api.md links it),
// kept true by the tests: every route is in it, and the API tests
// validate their requests and responses against it.
//
//go:embed openapi.yaml
var openAPIYAML []byte

// OpenAPIDocument is the OpenAPI document as JSON, with this deployment's
// audience (x-oidc-audience), its issuer's OpenID Connect discovery URL
// and the gateway's build version (info.x-gateway-version). info.version
// stays the file's: the version of the API contract, not of the build
// (docs/api.md, Versions).
func OpenAPIDocument(audience, issuer, version string) ([]byte, error) {
	var doc map[string]any
	if err := yaml.Unmarshal(openAPIYAML, &doc); err != nil {
		return nil, fmt.Errorf("api: openapi.yaml: %w", err)
	}
	if version != "" {
		doc["info"].(map[string]any)["x-gateway-version"] = version
	}
	if audience != "" {
		doc["x-oidc-audience"] = audience
	}
	if issuer != "" {
		schemes := doc["components"].(map[string]any)["securitySchemes"].(map[string]any)
		schemes["openIdConnect"] = map[string]any{
			"type":             "openIdConnect",
			"description":      "the issuer's discovery document: its token and authorization endpoints and keys",
			"openIdConnectUrl": strings.TrimRight(issuer, "/") + "/.well-known/openid-configuration",
		}
	}
	return json.Marshal(doc)
}

// openAPIHandler handles GET /openapi.json, the document of verifier's
// audience and issuer; no token is needed.
func openAPIHandler(verifier *auth.Verifier, version string) (gin.HandlerFunc, error) {
	var audience, issuer string
	if verifier != nil {
		audience, issuer = verifier.Audience(), verifier.Issuer()
	}
	doc, err := OpenAPIDocument(audience, issuer, version)
	if err != nil {
		return nil, err
	}
	return func(c *gin.Context) {
		c.Header("Cache-Control", "public, max-age=300")
		c.Data(http.StatusOK, "application/json", doc)
	}, nil
}

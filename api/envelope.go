package api

import (
	"encoding/json"
	"io"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/ai-job-gateway/gateway/api/apierror"
	"github.com/ai-job-gateway/gateway/internal/strictjson"
)

// envelope and envelopeSpec are a write's body and what it must hold
// (strictjson.ParseEnvelope).
type (
	envelope     = strictjson.Envelope
	envelopeSpec = strictjson.EnvelopeSpec
)

// readEnvelope reads the request body and checks it against spec.
func readEnvelope(c *gin.Context, spec envelopeSpec) (*envelope, error) {
	body, err := io.ReadAll(c.Request.Body)
	if err != nil {
		return nil, err
	}
	return parseEnvelope(body, spec)
}

// parseEnvelope is strictjson.ParseEnvelope with its errors as the API's:
// invalid JSON is a 400, a member at fault a 422.
func parseEnvelope(body []byte, spec envelopeSpec) (*envelope, error) {
	if err := malformed(body); err != nil {
		return nil, err
	}
	env, err := strictjson.ParseEnvelope(body, spec)
	return env, validation(err)
}

// dataMember is strictjson.DataMember with its errors as the API's, as
// parseEnvelope's.
func dataMember(body []byte, allowed ...string) (map[string]json.RawMessage, error) {
	if err := malformed(body); err != nil {
		return nil, err
	}
	data, err := strictjson.DataMember(body, allowed...)
	return data, validation(err)
}

// malformed is the 400 of a body that is not JSON.
func malformed(body []byte) error {
	if !json.Valid(body) {
		return apierror.New(http.StatusBadRequest, apierror.CodeMalformedJSON, "the request body is not valid JSON")
	}
	return nil
}

// resourceSpec is the envelope of an administrative write (tenant,
// service, provider): data.id is required and, when pathID is not empty,
// equal to it; attributes are optional.
func resourceSpec(typ, pathID string, attributes ...string) envelopeSpec {
	return envelopeSpec{
		Type:    typ,
		Members: []string{"id", "type", "attributes"},
		ID: func(id string, given bool) (string, error) {
			if !given || id == "" {
				return "", apierror.Validation(ptrData+"/id", "is required")
			}
			if pathID != "" && id != pathID {
				return "", apierror.Validation(ptrData+"/id", "must equal the id in the path (%q), not %q", pathID, id)
			}
			return id, nil
		},
		Attributes: attributes,
	}
}

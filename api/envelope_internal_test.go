package api

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/api/apierror"
)

func TestParseEnvelope(t *testing.T) {
	t.Parallel()
	const policyID = "0195a3c4-7b1e-7c2d-9e3f-4a5b6c7d8e9f"
	policySpec := func(rule idRule, pathID string) envelopeSpec {
		return envelopeSpec{Type: "policy", Members: []string{"id", "type", "attributes", "meta"}, ID: rule.check(pathID),
			Attributes: []string{"name"}, AttributesRequired: true}
	}
	cases := []struct {
		name   string
		spec   envelopeSpec
		body   string
		status int    // of the error; 0 when the body is accepted
		want   string // the error message, else the id
	}{
		{"not JSON", resourceSpec("tenant", ""), `{"data":`, 400, "the request body is not valid JSON"},
		{"not Unicode", resourceSpec("tenant", ""), `{"data": {"id": "\ud800"}}`, 422, `/data/id: holds an unpaired UTF-16 surrogate escape (\ud800)`},
		{"not an object", resourceSpec("tenant", ""), `[]`, 422, "/: must be an object"},
		{"null", resourceSpec("tenant", ""), `null`, 422, "/: must be an object with a data member"},
		{"no data", resourceSpec("tenant", ""), `{"other": 1}`, 422, "/data: is required"},
		{"data null", resourceSpec("tenant", ""), `{"data": null}`, 422, "/data: is required"},
		{"unknown data member", resourceSpec("tenant", ""), `{"data": {"type": "tenant", "id": "a", "meta": {}}}`, 422, "/data/meta: is not a known field (known: id, type, attributes)"},
		{"type missing", resourceSpec("tenant", ""), `{"data": {"id": "a"}}`, 422, `/data/type: is required and must be "tenant"`},
		{"type not a string", resourceSpec("tenant", ""), `{"data": {"type": 5}}`, 422, "/data/type: must be a string"},
		{"type wrong", resourceSpec("tenant", ""), `{"data": {"type": "tenants", "id": "a"}}`, 422, `/data/type: is required and must be "tenant"`},
		{"id missing", resourceSpec("tenant", ""), `{"data": {"type": "tenant"}}`, 422, "/data/id: is required"},
		{"id not a string", resourceSpec("tenant", ""), `{"data": {"type": "tenant", "id": 7}}`, 422, "/data/id: must be a string"},
		{"id not the path's", resourceSpec("tenant", "acme"), `{"data": {"type": "tenant", "id": "ACME"}}`, 422, `/data/id: must equal the id in the path ("acme"), not "ACME"`},
		{"id before attributes", resourceSpec("tenant", "acme"), `{"data": {"type": "tenant", "id": "x", "attributes": []}}`, 422, `/data/id: must equal the id in the path ("acme"), not "x"`},
		{"attributes not an object", resourceSpec("tenant", "acme"), `{"data": {"type": "tenant", "id": "acme", "attributes": []}}`, 422, "/data/attributes: must be an object"},
		{"unknown attribute", resourceSpec("service", "", "status"), `{"data": {"type": "service", "id": "x", "attributes": {"state": 1}}}`, 422, "/data/attributes/state: is not a known field (known: status)"},
		{"attributes optional", resourceSpec("tenant", "acme"), `{"data": {"type": "tenant", "id": "acme", "attributes": null}, "links": {}}`, 0, "acme"},

		{"policy id assigned", policySpec(idForbidden, ""), `{"data": {"type": "policy", "id": "` + policyID + `", "attributes": {}}}`, 422, "/data/id: is assigned by the gateway; omit it"},
		{"policy id missing", policySpec(idRequired, policyID), `{"data": {"type": "policy", "attributes": {}}}`, 422, "/data/id: is required and must equal the id in the path (" + policyID + ")"},
		{"policy id lowercased", policySpec(idRequired, policyID), `{"data": {"type": "policy", "id": "0195A3C4-7B1E-7C2D-9E3F-4A5B6C7D8E9F", "attributes": {}, "meta": {}}}`, 0, policyID},
		{"policy id not a UUID", policySpec(idOptional, ""), `{"data": {"type": "policy", "id": "p1", "attributes": {}}}`, 422, "/data/id: must be a UUID"},
		{"policy attributes required", policySpec(idOptional, ""), `{"data": {"type": "policy"}}`, 422, "/data/attributes: is required"},
	}
	for _, tc := range cases {
		env, err := parseEnvelope([]byte(tc.body), tc.spec)
		if tc.status == 0 {
			require.NoError(t, err, tc.name)
			require.Equal(t, tc.want, env.ID, tc.name)
			continue
		}
		var apiErr *apierror.Error
		require.True(t, errors.As(err, &apiErr), "%s: %v", tc.name, err)
		require.Equal(t, tc.status, apiErr.Status, tc.name)
		require.Equal(t, tc.want, apiErr.Message, tc.name)
	}
}

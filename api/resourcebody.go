package api

import (
	"encoding/json"
	"net/http"

	"github.com/ai-job-gateway/gateway/api/apierror"
)

// resourceBody is the validated envelope of an administrative write,
// {data: {id, type, attributes}}.
type resourceBody struct {
	ID string
	// Attributes are the members of data.attributes; nil when absent or
	// null.
	Attributes map[string]json.RawMessage
}

// parseResourceBody checks the envelope of an administrative write: data
// is required with a string id and type typ; a non-empty pathID must equal
// data.id; attributes, when given, is an object with only the allowed
// members. Unknown members at the top level are ignored, as for jobs.
func parseResourceBody(body []byte, typ, pathID string, allowed ...string) (*resourceBody, *apierror.Error) {
	if !json.Valid(body) {
		return nil, apierror.New(http.StatusBadRequest, apierror.CodeMalformedJSON, "the request body is not valid JSON")
	}
	root, err := object(body, "")
	if err != nil {
		return nil, err
	}
	if root == nil {
		return nil, apierror.Validation("/", "must be an object with a data member")
	}
	data, err := object(root["data"], ptrData)
	if err != nil {
		return nil, err
	}
	if data == nil {
		return nil, apierror.Validation(ptrData, "is required")
	}
	if err := onlyKeys(data, ptrData, "id", "type", "attributes"); err != nil {
		return nil, err
	}
	gotType, ok, err := stringMember(data, "type", ptrData)
	if err != nil {
		return nil, err
	}
	if !ok || gotType != typ {
		return nil, apierror.Validation(ptrData+"/type", "is required and must be %q", typ)
	}
	id, ok, err := stringMember(data, "id", ptrData)
	if err != nil {
		return nil, err
	}
	if !ok || id == "" {
		return nil, apierror.Validation(ptrData+"/id", "is required")
	}
	if pathID != "" && id != pathID {
		return nil, apierror.Validation(ptrData+"/id", "must equal the id in the path (%q), not %q", pathID, id)
	}
	attrs, err := object(data["attributes"], ptrAttributes)
	if err != nil {
		return nil, err
	}
	if err := onlyKeys(attrs, ptrAttributes, allowed...); err != nil {
		return nil, err
	}
	return &resourceBody{ID: id, Attributes: attrs}, nil
}

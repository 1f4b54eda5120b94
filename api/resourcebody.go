package api

import (
	"encoding/json"

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
func parseResourceBody(body []byte, typ, pathID string, allowed ...string) (*resourceBody, error) {
	data, err := dataMember(body, "id", "type", "attributes")
	if err != nil {
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

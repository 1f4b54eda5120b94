package api

import (
	"encoding/json"
	"io"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/ai-job-gateway/gateway/api/apierror"
)

// envelope is the checked body of a write, {data: {type, id, attributes}}.
type envelope struct {
	// ID is data.id as envelopeSpec.ID gave it.
	ID string
	// Attributes are the members of data.attributes; nil when absent or
	// null.
	Attributes map[string]json.RawMessage
	// Meta is data.meta as sent, when Members allow it.
	Meta json.RawMessage
}

// envelopeSpec is what a write's body must hold.
type envelopeSpec struct {
	// Type is the required data.type.
	Type string
	// Members are the members data may have.
	Members []string
	// WrongType, when set, is the error of a data.type that is given but
	// not Type (the default says it is required and must be Type).
	WrongType func(got string) error
	// ID checks data.id (a string when given) and gives the id to use;
	// nil takes none.
	ID func(id string, given bool) (string, error)
	// Attributes are the members data.attributes may have.
	Attributes []string
	// AttributesRequired refuses a body without data.attributes.
	AttributesRequired bool
}

// readEnvelope reads the request body and checks it against spec.
func readEnvelope(c *gin.Context, spec envelopeSpec) (*envelope, error) {
	body, err := io.ReadAll(c.Request.Body)
	if err != nil {
		return nil, err
	}
	return parseEnvelope(body, spec)
}

// parseEnvelope checks a body down to the members of data.attributes, in
// this order: data (dataMember), data.type, data.id, data.attributes.
// Unknown members at the top level are ignored, as for jobs.
func parseEnvelope(body []byte, spec envelopeSpec) (*envelope, error) {
	data, err := dataMember(body, spec.Members...)
	if err != nil {
		return nil, err
	}
	typ, ok, err := stringMember(data, "type", ptrData)
	if err != nil {
		return nil, err
	}
	if ok && typ != spec.Type && spec.WrongType != nil {
		return nil, spec.WrongType(typ)
	}
	if !ok || typ != spec.Type {
		return nil, apierror.Validation(ptrData+"/type", "is required and must be %q", spec.Type)
	}
	var id string
	if spec.ID != nil {
		given, ok, err := stringMember(data, "id", ptrData)
		if err != nil {
			return nil, err
		}
		if id, err = spec.ID(given, ok); err != nil {
			return nil, err
		}
	}
	attrs, err := object(data["attributes"], ptrAttributes)
	if err != nil {
		return nil, err
	}
	if attrs == nil && spec.AttributesRequired {
		return nil, apierror.Validation(ptrAttributes, "is required")
	}
	if err := onlyKeys(attrs, ptrAttributes, spec.Attributes...); err != nil {
		return nil, err
	}
	return &envelope{ID: id, Attributes: attrs, Meta: data["meta"]}, nil
}

// dataMember checks a request body down to its data object: valid JSON
// (else 400), every string Unicode (else 422, see checkUnicode), an object
// with a data object holding only the allowed members. Unknown members at
// the top level are ignored.
func dataMember(body []byte, allowed ...string) (map[string]json.RawMessage, error) {
	if !json.Valid(body) {
		return nil, apierror.New(http.StatusBadRequest, apierror.CodeMalformedJSON, "the request body is not valid JSON")
	}
	if err := checkUnicode(body); err != nil {
		return nil, err
	}
	if err := checkDuplicateMembers(body); err != nil {
		return nil, err
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
	if err := onlyKeys(data, ptrData, allowed...); err != nil {
		return nil, err
	}
	return data, nil
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

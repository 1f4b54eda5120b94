package strictjson

import "encoding/json"

// Envelope is the checked body of a JSON:API write, {data: {type, id,
// attributes}} (docs/api.md, Validation).
type Envelope struct {
	// ID is data.id as EnvelopeSpec.ID gave it.
	ID string
	// Attributes are the members of data.attributes; nil when absent or
	// null.
	Attributes map[string]json.RawMessage
	// Meta is data.meta as sent, when Members allow it.
	Meta json.RawMessage
}

// EnvelopeSpec is what a write's body must hold.
type EnvelopeSpec struct {
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

// Where an envelope's members are.
const (
	ptrData       = "/data"
	ptrAttributes = "/data/attributes"
)

// ParseEnvelope checks a body down to the members of data.attributes, in
// this order: data (DataMember), data.type, data.id, data.attributes.
// Unknown members at the top level are ignored. The errors are *Error,
// or those of spec's WrongType and ID.
func ParseEnvelope(body []byte, spec EnvelopeSpec) (*Envelope, error) {
	data, err := DataMember(body, spec.Members...)
	if err != nil {
		return nil, err
	}
	typ, ok, err := String(data, "type", ptrData)
	if err != nil {
		return nil, err
	}
	if ok && typ != spec.Type && spec.WrongType != nil {
		return nil, spec.WrongType(typ)
	}
	if !ok || typ != spec.Type {
		return nil, errorf(ptrData+"/type", "is required and must be %q", spec.Type)
	}
	var id string
	if spec.ID != nil {
		given, ok, err := String(data, "id", ptrData)
		if err != nil {
			return nil, err
		}
		if id, err = spec.ID(given, ok); err != nil {
			return nil, err
		}
	}
	attrs, err := Object(data["attributes"], ptrAttributes)
	if err != nil {
		return nil, err
	}
	if attrs == nil && spec.AttributesRequired {
		return nil, errorf(ptrAttributes, "is required")
	}
	if err := OnlyKeys(attrs, ptrAttributes, spec.Attributes...); err != nil {
		return nil, err
	}
	return &Envelope{ID: id, Attributes: attrs, Meta: data["meta"]}, nil
}

// DataMember checks a body down to its data object: valid JSON, every
// string Unicode (CheckUnicode), no member named twice
// (CheckDuplicateMembers), an object with a data object holding only the
// allowed members. Unknown members at the top level are ignored. A
// non-nil error is an *Error.
func DataMember(body []byte, allowed ...string) (map[string]json.RawMessage, error) {
	if !json.Valid(body) {
		return nil, errorf("", "is not valid JSON")
	}
	if err := CheckUnicode(body); err != nil {
		return nil, err
	}
	if err := CheckDuplicateMembers(body); err != nil {
		return nil, err
	}
	root, err := Object(body, "")
	if err != nil {
		return nil, err
	}
	if root == nil {
		return nil, errorf("", "must be an object with a data member")
	}
	data, err := Object(root["data"], ptrData)
	if err != nil {
		return nil, err
	}
	if data == nil {
		return nil, errorf(ptrData, "is required")
	}
	if err := OnlyKeys(data, ptrData, allowed...); err != nil {
		return nil, err
	}
	return data, nil
}

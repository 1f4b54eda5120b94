package api

import (
	"encoding/json"
	"errors"

	"github.com/ai-job-gateway/gateway/api/apierror"
	"github.com/ai-job-gateway/gateway/internal/strictjson"
)

// object, onlyKeys, decodeStrict and stringMember are strictjson's
// checks with its errors as the API's 422 (docs/api.md, Validation).
func object(raw json.RawMessage, pointer string) (map[string]json.RawMessage, error) {
	members, err := strictjson.Object(raw, pointer)
	return members, validation(err)
}

func onlyKeys(members map[string]json.RawMessage, pointer string, allowed ...string) error {
	return validation(strictjson.OnlyKeys(members, pointer, allowed...))
}

func decodeStrict(raw json.RawMessage, pointer string, v any) error {
	return validation(strictjson.Decode(raw, pointer, v))
}

func stringMember(members map[string]json.RawMessage, key, pointer string) (string, bool, error) {
	s, ok, err := strictjson.String(members, key, pointer)
	return s, ok, validation(err)
}

// validation is a strictjson error as the API's 422; other errors as
// they are.
func validation(err error) error {
	var e *strictjson.Error
	if errors.As(err, &e) {
		return apierror.Validation(e.Pointer, "%s", e.Message)
	}
	return err
}

// checkUnicode is strictjson.CheckUnicode with its error as the API's 422.
func checkUnicode(body []byte) *apierror.Error {
	if err := strictjson.CheckUnicode(body); err != nil {
		return apierror.Validation(err.Pointer, "%s", err.Message)
	}
	return nil
}

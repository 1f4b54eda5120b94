// Package settings decodes the adapter-specific settings of a provider.
package settings

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"slices"
	"sort"
	"strings"
)

// Decode decodes a provider's settings into the struct pointed to by
// into, whose json tags name the known keys; unknown keys and wrong types
// are errors that say how to fix them.
func Decode(settings map[string]any, into any) error {
	t := reflect.TypeOf(into)
	if t == nil || t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("settings: settings.Decode needs a pointer to a struct, got %T", into)
	}
	known := keys(t.Elem())
	var unknown []string
	for k := range settings {
		if !slices.Contains(known, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return fmt.Errorf("settings: unknown key(s) %s; known keys: %s",
			quoteAll(unknown), strings.Join(known, ", "))
	}
	data, err := json.Marshal(settings)
	if err != nil {
		return fmt.Errorf("settings: %w", err)
	}
	if err := json.Unmarshal(data, into); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return fmt.Errorf("settings: %s must be %s, not %s", key(t.Elem(), te.Field), describeType(te.Type), te.Value)
		}
		return fmt.Errorf("settings: %w", err)
	}
	return nil
}

// keys are the json names of t's fields, those of an embedded struct
// (API) included.
func keys(t reflect.Type) []string {
	var known []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "" && f.Anonymous && f.Type.Kind() == reflect.Struct:
			known = append(known, keys(f.Type)...)
		case name != "" && name != "-":
			known = append(known, name)
		}
	}
	return known
}

// key is the settings key of the field path json names: without the names
// of embedded structs (API.base_url is base_url).
func key(t reflect.Type, path string) string {
	first, rest, nested := strings.Cut(path, ".")
	if f, ok := t.FieldByName(first); ok && nested && f.Anonymous && f.Type.Kind() == reflect.Struct {
		return key(f.Type, rest)
	}
	return path
}

func quoteAll(s []string) string {
	q := make([]string, len(s))
	for i, v := range s {
		q[i] = fmt.Sprintf("%q", v)
	}
	return strings.Join(q, ", ")
}

func describeType(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	}
	return t.String()
}

// API are the settings of a vendor's HTTP API that the adapters of such
// vendors embed in their Settings.
type API struct {
	// BaseURL is the API root.
	BaseURL string `json:"base_url"`
	// APIKeyEnv names the environment variable holding the API key.
	APIKeyEnv string `json:"api_key_env"`
}

// Open checks base_url (example names an API root for the message when it
// is missing) and reads the API key (keyExample names a variable for the
// message when api_key_env is missing); both failures are reported at
// once.
func (s API) Open(example, keyExample string, lookupEnv func(string) (string, bool)) (baseURL, key string, err error) {
	baseURL, urlErr := BaseURL(s.BaseURL, example)
	key, keyErr := APIKey(s.APIKeyEnv, keyExample, lookupEnv)
	return baseURL, key, errors.Join(urlErr, keyErr)
}

// APIKey reads the API key from the environment variable that the
// api_key_env setting names; example is a variable name for the message.
// The key itself never appears in an error.
func APIKey(envName, example string, lookupEnv func(string) (string, bool)) (string, error) {
	if envName == "" {
		return "", fmt.Errorf("settings: api_key_env is missing; name the environment variable that holds the API key, e.g. %s", example)
	}
	v, ok := lookupEnv(envName)
	if !ok || v == "" {
		return "", fmt.Errorf("settings: api_key_env names %s, but that environment variable is not set", envName)
	}
	return v, nil
}

// BaseURL checks that the base_url setting is an absolute http or https
// URL and returns it without a trailing slash; example is one for the
// message when it is missing.
func BaseURL(raw, example string) (string, error) {
	if raw == "" {
		return "", fmt.Errorf("settings: base_url is missing; set the API root, e.g. %s", example)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("settings: base_url %q is not an absolute http or https URL", raw)
	}
	return strings.TrimRight(raw, "/"), nil
}

package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/google/uuid"
	"golang.org/x/text/language"

	"github.com/ai-job-gateway/gateway/api/apierror"
	"github.com/ai-job-gateway/gateway/api/auth"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/policy"
	"github.com/ai-job-gateway/gateway/providers"
)

// surrogateLike finds what could be a \u escape of a UTF-16 surrogate.
var surrogateLike = regexp.MustCompile(`\\u[dD][89abcdefABCDEF]`)

// requireValidation checks a 422 VALIDATION_ERROR whose message starts
// with a JSON pointer.
func requireValidation(t *testing.T, body []byte, err *apierror.Error) {
	t.Helper()
	if err.Status != http.StatusUnprocessableEntity || err.Code != apierror.CodeValidation || !strings.HasPrefix(err.Message, "/") {
		t.Fatalf("%q: %v is not a validation error naming a pointer", body, err)
	}
}

// FuzzRequestBody runs dataMember, the first check of every JSON body:
// invalid JSON is a 400; every body it accepts is Unicode text (no invalid
// UTF-8, no unpaired surrogate escape) with a data object of allowed
// members; and valid JSON that is plainly Unicode passes checkUnicode.
func FuzzRequestBody(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte) {
		data, derr := dataMember(body, "type", "attributes")
		err := apiError(t, derr)
		if !json.Valid(body) {
			if err == nil || err.Status != http.StatusBadRequest || err.Code != apierror.CodeMalformedJSON {
				t.Fatalf("invalid JSON %q: %v", body, err)
			}
			return
		}
		uerr := checkUnicode(body)
		switch {
		case uerr != nil:
			requireValidation(t, body, uerr)
			if !reflect.DeepEqual(err, uerr) {
				t.Fatalf("%q: dataMember gives %v before the Unicode check's %v", body, err, uerr)
			}
		case !utf8.Valid(body):
			t.Fatalf("%q is not UTF-8, yet passes", body)
		}
		if utf8.Valid(body) && !surrogateLike.Match(body) && !bytes.Contains(body, []byte(`\u0000`)) && uerr != nil {
			t.Fatalf("%q is plain Unicode, yet: %v", body, uerr)
		}
		if err != nil {
			if err.Status != http.StatusUnprocessableEntity || !strings.HasPrefix(err.Message, "/") {
				t.Fatalf("%q: %v", body, err)
			}
			return
		}
		var root struct {
			Data map[string]json.RawMessage `json:"data"`
		}
		if jerr := json.Unmarshal(body, &root); jerr != nil || root.Data == nil {
			t.Fatalf("accepted %q without a data object (%v)", body, jerr)
		}
		for key := range data {
			if key != "type" && key != "attributes" {
				t.Fatalf("accepted %q with data member %q", body, key)
			}
		}
	})
}

// jsonStringContent writes s as the inside of a JSON string, escaping only
// what JSON requires and leaving other bytes (invalid UTF-8 too) raw.
func jsonStringContent(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20:
			fmt.Fprintf(&b, `\u%04x`, c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// loneEscape is the first of two \u escapes, e1 then e2, that is an
// unpaired surrogate, or "".
func loneEscape(e1, e2 uint16) string {
	r1, r2 := rune(e1), rune(e2)
	isHigh := func(r rune) bool { return 0xD800 <= r && r < 0xDC00 }
	switch {
	case isHigh(r1) && utf16.DecodeRune(r1, r2) != utf8.RuneError:
		return "" // a pair
	case utf16.IsSurrogate(r1):
		return fmt.Sprintf(`\u%04x`, e1)
	case utf16.IsSurrogate(r2):
		return fmt.Sprintf(`\u%04x`, e2)
	}
	return ""
}

// firstProblem is what checkUnicode must say of a string holding text and
// then the escapes e1 and e2: the first of invalid UTF-8, NUL and an
// unpaired surrogate, in the order they stand, or "".
func firstProblem(text string, e1, e2 uint16) string {
	bad, nul := -1, strings.IndexByte(text, 0)
	for i, r := range text {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(text[i:]); size == 1 {
				bad = i
				break
			}
		}
	}
	switch {
	case bad >= 0 && (nul < 0 || bad < nul):
		return "is not valid UTF-8"
	case nul >= 0:
		return `holds a NUL character (\u0000)`
	}
	lone := loneEscape(e1, e2)
	for _, e := range []uint16{e1, e2} {
		switch esc := fmt.Sprintf(`\u%04x`, e); {
		case e == 0:
			return `holds a NUL character (\u0000)`
		case esc == lone:
			return "holds an unpaired UTF-16 surrogate escape (" + esc + ")"
		}
	}
	return ""
}

// FuzzCheckUnicodeNamesTheString puts text and two \u escapes in a member
// name or a string value and checks checkUnicode's verdict and pointer
// against what they hold.
func FuzzCheckUnicodeNamesTheString(f *testing.F) {
	f.Fuzz(func(t *testing.T, text string, e1, e2 uint16, inName bool) {
		literal := fmt.Sprintf(`"%s\u%04x\u%04x"`, jsonStringContent(text), e1, e2)
		body := `{"data": {"attributes": {"ok": "fine", "x~/y": ` + literal + `}}}`
		want := "/data/attributes/x~0~1y: "
		if inName {
			body = `{"data": {"attributes": {"ok": "fine", ` + literal + `: "v"}}}`
			want = "/data/attributes: has a member name that "
		}
		if !json.Valid([]byte(body)) {
			t.Fatalf("the test built invalid JSON: %q", body)
		}
		if problem := firstProblem(text, e1, e2); problem != "" {
			want += problem
		} else {
			want = ""
		}
		err := checkUnicode([]byte(body))
		if want == "" {
			if err != nil {
				t.Fatalf("%q: %v", body, err)
			}
			return
		}
		if err == nil || err.Message != want {
			t.Fatalf("%q: got %v, want %q", body, err, want)
		}
		requireValidation(t, []byte(body), err)
	})
}

const fuzzPolicyID = "0190d2c5-6b1c-7e44-85a3-e9160a29d3b9"

// encodePolicyDraft writes d back as the body of a policy write.
func encodePolicyDraft(d *policyDraft, rule idRule) []byte {
	attrs := map[string]any{}
	add := func(key string, set, null bool, value any) {
		switch {
		case null:
			attrs[key] = nil
		case set:
			attrs[key] = value
		}
	}
	add("tenant", d.tenant.set, d.tenant.null, d.tenant.value)
	add("name", d.name.set, d.name.null, d.name.value)
	add("description", d.description.set, d.description.null, d.description.value)
	add("routing_strategy", d.strategy.set, d.strategy.null, d.strategy.value)
	add("service", d.service.set, d.service.null, d.service.value)
	add("application", d.application.set, d.application.null, d.application.value)
	add("services", d.services.set, d.services.null, d.services.value)
	add("providers", d.providers.set, d.providers.null, d.providers.value)
	data := map[string]any{"type": "policy", "attributes": attrs}
	if rule != idForbidden && d.id != "" {
		data["id"] = d.id
	}
	body, _ := json.Marshal(map[string]any{"data": data})
	return body
}

// FuzzPolicyBody parses any body as each kind of policy write: a draft it
// returns holds only valid values and encodes back to a body that parses
// to the same draft; a draft that applies gives a valid policy.
func FuzzPolicyBody(f *testing.F) {
	s := policyCodec{catalog: providers.DefaultCatalog()}
	f.Fuzz(func(t *testing.T, body []byte, ruleN uint8) {
		rule := idRule(ruleN % 3)
		d, perr := s.parsePolicyBody(body, rule, fuzzPolicyID)
		if err := apiError(t, perr); err != nil {
			if (err.Status != http.StatusBadRequest && err.Status != http.StatusUnprocessableEntity) ||
				(err.Status == http.StatusUnprocessableEntity && !strings.HasPrefix(err.Message, "/")) {
				t.Fatalf("%q: %v", body, err)
			}
			return
		}
		switch rule {
		case idForbidden:
			if d.id != "" {
				t.Fatalf("%q: id %q on create", body, d.id)
			}
		case idRequired:
			if d.id != fuzzPolicyID {
				t.Fatalf("%q: id %q, want the path's", body, d.id)
			}
		case idOptional:
			if _, perr := uuid.Parse(d.id); d.id != "" && (perr != nil || d.id != strings.ToLower(d.id)) {
				t.Fatalf("%q: id %q", body, d.id)
			}
		}
		if d.strategy.present() && !slices.Contains(policy.Strategies, d.strategy.value) {
			t.Fatalf("%q: strategy %q", body, d.strategy.value)
		}
		services := slices.Clone(d.services.value)
		if d.service.present() {
			services = append(services, d.service.value)
		}
		for _, id := range services {
			if _, ok := jobs.LookupService(string(id)); !ok {
				t.Fatalf("%q: service %q", body, id)
			}
		}
		if d.application.present() && !auth.SlugPattern.MatchString(d.application.value) {
			t.Fatalf("%q: application %q", body, d.application.value)
		}
		ids, priorities := map[string]bool{}, map[int]bool{}
		for _, e := range d.providers.value {
			if _, ok := s.catalog.Lookup(e.ProviderID); !ok || ids[e.ProviderID] || e.Priority < 1 || priorities[e.Priority] || e.Weight < 1 {
				t.Fatalf("%q: entry %+v", body, e)
			}
			ids[e.ProviderID], priorities[e.Priority] = true, true
			if c := e.Conditions; c != nil {
				if (c.MaxFileSizeMB != nil && *c.MaxFileSizeMB < 1) || (c.Languages != nil && len(c.Languages) == 0) {
					t.Fatalf("%q: conditions %+v", body, c)
				}
				for _, code := range c.Languages {
					if _, lerr := language.Parse(code); lerr != nil {
						t.Fatalf("%q: language %q", body, code)
					}
				}
			}
		}

		again := encodePolicyDraft(d, rule)
		d2, err := s.parsePolicyBody(again, rule, fuzzPolicyID)
		if err != nil || !reflect.DeepEqual(d, d2) {
			t.Fatalf("%q parses to %+v; written back as %s it parses to %+v (%v)", body, d, again, d2, err)
		}

		var p policy.Policy
		if s.applyPolicyDraft(&p, d, true) != nil {
			return
		}
		if strings.TrimSpace(p.Name) == "" || utf8.RuneCountInString(p.Name) > maxPolicyNameLength ||
			!slices.Contains(policy.Strategies, p.Strategy) ||
			(p.Application != "" && len(p.Services) != 1) ||
			!slices.IsSortedFunc(p.Providers, func(a, b policy.Entry) int { return a.Priority - b.Priority }) {
			t.Fatalf("%q applies as %+v", body, p)
		}
	})
}

// apiError is err as the API error it must be, nil for nil.
func apiError(t *testing.T, err error) *apierror.Error {
	t.Helper()
	if err == nil {
		return nil
	}
	var apiErr *apierror.Error
	if !errors.As(err, &apiErr) {
		t.Fatalf("%v is not an API error", err)
	}
	return apiErr
}

package strictjson_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/ai-job-gateway/gateway/internal/strictjson"
)

// names checks that every member name in raw, at every depth the sample
// type describes, is exactly one of its JSON names.
func names(t *testing.T, raw []byte) {
	t.Helper()
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		t.Fatalf("accepted %q, which is not an object: %v", raw, err)
	}
	for key, value := range top {
		switch key {
		case "url", "count", "tags", "headers":
		case "inner":
			var inner map[string]json.RawMessage
			if json.Unmarshal(value, &inner) == nil {
				for k := range inner {
					if k != "weight" {
						t.Fatalf("accepted %q with member /inner/%s", raw, k)
					}
				}
			}
		default:
			t.Fatalf("accepted %q with member /%s", raw, key)
		}
	}
}

// FuzzDecode decodes anything into a sample: an error is a *Error under
// the given pointer; a success is an object whose member names are all
// exact, which decodes as encoding/json decodes it, and whose value
// survives encoding and decoding again.
func FuzzDecode(f *testing.F) {
	f.Fuzz(func(t *testing.T, raw []byte) {
		var v sample
		err := strictjson.Decode(raw, "/in", &v)
		if err != nil {
			var fe *strictjson.Error
			if !errors.As(err, &fe) || !strings.HasPrefix(fe.Pointer, "/in") || fe.Message == "" {
				t.Fatalf("%q: error %#v is not an *Error under /in", raw, err)
			}
			return
		}
		if strictjson.Absent(raw) {
			if v.URL != "" || v.Count != nil || v.Tags != nil || v.Inner != (inner{}) || v.Headers != nil {
				t.Fatalf("absent %q set %+v", raw, v)
			}
			return
		}
		names(t, raw)
		var plain sample
		if err := json.Unmarshal(raw, &plain); err != nil {
			t.Fatalf("accepted %q, which encoding/json refuses: %v", raw, err)
		}
		first, _ := json.Marshal(v)
		if again, _ := json.Marshal(plain); !bytes.Equal(first, again) {
			t.Fatalf("%q decodes to %s, encoding/json to %s", raw, first, again)
		}
		var back sample
		if err := strictjson.Decode(first, "/in", &back); err != nil {
			t.Fatalf("%s (from %q) does not decode: %v", first, raw, err)
		}
		if second, _ := json.Marshal(back); !bytes.Equal(first, second) {
			t.Fatalf("round trip of %q: %s then %s", raw, first, second)
		}
	})
}

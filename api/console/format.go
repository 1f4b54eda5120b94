package console

import (
	"bytes"
	"encoding/json"
	"html/template"
	"time"
	"unicode/utf8"
)

// previewBytes bounds a JSON document's preview on a page.
const previewBytes = 8 << 10

// templateFuncs are the functions the templates call; what they return
// is text, escaped by html/template like any value.
var templateFuncs = template.FuncMap{
	"preview": preview,
	"when":    when,
}

// preview is raw JSON indented, cut at previewBytes; "" for none.
func preview(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		buf.Reset()
		buf.Write(raw)
	}
	text := unescapeHTML(buf.Bytes())
	if len(text) <= previewBytes {
		return string(text)
	}
	cut := text[:previewBytes]
	for len(cut) > 0 && !utf8.Valid(cut) {
		cut = cut[:len(cut)-1]
	}
	return string(cut) + "\n… (cut: the whole document is in the API's answer)"
}

// when is t in UTC to the second; "" for nil or zero.
func when(t any) string {
	var v time.Time
	switch t := t.(type) {
	case time.Time:
		v = t
	case *time.Time:
		if t != nil {
			v = *t
		}
	}
	if v.IsZero() {
		return ""
	}
	return v.UTC().Format("2006-01-02 15:04:05 UTC")
}

// htmlEscapes are the escapes Go's JSON encoder writes for <, > and &;
// a page shows the characters (html/template escapes them for HTML).
var htmlEscapes = map[string]byte{"u003c": '<', "u003e": '>', "u0026": '&'}

// unescapeHTML turns JSON text's \u003c, \u003e and \u0026 back into
// the characters, leaving every other escape as it is.
func unescapeHTML(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 == len(b) {
			out = append(out, b[i])
			continue
		}
		if i+6 <= len(b) {
			if c, ok := htmlEscapes[string(b[i+1:i+6])]; ok {
				out = append(out, c)
				i += 5
				continue
			}
		}
		out = append(out, b[i], b[i+1]) // an escape, kept whole
		i++
	}
	return out
}

package strictjson

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"
)

// CheckUnicode rejects a body (already valid JSON) whose strings are not
// Unicode text: invalid UTF-8, or a \u escape of an unpaired UTF-16
// surrogate; and strings holding NUL, which PostgreSQL's text cannot store.
// encoding/json would silently read either as U+FFFD while raw members
// (input, options, meta.client) are stored and echoed as sent. The *Error
// names the string's JSON pointer, or for a member name the object's.
func CheckUnicode(body []byte) *Error {
	problem := "is not valid UTF-8"
	at := -1
	if !utf8.Valid(body) {
		at = invalidUTF8At(body)
	}
	if escProblem, escAt := badEscape(body); escAt >= 0 && (at < 0 || escAt < at) {
		at, problem = escAt, escProblem
	}
	if at < 0 {
		return nil
	}
	pointer, inKey := stringAt(body, at)
	if inKey {
		return errorf(pointer, "has a member name that %s", problem)
	}
	return errorf(pointer, "%s", problem)
}

// invalidUTF8At is the offset of the first byte that is not valid UTF-8.
func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		if b[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			return i
		}
		i += size
	}
	return -1
}

// badEscape finds the first \u escape of an unpaired surrogate or of NUL
// (which no text column can hold) in valid JSON, where every backslash
// starts an escape inside a string, and says what is wrong with it.
func badEscape(b []byte) (string, int) {
	for i := 0; ; {
		j := bytes.IndexByte(b[i:], '\\')
		if j < 0 {
			return "", -1
		}
		i += j
		if b[i+1] != 'u' {
			i += 2
			continue
		}
		r := hex4(b[i+2 : i+6])
		switch {
		case 0xD800 <= r && r < 0xDC00:
			if i+12 <= len(b) && b[i+6] == '\\' && b[i+7] == 'u' {
				if low := hex4(b[i+8 : i+12]); 0xDC00 <= low && low < 0xE000 {
					i += 12
					continue
				}
			}
			return "holds an unpaired UTF-16 surrogate escape (" + string(b[i:i+6]) + ")", i
		case 0xDC00 <= r && r < 0xE000:
			return "holds an unpaired UTF-16 surrogate escape (" + string(b[i:i+6]) + ")", i
		case r == 0:
			return `holds a NUL character (\u0000)`, i
		}
		i += 6
	}
}

// hex4 decodes four hex digits (valid JSON guarantees them).
func hex4(h []byte) rune {
	var r rune
	for _, c := range h[:4] {
		switch {
		case c <= '9':
			c -= '0'
		case c <= 'F':
			c -= 'A' - 10
		default:
			c -= 'a' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}

// stringAt walks valid JSON to the string holding byte offset at and gives
// its pointer; for a member name (inKey) it gives the object's pointer.
func stringAt(body []byte, at int) (pointer string, inKey bool) {
	type frame struct {
		object  bool
		wantKey bool
		key     string
		index   int
	}
	var stack []frame
	path := func(n int) string {
		var sb strings.Builder
		for _, f := range stack[:n] {
			sb.WriteByte('/')
			if f.object {
				sb.WriteString(EscapeName(f.key))
			} else {
				sb.WriteString(strconv.Itoa(f.index))
			}
		}
		return sb.String()
	}
	valueDone := func() {
		if len(stack) == 0 {
			return
		}
		top := &stack[len(stack)-1]
		if top.object {
			top.wantKey = true
		} else {
			top.index++
		}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err != nil {
			return "", false
		}
		switch v := tok.(type) {
		case json.Delim:
			if v == '{' || v == '[' {
				stack = append(stack, frame{object: v == '{', wantKey: true})
				continue
			}
			stack = stack[:len(stack)-1]
		case string:
			end := int(dec.InputOffset())
			if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].wantKey {
				if end > at {
					return path(n - 1), true
				}
				stack[n-1].key, stack[n-1].wantKey = v, false
				continue
			}
			if end > at {
				return path(len(stack)), false
			}
		}
		valueDone()
	}
}

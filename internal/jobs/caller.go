package jobs

import "strings"

// keyCallerPrefix marks a job's user that is one of the gateway's API
// keys: "key:<id>" (docs/api.md, API keys).
const keyCallerPrefix = "key:"

// KeyCaller is how API key id is recorded as a job's user.
func KeyCaller(id string) string { return keyCallerPrefix + id }

// CallerKey is the id of the API key that user is, "" when user is not a
// key: the key a job's usage is billed to. A key's id is 16 characters of
// lowercase base32.
func CallerKey(user string) string {
	id, ok := strings.CutPrefix(user, keyCallerPrefix)
	if !ok || len(id) != 16 || strings.IndexFunc(id, func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= '2' && r <= '7') }) >= 0 {
		return ""
	}
	return id
}

package jobs

import (
	"encoding/json"
	"fmt"
)

// WithDownloadURL returns the result object with its download_url member
// set to url (docs/media.md, Result files). The link is minted when the
// result is handed out, so it is never stale; it is not stored.
func WithDownloadURL(result json.RawMessage, url string) (json.RawMessage, error) {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(result, &members); err != nil || members == nil {
		return nil, fmt.Errorf("result is not a JSON object: %v", err)
	}
	link, err := json.Marshal(url)
	if err != nil {
		return nil, err
	}
	members["download_url"] = link
	return json.Marshal(members)
}

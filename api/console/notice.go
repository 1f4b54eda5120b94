package console

import (
	"net/http"
	"regexp"
)

// noticeValue is what a notice after an action may name: an id, a
// provider's service, a count.
var noticeValue = regexp.MustCompile(`^[A-Za-z0-9._/-]{1,100}$`)

// notice is the value of the query parameter name that the page after an
// action shows in its notice ("" when it is not an id): a link from
// elsewhere cannot put sentences in the console's mouth.
func notice(r *http.Request, name string) string {
	v := r.URL.Query().Get(name)
	if !noticeValue.MatchString(v) {
		return ""
	}
	return v
}

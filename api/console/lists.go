package console

import (
	"encoding/json"
	"net/url"
)

// listDoc is a page of one of the API's lists (docs/api.md, Pagination):
// its items, the total, and the links to the pages beside it.
type listDoc[T any] struct {
	Data []T `json:"data"`
	Meta struct {
		Total int64 `json:"total"`
	} `json:"meta"`
	Links struct {
		Prev *string `json:"prev"`
		Next *string `json:"next"`
	} `json:"links"`
}

// decodeList reads a list's answer.
func decodeList[T any](body []byte) (*listDoc[T], error) {
	var l listDoc[T]
	if err := json.Unmarshal(body, &l); err != nil {
		return nil, err
	}
	return &l, nil
}

// pageLinks are the console's links to the pages beside the list's, on
// console path page with its query values.
func (l *listDoc[T]) pageLinks(page string, values url.Values) (prev, next string) {
	return numberedLink(page, values, l.Links.Prev), numberedLink(page, values, l.Links.Next)
}

// numberedLink is the console's link to the page of console path page
// that an API link names by page[number], with the console's query
// values; "" for none.
func numberedLink(page string, values url.Values, link *string) string {
	if link == nil {
		return ""
	}
	u, err := url.Parse(*link)
	if err != nil {
		return ""
	}
	q := url.Values{}
	for name, v := range values {
		q[name] = v
	}
	if n := u.Query().Get("page[number]"); n != "" {
		q.Set("page", n)
	}
	return Path + page + "?" + q.Encode()
}

// decodeData reads the answer of one document, {"data": ...}.
func decodeData[T any](body []byte) (T, error) {
	var doc struct {
		Data T `json:"data"`
	}
	err := json.Unmarshal(body, &doc)
	return doc.Data, err
}

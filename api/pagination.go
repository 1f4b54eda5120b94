package api

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/ai-job-gateway/gateway/api/apierror"
)

// Page is a validated page[number] / page[size] pair.
type Page struct {
	Number int
	Size   int
}

// Offset is the number of records before the page.
func (p Page) Offset() int { return (p.Number - 1) * p.Size }

// Page size bounds (docs/api.md, Pagination).
const (
	DefaultPageSize = 20
	MaxPageSize     = 100
)

// parsePage reads page[number] (>= 1, default 1) and page[size] (1..100,
// default 20); anything else is 422.
func parsePage(c *gin.Context) (Page, error) {
	page := Page{Number: 1, Size: DefaultPageSize}
	if v, ok := c.GetQuery("page[number]"); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return page, apierror.New(http.StatusUnprocessableEntity, apierror.CodeValidation, "query page[number]: must be an integer of at least 1")
		}
		page.Number = n
	}
	if v, ok := c.GetQuery("page[size]"); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxPageSize {
			return page, apierror.New(http.StatusUnprocessableEntity, apierror.CodeValidation, "query page[size]: must be an integer from 1 to %d", MaxPageSize)
		}
		page.Size = n
	}
	return page, nil
}

// The ?after= cursors of the streams a client resumes (docs/api.md,
// Batches): absent or empty reads from the start; a cursor that is not
// one is 422 naming after, never an empty stream.

// afterIndex reads ?after= as the index of the last item read (a batch's
// refused items); -1 without one.
func afterIndex(c *gin.Context) (int, error) {
	v := c.Query("after")
	if v == "" {
		return -1, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return -1, apierror.Validation("after", "must be the index of a refused item")
	}
	return n, nil
}

// afterJobID reads ?after= as the id of the last job read (a batch's
// results), lower-cased; "" without one.
func afterJobID(c *gin.Context) (string, error) {
	id := strings.ToLower(c.Query("after"))
	if id == "" {
		return "", nil
	}
	if _, err := uuid.Parse(id); err != nil || len(id) != 36 {
		return "", apierror.Validation("after", "must be the job_id of a results line")
	}
	return id, nil
}

// listMeta is a collection's meta (docs/api.md, Pagination).
type listMeta struct {
	Total     int64 `json:"total"`
	PageCount int64 `json:"page_count"`
	Page      int   `json:"page"`
	PerPage   int   `json:"per_page"`
}

// listLinks are a collection's pagination links; prev and next are null at
// the ends.
type listLinks struct {
	Self  string  `json:"self"`
	First string  `json:"first"`
	Last  string  `json:"last"`
	Prev  *string `json:"prev"`
	Next  *string `json:"next"`
}

// collection renders {data, meta, links} with absolute links that keep the
// request's other query parameters (filters).
func collection[T any](c *gin.Context, data []T, page Page, total int64) gin.H {
	if data == nil {
		data = []T{}
	}
	pageCount := (total + int64(page.Size) - 1) / int64(page.Size)
	link := func(number int64) string {
		u := url.URL{Scheme: scheme(c), Host: c.Request.Host, Path: c.Request.URL.Path}
		q := c.Request.URL.Query()
		q.Set("page[number]", strconv.FormatInt(number, 10))
		q.Set("page[size]", strconv.Itoa(page.Size))
		u.RawQuery = q.Encode()
		return u.String()
	}
	last := max(pageCount, 1)
	links := listLinks{Self: link(int64(page.Number)), First: link(1), Last: link(last)}
	if page.Number > 1 {
		prev := link(min(int64(page.Number-1), last))
		links.Prev = &prev
	}
	if int64(page.Number) < pageCount {
		next := link(int64(page.Number + 1))
		links.Next = &next
	}
	return gin.H{
		"data":  data,
		"meta":  listMeta{Total: total, PageCount: pageCount, Page: page.Number, PerPage: page.Size},
		"links": links,
	}
}

// scheme is the scheme the client used: X-Forwarded-Proto when a trusted
// proxy set it (dropUntrustedForwarding removes it otherwise).
func scheme(c *gin.Context) string {
	if proto := c.GetHeader("X-Forwarded-Proto"); proto == "https" || proto == "http" {
		return proto
	}
	if c.Request.TLS != nil {
		return "https"
	}
	return "http"
}

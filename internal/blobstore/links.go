package blobstore

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"gocloud.dev/blob/driver"
	"gocloud.dev/blob/fileblob"
	"gocloud.dev/gcerrors"
)

// Why a dev link is refused; the messages are the 403's message and never
// echo the link's parts.
var (
	errLinkExpired = errors.New("the download link has expired")
	errLinkInvalid = errors.New("the download link is invalid")
)

// devLinks signs and checks the links of a Dir store with fileblob's
// URLSignerHMAC (an HMAC-SHA256 over key, expiry and method, compared with
// hmac.Equal, expiry checked to the second). It only moves the key from the
// signer's query into the path, so a link ends in the file's name:
//
//	BaseURL/files/results/<job-id>/transcript.srt?expiry=...&method=GET&signature=...
type devLinks struct {
	base   *url.URL
	signer *fileblob.URLSignerHMAC
}

func newDevLinks(base *url.URL, key []byte) *devLinks {
	return &devLinks{base: base, signer: fileblob.NewURLSignerHMAC(&url.URL{}, key)}
}

// URLFromKey implements fileblob.URLSigner.
func (l *devLinks) URLFromKey(ctx context.Context, key string, opts *driver.SignedURLOptions) (*url.URL, error) {
	signed, err := l.signer.URLFromKey(ctx, key, opts)
	if err != nil {
		return nil, err
	}
	q := signed.Query()
	q.Del("obj")
	link := *l.base
	link.Path = strings.TrimSuffix(l.base.Path, "/") + FilesPath + key
	link.RawPath = ""
	link.RawQuery = q.Encode()
	return &link, nil
}

// KeyFromURL implements fileblob.URLSigner for a link as Handler receives
// it: path FilesPath + key, and the signed query. It returns errLinkExpired
// or errLinkInvalid when the link is refused.
func (l *devLinks) KeyFromURL(ctx context.Context, link *url.URL) (string, error) {
	key, ok := strings.CutPrefix(link.Path, FilesPath)
	if !ok || validateKey(key) != nil {
		return "", errLinkInvalid
	}
	q := link.Query()
	// The method is signed; Store.SignedURL only signs GET links.
	if q.Get("method") != http.MethodGet {
		return "", errLinkInvalid
	}
	q.Set("obj", key)
	if _, err := l.signer.KeyFromURL(ctx, &url.URL{RawQuery: q.Encode()}); err != nil {
		// The signer says only "refused". A link past its expiry is reported
		// as expired, whether or not its expiry was also tampered with.
		expiry, parseErr := strconv.ParseInt(q.Get("expiry"), 10, 64)
		if parseErr == nil && time.Now().Unix() > expiry {
			return "", errLinkExpired
		}
		return "", errLinkInvalid
	}
	return key, nil
}

// Handler serves GET and HEAD of a Dir store's signed links under FilesPath
// (mount it there; if BaseURL has a path, the proxy in front strips it). The
// link is its own credential: no token is needed. A refused link answers 403
// FORBIDDEN, a valid link to a missing object 404 NOT_FOUND, in the API's
// error envelope (docs/media.md). URL stores return nil: S3 serves their
// links.
func (s *Store) Handler() http.Handler {
	if s.links == nil {
		return nil
	}
	return http.HandlerFunc(s.serveLink)
}

func (s *Store) serveLink(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED", "download links answer GET and HEAD only")
		return
	}
	key, err := s.links.KeyFromURL(r.Context(), r.URL)
	if err != nil {
		writeError(w, http.StatusForbidden, "FORBIDDEN", err.Error())
		return
	}
	reader, err := s.bucket.NewReader(r.Context(), key, nil)
	if gcerrors.Code(err) == gcerrors.NotFound {
		writeError(w, http.StatusNotFound, "NOT_FOUND", "the file no longer exists")
		return
	}
	if err != nil {
		writeError(w, http.StatusInternalServerError, "INTERNAL_ERROR", "the file could not be read")
		return
	}
	defer func() { _ = reader.Close() }()

	h := w.Header()
	contentType := reader.ContentType()
	if contentType == "" {
		contentType = "application/octet-stream"
	}
	h.Set("Content-Type", contentType)
	// The link is a bearer credential to a private result: no cache may keep
	// the file (a shared cache would serve it without the link; a browser
	// cache would outlive the link), so private, no-store.
	h.Set("Cache-Control", "private, no-store")
	// The file is served from the gateway's origin: never let a browser run
	// it as a page of that origin, whatever its type.
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "sandbox")
	// The blob reader seeks, so ServeContent answers HEAD and Range requests.
	// It would answer many small ranges with a multipart body many times the
	// file's size: a request for more than one range gets the whole file, as
	// RFC 9110 §14.2 allows and S3 does (docs/media.md).
	if rangeCount(r.Header) > 1 {
		r.Header.Del("Range")
	}
	http.ServeContent(w, r, path.Base(key), reader.ModTime(), reader)
}

// rangeCount counts the ranges a request's Range fields ask for, skipping
// empty list elements as ServeContent does.
func rangeCount(h http.Header) int {
	n := 0
	for _, field := range h.Values("Range") {
		for spec := range strings.SplitSeq(field, ",") {
			if strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(spec), "bytes=")) != "" {
				n++
			}
		}
	}
	return n
}

// writeError writes the API's error envelope {"error": {"code", "message"}}
// with one of its codes (docs/api.md, Errors). Activities use this package,
// and they never import api/, so the envelope is written here.
func writeError(w http.ResponseWriter, status int, code, message string) {
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"error": map[string]string{"code": code, "message": message},
	})
}

// Package blobstore keeps the gateway's result files (transcripts,
// translated documents) and intermediate media, and hands out pre-signed,
// expiring download links to them (docs/media.md, Result files and download
// links).
//
// Two backends sit behind one Store, both gocloud.dev/blob drivers: a local
// directory (fileblob, `gateway dev`), whose links the gateway serves itself
// under FilesPath (see Handler), and any S3-compatible bucket (s3blob,
// `gateway serve` and `worker`), whose links are S3 pre-signed GET URLs.
package blobstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"gocloud.dev/blob"
	"gocloud.dev/blob/fileblob"
	"gocloud.dev/blob/s3blob"
	"gocloud.dev/gcerrors"
)

// ErrNotFound is returned (wrapped) for a key that names no object.
var ErrNotFound = errors.New("blob not found")

// ErrInvalidKey is returned (wrapped) for a key or prefix that breaks the key
// rules (see validateKey).
var ErrInvalidKey = errors.New("invalid blob key")

// FilesPath is where the gateway serves dev links (Dir stores only); mount
// Handler there.
const FilesPath = "/files/"

// minSigningKeyBytes is the shortest HMAC key a Dir store accepts.
const minSigningKeyBytes = 16

// Config chooses the backend: exactly one of Dir and URL.
type Config struct {
	// Dir is a local directory (dev); created if missing.
	Dir string
	// URL is an S3-compatible bucket URL, e.g.
	// s3://bucket?endpoint=http://127.0.0.1:9000&region=us-east-1&use_path_style=true
	// (serve/worker). Credentials come from the standard AWS_* environment.
	// public_endpoint=URL signs download links for that endpoint instead.
	URL string
	// SigningKey is the HMAC key for dev links (Dir only); required with Dir,
	// at least 16 bytes. A URL store ignores it: S3 signs its links.
	SigningKey []byte
	// BaseURL is the gateway's public base URL, e.g. http://127.0.0.1:8080;
	// dev links are BaseURL + FilesPath + key + a signed query. Required with Dir.
	BaseURL string
}

// Store is a bucket of result files and media.
type Store struct {
	bucket *blob.Bucket
	// links signs and checks dev links; nil for URL stores, whose links the
	// S3 driver signs.
	links *devLinks
	// signer signs a URL store's links for its public endpoint; nil: the
	// bucket signs them for its own.
	signer *blob.Bucket
}

// Open opens the store cfg describes. A URL store checks that its bucket is
// reachable, so a wrong bucket or credentials fail at startup.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	switch {
	case cfg.Dir != "" && cfg.URL != "":
		return nil, errors.New("blobstore: set either Dir or URL, not both")
	case cfg.Dir != "":
		return openDir(cfg)
	case cfg.URL != "":
		return openURL(ctx, cfg)
	default:
		return nil, errors.New("blobstore: set Dir or URL")
	}
}

func openDir(cfg Config) (*Store, error) {
	if len(cfg.SigningKey) < minSigningKeyBytes {
		return nil, fmt.Errorf("blobstore: a Dir store needs a SigningKey of at least %d bytes", minSigningKeyBytes)
	}
	base, err := url.Parse(cfg.BaseURL)
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, fmt.Errorf("blobstore: a Dir store needs an absolute http(s) BaseURL, got %q", cfg.BaseURL)
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("blobstore: directory %q: %w", cfg.Dir, err)
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("blobstore: create directory: %w", err)
	}
	links := newDevLinks(base, cfg.SigningKey)
	bucket, err := fileblob.OpenBucket(dir, &fileblob.Options{
		URLSigner:   links,
		DirFileMode: 0o750,
		// Temporary files go next to their object, so a directory on another
		// mount than os.TempDir still works (rename cannot cross mounts). A
		// write interrupted by a crash leaves a *.tmp file that Sweep removes.
		NoTempDir: true,
	})
	if err != nil {
		return nil, fmt.Errorf("blobstore: open directory: %w", err)
	}
	return &Store{bucket: bucket, links: links}, nil
}

func openURL(ctx context.Context, cfg Config) (*Store, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("blobstore: bucket URL: %w", err)
	}
	if u.Scheme != s3blob.Scheme || u.Host == "" {
		return nil, fmt.Errorf("blobstore: bucket URL must look like s3://bucket?..., got scheme %q", u.Scheme)
	}
	// public_endpoint is ours, not the driver's: where clients reach the
	// bucket, when that is not where the gateway does (a compose network).
	q := u.Query()
	public := q.Get(publicEndpointParam)
	q.Del(publicEndpointParam)
	u.RawQuery = q.Encode()
	bucket, err := (&s3blob.URLOpener{}).OpenBucketURL(ctx, u)
	if err != nil {
		return nil, fmt.Errorf("blobstore: open bucket %q: %w", u.Host, err)
	}
	var signer *blob.Bucket
	if public != "" {
		if p, err := url.Parse(public); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			_ = bucket.Close()
			return nil, fmt.Errorf("blobstore: %s must be an absolute http(s) URL, got %q", publicEndpointParam, public)
		}
		// Links are signed for the host clients use, without a request:
		// this handle only signs.
		q.Set("endpoint", public)
		signed := *u
		signed.RawQuery = q.Encode()
		if signer, err = (&s3blob.URLOpener{}).OpenBucketURL(ctx, &signed); err != nil {
			_ = bucket.Close()
			return nil, fmt.Errorf("blobstore: open bucket %q at %s: %w", u.Host, publicEndpointParam, err)
		}
	}
	accessible, err := bucket.IsAccessible(ctx)
	if err == nil && !accessible {
		err = errors.New("the bucket does not exist")
	}
	if err != nil {
		_ = bucket.Close()
		if signer != nil {
			_ = signer.Close()
		}
		return nil, fmt.Errorf("blobstore: bucket %q: %w", u.Host, err)
	}
	return &Store{bucket: bucket, signer: signer}, nil
}

// publicEndpointParam is the bucket URL's parameter naming the endpoint
// download links are signed for (docs/media.md, Result files).
const publicEndpointParam = "public_endpoint"

// validateKey enforces the key rules: keys are '/'-separated paths like
// results/<job-id>/transcript.srt, valid UTF-8, never empty, never starting
// with '/' and never containing "..".
func validateKey(key string) error {
	switch {
	case key == "":
		return fmt.Errorf("%w: empty", ErrInvalidKey)
	case strings.HasPrefix(key, "/"):
		return fmt.Errorf("%w %q: starts with '/'", ErrInvalidKey, key)
	case strings.Contains(key, ".."):
		return fmt.Errorf("%w %q: contains \"..\"", ErrInvalidKey, key)
	case !utf8.ValidString(key):
		return fmt.Errorf("%w %q: not UTF-8", ErrInvalidKey, key)
	}
	return nil
}

// validatePrefix is validateKey for a listing prefix, which may be empty.
func validatePrefix(prefix string) error {
	if prefix == "" {
		return nil
	}
	return validateKey(prefix)
}

// notFound turns the driver's not-found error into ErrNotFound.
func notFound(err error, key string) error {
	if gcerrors.Code(err) == gcerrors.NotFound {
		return fmt.Errorf("%w: %s", ErrNotFound, key)
	}
	return err
}

// Put streams r into the object key and returns the bytes written. The
// backend buffers at most one part (S3 multipart) or writes to a temporary
// file (Dir), so r may be larger than memory. An empty contentType is
// sniffed from the first bytes. A failed Put leaves no object behind.
func (s *Store) Put(ctx context.Context, key, contentType string, r io.Reader) (int64, error) {
	if err := validateKey(key); err != nil {
		return 0, err
	}
	// Cancelling the writer's context before Close aborts the upload.
	writeCtx, abort := context.WithCancel(ctx)
	defer abort()
	w, err := s.bucket.NewWriter(writeCtx, key, &blob.WriterOptions{ContentType: contentType})
	if err != nil {
		return 0, fmt.Errorf("blobstore: put %s: %w", key, err)
	}
	n, err := io.Copy(w, r)
	if err != nil {
		abort()
		_ = w.Close()
		return n, fmt.Errorf("blobstore: put %s: %w", key, err)
	}
	if err := w.Close(); err != nil {
		return n, fmt.Errorf("blobstore: put %s: %w", key, err)
	}
	return n, nil
}

// Open opens the object key for reading; ErrNotFound when it is missing.
// The reader also implements io.Seeker.
func (s *Store) Open(ctx context.Context, key string) (io.ReadCloser, error) {
	if err := validateKey(key); err != nil {
		return nil, err
	}
	r, err := s.bucket.NewReader(ctx, key, nil)
	if err != nil {
		return nil, fmt.Errorf("blobstore: open: %w", notFound(err, key))
	}
	return r, nil
}

// Download streams the object key into a new local file at path (created
// with mode 0600; an existing file is an error, not overwritten) and
// returns its size. A failed download removes the partial file.
func (s *Store) Download(ctx context.Context, key, path string) (int64, error) {
	r, err := s.Open(ctx, key)
	if err != nil {
		return 0, err
	}
	defer func() { _ = r.Close() }()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return 0, fmt.Errorf("blobstore: download %s: %w", key, err)
	}
	n, err := io.Copy(f, r)
	if closeErr := f.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		_ = os.Remove(path)
		return 0, fmt.Errorf("blobstore: download %s: %w", key, err)
	}
	return n, nil
}

// Delete removes the object key; a missing object is not an error.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := validateKey(key); err != nil {
		return err
	}
	if err := s.bucket.Delete(ctx, key); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
		return fmt.Errorf("blobstore: delete %s: %w", key, err)
	}
	return nil
}

// DeletePrefix removes every object whose key starts with prefix (e.g.
// "results/<job-id>/") and returns how many it removed. An empty prefix is
// refused: it would empty the store.
func (s *Store) DeletePrefix(ctx context.Context, prefix string) (int, error) {
	if prefix == "" {
		return 0, fmt.Errorf("%w: DeletePrefix needs a non-empty prefix", ErrInvalidKey)
	}
	return s.deleteListed(ctx, prefix, func(*blob.ListObject) bool { return true })
}

// Sweep removes the objects under prefix (empty: all) last modified before
// olderThan and returns how many it removed.
func (s *Store) Sweep(ctx context.Context, prefix string, olderThan time.Time) (int, error) {
	return s.deleteListed(ctx, prefix, func(o *blob.ListObject) bool { return o.ModTime.Before(olderThan) })
}

// deleteListed deletes the objects under prefix that match. It lists first
// and deletes after, so deleting never disturbs the listing's paging.
func (s *Store) deleteListed(ctx context.Context, prefix string, match func(*blob.ListObject) bool) (int, error) {
	if err := validatePrefix(prefix); err != nil {
		return 0, err
	}
	var keys []string
	it := s.bucket.List(&blob.ListOptions{Prefix: prefix})
	for {
		o, err := it.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, fmt.Errorf("blobstore: list %q: %w", prefix, err)
		}
		if !o.IsDir && match(o) {
			keys = append(keys, o.Key)
		}
	}
	deleted := 0
	for _, key := range keys {
		err := s.bucket.Delete(ctx, key)
		switch {
		case err == nil:
			deleted++
		case gcerrors.Code(err) == gcerrors.NotFound:
			// Deleted meanwhile by someone else.
		default:
			return deleted, fmt.Errorf("blobstore: delete %s: %w", key, err)
		}
	}
	return deleted, nil
}

// SignedURL returns a GET link to the object key valid for expiry (to the
// second). Links of URL stores are S3 pre-signed URLs (at most 7 days);
// links of Dir stores point at Handler. The object need not exist yet.
func (s *Store) SignedURL(ctx context.Context, key string, expiry time.Duration) (string, error) {
	if err := validateKey(key); err != nil {
		return "", err
	}
	if expiry <= 0 {
		return "", fmt.Errorf("blobstore: link expiry must be positive, got %v", expiry)
	}
	signer := s.bucket
	if s.signer != nil {
		signer = s.signer
	}
	link, err := signer.SignedURL(ctx, key, &blob.SignedURLOptions{Method: http.MethodGet, Expiry: expiry})
	if err != nil {
		return "", fmt.Errorf("blobstore: sign %s: %w", key, err)
	}
	return link, nil
}

// Close releases the bucket.
func (s *Store) Close() error {
	if s == nil {
		return nil // a gateway without a store closes nothing
	}
	if s.signer != nil {
		_ = s.signer.Close()
	}
	return s.bucket.Close()
}

package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/ai-job-gateway/gateway/activities"
	"github.com/ai-job-gateway/gateway/internal/blobstore"
	"github.com/ai-job-gateway/gateway/internal/media"
	"github.com/ai-job-gateway/gateway/internal/netguard"
)

// Media and result file settings (docs/media.md, docs/operations.md).
const (
	defaultLinkTTL         = time.Hour
	defaultResultRetention = 7 * 24 * time.Hour
	// A fetch slower than 32 KiB per 30 s, or longer than 30 min, fails
	// that try; a tenant runs at most 4 fetches at once per worker.
	defaultFetchMinBytes    = 32 << 10
	defaultFetchRateWindow  = 30 * time.Second
	defaultFetchTimeout     = 30 * time.Minute
	defaultFetchesPerTenant = 4
	maxFetchTimeout         = time.Hour // the fetch step's StartToCloseTimeout
)

// registerMediaFlags binds the blob store and result file flags of dev,
// serve and worker.
func (c *config) registerMediaFlags(fs *flag.FlagSet, command string) {
	usage := "S3-compatible bucket for media and result files, e.g. s3://bucket?endpoint=https://minio:9000&region=us-east-1&use_path_style=true; credentials from AWS_* (dev default: a directory in the data dir)"
	def := os.Getenv("GATEWAY_BLOB_URL")
	fs.StringVar(&c.BlobURL, "blob-url", def, usage+" (env GATEWAY_BLOB_URL)")
	if command == "dev" {
		fs.StringVar(&c.PublicURL, "public-url", os.Getenv("GATEWAY_PUBLIC_URL"),
			"base URL clients reach the gateway at, for download links served by dev (default: http:// + --listen) (env GATEWAY_PUBLIC_URL)")
	}
	fs.DurationVar(&c.LinkTTL, "download-url-ttl", envOr("GATEWAY_DOWNLOAD_URL_TTL", defaultLinkTTL, time.ParseDuration, -1),
		"how long a result's download_url stays valid (env GATEWAY_DOWNLOAD_URL_TTL)")
	fs.DurationVar(&c.Retention.Results, "result-retention", envOr("GATEWAY_RESULT_RETENTION", defaultResultRetention, time.ParseDuration, -1),
		"how long result files are kept, for tenants that set no retention; 0 keeps them (env GATEWAY_RESULT_RETENTION)")
	fs.DurationVar(&c.Retention.Jobs, "job-retention", envOr("GATEWAY_JOB_RETENTION", 0, time.ParseDuration, -1),
		"how long a finished job is kept, for tenants that set no retention; 0 keeps jobs (env GATEWAY_JOB_RETENTION)")
	if command != "dev" && command != "worker" {
		return
	}
	fs.IntVar(&c.MediaFetchMinBytes, "media-fetch-min-bytes", envOr("GATEWAY_MEDIA_FETCH_MIN_BYTES", defaultFetchMinBytes, strconv.Atoi, -1),
		"a media fetch that receives fewer bytes than this over --media-fetch-rate-window fails that try; 0: no minimum rate (env GATEWAY_MEDIA_FETCH_MIN_BYTES)")
	fs.DurationVar(&c.MediaFetchRateWindow, "media-fetch-rate-window", envOr("GATEWAY_MEDIA_FETCH_RATE_WINDOW", defaultFetchRateWindow, time.ParseDuration, -1),
		"the sliding window of --media-fetch-min-bytes (env GATEWAY_MEDIA_FETCH_RATE_WINDOW)")
	fs.DurationVar(&c.MediaFetchTimeout, "media-fetch-timeout", envOr("GATEWAY_MEDIA_FETCH_TIMEOUT", defaultFetchTimeout, time.ParseDuration, -1),
		"how long one try of a media fetch may take; 0: up to the step's 1h (env GATEWAY_MEDIA_FETCH_TIMEOUT)")
	fs.IntVar(&c.MediaFetchesPerTenant, "media-fetches-per-tenant", envOr("GATEWAY_MEDIA_FETCHES_PER_TENANT", defaultFetchesPerTenant, strconv.Atoi, -1),
		"media fetches one tenant may run at once on this worker; more wait; 0: no cap (env GATEWAY_MEDIA_FETCHES_PER_TENANT)")
}

// validateMedia checks the media settings of command.
func (c *config) validateMedia(command string) []string {
	var problems []string
	if c.LinkTTL <= 0 || c.LinkTTL > 7*24*time.Hour {
		problems = append(problems, "--download-url-ttl (GATEWAY_DOWNLOAD_URL_TTL) must be a duration between 1s and 168h, such as 1h")
	}
	if c.Retention.Results < 0 {
		problems = append(problems, "--result-retention (GATEWAY_RESULT_RETENTION) must be a duration of at least 0, such as 168h")
	}
	if c.Retention.Jobs < 0 {
		problems = append(problems, "--job-retention (GATEWAY_JOB_RETENTION) must be a duration of at least 0, such as 2160h")
	}
	if command != "dev" && command != "worker" {
		return problems
	}
	if c.MediaFetchMinBytes < 0 {
		problems = append(problems, "--media-fetch-min-bytes (GATEWAY_MEDIA_FETCH_MIN_BYTES) must be a whole number of at least 0, such as 32768")
	}
	if c.MediaFetchMinBytes > 0 && c.MediaFetchRateWindow <= 0 {
		problems = append(problems, "--media-fetch-rate-window (GATEWAY_MEDIA_FETCH_RATE_WINDOW) must be a duration above 0, such as 30s")
	}
	if c.MediaFetchTimeout < 0 || c.MediaFetchTimeout > maxFetchTimeout {
		problems = append(problems, "--media-fetch-timeout (GATEWAY_MEDIA_FETCH_TIMEOUT) must be a duration between 0 and 1h (the fetch step's own limit), such as 30m")
	}
	if c.MediaFetchesPerTenant < 0 {
		problems = append(problems, "--media-fetches-per-tenant (GATEWAY_MEDIA_FETCHES_PER_TENANT) must be a whole number of at least 0, such as 4")
	}
	return problems
}

// mediaFetchLimits are the limits of a worker's media fetches.
func (c *config) mediaFetchLimits() media.Limits {
	return media.Limits{MinBytes: int64(c.MediaFetchMinBytes), RateWindow: c.MediaFetchRateWindow, Timeout: c.MediaFetchTimeout}
}

// openFiles opens the blob store: the --blob-url bucket, or in dev without
// one a directory of the data dir whose links the gateway serves itself
// at base. Without either it returns nil: media jobs then fail, and
// results have no download_url.
func openFiles(ctx context.Context, cfg config, base string, logger *slog.Logger) (*blobstore.Store, error) {
	if cfg.BlobURL != "" {
		files, err := blobstore.Open(ctx, blobstore.Config{URL: cfg.BlobURL})
		if err != nil {
			return nil, fmt.Errorf("--blob-url: %w", err)
		}
		return files, nil
	}
	if base == "" {
		logger.Warn("no blob store (--blob-url): jobs with media fail with MEDIA_PROCESSING_UNAVAILABLE and results carry no download_url")
		return nil, nil
	}
	key, err := devFilesKey(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	return blobstore.Open(ctx, blobstore.Config{Dir: filepath.Join(cfg.DataDir, "files"), SigningKey: key, BaseURL: base})
}

// devFilesKey is the key dev signs download links with, made once and
// kept in the data dir.
func devFilesKey(dataDir string) ([]byte, error) {
	path := filepath.Join(dataDir, "files.key")
	key, err := os.ReadFile(path)
	if err == nil && len(key) == 32 {
		return key, nil
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("download link key: %w", err)
	}
	key = make([]byte, 32)
	_, _ = rand.Read(key)
	if err := os.WriteFile(path, key, 0o600); err != nil {
		return nil, fmt.Errorf("download link key: %w", err)
	}
	return key, nil
}

// workerMedia is what a worker's media steps use.
type workerMedia struct {
	files        *blobstore.Store
	tools        *media.Tools
	scratch      string
	linkTTL      time.Duration
	allowPrivate bool
	// fetch bounds each fetch; fetchesPerTenant caps a tenant's (0: no cap).
	fetch            media.Limits
	fetchesPerTenant int
}

// workerMedia is the worker's media settings of c, over files.
func (c config) workerMedia(files *blobstore.Store, logger *slog.Logger) workerMedia {
	return workerMedia{files: files, tools: findMediaTools(logger), scratch: filepath.Join(c.DataDir, "scratch"), linkTTL: c.LinkTTL,
		allowPrivate: c.AllowPrivateNetworks, fetch: c.mediaFetchLimits(), fetchesPerTenant: c.MediaFetchesPerTenant}
}

// findMediaTools looks for ffmpeg and ffprobe, and says once what is
// missing: the gateway runs without them, failing jobs whose media must
// be probed with a clear error.
func findMediaTools(logger *slog.Logger) *media.Tools {
	tools, err := media.FindTools()
	if err != nil {
		logger.Warn("media jobs will fail until ffmpeg is installed", "error", err)
		return nil
	}
	return &tools
}

func (m workerMedia) wire(a *activities.Deps) {
	a.Files = m.files
	a.MediaTools = m.tools
	a.ScratchDir = m.scratch
	a.LinkTTL = m.linkTTL
	// No overall timeout: the fetch heartbeats while bytes arrive, within
	// FetchLimits.
	a.MediaClient = netguard.NewMediaClient(m.allowPrivate, 0)
	a.FetchLimits = m.fetch
	a.FetchSlots = media.NewSlots(m.fetchesPerTenant)
}

package workflows

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ai-job-gateway/gateway/activities"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/internal/media"
)

// mediaStageChange names the GetVersion marker of the media stage: jobs
// with media have it fetched, probed and (transcriptions) their audio
// extracted before routing (docs/media.md). Only jobs with media hold it.
const mediaStageChange = "media-stage"

// mediaOptions: media steps heartbeat while they work (a fetch only while
// bytes arrive), and are tried five times over about half a minute
// before the job fails; bad media fails it at once.
var mediaOptions = workflow.ActivityOptions{
	StartToCloseTimeout: time.Hour,
	HeartbeatTimeout:    30 * time.Second,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval:        2 * time.Second,
		BackoffCoefficient:     2,
		MaximumInterval:        time.Minute,
		MaximumAttempts:        5,
		NonRetryableErrorTypes: []string{activities.ErrTypeInvalidInput, activities.ErrTypeMediaGone},
	},
}

// cleanupOptions: removing a finished job's media files is tried a few
// times; what is left, the sweep removes.
var cleanupOptions = workflow.ActivityOptions{
	StartToCloseTimeout: time.Minute,
	RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 3},
}

// mediaStage runs the job's media through the media stage when it has
// media. It returns the job error of media that cannot be used.
func (j *job) mediaStage(ctx workflow.Context) (*jobs.Error, error) {
	svc, _ := jobs.ServiceOf(j.in.Service)
	if !svc.HasMedia(j.in.Input) ||
		j.version(ctx, mediaStageChange, 1) == workflow.DefaultVersion {
		return nil, nil
	}
	j.mediaStarted = true
	step := func(summary string) workflow.Context {
		options := mediaOptions
		options.Summary = summary
		return workflow.WithActivityOptions(ctx, options)
	}
	var source activities.MediaFile
	err := workflow.ExecuteActivity(step("fetch the media"), mediaSteps.FetchMedia, activities.MediaInput{
		JobID: j.in.JobID, Tenant: j.in.Tenant, Service: j.in.Service, Input: j.in.Input, Explicit: j.in.Provider,
	}).Get(ctx, &source)
	if err != nil {
		return mediaFailure(err)
	}
	prepared := &activities.PreparedMedia{File: source, SourceURL: sourceURL(j.in.Input)}
	if svc.Media.Probe {
		var probe media.Probe
		err := workflow.ExecuteActivity(step("probe the media"), mediaSteps.ProbeMedia, activities.ProbeInput{
			JobID: j.in.JobID, Service: j.in.Service, Source: source,
		}).Get(ctx, &probe)
		if err != nil {
			return mediaFailure(err)
		}
		prepared.Duration = probe.Duration
		if video, ok := probe.VideoMetadata(); ok {
			prepared.Video = video
		}
		if svc.Media.ExtractAudio {
			track := jobs.AudioTrack(j.in.Input)
			err := workflow.ExecuteActivity(step(fmt.Sprintf("extract audio track %d", track)), mediaSteps.ExtractAudio, activities.ExtractInput{
				JobID: j.in.JobID, Source: source, Probe: probe, Track: track,
			}).Get(ctx, &prepared.File)
			if err != nil {
				return mediaFailure(err)
			}
		}
	}
	j.media = prepared
	j.mediaSize = source.Size
	return nil, nil
}

// mediaFailure turns a failed media step into the job's error, or into
// the error that stops the workflow (cancellation).
func mediaFailure(err error) (*jobs.Error, error) {
	if temporal.IsCanceledError(err) {
		return nil, err
	}
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		var jobErr jobs.Error
		if appErr.HasDetails() && appErr.Details(&jobErr) == nil && jobErr.Code != "" {
			return &jobErr, nil
		}
		return &jobs.Error{Code: jobs.CodeMediaUnavailable, Message: appErr.Message()}, nil
	}
	var timeoutErr *temporal.TimeoutError
	if errors.As(err, &timeoutErr) {
		return &jobs.Error{Code: jobs.CodeMediaUnavailable, Message: "the media could not be fetched or processed in time: the transfer stalled or the step took too long"}, nil
	}
	return &jobs.Error{Code: jobs.CodeMediaUnavailable, Message: err.Error()}, nil
}

// removeMedia deletes the finished job's media stage files.
func (j *job) removeMedia(ctx workflow.Context) {
	if !j.mediaStarted {
		return
	}
	ctx, cancel := workflow.NewDisconnectedContext(ctx)
	defer cancel()
	options := cleanupOptions
	options.Summary = "remove the media files"
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, options), mediaSteps.RemoveJobMedia, j.in.JobID).Get(ctx, nil)
	if err != nil {
		workflow.GetLogger(ctx).Warn("media files not removed; the sweep will", "error", err)
	}
}

// mediaFacts are the media's size in MB and duration in seconds for
// routing; nil when unknown.
func (j *job) mediaFacts() (sizeMB, duration *float64) {
	if j.media == nil {
		return nil, nil
	}
	mb := float64(j.mediaSize) / (1 << 20)
	sizeMB = &mb
	if j.media.Duration > 0 {
		d := j.media.Duration
		duration = &d
	}
	return sizeMB, duration
}

func sourceURL(input json.RawMessage) string {
	var ref struct {
		URL string `json:"url"`
	}
	_ = json.Unmarshal(input, &ref)
	return ref.URL
}

package workflows_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/ai-job-gateway/gateway/activities"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/internal/media"
	"github.com/ai-job-gateway/gateway/workflows"
)

var (
	sourceFile = activities.MediaFile{Key: "work/job/source", ContentType: "video/mp4", Size: 3 << 20}
	audioFile  = activities.MediaFile{Key: "work/job/audio.wav", ContentType: "audio/wav", Size: 1 << 20}
	videoProbe = media.Probe{Format: "mov,mp4,m4a,3gp,3g2,mj2", Duration: 95.5, Streams: []media.Stream{
		{Index: 0, Type: "video", Codec: "h264", Width: 320, Height: 240, FrameRate: 25},
		{Index: 1, Type: "audio", Codec: "aac", Channels: 1, SampleRate: 16000},
		{Index: 2, Type: "audio", Codec: "aac", Channels: 2, SampleRate: 48000},
	}}
)

func videoTranscription() jobs.Submission {
	in := input()
	in.Input = json.RawMessage(`{"type":"video","url":"https://media.test/talk.mp4","audio_track":1}`)
	return in
}

func TestMediaStageRunsOnceBeforeRoutingAndAcrossFailover(t *testing.T) {
	t.Parallel()
	b := bareSetup(t)
	job := videoTranscription()
	require.NotEmpty(t, job.Tenant)
	b.env.OnActivity(acts.Media.FetchMedia, mock.Anything, activities.MediaInput{
		JobID: job.JobID, Tenant: job.Tenant, Service: jobs.Transcriptions, Input: job.Input,
	}).Return(sourceFile, nil).Once()
	b.env.OnActivity(acts.Media.ProbeMedia, mock.Anything, activities.ProbeInput{
		JobID: job.JobID, Service: jobs.Transcriptions, Source: sourceFile,
	}).Return(videoProbe, nil).Once()
	b.env.OnActivity(acts.Media.ExtractAudio, mock.Anything, mock.MatchedBy(func(in activities.ExtractInput) bool {
		return in.Track == 1 && in.Source == sourceFile && in.Probe.Duration == videoProbe.Duration
	})).Return(audioFile, nil).Once()
	knowsMedia := func(attempt int) any {
		return mock.MatchedBy(func(in activities.RouteInput) bool {
			return in.Attempt == attempt && in.MediaSizeMB != nil && *in.MediaSizeMB == 3 &&
				in.MediaDuration != nil && *in.MediaDuration == 95.5
		})
	}
	b.env.OnActivity(acts.Routing.DecideRoute, mock.Anything, knowsMedia(1)).Return(routeTo("sandbox-flaky", 1), nil).Once()
	b.env.OnActivity(acts.Routing.DecideRoute, mock.Anything, knowsMedia(2)).Return(routeTo("sandbox-fast", 2), nil).Once()
	preparedAudio := func(provider string) any {
		return mock.MatchedBy(func(in activities.CallInput) bool {
			return in.ProviderID == provider && in.Media != nil && in.Media.File == audioFile &&
				in.Media.Duration == 95.5 && in.Media.Video != nil && in.Media.Video.Width == 320
		})
	}
	b.env.OnActivity(acts.Calls.CallProvider, mock.Anything, preparedAudio("sandbox-flaky")).
		Return(activities.CallOutput{}, temporal.NewApplicationError("503", activities.ErrTypeProviderUnavailable))
	b.env.OnActivity(acts.Calls.CallProvider, mock.Anything, preparedAudio("sandbox-fast")).
		Return(activities.CallOutput{Result: json.RawMessage(`{"format":"srt"}`), ResultFile: "results/job/transcript.srt"}, nil).Once()
	b.env.OnActivity(acts.Media.RemoveJobMedia, mock.Anything, job.JobID).Return(nil).Once()

	b.env.ExecuteWorkflow(workflows.JobWorkflowName, job)

	snap := result(t, b.env)
	require.Equal(t, jobs.StatusCompleted, snap.Status)
	require.Equal(t, "results/job/transcript.srt", snap.ResultFile)
	require.Len(t, snap.RoutingHistory, 2)
}

func TestUnreadableAudioFailsTheJobBeforeRouting(t *testing.T) {
	t.Parallel()
	b := bareSetup(t)
	b.env.OnActivity(acts.Media.FetchMedia, mock.Anything, mock.Anything).Return(sourceFile, nil).Once()
	b.env.OnActivity(acts.Media.ProbeMedia, mock.Anything, mock.Anything).Return(videoProbe, nil).Once()
	unreadable := jobs.Error{Code: jobs.CodeAudioUnreadable, Message: "input.audio_track is 2, but the media has 2 audio tracks"}
	b.env.OnActivity(acts.Media.ExtractAudio, mock.Anything, mock.Anything).
		Return(activities.MediaFile{}, temporal.NewNonRetryableApplicationError(unreadable.Message, activities.ErrTypeInvalidInput, nil, unreadable)).Once()
	b.env.OnActivity(acts.Media.RemoveJobMedia, mock.Anything, mock.Anything).Return(nil).Once()

	b.env.ExecuteWorkflow(workflows.JobWorkflowName, videoTranscription())

	snap := result(t, b.env)
	require.Equal(t, jobs.StatusFailed, snap.Status)
	require.Equal(t, &unreadable, snap.Error)
	require.Empty(t, snap.RoutingHistory, "no provider is tried: any would fail the same way")
	require.Len(t, b.saved, 1, "pending straight to failed")
}

func TestMediaHostDownFailsTheJobAfterRetries(t *testing.T) {
	t.Parallel()
	b := bareSetup(t)
	down := jobs.Error{Code: jobs.CodeMediaUnavailable, Message: "could not reach media host media.test"}
	b.env.OnActivity(acts.Media.FetchMedia, mock.Anything, mock.Anything).
		Return(activities.MediaFile{}, temporal.NewApplicationError(down.Message, activities.ErrTypeProviderUnavailable, down)).Times(5)
	b.env.OnActivity(acts.Media.RemoveJobMedia, mock.Anything, mock.Anything).Return(nil).Once()

	b.env.ExecuteWorkflow(workflows.JobWorkflowName, input())

	snap := result(t, b.env)
	require.Equal(t, jobs.StatusFailed, snap.Status)
	require.Equal(t, &down, snap.Error)
}

func TestMediaStageStepsPerService(t *testing.T) {
	t.Parallel()
	t.Run("video analysis: fetch and probe, the video for video_metadata", func(t *testing.T) {
		b := bareSetup(t)
		job := input()
		job.Service = jobs.VideoAnalyses
		job.Input = json.RawMessage(`{"url":"https://media.test/v.mp4","features":["labels"]}`)
		b.env.OnActivity(acts.Media.FetchMedia, mock.Anything, mock.Anything).Return(sourceFile, nil).Once()
		b.env.OnActivity(acts.Media.ProbeMedia, mock.Anything, mock.Anything).Return(videoProbe, nil).Once()
		b.env.OnActivity(acts.Routing.DecideRoute, mock.Anything, mock.Anything).Return(routeTo("sandbox-fast", 1), nil).Once()
		b.env.OnActivity(acts.Calls.CallProvider, mock.Anything, mock.MatchedBy(func(in activities.CallInput) bool {
			return in.Media.File == sourceFile && in.Media.Video.Codec == "h264" && in.Media.Video.FrameRate == 25
		})).Return(activities.CallOutput{Result: json.RawMessage(`{}`)}, nil).Once()
		b.env.OnActivity(acts.Media.RemoveJobMedia, mock.Anything, mock.Anything).Return(nil).Once()
		b.env.ExecuteWorkflow(workflows.JobWorkflowName, job)
		require.Equal(t, jobs.StatusCompleted, result(t, b.env).Status)
	})
	t.Run("document translation: fetch only", func(t *testing.T) {
		b := bareSetup(t)
		job := input()
		job.Service = jobs.Translations
		job.Input = json.RawMessage(`{"type":"document","url":"https://media.test/d.txt","target_language":"de"}`)
		doc := activities.MediaFile{Key: "work/job/source", ContentType: "text/plain", Size: 80}
		b.env.OnActivity(acts.Media.FetchMedia, mock.Anything, mock.Anything).Return(doc, nil).Once()
		b.env.OnActivity(acts.Routing.DecideRoute, mock.Anything, mock.Anything).Return(routeTo("sandbox-fast", 1), nil).Once()
		b.env.OnActivity(acts.Calls.CallProvider, mock.Anything, mock.MatchedBy(func(in activities.CallInput) bool {
			return in.Media.File == doc && in.Media.SourceURL == "https://media.test/d.txt"
		})).Return(activities.CallOutput{Result: json.RawMessage(`{}`), ResultFile: "results/job/translation.txt"}, nil).Once()
		b.env.OnActivity(acts.Media.RemoveJobMedia, mock.Anything, mock.Anything).Return(nil).Once()
		b.env.ExecuteWorkflow(workflows.JobWorkflowName, job)
		require.Equal(t, "results/job/translation.txt", result(t, b.env).ResultFile)
	})
	t.Run("text translation: no media stage", func(t *testing.T) {
		b := bareSetup(t)
		job := input()
		job.Service = jobs.Translations
		job.Input = json.RawMessage(`{"type":"text","content":"Hallo","target_language":"en"}`)
		b.env.OnActivity(acts.Routing.DecideRoute, mock.Anything, mock.MatchedBy(func(in activities.RouteInput) bool {
			return in.MediaSizeMB == nil
		})).Return(routeTo("sandbox-fast", 1), nil).Once()
		b.env.OnActivity(acts.Calls.CallProvider, mock.Anything, mock.MatchedBy(func(in activities.CallInput) bool {
			return in.Media == nil
		})).Return(activities.CallOutput{Result: json.RawMessage(`{}`)}, nil).Once()
		b.env.ExecuteWorkflow(workflows.JobWorkflowName, job)
		require.Equal(t, jobs.StatusCompleted, result(t, b.env).Status)
	})
}

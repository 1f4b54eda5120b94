package activities

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/providers"
)

// withMedia makes a provider call's media local: it downloads the media
// stage's file into a scratch directory, and names the file a document
// translation writes its result to. done removes them.
func (b Blobs) withMedia(ctx context.Context, in CallInput) (providers.Call, func(), error) {
	var call providers.Call
	if in.Media == nil {
		return call, func() {}, nil
	}
	local, done, err := b.localCopy(ctx, in.JobID, in.Media.File)
	if err != nil {
		return call, nil, err
	}
	call.Media = &providers.Media{
		Path:          local,
		ContentType:   in.Media.File.ContentType,
		Size:          in.Media.File.Size,
		Duration:      in.Media.Duration,
		VideoMetadata: in.Media.Video,
	}
	if name := serviceOf(in.Service).Results.WrittenFile; name != "" {
		call.ResultFile = filepath.Join(filepath.Dir(local), name+mediaExtension(in.Media.File.ContentType, in.Media.SourceURL))
	}
	return call, done, nil
}

// finishResult completes a provider's result with what the gateway adds
// (docs/media.md), as the service's descriptor says: the probed
// video_metadata, the result rendered into a file in the job's preferred
// media type (a transcript), or the file the provider wrote (a translated
// document), stored under results/<job>/.
func (b Blobs) finishResult(ctx context.Context, in CallInput, call providers.Call, out *CallOutput) error {
	finishing := serviceOf(in.Service).Results
	if finishing.VideoMetadata && in.Media != nil && in.Media.Video != nil {
		if err := replaceMember(&out.Result, "video_metadata", in.Media.Video); err != nil {
			return err
		}
	}
	if finishing.RenderedFile != "" && b.Store != nil {
		if err := b.renderResultFile(ctx, in, finishing.RenderedFile, out); err != nil {
			return err
		}
	}
	if finishing.WrittenFile != "" && call.ResultFile != "" {
		if _, err := os.Stat(call.ResultFile); errors.Is(err, os.ErrNotExist) {
			return classify(providers.Retryable(jobs.CodeBadResponse, "the provider returned no "+finishing.WrittenNoun, nil))
		}
		key := ResultPrefix(in.JobID) + filepath.Base(call.ResultFile)
		if err := b.putFile(ctx, key, in.Media.File.ContentType, call.ResultFile, nil); err != nil {
			return err
		}
		out.ResultFile = key
	}
	return nil
}

// renderResultFile stores the result rendered in the media type the job
// prefers as name plus that type's extension.
func (b Blobs) renderResultFile(ctx context.Context, in CallInput, name string, out *CallOutput) error {
	recorded, err := serviceOf(in.Service).Load(in.Input, in.Options)
	if err != nil {
		return classify(providers.InputError(jobs.CodeInvalidInput, "the job's options no longer load", err))
	}
	_, mediaType := recorded.ResultTypes()
	body, err := recorded.Render(mediaType, out.Result)
	if err != nil {
		return classify(providers.Retryable(jobs.CodeBadResponse, "the provider's "+name+" cannot be rendered as "+mediaType, err))
	}
	key := ResultPrefix(in.JobID) + name + jobs.Extension(mediaType)
	if _, err := b.Store.Put(ctx, key, mediaType, bytes.NewReader(body)); err != nil {
		return err
	}
	out.ResultFile = key
	return nil
}

// serviceOf is the descriptor of a job's service; a zero one (no media,
// nothing to finish) for an id no service has.
func serviceOf(id jobs.ServiceID) jobs.Service {
	svc, _ := jobs.ServiceOf(id)
	return svc
}

// replaceMember sets one member of a JSON object.
func replaceMember(object *json.RawMessage, name string, value any) error {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(*object, &members); err != nil || members == nil {
		return classify(providers.Retryable(jobs.CodeBadResponse, fmt.Sprintf("the provider's result is not an object: %v", err), nil))
	}
	v, err := json.Marshal(value)
	if err != nil {
		return err
	}
	members[name] = v
	*object, err = json.Marshal(members)
	return err
}

package openai

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/internal/media"
	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/providers/internal/usage"
)

// VisionFeatures are the video-analysis features the adapter asks a vision
// model for (docs/providers.md, openai).
var VisionFeatures = []string{"labels", "summary", "content_moderation", "topics", "brands"}

// visionFrames is how many frames of a video the model sees, evenly spaced.
const visionFrames = 8

type contentPart struct {
	Type     string    `json:"type"`
	Text     string    `json:"text,omitempty"`
	ImageURL *imageURL `json:"image_url,omitempty"`
}

type imageURL struct {
	URL    string `json:"url"`
	Detail string `json:"detail,omitempty"`
}

type visionMessage struct {
	Role    string        `json:"role"`
	Content []contentPart `json:"content"`
}

type visionRequest struct {
	Model          string          `json:"model"`
	Messages       []visionMessage `json:"messages"`
	ResponseFormat json.RawMessage `json:"response_format"`
}

// analyseVideo samples frames of the video the media stage fetched, asks
// the model for the requested features as structured output, and checks
// the answer against the result's schema before accepting it.
func (a *Adapter) analyseVideo(ctx context.Context, call providers.Call) (any, error) {
	var in jobs.VideoAnalysisInput
	var opts jobs.VideoAnalysisOptions
	if err := call.Decode(&in, &opts); err != nil {
		return nil, err
	}
	for _, f := range in.Features {
		if !slices.Contains(VisionFeatures, f) {
			return nil, providers.Permanent(jobs.CodeUnsupportedOption,
				fmt.Sprintf("the openai adapter cannot do %q from frames; it does %v", f, VisionFeatures), nil)
		}
	}
	if call.Media == nil {
		return nil, providers.Permanent(jobs.CodeUnsupportedInput,
			"the openai adapter analyses the video the gateway's media stage fetched, and this job has none", nil)
	}
	frames, times, err := sampleFrames(ctx, call.Media)
	if err != nil {
		return nil, err
	}
	parts := []contentPart{{Type: "text", Text: visionInstruction(in.Features, times, opts.Language)}}
	for _, f := range frames {
		parts = append(parts, contentPart{Type: "image_url", ImageURL: &imageURL{URL: "data:image/jpeg;base64," + f, Detail: "low"}})
	}
	req := visionRequest{Model: a.model, Messages: []visionMessage{{Role: "user", Content: parts}},
		ResponseFormat: visionSchema(in.Features)}
	httpReq, err := a.newJSONRequest(ctx, "/chat/completions", req)
	if err != nil {
		return nil, err
	}
	body, err := a.send(ctx, httpReq)
	if err != nil {
		return nil, err
	}
	var resp chatResponse
	if err := json.Unmarshal(body, &resp); err != nil || len(resp.Choices) == 0 || resp.Choices[0].Message.Content == nil {
		return nil, a.badResponse(fmt.Errorf("no answer in the response: %v", err))
	}
	res, err := a.visionResult(*resp.Choices[0].Message.Content, in.Features, times, call.Media, opts.EffectiveConfidenceThreshold())
	if err != nil {
		return nil, err
	}
	if opts.IncludeUsage {
		res.Usage = chatUsage(call.Capability().Pricing, resp, 0)
		if res.Usage.Cost == nil && call.Capability().Pricing.Unit == providers.PerMinute {
			cost := usage.Cost(call.Capability().Pricing, usage.Metered{Minutes: call.Media.Duration / 60})
			res.Usage.Cost = &cost
		}
	}
	return res, nil
}

// sampleFrames takes visionFrames JPEG frames, 512 pixels wide, evenly
// spaced over the video; it returns them base64-encoded with their times.
func sampleFrames(ctx context.Context, m *providers.Media) ([]string, []float64, error) {
	tools, err := media.FindTools()
	if err != nil {
		return nil, nil, providers.Permanent(jobs.CodeProviderRejected, "this worker cannot sample frames: "+err.Error(), nil)
	}
	dir, err := os.MkdirTemp("", "vision-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(dir)
	duration := math.Max(m.Duration, 0.1)
	var frames []string
	var times []float64
	for i := range visionFrames {
		at := duration * (float64(i) + 0.5) / visionFrames
		out := filepath.Join(dir, fmt.Sprintf("frame-%d.jpg", i))
		args := []string{"-nostdin", "-hide_banner", "-loglevel", "error", "-ss", fmt.Sprintf("%.3f", at)}
		args = append(args, media.InputArgs(m.Path)...)
		args = append(args, "-frames:v", "1", "-vf", "scale=512:-2", "-q:v", "4", out)
		cmd := exec.CommandContext(ctx, tools.FFmpeg, args...)
		cmd.WaitDelay = 5 * time.Second
		if output, err := cmd.CombinedOutput(); err != nil {
			if ctx.Err() != nil {
				return nil, nil, ctx.Err()
			}
			return nil, nil, providers.InputError(jobs.CodeInputUnreadable, "the video's frames cannot be decoded: "+media.ErrorLine(string(output)), nil)
		}
		data, err := os.ReadFile(out)
		if err != nil {
			continue // past the last frame: fewer frames
		}
		frames = append(frames, base64.StdEncoding.EncodeToString(data))
		times = append(times, math.Round(at*1000)/1000)
	}
	if len(frames) == 0 {
		return nil, nil, providers.InputError(jobs.CodeInputUnreadable, "the video has no frame to analyse", nil)
	}
	return frames, times, nil
}

// visionInstruction tells the model what to do with the frames.
func visionInstruction(features []string, times []float64, language string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "These %d images are frames of one video, in order, taken at these seconds: %v. ", len(times), times)
	fmt.Fprintf(&b, "Analyse the video they show and answer only with the JSON the schema describes, for: %s. ", strings.Join(features, ", "))
	b.WriteString("Confidences are between 0 and 1. `frames` lists the indexes (from 0) of the frames where something is seen. ")
	if slices.Contains(features, "content_moderation") {
		fmt.Fprintf(&b, "Moderation labels are among: %s. ", strings.Join(jobs.ModerationLabels, ", "))
	}
	if language != "" && language != "auto" {
		fmt.Fprintf(&b, "Write names and the summary in the language %s. ", language)
	}
	return b.String()
}

// visionSchema is the structured-output format: an object with one member
// per requested feature.
func visionSchema(features []string) json.RawMessage {
	detections := map[string]any{"type": "array", "items": map[string]any{
		"type": "object", "additionalProperties": false, "required": []string{"name", "confidence", "frames"},
		"properties": map[string]any{
			"name": map[string]any{"type": "string"}, "confidence": map[string]any{"type": "number"},
			"frames": map[string]any{"type": "array", "items": map[string]any{"type": "integer"}},
		},
	}}
	props := map[string]any{}
	for _, f := range features {
		switch f {
		case "labels", "topics", "brands":
			props[f] = detections
		case "summary":
			props[f] = map[string]any{"type": "string"}
		case "content_moderation":
			props[f] = map[string]any{"type": "object", "additionalProperties": false, "required": []string{"is_safe", "signals"},
				"properties": map[string]any{
					"is_safe": map[string]any{"type": "boolean"},
					"signals": map[string]any{"type": "array", "items": map[string]any{
						"type": "object", "additionalProperties": false, "required": []string{"label", "confidence", "frames"},
						"properties": map[string]any{
							"label":      map[string]any{"type": "string", "enum": jobs.ModerationLabels},
							"confidence": map[string]any{"type": "number"},
							"frames":     map[string]any{"type": "array", "items": map[string]any{"type": "integer"}},
						},
					}},
				}}
		}
	}
	format, _ := json.Marshal(map[string]any{"type": "json_schema", "json_schema": map[string]any{
		"name": "video_analysis", "strict": true,
		"schema": map[string]any{"type": "object", "additionalProperties": false, "required": features, "properties": props},
	}})
	return format
}

// visionAnswer is the model's answer, as the schema asks it.
type visionAnswer struct {
	Labels            []visionDetection `json:"labels"`
	Topics            []visionDetection `json:"topics"`
	Brands            []visionDetection `json:"brands"`
	Summary           *string           `json:"summary"`
	ContentModeration *struct {
		IsSafe  *bool `json:"is_safe"`
		Signals []struct {
			Label      string   `json:"label"`
			Confidence *float64 `json:"confidence"`
			Frames     []int    `json:"frames"`
		} `json:"signals"`
	} `json:"content_moderation"`
}

type visionDetection struct {
	Name       string   `json:"name"`
	Confidence *float64 `json:"confidence"`
	Frames     []int    `json:"frames"`
}

// visionResult checks the model's answer and turns it into the result:
// every requested feature present, confidences within 0..1, known
// moderation labels, frame indexes that exist. An answer that fails is the
// provider's bad response (the job fails over), not a result.
func (a *Adapter) visionResult(content string, features []string, times []float64, m *providers.Media, threshold float64) (*jobs.VideoAnalysisResult, error) {
	var raw map[string]json.RawMessage
	var ans visionAnswer
	if err := json.Unmarshal([]byte(content), &raw); err != nil {
		return nil, a.badResponse(fmt.Errorf("the model's answer is not JSON: %w", err))
	}
	if err := json.Unmarshal([]byte(content), &ans); err != nil {
		return nil, a.badResponse(fmt.Errorf("the model's answer does not fit the schema: %w", err))
	}
	for _, f := range features {
		if _, ok := raw[f]; !ok {
			return nil, a.badResponse(fmt.Errorf("the model's answer lacks %s", f))
		}
	}
	step := m.Duration / float64(len(times))
	instances := func(frames []int, confidence float64) ([]jobs.TimedInstance, error) {
		out := []jobs.TimedInstance{}
		for _, i := range frames {
			if i < 0 || i >= len(times) {
				return nil, fmt.Errorf("frame %d does not exist", i)
			}
			start := math.Max(0, times[i]-step/2)
			out = append(out, jobs.TimedInstance{Start: round3(start), End: round3(math.Min(m.Duration, start+step)), Confidence: confidence})
		}
		return out, nil
	}
	detections := func(in []visionDetection) ([]jobs.Detection, error) {
		out := []jobs.Detection{}
		for _, d := range in {
			if d.Name == "" || d.Confidence == nil || *d.Confidence < 0 || *d.Confidence > 1 {
				return nil, fmt.Errorf("a detection without a name or with a confidence outside 0..1")
			}
			if *d.Confidence < threshold {
				continue
			}
			inst, err := instances(d.Frames, *d.Confidence)
			if err != nil {
				return nil, err
			}
			out = append(out, jobs.Detection{Name: d.Name, Confidence: *d.Confidence, Instances: inst})
		}
		return out, nil
	}
	res := &jobs.VideoAnalysisResult{VideoMetadata: m.VideoMetadata}
	var err error
	for _, f := range features {
		switch f {
		case "labels":
			res.Labels, err = detections(ans.Labels)
		case "topics":
			res.Topics, err = detections(ans.Topics)
		case "brands":
			res.Brands, err = detections(ans.Brands)
		case "summary":
			if ans.Summary == nil || strings.TrimSpace(*ans.Summary) == "" {
				err = fmt.Errorf("an empty summary")
			} else {
				res.Summary = *ans.Summary
			}
		case "content_moderation":
			res.ContentModeration, err = moderation(ans, threshold, instances)
		}
		if err != nil {
			return nil, a.badResponse(fmt.Errorf("the model's %s: %w", f, err))
		}
	}
	return res, nil
}

func moderation(ans visionAnswer, threshold float64, instances func([]int, float64) ([]jobs.TimedInstance, error)) (*jobs.ContentModeration, error) {
	cm := ans.ContentModeration
	if cm == nil || cm.IsSafe == nil {
		return nil, fmt.Errorf("no is_safe verdict")
	}
	out := &jobs.ContentModeration{IsSafe: *cm.IsSafe, Signals: []jobs.ModerationSignal{}}
	for _, s := range cm.Signals {
		if !slices.Contains(jobs.ModerationLabels, s.Label) || s.Confidence == nil || *s.Confidence < 0 || *s.Confidence > 1 {
			return nil, fmt.Errorf("a signal with label %q or confidence out of range", s.Label)
		}
		if *s.Confidence < threshold {
			continue
		}
		inst, err := instances(s.Frames, *s.Confidence)
		if err != nil {
			return nil, err
		}
		out.Signals = append(out.Signals, jobs.ModerationSignal{Label: s.Label, Confidence: *s.Confidence, Instances: inst})
	}
	return out, nil
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

package api

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/ai-job-gateway/gateway/api/apierror"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/providers"
)

// Result content types.
const (
	mimeJSON = "application/json"
	mimeSRT  = "text/srt"
	mimeVTT  = "text/vtt"
	mimeText = "text/plain"
)

// getResult handles GET /v1/{resource}/{id}/result: the result object
// itself, or a rendering of it that options.format or Accept asks for.
func (s *Server) getResult(svc providers.Service) gin.HandlerFunc {
	return func(c *gin.Context) {
		job, err := s.visibleJob(c, svc)
		if err != nil {
			abort(c, err)
			return
		}
		switch job.Status {
		case jobs.StatusFailed:
			abort(c, apierror.New(http.StatusNotFound, apierror.CodeJobFailed, "job %s failed (%s): it has no result", job.ID, job.ErrorCode))
			return
		case jobs.StatusCompleted:
		default:
			abort(c, apierror.New(http.StatusNotFound, apierror.CodeResultNotReady, "job %s is %s; its result is not ready yet", job.ID, job.Status))
			return
		}
		offered, preferred := resultTypes(svc.ID, job)
		mediaType := negotiate(c.GetHeader("Accept"), offered, preferred)
		body, err := renderResult(svc.ID, mediaType, []byte(job.Result))
		if err != nil {
			abort(c, err)
			return
		}
		c.Header("Vary", "Accept")
		c.Data(http.StatusOK, mediaType+"; charset=utf-8", body)
	}
}

// resultTypes lists the media types a job's result can be served as, and
// the one served when Accept does not choose.
func resultTypes(service providers.ServiceID, job *jobs.Record) (offered []string, preferred string) {
	switch service {
	case providers.Transcriptions:
		var opts providers.TranscriptionOptions
		_ = json.Unmarshal([]byte(job.Options), &opts)
		preferred = map[string]string{"json": mimeJSON, "srt": mimeSRT, "vtt": mimeVTT}[opts.EffectiveFormat()]
		return []string{mimeJSON, mimeSRT, mimeVTT}, preferred
	case providers.Translations:
		var in providers.TranslationInput
		_ = json.Unmarshal([]byte(job.Input), &in)
		if in.Type == "text" {
			return []string{mimeJSON, mimeText}, mimeJSON
		}
	}
	return []string{mimeJSON}, mimeJSON
}

// negotiate picks the offered type Accept ranks highest; without a usable
// Accept the preferred type wins.
func negotiate(accept string, offered []string, preferred string) string {
	best, bestQ := "", 0.0
	for _, part := range strings.Split(accept, ",") {
		fields := strings.Split(strings.TrimSpace(part), ";")
		mediaType := strings.ToLower(strings.TrimSpace(fields[0]))
		q := 1.0
		for _, param := range fields[1:] {
			if v, ok := strings.CutPrefix(strings.TrimSpace(param), "q="); ok {
				_, _ = fmt.Sscanf(v, "%g", &q)
			}
		}
		if mediaType == "" || mediaType == "*/*" || strings.HasSuffix(mediaType, "/*") || q <= bestQ {
			continue
		}
		if contains(offered, mediaType) {
			best, bestQ = mediaType, q
		}
	}
	if best == "" {
		return preferred
	}
	return best
}

func renderResult(service providers.ServiceID, mediaType string, result []byte) ([]byte, error) {
	switch mediaType {
	case mimeSRT, mimeVTT:
		var r providers.TranscriptionResult
		if err := json.Unmarshal(result, &r); err != nil {
			return nil, err
		}
		if mediaType == mimeSRT {
			return []byte(renderSRT(r)), nil
		}
		return []byte(renderVTT(r)), nil
	case mimeText:
		var r providers.TranslationResult
		if err := json.Unmarshal(result, &r); err != nil {
			return nil, err
		}
		return []byte(r.Content), nil
	}
	return result, nil
}

// renderSRT writes a transcript as SubRip: numbered cues, comma before the
// milliseconds, a blank line after each cue.
func renderSRT(r providers.TranscriptionResult) string {
	var b strings.Builder
	for i, seg := range cues(r) {
		fmt.Fprintf(&b, "%d\n%s --> %s\n%s\n\n", i+1, timestamp(seg.Start, ","), timestamp(seg.End, ","), cueText(seg, false))
	}
	return b.String()
}

// renderVTT writes a transcript as WebVTT, with speakers as voice spans.
func renderVTT(r providers.TranscriptionResult) string {
	var b strings.Builder
	b.WriteString("WEBVTT\n\n")
	for i, seg := range cues(r) {
		fmt.Fprintf(&b, "%d\n%s --> %s\n%s\n\n", i+1, timestamp(seg.Start, "."), timestamp(seg.End, "."), cueText(seg, true))
	}
	return b.String()
}

// cues are the segments to render; a transcript without timestamps is one
// cue over its whole duration.
func cues(r providers.TranscriptionResult) []providers.Segment {
	if len(r.Segments) > 0 || r.Text == "" {
		return r.Segments
	}
	return []providers.Segment{{Start: 0, End: r.Duration, Text: r.Text}}
}

func cueText(seg providers.Segment, vtt bool) string {
	// A blank line ends a cue in both formats, so drop blank lines (however
	// many follow each other).
	var lines []string
	for _, line := range strings.Split(strings.ReplaceAll(seg.Text, "\r\n", "\n"), "\n") {
		if strings.TrimSpace(line) != "" {
			lines = append(lines, line)
		}
	}
	text := strings.TrimSpace(strings.Join(lines, "\n"))
	if vtt {
		text = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(text)
		text = strings.ReplaceAll(text, "-->", "--&gt;")
		if seg.Speaker != "" {
			return "<v " + seg.Speaker + ">" + text
		}
		return text
	}
	if seg.Speaker != "" {
		return seg.Speaker + ": " + text
	}
	return text
}

// timestamp formats seconds as HH:MM:SS<sep>mmm.
func timestamp(seconds float64, sep string) string {
	ms := int64(math.Round(math.Max(seconds, 0) * 1000))
	return fmt.Sprintf("%02d:%02d:%02d%s%03d", ms/3_600_000, ms/60_000%60, ms/1000%60, sep, ms%1000)
}

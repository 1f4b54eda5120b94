package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/providers/internal/sse"
	"github.com/ai-job-gateway/gateway/providers/internal/vendorhttp"
)

// streamEvent is the data of one event of a streamed Messages API answer
// (docs/providers.md, anthropic): its type says which fields it has.
type streamEvent struct {
	Type    string `json:"type"`
	Message *struct {
		Usage *tokenUsage `json:"usage"`
	} `json:"message"`
	ContentBlock *contentBlock `json:"content_block"`
	Delta        *struct {
		Type       string `json:"type"`
		Text       string `json:"text"`
		StopReason string `json:"stop_reason"`
	} `json:"delta"`
	Usage *struct {
		InputTokens  *int `json:"input_tokens"`
		OutputTokens *int `json:"output_tokens"`
	} `json:"usage"`
	Error *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// stream posts req with stream true, hands each text delta to piece, and
// returns the answer as send would have had it unstreamed: its text as
// one block, its stop_reason and its usage.
func (a *Adapter) stream(ctx context.Context, req messagesRequest, piece func(string)) (messagesResponse, error) {
	out := messagesResponse{Type: "message"}
	req.Stream = true
	httpReq, err := a.newRequest(ctx, req)
	if err != nil {
		return out, err
	}
	httpReq.Header.Set("accept", "text/event-stream")
	resp, err := a.client.Do(httpReq)
	if err != nil {
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
		return out, providers.Retryable(jobs.CodeProviderUnavailable, fmt.Sprintf("provider %q could not be reached", a.provider.ID), err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if err != nil {
			return out, a.cut(ctx, err)
		}
		return out, a.statusError(&vendorhttp.Answer{Status: resp.StatusCode, Header: resp.Header, Body: body})
	}

	var (
		text    strings.Builder
		started bool
		stopped bool
		usage   tokenUsage
	)
	// The type is in the data as well as in the event line.
	events := sse.NewReader(resp.Body)
	for !stopped {
		data, ok := events.Next()
		if !ok {
			break
		}
		var ev streamEvent
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			return out, providers.Permanent(jobs.CodeBadResponse,
				fmt.Sprintf("provider %q sent an event that is not a Messages API stream event", a.provider.ID), err)
		}
		switch ev.Type {
		case "message_start":
			started = true
			if ev.Message != nil && ev.Message.Usage != nil {
				usage = *ev.Message.Usage
			}
		case "content_block_start":
			if b := ev.ContentBlock; b != nil && b.Type == "text" && b.Text != "" {
				text.WriteString(b.Text)
				piece(b.Text)
			}
		case "content_block_delta":
			if d := ev.Delta; d != nil && d.Type == "text_delta" && d.Text != "" {
				text.WriteString(d.Text)
				piece(d.Text)
			}
		case "message_delta":
			if ev.Delta != nil && ev.Delta.StopReason != "" {
				out.StopReason = ev.Delta.StopReason
			}
			// Its counts are cumulative.
			if u := ev.Usage; u != nil {
				if u.InputTokens != nil {
					usage.InputTokens = *u.InputTokens
				}
				if u.OutputTokens != nil {
					usage.OutputTokens = *u.OutputTokens
				}
			}
		case "message_stop":
			stopped = true
		case "error":
			return out, a.streamError(ev)
		}
		// ping, content_block_stop, and event types added later: nothing.
	}
	if err := events.Err(); err != nil {
		return out, a.cut(ctx, err)
	}
	if !stopped {
		return out, a.cut(ctx, errors.New("the stream ended before message_stop"))
	}
	if !started {
		return out, providers.Permanent(jobs.CodeBadResponse,
			fmt.Sprintf("provider %q sent a stream without message_start", a.provider.ID), nil)
	}
	out.Content = []contentBlock{{Type: "text", Text: text.String()}}
	out.Usage = &usage
	return out, nil
}

// streamError classifies an error event: retryable, whatever its type,
// as the overloaded_error Anthropic sends mid-stream is the 529 of an
// unstreamed call.
func (a *Adapter) streamError(ev streamEvent) *providers.Error {
	msg := "error event"
	if e := ev.Error; e != nil {
		msg = e.Type
		if e.Message != "" {
			msg += ": " + e.Message
		}
	}
	if r := []rune(msg); len(r) > 300 {
		msg = string(r[:300]) + "…"
	}
	return providers.Retryable(jobs.CodeProviderUnavailable,
		fmt.Sprintf("provider %q sent an error in the stream: %s", a.provider.ID, msg), nil)
}

// cut reports an answer that broke off: retryable, or ctx.Err() when ctx
// ended.
func (a *Adapter) cut(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return providers.Retryable(jobs.CodeProviderUnavailable,
		fmt.Sprintf("provider %q: reading the answer failed", a.provider.ID), err)
}

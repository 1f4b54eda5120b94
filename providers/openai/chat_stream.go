package openai

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"strings"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/providers/internal/sse"
)

// streamOptions is chat completions' stream_options: include_usage asks
// for a last chunk carrying the usage (docs/providers.md, openai).
type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// chatChunk is one chat.completion.chunk of a streamed answer, or the
// error a server sends in its place.
type chatChunk struct {
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Content *string `json:"content"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
	Error *struct {
		Message string `json:"message"`
		Type    string `json:"type"`
	} `json:"error"`
}

// chatStream sends req as a streamed chat completion, hands each new piece
// of the first choice's content to piece, and returns what chat returns
// for the same answer unstreamed (docs/providers.md, openai).
func (a *Adapter) chatStream(ctx context.Context, req chatRequest, piece func(string)) (content, finish string, resp chatResponse, err error) {
	req.Stream = true
	req.StreamOptions = &streamOptions{IncludeUsage: true}
	httpReq, err := a.newJSONRequest(ctx, "/chat/completions", req)
	if err != nil {
		return "", "", resp, err
	}
	httpReq.Header.Set("Accept", "text/event-stream")
	if a.apiKey != "" {
		httpReq.Header.Set("Authorization", "Bearer "+a.apiKey)
	}
	httpResp, err := a.client.Do(httpReq)
	if err != nil {
		if ctx.Err() != nil {
			return "", "", resp, ctx.Err()
		}
		return "", "", resp, providers.Retryable(jobs.CodeProviderUnavailable,
			fmt.Sprintf("provider %q could not be reached", a.provider.ID), err)
	}
	defer func() { _ = httpResp.Body.Close() }()
	if httpResp.StatusCode < 200 || httpResp.StatusCode > 299 {
		body, err := io.ReadAll(io.LimitReader(httpResp.Body, 32<<20))
		if err != nil {
			return "", "", resp, a.cut(ctx, err)
		}
		return "", "", resp, a.statusError(httpResp.StatusCode, body)
	}
	if mt, _, _ := mime.ParseMediaType(httpResp.Header.Get("Content-Type")); mt == "application/json" {
		// A server that does not stream answers as without stream.
		return a.unstreamed(ctx, httpResp.Body, piece)
	}

	var (
		text   strings.Builder
		choice bool
		done   bool
	)
	events := sse.NewReader(httpResp.Body)
	for !done {
		event, ok := events.Next()
		if !ok {
			break
		}
		if event == "[DONE]" {
			done = true
			break
		}
		var chunk chatChunk
		if err := json.Unmarshal([]byte(event), &chunk); err != nil {
			return "", "", resp, a.badResponse(fmt.Errorf("stream chunk: %w", err))
		}
		if e := chunk.Error; e != nil {
			return "", "", resp, providers.Retryable(jobs.CodeProviderUnavailable,
				fmt.Sprintf("provider %q sent an error in the stream: %s", a.provider.ID, cmp.Or(e.Message, e.Type)), nil)
		}
		if chunk.Usage != nil {
			resp.Usage = chunk.Usage
		}
		for _, c := range chunk.Choices {
			if c.Index != 0 {
				continue
			}
			choice = true
			if c.Delta.Content != nil && *c.Delta.Content != "" {
				text.WriteString(*c.Delta.Content)
				piece(*c.Delta.Content)
			}
			if c.FinishReason != nil && *c.FinishReason != "" {
				finish = *c.FinishReason
			}
		}
	}
	if err := events.Err(); err != nil {
		return "", "", resp, a.cut(ctx, err)
	}
	if !done {
		return "", "", resp, a.cut(ctx, errors.New("the stream ended before data: [DONE]"))
	}
	if !choice {
		return "", "", resp, a.badResponse(errors.New("no choices in the answer"))
	}
	return text.String(), finish, resp, nil
}

// unstreamed reads a whole chat completion sent in answer to a streamed
// request, and hands its content to piece at once.
func (a *Adapter) unstreamed(ctx context.Context, body io.Reader, piece func(string)) (content, finish string, resp chatResponse, err error) {
	data, err := io.ReadAll(io.LimitReader(body, 32<<20))
	if err != nil {
		return "", "", resp, a.cut(ctx, err)
	}
	if err := json.Unmarshal(data, &resp); err != nil {
		return "", "", resp, a.badResponse(err)
	}
	if len(resp.Choices) == 0 {
		return "", "", resp, a.badResponse(errors.New("no choices in the answer"))
	}
	c := resp.Choices[0]
	if c.Message.Content != nil {
		content = *c.Message.Content
	}
	if content != "" {
		piece(content)
	}
	return content, c.FinishReason, resp, nil
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

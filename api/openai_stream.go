package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/ai-job-gateway/gateway/internal/jobs"
)

// chatChunk is OpenAI's chat.completion.chunk.
type chatChunk struct {
	ID      string            `json:"id"`
	Object  string            `json:"object"`
	Created int64             `json:"created"`
	Model   string            `json:"model"`
	Choices []chatChunkChoice `json:"choices"`
	Usage   *chatUsage        `json:"usage,omitempty"`
}

type chatChunkChoice struct {
	Index        int            `json:"index"`
	Delta        chatChunkDelta `json:"delta"`
	FinishReason *string        `json:"finish_reason"`
	Logprobs     *struct{}      `json:"logprobs"`
}

type chatChunkDelta struct {
	Role    string  `json:"role,omitempty"`
	Content *string `json:"content,omitempty"`
}

// chatStream is the answer to a chat request with stream: true, as
// server-sent events of chat.completion.chunk objects, ending with
// data: [DONE] (docs/openai.md, Streaming).
type chatStream struct {
	h     openAIHandler
	c     *gin.Context
	rc    *http.ResponseController
	job   *jobs.Record
	model string
	usage bool // stream_options.include_usage

	delta   int       // the seq of the last piece read
	calls   callOrder // the provider calls whose pieces were read
	call    string    // the provider call of the last piece used
	current string    // the text of that call so far
	sent    string    // the text sent
	wrote   time.Time // when the last event was written
}

// streamChat streams the answer of job, the llm-task a chat request with
// stream: true made: the pieces of its answer as its provider writes them,
// then the finish reason and, when asked, the usage. A job that fails, or
// whose provider fails mid-answer, ends the stream with an error event:
// what was sent cannot be taken back (docs/openai.md, Streaming).
func (h openAIHandler) streamChat(c *gin.Context, job *jobs.Record, model string, includeUsage bool) error {
	rc := startEventStream(c)
	started := time.Now()
	defer func() { c.Set(waitedKey, time.Since(started)) }()

	s := &chatStream{h: h, c: c, rc: rc, job: job, model: model, usage: includeUsage}
	empty := ""
	if s.chunk(chatChunkDelta{Role: "assistant", Content: &empty}, nil) != nil {
		return nil // the client is gone
	}
	ctx, cancel := context.WithCancel(c.Request.Context())
	defer cancel()
	ended := make(chan struct{})
	if h.waiter != nil {
		go func() {
			if h.waiter.WaitTerminal(ctx, job.ID) {
				close(ended)
			}
		}()
	}
	tick := time.NewTicker(deltaPollInterval)
	defer tick.Stop()
	// The stream lasts while the answer comes: it gives up after
	// openAIWait without a new piece.
	lastPiece := time.Now()
	for {
		select {
		case <-tick.C:
			if h.waiter == nil {
				now, err := h.jobs.GetJob(ctx, job.ID)
				if err == nil && now.Terminal() {
					return s.finish(ctx)
				}
			}
		case <-ended:
			return s.finish(ctx)
		case <-ctx.Done():
			return nil // the client is gone
		}
		sent, diverged, err := s.pieces(ctx)
		switch {
		case err != nil:
			return s.ended(ctx, err)
		case diverged:
			return s.fail(s.restartError())
		case sent:
			lastPiece = time.Now()
		case time.Since(lastPiece) > openAIWait:
			return s.finish(ctx) // still running: job_still_running
		case time.Since(s.wrote) > DefaultEventsHeartbeat:
			// Proxies keep an idle stream open.
			if s.keepAlive() != nil {
				return nil
			}
		}
	}
}

// pieces sends the text of the answer written since the last piece read,
// and reports whether it sent any. A new provider call (a retry, a
// failover) starts the answer again: its text is sent from where the sent
// text ends, and when it does not start with the sent text, the answer has
// diverged. Pieces of a call a newer one replaced (an abandoned attempt
// still writing) are left out.
func (s *chatStream) pieces(ctx context.Context) (sent, diverged bool, err error) {
	for {
		deltas, err := s.h.events.JobDeltas(ctx, s.job.ID, s.delta, eventsBatch)
		if err != nil {
			return sent, false, err
		}
		for _, d := range deltas {
			s.delta = d.Seq
			if !s.calls.current(d.CallID) {
				continue
			}
			if d.CallID != s.call {
				s.call, s.current = d.CallID, ""
			}
			s.current += d.Text
			if len(s.current) <= len(s.sent) {
				if !strings.HasPrefix(s.sent, s.current) {
					return sent, true, nil
				}
				continue
			}
			rest, ok := strings.CutPrefix(s.current, s.sent)
			if !ok {
				return sent, true, nil
			}
			s.sent, sent = s.current, true
			if err := s.chunk(chatChunkDelta{Content: &rest}, nil); err != nil {
				return sent, false, err
			}
		}
		if len(deltas) < eventsBatch {
			return sent, false, nil
		}
	}
}

// finish sends the rest of the answer of the ended job, or its error.
func (s *chatStream) finish(ctx context.Context) error {
	if _, diverged, err := s.pieces(ctx); err != nil || !diverged {
		return s.ended(ctx, err)
	}
	return s.fail(s.restartError())
}

// ended rereads the job and ends the stream: with the answer's rest, its
// finish reason, usage and [DONE] when it completed with the text sent so
// far as the start of its answer, with an error event otherwise.
func (s *chatStream) ended(ctx context.Context, err error) error {
	if err != nil {
		return s.fail(&openAIError{status: http.StatusInternalServerError, typ: openAIServerError,
			message: fmt.Sprintf("the answer of job %s could not be streamed (%v); it will be at GET %s/%s/result", s.job.ID, err, llmTasksEndpoint(), s.job.ID)})
	}
	job, err := s.h.jobs.GetJob(ctx, s.job.ID)
	if err != nil {
		return s.fail(&openAIError{status: http.StatusInternalServerError, typ: openAIServerError,
			message: fmt.Sprintf("the job %s could not be read: %v", s.job.ID, err)})
	}
	switch job.Status {
	case jobs.StatusFailed:
		return s.fail(jobFailure(job))
	case jobs.StatusCompleted:
	default:
		return s.fail(&openAIError{status: http.StatusGatewayTimeout, typ: openAIServerError, code: "job_still_running",
			message: fmt.Sprintf("the job %s is still %s after %s; its answer will be at GET %s/%s/result",
				job.ID, job.Status, openAIWait, llmTasksEndpoint(), job.ID)})
	}
	completion, err := chatCompletionOf(job, s.model)
	if err != nil {
		return s.fail(&openAIError{status: http.StatusInternalServerError, typ: openAIServerError, message: err.Error()})
	}
	answer := completion.Choices[0]
	rest, ok := strings.CutPrefix(answer.Message.Content, s.sent)
	if !ok {
		return s.fail(s.restartError())
	}
	if rest != "" {
		if s.chunk(chatChunkDelta{Content: &rest}, nil) != nil {
			return nil
		}
	}
	finish := answer.FinishReason
	if s.chunk(chatChunkDelta{}, &finish) != nil {
		return nil
	}
	if s.usage {
		usage := completion.Usage
		if usage == nil {
			usage = &chatUsage{}
		}
		if s.write(chatChunk{ID: s.id(), Object: "chat.completion.chunk", Created: s.job.CreatedAt.Unix(), Model: s.model,
			Choices: []chatChunkChoice{}, Usage: usage}) != nil {
			return nil
		}
	}
	_ = s.line("[DONE]")
	return nil
}

// restartError says the answer started again, differently, after part of
// it was sent.
func (s *chatStream) restartError() *openAIError {
	return &openAIError{status: http.StatusBadGateway, typ: openAIServerError, code: "stream_restarted",
		message: fmt.Sprintf("the provider failed after part of the answer was streamed, and the answer started again differently; the job %s goes on and its whole answer will be at GET %s/%s/result",
			s.job.ID, llmTasksEndpoint(), s.job.ID)}
}

// llmTasksEndpoint is the llm-tasks resource's path.
func llmTasksEndpoint() string {
	svc, _ := jobs.ServiceOf(jobs.LLMTasks)
	return svc.Endpoint()
}

func (s *chatStream) id() string { return "chatcmpl-" + s.job.ID }

// chunk sends a chunk of one choice.
func (s *chatStream) chunk(delta chatChunkDelta, finish *string) error {
	return s.write(chatChunk{ID: s.id(), Object: "chat.completion.chunk", Created: s.job.CreatedAt.Unix(), Model: s.model,
		Choices: []chatChunkChoice{{Delta: delta, FinishReason: finish}}})
}

// fail ends the stream with an error event in OpenAI's shape, which the
// SDKs raise as an APIError.
func (s *chatStream) fail(e *openAIError) error {
	body, err := json.Marshal(gin.H{"error": gin.H{"message": e.message, "type": e.typ,
		"param": nullIfEmpty(e.param), "code": nullIfEmpty(e.code)}})
	if err == nil {
		_ = s.line(string(body))
	}
	return nil
}

func (s *chatStream) write(v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return s.line(string(body))
}

// line sends one data line as an event.
func (s *chatStream) line(data string) error {
	return s.send("data: " + data + "\n\n")
}

// keepAlive sends a comment, which clients skip.
func (s *chatStream) keepAlive() error { return s.send(": keep-alive\n\n") }

func (s *chatStream) send(text string) error {
	_ = s.rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
	if _, err := s.c.Writer.WriteString(text); err != nil {
		return err
	}
	s.wrote = time.Now()
	return s.rc.Flush()
}

package activities

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/store"
)

// DeltaWriter records the pieces of streamed answers (store.JobStore).
type DeltaWriter interface {
	AppendJobDelta(ctx context.Context, d store.JobDelta) error
}

// deltaFlushEvery is how often the pieces a provider streams are written:
// each write holds the text of that interval (docs/api.md, Streamed answers).
const deltaFlushEvery = 100 * time.Millisecond

// deltaStream gathers the text a provider streams and writes it to the
// store a piece per interval, outside Temporal's history. Losing a piece
// loses only a live view: the result holds the whole answer.
type deltaStream struct {
	ctx    context.Context
	writer DeltaWriter
	base   store.JobDelta // the job, call and provider of every piece

	mu      sync.Mutex
	pending strings.Builder
	failed  bool
	stop    chan struct{}
	done    chan struct{}
}

// streamOf is the stream of the call's answer when the job asked for one
// and the worker records them; nil otherwise.
func streamOf(ctx context.Context, w DeltaWriter, in CallInput) *deltaStream {
	if w == nil || in.Service != jobs.LLMTasks || len(in.Options) == 0 {
		return nil
	}
	var options jobs.LLMTaskOptions
	if json.Unmarshal(in.Options, &options) != nil || !options.Stream {
		return nil
	}
	info := activity.GetInfo(ctx)
	s := &deltaStream{ctx: ctx, writer: w, stop: make(chan struct{}), done: make(chan struct{}),
		base: store.JobDelta{JobID: in.JobID, Provider: in.ProviderID,
			CallID: fmt.Sprintf("%s/%s/%d", info.WorkflowExecution.RunID, info.ActivityID, info.Attempt)}}
	go s.flushEvery(deltaFlushEvery)
	return s
}

// add takes a piece of the answer; it is the call's providers.Call.Stream.
func (s *deltaStream) add(text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pending.WriteString(text)
}

func (s *deltaStream) flushEvery(d time.Duration) {
	defer close(s.done)
	tick := time.NewTicker(d)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			s.flush()
		case <-s.stop:
			s.flush()
			return
		}
	}
}

// flush writes what was streamed since the last write. After a failed
// write the stream writes no more: a gap would garble the live text.
func (s *deltaStream) flush() {
	s.mu.Lock()
	text := s.pending.String()
	s.pending.Reset()
	failed := s.failed
	s.mu.Unlock()
	if text == "" || failed {
		return
	}
	d := s.base
	d.Text = text
	if err := s.writer.AppendJobDelta(s.ctx, d); err != nil {
		activity.GetLogger(s.ctx).Warn("streamed text not recorded; the job's result will hold it", "job", d.JobID, "error", err)
		s.mu.Lock()
		s.failed = true
		s.mu.Unlock()
	}
}

// close writes what is left and stops the stream; the call's whole
// answer is recorded before its result is.
func (s *deltaStream) close() {
	close(s.stop)
	<-s.done
}

package devtemporal

import (
	"context"
	"log/slog"
	"sync/atomic"

	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/log/tag"
)

// serverLogger adapts a *slog.Logger to the Temporal server's log.Logger,
// dropping records below level.
//
// It deliberately does not implement log.SLogWrapper: the server would then
// use the *slog.Logger directly and bypass the level filter.
type serverLogger struct {
	log   *slog.Logger
	level slog.Leveler
	// tags are those added by With, turned into attributes only when a
	// record is logged: the server derives loggers for every request and
	// task, and logs few of their records.
	tags  []tag.Tag
	state *logState // shared with loggers derived by With
}

type logState struct {
	// stopping is set by Server.Stop. From then on only errors get through:
	// while the server shuts down, and forever after for the system SDK
	// workers that v1.32.1 never stops (see Server.Stop), every poll of the
	// closed frontend would otherwise log a warning.
	stopping atomic.Bool
}

func newServerLogger(l *slog.Logger, level slog.Leveler) *serverLogger {
	return &serverLogger{log: l, level: level, state: &logState{}}
}

var (
	_ log.Logger     = (*serverLogger)(nil)
	_ log.WithLogger = (*serverLogger)(nil)
)

// demoted lists messages the v1.32.1 server logs at Warn on every start of
// this configuration although nothing is wrong; they are logged at Info.
var demoted = map[string]bool{
	// The frontend HTTP API (and with it Nexus) is intentionally off.
	"HTTP API port has not been set. Nexus HTTP endpoints will not be available. To enable Nexus, follow these instructions: https://github.com/temporalio/temporal/blob/main/docs/architecture/nexus.md#enabling-nexus.": true,
}

func (l *serverLogger) Debug(msg string, tags ...tag.Tag) { l.emit(slog.LevelDebug, msg, tags) }
func (l *serverLogger) Info(msg string, tags ...tag.Tag)  { l.emit(slog.LevelInfo, msg, tags) }
func (l *serverLogger) Warn(msg string, tags ...tag.Tag) {
	level := slog.LevelWarn
	if demoted[msg] {
		level = slog.LevelInfo
	}
	l.emit(level, msg, tags)
}
func (l *serverLogger) Error(msg string, tags ...tag.Tag) { l.emit(slog.LevelError, msg, tags) }

// DPanic, Panic and Fatal are logged as errors: an embedded server must not
// panic or exit the host process on its own. Start checks the conditions
// (port conflicts) that would otherwise end up here.
func (l *serverLogger) DPanic(msg string, tags ...tag.Tag) { l.emit(slog.LevelError, msg, tags) }
func (l *serverLogger) Panic(msg string, tags ...tag.Tag)  { l.emit(slog.LevelError, msg, tags) }
func (l *serverLogger) Fatal(msg string, tags ...tag.Tag)  { l.emit(slog.LevelError, msg, tags) }

// With returns a logger with tags added to every record.
func (l *serverLogger) With(tags ...tag.Tag) log.Logger {
	if len(tags) == 0 {
		return l
	}
	return &serverLogger{log: l.log, level: l.level, tags: append(l.tags[:len(l.tags):len(l.tags)], tags...), state: l.state}
}

func (l *serverLogger) emit(level slog.Level, msg string, tags []tag.Tag) {
	if level < l.level.Level() || (level < slog.LevelError && l.state.stopping.Load()) {
		return
	}
	ctx := context.Background()
	if !l.log.Enabled(ctx, level) {
		return
	}
	attrs := make([]slog.Attr, 0, len(l.tags)+len(tags))
	for _, ts := range [][]tag.Tag{l.tags, tags} {
		for _, t := range ts {
			attrs = append(attrs, slog.Any(t.Key(), t.Value()))
		}
	}
	l.log.LogAttrs(ctx, level, msg, attrs...)
}

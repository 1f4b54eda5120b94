package devtemporal

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"go.temporal.io/server/common/log/tag"
)

// Tags added by With reach the records of the derived logger, after the
// parent's and before the record's own; siblings do not see each other's.
func TestServerLoggerWith(t *testing.T) {
	var out bytes.Buffer
	root := newServerLogger(slog.New(slog.NewTextHandler(&out, nil)), slog.LevelInfo)
	parent := root.With(tag.NewStringTag("service", "history")).(*serverLogger)
	first := parent.With(tag.NewStringTag("wf", "one"))
	second := parent.With(tag.NewStringTag("wf", "two"))

	first.Info("first", tag.NewStringTag("extra", "x"))
	second.Info("second")
	root.Info("root")
	first.Debug("below the level")

	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("want 3 records, got %d:\n%s", len(lines), out.String())
	}
	for i, want := range []string{
		"msg=first service=history wf=one extra=x",
		"msg=second service=history wf=two",
		"msg=root",
	} {
		if !strings.HasSuffix(lines[i], want) {
			t.Errorf("record %d = %q, want it to end with %q", i, lines[i], want)
		}
	}
}

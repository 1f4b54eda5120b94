package api

import (
	"bufio"
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/ai-job-gateway/gateway/app/batches"
)

// refusalLine is a line of GET /v1/batches/{id}/errors.
type refusalLine struct {
	Index    int           `json:"index"`
	Line     int           `json:"line,omitempty"`
	CustomID string        `json:"custom_id"`
	Status   int           `json:"status"`
	Error    batches.Error `json:"error"`
}

// errors handles GET /v1/batches/{id}/errors: the refused items, one JSON
// line each, in order; ?after=<index> resumes after an item.
func (h batchesHandler) errors(c *gin.Context) error {
	b, err := h.visible(c, "read")
	if err != nil {
		return err
	}
	after, err := afterIndex(c)
	if err != nil {
		return err
	}
	var lines []refusalLine
	if b.InputFileURL == "" && b.Refused != "" {
		if err := json.Unmarshal([]byte(b.Refused), &lines); err != nil {
			return err
		}
		lines = slices.DeleteFunc(lines, func(l refusalLine) bool { return l.Index <= after })
	}
	mediaType := "application/x-ndjson"
	if strings.Contains(c.GetHeader("Accept"), "application/jsonl") {
		mediaType = "application/jsonl"
	}
	c.Header("Content-Type", mediaType)
	c.Header("Vary", "Accept")
	ctx := c.Request.Context()
	w := bufio.NewWriter(c.Writer)
	for first := true; ; first = false {
		if b.InputFileURL != "" {
			page, err := h.batches.BatchRefusals(ctx, b.ID, after, batchResultsPage)
			if err != nil {
				if first {
					return err
				}
				return h.streamEnded(c, w, err)
			}
			lines = lines[:0]
			for _, r := range page {
				lines = append(lines, refusalLine{Index: r.Item, Line: r.Line, CustomID: r.CustomID, Status: r.Status,
					Error: batches.Error{Code: r.Code, Message: r.Message}})
			}
		}
		if first {
			c.Status(http.StatusOK)
		}
		for _, l := range lines {
			line, err := json.Marshal(l)
			if err != nil {
				return h.streamEnded(c, w, err)
			}
			if _, err := w.Write(append(line, '\n')); err != nil {
				return nil // the client is gone
			}
		}
		if b.InputFileURL == "" || len(lines) < batchResultsPage {
			break
		}
		after = lines[len(lines)-1].Index
	}
	_ = w.Flush()
	return nil
}

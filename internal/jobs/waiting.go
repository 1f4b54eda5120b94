package jobs

import (
	"encoding/json"
	"time"
)

// WaitReasonCircuitOpen: every provider left for the job has an open
// circuit breaker (docs/providers.md, Waiting out an outage).
const WaitReasonCircuitOpen = "circuit_open"

// Waiting says why a job that is not finished is waiting, and until when
// it routes again; shown as attributes.waiting while it waits.
type Waiting struct {
	Reason  string    `json:"reason"`
	Message string    `json:"message"`
	Since   time.Time `json:"since"`
	Until   time.Time `json:"until"`
	// Providers are the providers the job waits for.
	Providers []string `json:"providers"`
}

// waitingJSON is w as a record stores it; "" for nil.
func waitingJSON(w *Waiting) string {
	if w == nil {
		return ""
	}
	data, err := json.Marshal(w)
	if err != nil {
		return ""
	}
	return string(data)
}

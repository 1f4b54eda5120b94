package main

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/ai-job-gateway/gateway/internal/jobs"
)

// envMaxOutageWait holds --max-outage-wait.
const envMaxOutageWait = "GATEWAY_MAX_OUTAGE_WAIT"

// outageWaits is --max-outage-wait: how long a job of each service may
// wait in all for its providers' open circuit breakers (docs/providers.md,
// Waiting out an outage). "15m" sets every service; "transcriptions=30m,
// llm-tasks=2m" sets those named; both may be combined ("5m,
// transcriptions=30m").
type outageWaits map[jobs.ServiceID]time.Duration

func (w *outageWaits) String() string {
	if w == nil || len(*w) == 0 {
		return ""
	}
	var parts []string
	for service, d := range *w {
		parts = append(parts, fmt.Sprintf("%s=%s", service, d))
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

// Type names --max-outage-wait's value in -h.
func (w *outageWaits) Type() string { return "durations" }

// Set parses the flag's value.
func (w *outageWaits) Set(value string) error {
	out := outageWaits{}
	for part := range strings.SplitSeq(value, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, duration, named := strings.Cut(part, "=")
		if !named {
			duration = name
		}
		d, err := time.ParseDuration(strings.TrimSpace(duration))
		if err != nil || d < 0 {
			return fmt.Errorf("%q is not a duration of at least 0, such as 15m", duration)
		}
		if !named {
			for _, svc := range jobs.Services() {
				if _, set := out[svc.ID]; !set {
					out[svc.ID] = d
				}
			}
			continue
		}
		service := jobs.ServiceID(strings.TrimSpace(name))
		if _, ok := jobs.LookupService(string(service)); !ok {
			return fmt.Errorf("%q is not a service", name)
		}
		out[service] = d
	}
	*w = out
	return nil
}

// registerOutageFlags binds --max-outage-wait (dev and worker).
func (c *config) registerOutageFlags(fs *flag.FlagSet) {
	if v := os.Getenv(envMaxOutageWait); v != "" {
		if err := c.MaxOutageWait.Set(v); err != nil {
			c.maxOutageWaitProblem = fmt.Sprintf("%s: %v", envMaxOutageWait, err)
		}
	}
	fs.Var(&c.MaxOutageWait, "max-outage-wait",
		"how long a job may wait in all while every provider left for it has an open circuit breaker, then fails PROVIDERS_EXHAUSTED: "+
			"a duration for every service, or service=duration pairs, comma-separated (default 10m; 0: never wait, the provider that probes first is kept in play) (env "+envMaxOutageWait+")")
}

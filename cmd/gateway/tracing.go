package main

import (
	"context"
	"net/http"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"

	"github.com/ai-job-gateway/gateway/internal/tracing"
)

// startTracing starts the OpenTelemetry traces the environment asks for
// (docs/operations.md, Traces): each process is its own service,
// ai-job-gateway-<command>. Outgoing HTTP calls that use the default
// transport (the provider adapters') become client spans of the activity
// that makes them.
func startTracing(ctx context.Context, command string) (func(context.Context) error, error) {
	shutdown, err := tracing.Start(ctx, "ai-job-gateway-"+command)
	if err != nil {
		return nil, err
	}
	if tracing.Enabled() {
		http.DefaultTransport = otelhttp.NewTransport(http.DefaultTransport)
	}
	return shutdown, nil
}

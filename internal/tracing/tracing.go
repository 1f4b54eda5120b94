// Package tracing sets up OpenTelemetry traces (docs/operations.md,
// Traces): exported by OTLP when the standard OTEL_* environment variables
// ask for it, off otherwise. It also carries a job's trace context across
// the outbox, from the request that created the job to its workflow.
package tracing

import (
	"context"
	"fmt"
	"os"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"
)

// Enabled reports whether the environment asks for traces: an OTLP
// endpoint is set, or OTEL_TRACES_EXPORTER is otlp; OTEL_TRACES_EXPORTER=none
// or OTEL_SDK_DISABLED=true turn them off.
func Enabled() bool {
	if strings.EqualFold(os.Getenv("OTEL_SDK_DISABLED"), "true") {
		return false
	}
	switch strings.ToLower(os.Getenv("OTEL_TRACES_EXPORTER")) {
	case "none":
		return false
	case "otlp":
		return true
	}
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// Start installs the global tracer provider and the W3C propagators when
// Enabled, exporting by OTLP over HTTP (or gRPC with
// OTEL_EXPORTER_OTLP_PROTOCOL=grpc); the exporter reads its other OTEL_*
// variables itself. shutdown flushes the spans still buffered.
func Start(ctx context.Context, service string) (shutdown func(context.Context) error, err error) {
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	if !Enabled() {
		return func(context.Context) error { return nil }, nil
	}
	var exporter sdktrace.SpanExporter
	protocol := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if protocol == "" {
		protocol = os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	switch protocol {
	case "grpc":
		exporter, err = otlptracegrpc.New(ctx)
	case "", "http/protobuf":
		exporter, err = otlptracehttp.New(ctx)
	default:
		return nil, fmt.Errorf("tracing: OTEL_EXPORTER_OTLP_PROTOCOL %q is not supported; use http/protobuf or grpc", protocol)
	}
	if err != nil {
		return nil, fmt.Errorf("tracing: %w", err)
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(semconv.ServiceName(service)))
	if err != nil {
		return nil, fmt.Errorf("tracing: %w", err)
	}
	provider := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter), sdktrace.WithResource(res))
	otel.SetTracerProvider(provider)
	return provider.Shutdown, nil
}

// Carrier is a trace context as W3C headers (traceparent, tracestate),
// kept with a job so its workflow continues the trace of the request
// that created it.
type Carrier map[string]string

// Capture is the trace context of ctx; nil when ctx has no span.
func Capture(ctx context.Context) Carrier {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return nil
	}
	c := Carrier{}
	otel.GetTextMapPropagator().Inject(ctx, propagation.MapCarrier(c))
	return c
}

// Resume is ctx carrying the trace context c.
func Resume(ctx context.Context, c Carrier) context.Context {
	if len(c) == 0 {
		return ctx
	}
	return otel.GetTextMapPropagator().Extract(ctx, propagation.MapCarrier(c))
}

// TraceID is the trace id of ctx's span, "" without one.
func TraceID(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	return sc.TraceID().String()
}

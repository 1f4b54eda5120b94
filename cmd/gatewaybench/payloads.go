package main

import (
	"context"
	"fmt"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"

	"github.com/ai-job-gateway/gateway/internal/payloadcodec"
	"github.com/ai-job-gateway/gateway/store"
)

// benchPayloadKeys is the GATEWAY_PAYLOAD_KEYS of every gateway process
// the benchmark starts: payloads are encrypted as in production.
var benchPayloadKeys = payloadcodec.FormatKey("bench1", payloadcodec.GenerateKey())

// payloadKeysEnv is the environment entry that gives a gateway process
// the benchmark's payload keys.
func payloadKeysEnv() string { return "GATEWAY_PAYLOAD_KEYS=" + benchPayloadKeys }

// resultDecoder decodes job results encrypted with benchPayloadKeys in
// scopes whose secrets are in secrets, read only: the benchmark never
// makes a scope's secret (docs/operations.md, Payload encryption).
func resultDecoder(secrets payloadcodec.ScopeSecrets) (converter.DataConverter, error) {
	keys, err := payloadcodec.ParseKeys(benchPayloadKeys)
	if err != nil {
		return nil, err
	}
	enc := payloadcodec.New(keys, secrets, payloadcodec.Options{}).ReadOnly()
	return converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), enc.Decoder()), nil
}

// openResultDecoder is resultDecoder over the secrets of the gateway's
// store at databaseURL, and that store (to close).
func openResultDecoder(ctx context.Context, databaseURL string) (converter.DataConverter, *store.Store, error) {
	st, err := store.Open(ctx, databaseURL)
	if err != nil {
		return nil, nil, fmt.Errorf("the gateway's store, for its payload secrets: %w", err)
	}
	dc, err := resultDecoder(st.PayloadSecrets())
	if err != nil {
		_ = st.Close()
		return nil, nil, err
	}
	return dc, st, nil
}

// jobResults reads the gateway's job results (openResultDecoder) and
// watches its outbox for started jobs (startWatch); close both with the
// returned function.
func jobResults(ctx context.Context, databaseURL string) (converter.DataConverter, *startWatch, func(), error) {
	dc, st, err := openResultDecoder(ctx, databaseURL)
	if err != nil {
		return nil, nil, nil, err
	}
	watch := newStartWatch(st)
	wctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		watch.run(wctx)
	}()
	closeAll := func() {
		stop()
		<-done
		_ = st.Close()
	}
	return dc, watch, closeAll, nil
}

// keptResults is a system whose results awaitClose keeps, unchecked, for
// checkResults.
type keptResults struct {
	system
	results []*commonpb.Payloads
}

func (k *keptResults) succeeded(result *commonpb.Payloads) error {
	k.results = append(k.results, result)
	return nil
}

// checkResults checks that every result is a completed job's, decoding
// with dc.
func checkResults(dc converter.DataConverter, results []*commonpb.Payloads) error {
	for i, r := range results {
		if err := endedCompletedWith(dc, r, fmt.Sprintf("job %d of %d", i+1, len(results))); err != nil {
			return err
		}
	}
	return nil
}

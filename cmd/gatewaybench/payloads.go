package main

import (
	"context"
	"fmt"

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

// jobResults reads the gateway's job results, encrypted with the
// benchmark's key in scopes whose secrets are in the gateway's store at
// databaseURL, and watches its outbox for started jobs (startWatch);
// close both with the returned function.
func jobResults(ctx context.Context, databaseURL string) (converter.DataConverter, *startWatch, func(), error) {
	keys, err := payloadcodec.ParseKeys(benchPayloadKeys)
	if err != nil {
		return nil, nil, nil, err
	}
	st, err := store.Open(ctx, databaseURL)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("the gateway's store, for its payload secrets: %w", err)
	}
	enc := payloadcodec.New(keys, st.PayloadSecrets(), payloadcodec.Options{})
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
	return converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), enc.Decoder()), watch, closeAll, nil
}

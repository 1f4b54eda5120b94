package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	"go.yaml.in/yaml/v3"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/internal/payloadcodec"
	"github.com/ai-job-gateway/gateway/store"
	"github.com/ai-job-gateway/gateway/store/storetest"
)

// The gateway encrypts job results with the benchmark's keys: they are
// checked with them (reading a result without them failed the reads
// phase with "payload encoding is not supported").
func TestGatewayResultsAreCheckedWithThePayloadKeys(t *testing.T) {
	t.Parallel()
	secrets := payloadcodec.NewMemorySecrets(true)
	keys, err := payloadcodec.ParseKeys(benchPayloadKeys)
	require.NoError(t, err)
	// What a gateway started with the benchmark's environment records.
	gateway := converter.NewCodecDataConverter(converter.GetDefaultDataConverter(),
		payloadcodec.New(keys, secrets, payloadcodec.Options{}).Codec("tenant-000"))
	result := func(status string) *commonpb.Payloads {
		p, err := gateway.ToPayloads(map[string]string{"status": status})
		require.NoError(t, err)
		return p
	}
	plain := &system{name: "gateway", results: converter.GetDefaultDataConverter()}
	require.ErrorContains(t, plain.succeeded(result("completed")), "payload encoding is not supported")

	dc, err := resultDecoder(secrets)
	require.NoError(t, err)
	gw := &system{name: "gateway", results: dc}
	require.NoError(t, gw.succeeded(result("completed")))
	require.EqualError(t, gw.succeeded(result("failed")), `gateway job ended "failed"`)
	require.NoError(t, (&system{name: "baseline"}).succeeded(nil), "the baseline returns nothing to check")
}

// A result in a scope the secrets lack fails as shredded, and the scope
// is left without a secret: the benchmark only reads the gateway's.
func TestResultDecoderMakesNoSecret(t *testing.T) {
	t.Parallel()
	keys, err := payloadcodec.ParseKeys(benchPayloadKeys)
	require.NoError(t, err)
	p, err := converter.NewCodecDataConverter(converter.GetDefaultDataConverter(),
		payloadcodec.New(keys, payloadcodec.NewMemorySecrets(true), payloadcodec.Options{}).Codec("tenant-001")).
		ToPayloads(map[string]string{"status": "completed"})
	require.NoError(t, err)

	secrets := payloadcodec.NewMemorySecrets(true)
	dc, err := resultDecoder(secrets)
	require.NoError(t, err)
	require.ErrorIs(t, (&system{results: dc}).succeeded(p), payloadcodec.ErrScopeShredded)
	_, err = secrets.ExistingSecret(t.Context(), "tenant-001")
	require.ErrorIs(t, err, payloadcodec.ErrScopeShredded)
}

func TestStartWatchAnswersOnceTheStartLeftTheOutbox(t *testing.T) {
	t.Parallel()
	st := storetest.SQLite(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	watch := &startWatch{outbox: st, waiting: map[string][]chan struct{}{}}
	go watch.run(ctx)

	job := &jobs.Record{ID: uuid.NewString(), Service: jobs.LLMTasks, Tenant: "acme", UserID: "u", Status: jobs.StatusPending,
		Input: "{}", Options: "{}", CreatedAt: time.Now().UTC()}
	_, err := st.Jobs.CreateJob(ctx, job, &store.JobStart{Input: "{}", NextAttemptAt: time.Now()})
	require.NoError(t, err)
	started := make(chan error, 1)
	go func() { started <- watch.await(ctx, job.ID) }()
	select {
	case <-started:
		t.Fatal("answered while the start is in the outbox")
	case <-time.After(5 * startPoll):
	}
	require.NoError(t, st.Jobs.DeleteJobStarts(ctx, []string{job.ID}))
	select {
	case err := <-started:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("not answered once the start left the outbox")
	}
}

// The production shape's Temporal: config/docker.yaml of the server
// module with temporalEnv's settings, loaded and validated by the
// server's own loader, and the dynamic config naming settings it knows.
func TestTemporalConfigLoads(t *testing.T) {
	module, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "go.temporal.io/server").Output()
	require.NoError(t, err)
	dynamic := filepath.Join(t.TempDir(), "dynamic.yaml")
	require.NoError(t, os.WriteFile(dynamic, []byte(temporalDynamicConfig), 0o644))
	env, frontend, err := temporalEnv("postgres://bench:secret@127.0.0.1:5433/x", "bench_db", dynamic)
	require.NoError(t, err)
	for _, kv := range env {
		name, value, _ := strings.Cut(kv, "=")
		t.Setenv(name, value)
	}
	cfg, err := config.Load(config.WithConfigFile(filepath.Join(strings.TrimSpace(string(module)), "config", "docker.yaml")))
	require.NoError(t, err)
	require.NoError(t, cfg.Validate())
	require.Equal(t, int32(4), cfg.Persistence.NumHistoryShards)
	for name, db := range map[string]string{"default": "bench_db", "visibility": "bench_db_visibility"} {
		store := cfg.Persistence.DataStores[name].SQL
		require.Equal(t, "postgres12", store.PluginName)
		require.Equal(t, db, store.DatabaseName)
		require.Equal(t, "127.0.0.1:5433", store.ConnectAddr)
		require.Equal(t, "secret", store.Password)
	}
	require.Equal(t, 10, cfg.Persistence.DataStores["default"].SQL.MaxConns)
	require.Equal(t, frontend, fmt.Sprintf("127.0.0.1:%d", cfg.Services["frontend"].RPC.GRPCPort))
	require.Equal(t, frontend, cfg.ClusterMetadata.ClusterInformation["active"].RPCAddress)
	for _, svc := range cfg.Services {
		require.Less(t, svc.RPC.MembershipPort, 32768)
	}
	require.Equal(t, dynamic, cfg.DynamicConfigClient.Filepath)
	var values map[string][]struct {
		Value int `yaml:"value"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(temporalDynamicConfig), &values))
	lower := map[string]int{}
	for key, v := range values {
		lower[strings.ToLower(key)] = v[0].Value
	}
	for _, key := range []dynamicconfig.Key{dynamicconfig.TransferProcessorMaxPollRPS.Key(),
		dynamicconfig.TimerProcessorMaxPollRPS.Key(), dynamicconfig.VisibilityProcessorMaxPollRPS.Key()} {
		require.Equal(t, 10000, lower[key.String()], "%s (keys are matched without case)", key)
	}
}

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	"go.yaml.in/yaml/v3"
)

// The production shape's server configuration, loaded and validated by
// the Temporal server's own loader.
func TestTemporalConfigLoads(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "temporal.yaml")
	services := []temporalService{{"frontend", 21001, 21002}, {"history", 21003, 21004}, {"matching", 21005, 21006}, {"worker", 21007, 21008}}
	require.NoError(t, writeTemporalConfig(path, temporalSettings{DB: "bench_db", PG: "127.0.0.1:5432", User: "postgres", Services: services}))

	cfg, err := config.Load(config.WithConfigFile(path))
	require.NoError(t, err)
	require.NoError(t, cfg.Validate())
	require.Equal(t, int32(4), cfg.Persistence.NumHistoryShards)
	for name, db := range map[string]string{"default": "bench_db", "visibility": "bench_db_visibility"} {
		store := cfg.Persistence.DataStores[name].SQL
		require.NotNil(t, store, name)
		require.Equal(t, "postgres12", store.PluginName)
		require.Equal(t, db, store.DatabaseName)
		require.Equal(t, "127.0.0.1:5432", store.ConnectAddr)
	}
	require.Equal(t, 21001, cfg.Services["frontend"].RPC.GRPCPort)
	require.Equal(t, 21006, cfg.Services["matching"].RPC.MembershipPort)
	require.Equal(t, "127.0.0.1:21001", cfg.ClusterMetadata.ClusterInformation["active"].RPCAddress)

	// The dynamic config beside it names settings the server knows.
	require.NotNil(t, cfg.DynamicConfigClient)
	raw, err := os.ReadFile(cfg.DynamicConfigClient.Filepath)
	require.NoError(t, err)
	var values map[string][]struct {
		Value int `yaml:"value"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &values))
	require.Len(t, values, 3)
	lower := map[string]int{}
	for key, v := range values {
		require.Len(t, v, 1, key)
		lower[strings.ToLower(key)] = v[0].Value
	}
	for _, key := range []dynamicconfig.Key{dynamicconfig.TransferProcessorMaxPollRPS.Key(),
		dynamicconfig.TimerProcessorMaxPollRPS.Key(), dynamicconfig.VisibilityProcessorMaxPollRPS.Key()} {
		require.Equal(t, 10000, lower[key.String()], "%s (keys are matched without case)", key)
	}
}

package api_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/api"
	"github.com/ai-job-gateway/gateway/store/storetest"
)

func TestNewNamesTheMissingDependency(t *testing.T) {
	t.Parallel()
	var full api.Config
	setupConfigured(t, storetest.SQLite, func(cfg *api.Config) { full = *cfg })

	required := map[string]func(*api.Config){
		"Store":      func(c *api.Config) { c.Store = nil },
		"Jobs":       func(c *api.Config) { c.Jobs = nil },
		"Catalog":    func(c *api.Config) { c.Catalog = nil },
		"Verifier":   func(c *api.Config) { c.Verifier = nil },
		"Tenants":    func(c *api.Config) { c.Tenants = nil },
		"Statuses":   func(c *api.Config) { c.Statuses = nil },
		"Policies":   func(c *api.Config) { c.Policies = nil },
		"Deliveries": func(c *api.Config) { c.Deliveries = nil },
		"Usage":      func(c *api.Config) { c.Usage = nil },
	}
	for field, clear := range required {
		cfg := full
		clear(&cfg)
		srv, err := api.New(cfg)
		require.ErrorContains(t, err, "Config."+field+" is required", field)
		require.Nil(t, srv, field)
	}

	// The rest is optional: a webhook key (its route answers 503 without
	// one), extra routes and checks, and what New defaults.
	cfg := full
	cfg.WebhookKey, cfg.Routes, cfg.ReadyChecks = nil, nil, nil
	cfg.Logger, cfg.Now, cfg.Region, cfg.NodeID = nil, nil, "", ""
	srv, err := api.New(cfg)
	require.NoError(t, err)
	require.NotNil(t, srv.Handler())
}

// Package providertest builds provider catalogs for tests and benchmarks,
// and what the adapters' tests share: a fake vendor API (Vendor), calls
// and their runs (Call, Run), and the checks of classified failures
// (RequireError, RunStatusCases).
package providertest

import "github.com/ai-job-gateway/gateway/providers/sandbox"

// SandboxCatalog is sandbox.Catalog: one sandbox provider for every
// service, taking latencyMS per job.
func SandboxCatalog(id string, latencyMS int64) string { return sandbox.Catalog(id, latencyMS) }

// Package providers is the provider catalog (Catalog, Provider,
// Capability), the adapters that call providers (Adapter, Submitter) and
// the Registry that builds one adapter per provider of the catalog
// (docs/providers.md).
//
// An adapter declares the services it serves (Adapter.Services); the registry
// refuses a catalog entry listing another service, and refuses calls for
// another service before they reach the adapter (docs/providers.md,
// Writing an adapter). Every adapter's constructor is New(p *Provider,
// opts ...Option): the settings come from p, what is not the catalog's
// (HTTP clients, the environment lookup) from the options.
package providers

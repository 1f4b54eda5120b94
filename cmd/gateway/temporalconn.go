package main

import (
	"fmt"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/contrib/envconfig"
)

// defaultLocalTemporal is where `gateway jobs` and `gateway replay` look
// for Temporal when nothing says otherwise: gateway dev's embedded server.
const defaultLocalTemporal = "127.0.0.1:7233"

// resolveTemporal reads the Temporal connection the way Temporal's own
// tools do (docs/operations.md, Temporal connection): the profile of the
// temporal.toml file (TEMPORAL_CONFIG_FILE, TEMPORAL_PROFILE), then the
// TEMPORAL_* variables (address, namespace, API key, TLS, gRPC metadata),
// then the flags --temporal-address and --temporal-namespace, which win.
// dev reads no file: without an address it runs its own server.
func (c *config) resolveTemporal(command string) error {
	req := envconfig.LoadClientOptionsRequest{}
	if command == "dev" {
		if c.TemporalAddress == "" {
			if c.TemporalNamespace == "" {
				c.TemporalNamespace = client.DefaultNamespace
			}
			return nil
		}
		req.DisableFile = true
	}
	opts, err := envconfig.LoadClientOptions(req)
	if err != nil {
		return fmt.Errorf("the Temporal connection (TEMPORAL_* variables, or the profile TEMPORAL_PROFILE of %s): %w", temporalConfigFile(), err)
	}
	if c.TemporalAddress != "" {
		opts.HostPort = c.TemporalAddress
	}
	if c.TemporalNamespace != "" {
		opts.Namespace = c.TemporalNamespace
	}
	if opts.HostPort == "" && (command == "jobs" || command == "replay") {
		opts.HostPort = defaultLocalTemporal
	}
	if opts.Namespace == "" {
		opts.Namespace = client.DefaultNamespace
	}
	c.TemporalAddress, c.TemporalNamespace = opts.HostPort, opts.Namespace
	c.temporal = opts
	return nil
}

// temporalConfigFile names the temporal.toml file the connection is read
// from, for messages.
func temporalConfigFile() string {
	if path := envconfig.DefaultConfigFilePath(); path != "" {
		return path
	}
	return "temporal.toml (TEMPORAL_CONFIG_FILE)"
}

// temporalDialError says what to check when Temporal refused or could not
// be reached: most often, TLS or the API key do not match the server's.
func temporalDialError(opts client.Options, err error) error {
	hint := "if the server requires TLS, set TEMPORAL_TLS=true, and for mTLS TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH (docs/operations.md, mTLS)"
	switch {
	case opts.ConnectionOptions.TLS != nil && opts.Credentials != nil:
		hint = "check TEMPORAL_API_KEY and the TLS settings: TEMPORAL_TLS_SERVER_CA_CERT_PATH, TEMPORAL_TLS_SERVER_NAME (docs/operations.md, Temporal Cloud)"
	case opts.ConnectionOptions.TLS != nil:
		hint = "check the TLS settings: TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH (the client certificate the server requires), TEMPORAL_TLS_SERVER_CA_CERT_PATH, TEMPORAL_TLS_SERVER_NAME (docs/operations.md, mTLS)"
	case opts.ConnectionOptions.TLSDisabled:
		hint = "TLS is off (TEMPORAL_TLS=false); if the server requires it, turn it on (docs/operations.md, mTLS)"
	}
	return fmt.Errorf("connect to Temporal at %s (namespace %s): %w; %s", opts.HostPort, opts.Namespace, err, hint)
}

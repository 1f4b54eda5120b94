//go:build nodev

package main

import (
	"context"
	"errors"
	"log/slog"
)

// runDev is not in a production build (deploy/Dockerfile builds with -tags
// nodev): it would link the embedded Temporal server and Web UI.
func runDev(context.Context, config, *slog.Logger) error {
	return errors.New("this gateway binary is a production build without dev (built with -tags nodev); run serve, worker and migrate against your Temporal and database, or build without the tag")
}

// runIdp is not in a production build either: the dev identity provider
// accepts any client secret.
func runIdp(context.Context, config, *slog.Logger) error {
	return errors.New("this gateway binary is a production build without the dev identity provider (built with -tags nodev); use your OIDC issuer, or a build without the tag")
}

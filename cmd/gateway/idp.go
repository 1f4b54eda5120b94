//go:build !nodev

package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/ai-job-gateway/gateway/api/devidp"
)

// runIdp serves the development identity provider on its own, for trying
// the production shape without an issuer of one's own (docs/operations.md,
// Docker Compose). It accepts any client secret, so it is a dev-build
// command only: the production build (-tags nodev) leaves it out.
func runIdp(ctx context.Context, cfg config, logger *slog.Logger) error {
	listener, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", cfg.Listen, err)
	}
	issuerURL := cfg.IdPIssuerURL
	if issuerURL == "" {
		issuerURL = "http://" + listener.Addr().String() + devidp.Path
	}
	issuer, err := devidp.Open(cfg.DataDir, issuerURL)
	if err != nil {
		_ = listener.Close()
		return err
	}
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	issuer.Routes(r)
	ok := func(c *gin.Context) { c.JSON(http.StatusOK, gin.H{"status": "ok"}) }
	r.GET("/healthz", ok)
	r.GET("/readyz", ok)
	logger.Warn("gateway idp ready: a development issuer that accepts any client secret; never use it in production",
		"issuer", issuerURL, "token_endpoint", issuerURL+"/token")
	return serveHTTP(ctx, listener, r, logger)
}

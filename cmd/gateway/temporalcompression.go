package main

import (
	"fmt"
	"net"

	"go.temporal.io/sdk/client"
)

// Values of --temporal-compression (docs/operations.md, Temporal
// connection).
const (
	compressionAuto = "auto"
	compressionGzip = "gzip"
	compressionNone = "none"
)

// temporalCompressionUsage is --temporal-compression's help.
const temporalCompressionUsage = "gzip or none: compression of the gRPC requests to Temporal; auto: none when Temporal's address is a loopback one (as dev's embedded server's is), where compressing only costs CPU, else gzip"

func (c *config) validateTemporalCompression() []string {
	switch c.TemporalCompression {
	case "", compressionAuto, compressionGzip, compressionNone:
		return nil
	}
	return []string{fmt.Sprintf("--temporal-compression (GATEWAY_TEMPORAL_COMPRESSION) must be auto, gzip or none, not %q", c.TemporalCompression)}
}

// grpcCompression is the SDK's compression setting for Temporal at
// address.
func (c config) grpcCompression(address string) client.GrpcCompression {
	switch c.TemporalCompression {
	case compressionGzip:
		return &client.GrpcCompressionGzip{}
	case compressionNone:
		return &client.GrpcCompressionNone{}
	}
	if onThisHost(address) {
		return &client.GrpcCompressionNone{}
	}
	return &client.GrpcCompressionGzip{}
}

// onThisHost reports whether a host:port names a loopback address.
func onThisHost(address string) bool {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		host = address
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

package main

import (
	"flag"
	"fmt"
	"net"
	"os"

	"go.temporal.io/sdk/client"
)

// Values of --temporal-compression (docs/operations.md, Temporal
// connection).
const (
	compressionAuto = "auto"
	compressionGzip = "gzip"
	compressionNone = "none"
)

func (c *config) registerTemporalCompression(fs *flag.FlagSet) {
	def := compressionAuto
	if v, ok := os.LookupEnv("GATEWAY_TEMPORAL_COMPRESSION"); ok {
		def = v
	}
	fs.StringVar(&c.TemporalCompression, "temporal-compression", def,
		"gzip or none: compression of the gRPC requests to Temporal; auto: none when Temporal is on this host (loopback, or dev's embedded server), where compressing only costs CPU, else gzip (env GATEWAY_TEMPORAL_COMPRESSION)")
}

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

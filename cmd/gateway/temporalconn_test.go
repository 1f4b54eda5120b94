package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/workflowservice/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/ai-job-gateway/gateway/store/storetest"
)

// testPKI is a certificate authority with a server certificate for
// 127.0.0.1 and localhost and a client certificate, written as PEM files.
type testPKI struct {
	ca, serverCert, serverKey, clientCert, clientKey string
	pool                                             *x509.CertPool
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	dir := t.TempDir()
	write := func(name, kind string, der []byte) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600))
		return path
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	require.NoError(t, err)
	caCert, err := x509.ParseCertificate(caDER)
	require.NoError(t, err)
	p := &testPKI{ca: write("ca.pem", "CERTIFICATE", caDER), pool: x509.NewCertPool()}
	p.pool.AddCert(caCert)
	leaf := func(serial int64, name string, usage x509.ExtKeyUsage) (string, string) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		require.NoError(t, err)
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
			DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
		require.NoError(t, err)
		keyDER, err := x509.MarshalECPrivateKey(key)
		require.NoError(t, err)
		return write(name+".pem", "CERTIFICATE", der), write(name+"-key.pem", "EC PRIVATE KEY", keyDER)
	}
	p.serverCert, p.serverKey = leaf(2, "server", x509.ExtKeyUsageServerAuth)
	p.clientCert, p.clientKey = leaf(3, "client", x509.ExtKeyUsageClientAuth)
	return p
}

// serverTLS is the TLS of a server that requires a client certificate
// signed by the CA (mTLS), speaking gRPC's HTTP/2.
func (p *testPKI) serverTLS(t *testing.T) *tls.Config {
	t.Helper()
	cert, err := tls.LoadX509KeyPair(p.serverCert, p.serverKey)
	require.NoError(t, err)
	return &tls.Config{
		Certificates: []tls.Certificate{cert}, ClientCAs: p.pool,
		ClientAuth: tls.RequireAndVerifyClientCert, NextProtos: []string{"h2"},
	}
}

// mtlsProxy terminates mTLS in front of target, a plaintext Temporal
// frontend, as a load balancer of a secured cluster would: only a client
// with a certificate of the CA gets through.
func mtlsProxy(t *testing.T, p *testPKI, target string) string {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", p.serverTLS(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				if err := conn.(*tls.Conn).Handshake(); err != nil {
					return
				}
				upstream, err := net.Dial("tcp", target)
				if err != nil {
					return
				}
				defer upstream.Close()
				go func() { _, _ = io.Copy(upstream, conn); _ = upstream.Close() }()
				_, _ = io.Copy(conn, upstream)
			}()
		}
	}()
	return ln.Addr().String()
}

func TestTemporalConnectionPrecedence(t *testing.T) {
	// Not parallel: it sets environment variables.
	toml := filepath.Join(t.TempDir(), "temporal.toml")
	require.NoError(t, os.WriteFile(toml, []byte(`
[profile.default]
address = "default.example:7233"

[profile.cloud]
address = "acme.a1b2c.tmprl.cloud:7233"
namespace = "acme.a1b2c"
api_key = "from-the-file"
`), 0o600))
	t.Setenv("TEMPORAL_CONFIG_FILE", toml)
	for _, key := range []string{"TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", "TEMPORAL_API_KEY", "TEMPORAL_PROFILE", "TEMPORAL_TLS"} {
		t.Setenv(key, "")
		require.NoError(t, os.Unsetenv(key))
	}
	resolved := func(command string, args ...string) config {
		t.Helper()
		cfg := parse(t, command, args...)
		require.NoError(t, cfg.resolveTemporal(command))
		return cfg
	}

	cfg := resolved("worker")
	require.Equal(t, "default.example:7233", cfg.TemporalAddress, "the default profile")
	require.Equal(t, "default", cfg.TemporalNamespace)
	require.Nil(t, cfg.temporal.ConnectionOptions.TLS)

	t.Setenv("TEMPORAL_PROFILE", "cloud")
	cfg = resolved("serve")
	require.Equal(t, "acme.a1b2c.tmprl.cloud:7233", cfg.TemporalAddress)
	require.Equal(t, "acme.a1b2c", cfg.TemporalNamespace)
	require.NotNil(t, cfg.temporal.Credentials, "the API key")
	require.NotNil(t, cfg.temporal.ConnectionOptions.TLS, "an API key turns TLS on")

	t.Setenv("TEMPORAL_NAMESPACE", "from-env")
	cfg = resolved("replay")
	require.Equal(t, "from-env", cfg.TemporalNamespace, "a variable wins over the file")

	cfg = resolved("jobs", "--temporal-address", "flag.example:7233", "--temporal-namespace", "from-flag")
	require.Equal(t, "flag.example:7233", cfg.TemporalAddress, "a flag wins over both")
	require.Equal(t, "from-flag", cfg.TemporalNamespace)

	// dev reads no file: without an address it runs its own server.
	cfg = resolved("dev")
	require.Empty(t, cfg.TemporalAddress)

	t.Setenv("TEMPORAL_TLS_CLIENT_CERT_PATH", filepath.Join(t.TempDir(), "missing.pem"))
	t.Setenv("TEMPORAL_TLS_CLIENT_KEY_PATH", filepath.Join(t.TempDir(), "missing-key.pem"))
	cfg = parse(t, "worker", "--database-url", "postgres://x")
	require.ErrorContains(t, cfg.validate("worker"), "Temporal connection")
}

// An API key reaches the server as the authorization gRPC header, over
// TLS, as Temporal Cloud takes it.
func TestTemporalAPIKeyIsSentAsAuthorization(t *testing.T) {
	// Not parallel: it sets environment variables.
	pki := newTestPKI(t)
	cert, err := tls.LoadX509KeyPair(pki.serverCert, pki.serverKey)
	require.NoError(t, err)
	seen := make(chan string, 16)
	srv := grpc.NewServer(
		grpc.Creds(credentials.NewServerTLSFromCert(&cert)),
		grpc.UnknownServiceHandler(func(_ any, stream grpc.ServerStream) error {
			md, _ := metadata.FromIncomingContext(stream.Context())
			seen <- strings.Join(md.Get("authorization"), ",")
			return io.EOF
		}),
	)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)

	t.Setenv("TEMPORAL_CONFIG_FILE", filepath.Join(t.TempDir(), "none.toml"))
	t.Setenv("TEMPORAL_ADDRESS", ln.Addr().String())
	t.Setenv("TEMPORAL_NAMESPACE", "acme.a1b2c")
	t.Setenv("TEMPORAL_API_KEY", "secret-key")
	t.Setenv("TEMPORAL_TLS_SERVER_CA_CERT_PATH", pki.ca)
	t.Setenv("TEMPORAL_TLS_SERVER_NAME", "localhost")
	cfg := parse(t, "worker", "--database-url", "postgres://x")
	require.NoError(t, cfg.validate("worker"))
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, err = dialTemporal(ctx, cfg, slog.New(slog.DiscardHandler))
	require.Error(t, err, "the fake server answers nothing a client takes")
	require.Equal(t, "Bearer secret-key", <-seen)
}

// A worker and serve reach a Temporal frontend that requires mTLS through
// the TEMPORAL_TLS_* variables alone: a job completes and replays; without
// the client certificate the worker stops, naming the settings to check.
func TestMTLSOnlyTemporal(t *testing.T) {
	t.Parallel()
	dev := newGateway(t, "") // its Temporal server, plaintext, behind the proxy below
	pki := newTestPKI(t)
	secured := mtlsProxy(t, pki, dev.temporal)

	// The secured pair uses a namespace of its own, so dev's worker takes
	// none of its tasks, and a store of its own, so dev starts none of its
	// jobs.
	const namespace = "secured"
	tc := temporalClient(t, dev.temporal)
	_, err := tc.WorkflowService().RegisterNamespace(t.Context(), &workflowservice.RegisterNamespaceRequest{
		Namespace: namespace, WorkflowExecutionRetentionPeriod: durationpb.New(24 * time.Hour),
	})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		_, err := tc.OperatorService().ListSearchAttributes(t.Context(), &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
		return err == nil
	}, 30*time.Second, 200*time.Millisecond)

	databaseURL := storetest.FreshPostgresURL(t)
	tlsEnv := []string{
		"DATABASE_URL=" + databaseURL, "TEMPORAL_ADDRESS=" + secured, "TEMPORAL_NAMESPACE=" + namespace,
		"TEMPORAL_CONFIG_FILE=" + filepath.Join(t.TempDir(), "none.toml"),
		"TEMPORAL_TLS_SERVER_CA_CERT_PATH=" + pki.ca, "TEMPORAL_TLS_SERVER_NAME=localhost",
		"TEMPORAL_TLS_CLIENT_CERT_PATH=" + pki.clientCert, "TEMPORAL_TLS_CLIENT_KEY_PATH=" + pki.clientKey,
		"GATEWAY_ALLOW_PRIVATE_NETWORKS=true", testPayloadKeys(t),
	}
	run := func(env []string, args ...string) (int, string) { return runGateway(t, env, args...) }
	code, out := run(tlsEnv, "migrate")
	require.Equal(t, 0, code, "migrate registers the search attributes through mTLS:\n%s", out)

	startProcess(t, tlsEnv, "worker", "--data-dir", t.TempDir())
	api := startProcess(t, append(tlsEnv, "OIDC_ISSUER_URL="+dev.url("/dev/oidc")), "serve", "--tenant-create-rate", "0")
	status, body := post(t, "http://"+api.listen+"/v1/llm-tasks", dev.token,
		llmTaskBody)
	require.Equal(t, http.StatusAccepted, status, "%s", body)
	var doc jobDoc
	require.NoError(t, json.Unmarshal(body, &doc))
	require.Eventually(t, func() bool {
		return strings.Contains(string(get(t, "http://"+api.listen+"/v1/llm-tasks/"+doc.Data.ID, dev.token)), `"completed"`)
	}, 60*time.Second, 200*time.Millisecond)

	code, out = run(tlsEnv, "replay", doc.Data.ID)
	require.Equal(t, 0, code, "replay through mTLS:\n%s", out)
	code, out = run(tlsEnv, "jobs", "show", doc.Data.ID)
	require.Equal(t, 0, code, "jobs show through mTLS:\n%s", out)
	require.Contains(t, out, "completed")

	// Without the client certificate the server refuses the handshake.
	var noCert []string
	for _, kv := range tlsEnv {
		if !strings.HasPrefix(kv, "TEMPORAL_TLS_CLIENT_") {
			noCert = append(noCert, kv)
		}
	}
	code, out = run(append(noCert, "GATEWAY_LISTEN="+freeAddr(t)), "worker", "--data-dir", t.TempDir())
	require.NotEqual(t, 0, code, out)
	require.Contains(t, out, "TEMPORAL_TLS_CLIENT_CERT_PATH", "the message names the settings to check:\n%s", out)
}

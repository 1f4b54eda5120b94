package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	historypb "go.temporal.io/api/history/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/ai-job-gateway/gateway/internal/payloadcodec"
)

// testPayloadKeys is a GATEWAY_PAYLOAD_KEYS setting with a new key, for
// processes that must share one.
func testPayloadKeys(t *testing.T) string {
	t.Helper()
	return envPayloadKeys + "=" + payloadcodec.FormatKey("test1", payloadcodec.GenerateKey())
}

// TestPayloadsEncryptedInTemporal: gateway dev encrypts a job's payloads
// in its tenant's scope with the key it generated into its data dir;
// Temporal holds none of the job's input in the clear, while the API shows
// it and summaries stay readable. jobs show and replay read the history
// with the same key.
func TestPayloadsEncryptedInTemporal(t *testing.T) {
	t.Parallel()
	g := newGateway(t, "")
	info, err := os.Stat(filepath.Join(g.dataDir, devPayloadKeyFile))
	require.NoError(t, err, "dev keeps its generated key in the data dir")
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())

	secret := "customer-words-" + rand.Text()
	created := g.create("llm-tasks", `{"data":{"type":"llm-task-job","attributes":{"input":{"type":"text","text":"`+secret+`","prompt":"y"}}}}`)
	id := created.Data.ID
	g.waitEnded("llm-tasks", id, 60*time.Second, "completed")
	status, body, _ := g.do(http.MethodGet, "/v1/llm-tasks/"+id, "")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, string(body), secret, "the API shows the job's input")

	ctx := context.Background()
	events := historyOf(ctx, t, temporalClient(t, g.temporal), id)
	history := &historypb.History{Events: events}
	asJSON, err := protojson.Marshal(history)
	require.NoError(t, err)
	require.NotContains(t, string(asJSON), secret)
	asBinary, err := proto.Marshal(history) // payload data as it is, not base64
	require.NoError(t, err)
	require.False(t, bytes.Contains(asBinary, []byte(secret)), "Temporal holds the job's input in the clear")
	require.False(t, bytes.Contains(asBinary, []byte(hex.EncodeToString([]byte(secret)))))

	started := events[0].GetWorkflowExecutionStartedEventAttributes()
	require.NotNil(t, started)
	input := started.GetInput().GetPayloads()[0]
	require.Equal(t, payloadcodec.EncodingEncrypted, string(input.GetMetadata()["encoding"]))
	require.Equal(t, "acme", string(input.GetMetadata()[payloadcodec.MetadataScope]), "encrypted in the tenant's scope")

	var summary string
	require.NoError(t, converterFrom(events[0].GetUserMetadata().GetSummary(), &summary), "the summary is plaintext")
	require.Equal(t, "llm-task for acme", summary)

	code, out := g.command("jobs", "show", id)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "choose a provider (attempt 1)", "jobs show prints the step summaries")
	require.Contains(t, out, "project the job as completed")
	code, out = g.command("replay", id)
	require.Equal(t, 0, code, "the encrypted history replays with dev's key:\n%s", out)
	require.Contains(t, out, "1 job histories replay")
}

// payloadKeysFor parses the command's flags and env and reads its keys.
func payloadKeysFor(t *testing.T, command string, args ...string) (*payloadcodec.Keyring, config, string) {
	t.Helper()
	var cfg config
	fs := flag.NewFlagSet(command, flag.ContinueOnError)
	cfg.registerFlags(fs, command)
	require.NoError(t, fs.Parse(args))
	var logs bytes.Buffer
	keys, err := payloadKeys(cfg, command, slog.New(slog.NewTextHandler(&logs, nil)))
	require.NoError(t, err)
	return keys, cfg, logs.String()
}

func TestPayloadKeySettings(t *testing.T) {
	// Not parallel: it sets environment variables.
	dir := t.TempDir()
	keys, _, logs := payloadKeysFor(t, "dev", "--data-dir", dir)
	require.NotNil(t, keys, "dev generates a key")
	require.Equal(t, devPayloadKeyID, keys.Current())
	again, _, _ := payloadKeysFor(t, "dev", "--data-dir", dir)
	require.Equal(t, keys.IDs(), again.IDs(), "and keeps it")
	require.Contains(t, logs, "payload key generated")
	jobsKeys, _, _ := payloadKeysFor(t, "jobs", "--data-dir", dir)
	require.NotNil(t, jobsKeys, "jobs reads dev's key file")

	for _, command := range []string{"serve", "worker", "jobs", "replay"} {
		keys, _, logs := payloadKeysFor(t, command, "--data-dir", t.TempDir())
		require.Nil(t, keys, command)
		require.Contains(t, logs, "level=WARN msg=\"no payload keys", command)
	}

	file := filepath.Join(t.TempDir(), "keys")
	require.NoError(t, os.WriteFile(file, []byte(payloadcodec.FormatKey("k2", payloadcodec.GenerateKey())+"\n"+payloadcodec.FormatKey("k1", payloadcodec.GenerateKey())+"\n"), 0o600))
	keys, _, _ = payloadKeysFor(t, "worker", "--payload-key-file", file)
	require.Equal(t, "k2", keys.Current())

	t.Setenv(envPayloadKeys, payloadcodec.FormatKey("k3", payloadcodec.GenerateKey()))
	keys, cfg, _ := payloadKeysFor(t, "serve")
	require.Equal(t, "k3", keys.Current())
	require.Empty(t, cfg.validatePayloadKeys())
	_, cfg, _ = payloadKeysFor(t, "serve", "--payload-key-file", file)
	require.NotEmpty(t, cfg.validatePayloadKeys(), "not both")

	t.Setenv(envPayloadKeys, payloadKeysOff)
	keys, _, logs = payloadKeysFor(t, "dev", "--data-dir", t.TempDir())
	require.Nil(t, keys, "off turns dev's encryption off too")
	require.Contains(t, logs, "payload encryption is off")

	t.Setenv(envPayloadKeys, "k1:bm90IGEga2V5IGF0IGFsbA==")
	var cfgBad config
	cfgBad.registerFlags(flag.NewFlagSet("serve", flag.ContinueOnError), "serve")
	problems := cfgBad.validatePayloadKeys()
	require.Len(t, problems, 1)
	require.NotContains(t, problems[0], "bm90IGEga2V5IGF0IGFsbA", "the error does not echo the key")
}

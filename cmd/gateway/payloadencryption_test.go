package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/internal/payloadcodec"
	"github.com/ai-job-gateway/gateway/store"
	"github.com/ai-job-gateway/gateway/store/storetest"
	"github.com/ai-job-gateway/gateway/workflows"
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

	checkDevCodec(t, g, input, secret)

	code, out := g.command("jobs", "show", id)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "choose a provider (attempt 1)", "jobs show prints the step summaries")
	require.Contains(t, out, "project the job as completed")
	// History files hold payload bytes in base64.
	encrypted := base64.StdEncoding.EncodeToString([]byte(payloadcodec.EncodingEncrypted))
	code, out = g.command("jobs", "history", id)
	require.Equal(t, 0, code, out)
	require.NotContains(t, out, encrypted, "jobs history decrypts the payloads")
	file := filepath.Join(t.TempDir(), "history.json")
	require.NoError(t, os.WriteFile(file, []byte(out), 0o600))
	exported, err := readHistoryFile(file)
	require.NoError(t, err)
	var sub jobs.Submission
	require.NoError(t, converter.GetDefaultDataConverter().FromPayload(
		exported.Events[0].GetWorkflowExecutionStartedEventAttributes().GetInput().GetPayloads()[0], &sub))
	require.Contains(t, string(sub.Input), secret, "the input in the clear")
	code, out = g.command("jobs", "history", "--raw", id)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, encrypted, "--raw keeps them as Temporal holds them")
	code, out = g.command("replay", id)
	require.Equal(t, 0, code, "the encrypted history replays with dev's key:\n%s", out)
	require.Contains(t, out, "1 job histories replay")
}

// checkDevCodec: dev's embedded UI decodes with the gateway's codec
// server at an endpoint holding a secret, which answers without a token;
// the UI's Origin header alone opens nothing, and anyone else needs a
// token granting admin:codec.
func checkDevCodec(t *testing.T, g *gateway, input *commonpb.Payload, secret string) {
	t.Helper()
	resp, err := http.Get("http://" + g.ui + "/api/v1/settings")
	require.NoError(t, err)
	var settings struct{ Codec struct{ Endpoint string } }
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&settings))
	_ = resp.Body.Close()
	endpoint := settings.Codec.Endpoint
	require.True(t, strings.HasPrefix(endpoint, g.url("/codec/dev/")), "the embedded UI decodes with the gateway: %s", endpoint)
	require.Greater(t, len(endpoint), len(g.url("/codec/dev/"))+20, "at a secret path")

	body, err := protojson.Marshal(&commonpb.Payloads{Payloads: []*commonpb.Payload{input}})
	require.NoError(t, err)
	decode := func(url, origin, token string) (int, string, http.Header) {
		req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Origin", origin)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(raw), resp.Header
	}
	status, out, header := decode(endpoint+"/decode", "http://"+g.ui, "")
	require.Equal(t, http.StatusOK, status, out)
	var plain commonpb.Payloads
	require.NoError(t, protojson.Unmarshal([]byte(out), &plain))
	require.Len(t, plain.GetPayloads(), 1)
	require.Contains(t, string(plain.GetPayloads()[0].GetData()), secret, "decoded")
	require.Equal(t, "http://"+g.ui, header.Get("Access-Control-Allow-Origin"))
	status, out, _ = decode(g.url("/codec/decode"), "http://"+g.ui, "")
	require.Equal(t, http.StatusUnauthorized, status, "the UI's Origin from loopback is no key: %s", out)
	status, out, _ = decode(g.url("/codec/dev/wrong/decode"), "http://"+g.ui, "")
	require.Equal(t, http.StatusNotFound, status, out)
	status, out, _ = decode(g.url("/codec/decode"), "", g.token)
	require.Equal(t, http.StatusForbidden, status, out)
	status, out, _ = decode(g.url("/codec/decode"), "", g.mint("acme", "admin:codec"))
	require.Equal(t, http.StatusOK, status, out)
	status, out, _ = decode(g.url("/codec/decode"), "", g.mint("globex", "admin:codec"))
	require.Equal(t, http.StatusForbidden, status, "another tenant's token: %s", out)
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

func TestCodecOrigins(t *testing.T) {
	t.Parallel()
	got, err := parseOrigins(" https://temporal.example.com , http://127.0.0.1:8233/,")
	require.NoError(t, err)
	require.Equal(t, []string{"https://temporal.example.com", "http://127.0.0.1:8233"}, got)
	for _, bad := range []string{"temporal.example.com", "ftp://x.example", "https://x.example/ui", "https://u@x.example", "https://x.example?a=1"} {
		_, err := parseOrigins(bad)
		require.Error(t, err, bad)
	}
	none, err := parseOrigins("")
	require.NoError(t, err)
	require.Empty(t, none)
	require.Equal(t, []string{"http://127.0.0.1:8233", "http://localhost:8233"}, localOrigins("127.0.0.1:8233"))
	require.Equal(t, []string{"http://10.0.0.5:8233"}, localOrigins("10.0.0.5:8233"))
	require.Empty(t, localOrigins(""))
}

// TestFailuresEncrypted: a failure's message and stack trace, which may
// quote a job's input, reach Temporal encrypted, and read back in clear
// with the keys.
func TestFailuresEncrypted(t *testing.T) {
	t.Parallel()
	keys, err := payloadcodec.ParseKeys(payloadcodec.FormatKey("test1", payloadcodec.GenerateKey()))
	require.NoError(t, err)
	st := storetest.SQLite(t)
	enc, err := payloadEncryptor(t.Context(), keys, st, encrypting, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	fc := failureConverter(payloadConverter(enc, st))
	secret := "customer-words-" + rand.Text()
	failure := fc.ErrorToFailure(temporal.NewApplicationError("the vendor refused "+secret, "ProviderRejected"))
	raw, err := proto.Marshal(failure)
	require.NoError(t, err)
	require.False(t, bytes.Contains(raw, []byte(secret)), "the failure's message is encrypted")
	require.Equal(t, "ProviderRejected", failure.GetApplicationFailureInfo().GetType(), "its type stays readable")
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, fc.FailureToError(failure), &appErr)
	require.Contains(t, appErr.Error(), secret, "read back with the keys")
}

// TestPayloadKeyMismatchRefusesToStart: a process given another key under
// a key id the deployment recorded refuses to start, naming the id and
// no key material, whichever command it is; a new key id is recorded and
// rotates in.
func TestPayloadKeyMismatchRefusesToStart(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dir := jobsDataDir(t)
	st, err := openJobStore(ctx, config{DataDir: dir})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	first, other := payloadcodec.GenerateKey(), payloadcodec.GenerateKey()

	for _, command := range []string{"serve", "worker", "dev", "jobs"} {
		cfg := config{DataDir: dir, PayloadKeys: payloadcodec.FormatKey("k1", first)}
		require.NoError(t, encryptPayloads(ctx, &cfg, command, encrypting, st, logger), "%s: k1 is recorded, then matches", command)
		require.NotNil(t, cfg.temporal.DataConverter)
	}

	wrong := payloadcodec.FormatKey("k1", other)
	requireMismatch := func(err error) {
		t.Helper()
		require.ErrorIs(t, err, payloadcodec.ErrKeyMismatch)
		require.Contains(t, err.Error(), `payload key "k1" is not the key the deployment recorded under that id`)
		require.Contains(t, err.Error(), "give the same key, or a new key id")
		require.NotContains(t, err.Error(), wrong[len("k1:"):], "no key material")
	}
	for _, command := range []string{"serve", "worker", "dev", "jobs"} {
		cfg := config{DataDir: dir, PayloadKeys: wrong}
		for _, use := range []keyUse{encrypting, decryptingOnly} {
			err := encryptPayloads(ctx, &cfg, command, use, st, logger)
			requireMismatch(err)
			require.Nil(t, cfg.temporal.DataConverter, "%s: no converter of the wrong key", command)
		}
	}
	cfg := config{DataDir: dir, PayloadKeys: wrong}
	requireMismatch(decryptHistory(ctx, cfg, &historypb.History{}, logger))
	requireMismatch(runReplay(ctx, cfg, replayFlags{}, []string{filepath.Join(dir, "history.json")}, io.Discard, logger))
	// The current key right, an older one wrong: every key is checked.
	cfg = config{DataDir: dir, PayloadKeys: payloadcodec.FormatKey("k2", payloadcodec.GenerateKey()) + "," + wrong}
	requireMismatch(encryptPayloads(ctx, &cfg, "worker", encrypting, st, logger))

	rotated := config{DataDir: dir, PayloadKeys: payloadcodec.FormatKey("k2", other) + "," + payloadcodec.FormatKey("k1", first)}
	require.NoError(t, encryptPayloads(ctx, &rotated, "worker", encrypting, st, logger), "a new key id rotates in")
	again := config{DataDir: dir, PayloadKeys: payloadcodec.FormatKey("k2", other)}
	require.NoError(t, encryptPayloads(ctx, &again, "serve", encrypting, st, logger), "and is recorded for the next process")
}

// TestDecryptingWithoutStore: replay and jobs history with payload keys
// but no store say the store is needed, and create no data dir.
func TestDecryptingWithoutStore(t *testing.T) {
	// Not parallel: it changes the working directory and the environment.
	work := t.TempDir()
	t.Chdir(work)
	keys := payloadcodec.FormatKey("k1", payloadcodec.GenerateKey())
	t.Setenv(envPayloadKeys, keys)
	history := filepath.Join(work, "history.json")
	require.NoError(t, os.WriteFile(history, []byte(`{"events":[]}`), 0o600))

	var out, errOut bytes.Buffer
	code := run([]string{"replay", history}, &out, &errOut)
	require.Equal(t, 1, code, out.String())
	require.Contains(t, errOut.String(), "decrypting payloads needs the gateway's store")
	require.Contains(t, errOut.String(), "give --database-url, or the --data-dir gateway dev ran with")
	require.NotContains(t, errOut.String(), "no such table")

	var cfg config
	fs := flag.NewFlagSet("jobs", flag.ContinueOnError)
	cfg.registerFlags(fs, "jobs")
	require.NoError(t, fs.Parse(nil))
	decryptErr := decryptHistory(t.Context(), cfg, &historypb.History{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.ErrorIs(t, decryptErr, errNoStore)
	require.Contains(t, decryptErr.Error(), "decrypting payloads needs the gateway's store")
	require.NotContains(t, errOut.String()+decryptErr.Error(), keys[len("k1:"):])

	entries, err := os.ReadDir(work)
	require.NoError(t, err)
	require.Len(t, entries, 1, "nothing created beside the history file: no ./.data, no SQLite file")
}

// TestReplayMakesNoScopeSecret: replaying a history whose payloads are of
// a scope the store has no secret for fails saying so, and leaves the
// store without a secret for it (replay used to make one, then fail as
// "tampered with, or wrong key").
func TestReplayMakesNoScopeSecret(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dir := jobsDataDir(t)
	keys := payloadcodec.FormatKey("k1", payloadcodec.GenerateKey())
	ring, err := payloadcodec.ParseKeys(keys)
	require.NoError(t, err)
	elsewhere := payloadcodec.New(ring, payloadcodec.NewMemorySecrets(true), payloadcodec.Options{})
	input, err := converter.GetDefaultDataConverter().ToPayload(map[string]string{"text": "customer words"})
	require.NoError(t, err)
	sealedInput, err := elsewhere.Codec("acme").Encode([]*commonpb.Payload{input})
	require.NoError(t, err)
	history := &historypb.History{Events: []*historypb.HistoryEvent{
		{EventId: 1, EventType: enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED, Attributes: &historypb.HistoryEvent_WorkflowExecutionStartedEventAttributes{
			WorkflowExecutionStartedEventAttributes: &historypb.WorkflowExecutionStartedEventAttributes{
				WorkflowType: &commonpb.WorkflowType{Name: workflows.JobWorkflowName},
				TaskQueue:    &taskqueuepb.TaskQueue{Name: "jobs"},
				Input:        &commonpb.Payloads{Payloads: sealedInput},
			}}},
		{EventId: 2, EventType: enumspb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED, Attributes: &historypb.HistoryEvent_WorkflowTaskScheduledEventAttributes{
			WorkflowTaskScheduledEventAttributes: &historypb.WorkflowTaskScheduledEventAttributes{TaskQueue: &taskqueuepb.TaskQueue{Name: "jobs"}}}},
		{EventId: 3, EventType: enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED, Attributes: &historypb.HistoryEvent_WorkflowTaskStartedEventAttributes{
			WorkflowTaskStartedEventAttributes: &historypb.WorkflowTaskStartedEventAttributes{ScheduledEventId: 2}}},
		{EventId: 4, EventType: enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED, Attributes: &historypb.HistoryEvent_WorkflowTaskCompletedEventAttributes{
			WorkflowTaskCompletedEventAttributes: &historypb.WorkflowTaskCompletedEventAttributes{ScheduledEventId: 2, StartedEventId: 3}}},
	}}
	path := filepath.Join(dir, "history.json")
	var file bytes.Buffer
	require.NoError(t, writeHistory(&file, history))
	require.NoError(t, os.WriteFile(path, file.Bytes(), 0o600))

	err = runReplay(ctx, config{DataDir: dir, PayloadKeys: keys}, replayFlags{}, []string{path}, io.Discard, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.Error(t, err)
	require.ErrorContains(t, err, `scope "acme" has no secret`)
	require.NotContains(t, err.Error(), "tampered with")

	st, err := openJobStore(ctx, config{DataDir: dir})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	_, err = st.Keys.PayloadSecrets().ExistingSecret(ctx, "acme")
	require.ErrorIs(t, err, payloadcodec.ErrScopeShredded, "no payload_secrets row made for the scope")
	_, err = st.Keys.PayloadSecrets().ExistingSecret(ctx, payloadcodec.SystemScope)
	require.ErrorIs(t, err, payloadcodec.ErrScopeShredded, "nor for _system, where the replayed workflow encodes")
}

// TestDecryptingCommandsRecordNoKeyID: a command that only decrypts
// (jobs show and history, replay, webhooks) compares its keys with the
// recorded ones but records none: a key id an operator merely tried is
// not bound to that key, and the worker given the real one starts.
func TestDecryptingCommandsRecordNoKeyID(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dir := jobsDataDir(t)
	st, err := openJobStore(ctx, config{DataDir: dir})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	k1 := payloadcodec.FormatKey("k1", payloadcodec.GenerateKey())
	serve := config{DataDir: dir, PayloadKeys: k1}
	require.NoError(t, encryptPayloads(ctx, &serve, "serve", encrypting, st, logger))

	tried := payloadcodec.FormatKey("k2", payloadcodec.GenerateKey()) + "," + k1
	cfg := config{DataDir: dir, PayloadKeys: tried}
	require.NoError(t, encryptPayloads(ctx, &cfg, "jobs", decryptingOnly, st, logger), "an unknown key id is no error")
	require.NotNil(t, cfg.temporal.DataConverter)
	require.NoError(t, decryptHistory(ctx, config{DataDir: dir, PayloadKeys: tried}, &historypb.History{}, logger))
	require.Contains(t, logs.String(), "key_id=k2")
	recorded, err := st.Keys.RecordedKeyCheck(ctx, "k2")
	require.NoError(t, err)
	require.Nil(t, recorded, "k2 is not recorded by a command that only decrypts")

	realK2 := payloadcodec.FormatKey("k2", payloadcodec.GenerateKey()) + "," + k1
	worker := config{DataDir: dir, PayloadKeys: realK2}
	require.NoError(t, encryptPayloads(ctx, &worker, "worker", encrypting, st, logger), "the worker given the real k2 starts, and records it")
	recorded, err = st.Keys.RecordedKeyCheck(ctx, "k2")
	require.NoError(t, err)
	require.NotNil(t, recorded)

	cfg = config{DataDir: dir, PayloadKeys: tried}
	err = encryptPayloads(ctx, &cfg, "jobs", decryptingOnly, st, logger)
	require.ErrorIs(t, err, payloadcodec.ErrKeyMismatch, "once recorded, a decrypting command compares with it")
	require.Contains(t, err.Error(), `"k2"`)
}

// TestPayloadKeysNeedMigratedStore: a store an older version migrated,
// without payload_key_checks, makes serve and jobs history say to run
// gateway migrate, not fail on a missing relation.
func TestPayloadKeysNeedMigratedStore(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dir := jobsDataDir(t)
	db, err := sql.Open("sqlite", filepath.Join(dir, "gateway.db")+"?_pragma=busy_timeout(5000)")
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, "DROP TABLE payload_key_checks")
	require.NoError(t, err)
	require.NoError(t, db.Close())
	st, err := openJobStore(ctx, config{DataDir: dir})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	keys := payloadcodec.FormatKey("k1", payloadcodec.GenerateKey())

	requireMigrateFirst := func(err error) {
		t.Helper()
		require.ErrorIs(t, err, store.ErrNotMigrated)
		require.ErrorContains(t, err, "run `gateway migrate` first?")
		require.ErrorContains(t, err, "no payload_key_checks table")
	}
	for _, use := range []keyUse{encrypting, decryptingOnly} {
		cfg := config{DataDir: dir, PayloadKeys: keys}
		requireMigrateFirst(encryptPayloads(ctx, &cfg, "serve", use, st, logger))
	}
	requireMigrateFirst(decryptHistory(ctx, config{DataDir: dir, PayloadKeys: keys}, &historypb.History{}, logger))
}

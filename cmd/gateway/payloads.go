package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	commonpb "go.temporal.io/api/common/v1"

	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/proxy"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/ai-job-gateway/gateway/internal/payloadcodec"
	"github.com/ai-job-gateway/gateway/store"
	"github.com/ai-job-gateway/gateway/workflows"
)

// Payload encryption (docs/operations.md, Payload encryption).
const (
	// envPayloadKeys holds the payload keys: id:base64 entries,
	// comma-separated, the first being the current key; or payloadKeysOff.
	envPayloadKeys = "GATEWAY_PAYLOAD_KEYS"
	// payloadKeysOff turns payload encryption off explicitly.
	payloadKeysOff = "off"
	// devPayloadKeyFile is the file in the data dir where `gateway dev`
	// keeps the key it generated; jobs and replay read it too.
	devPayloadKeyFile = "payload-keys"
	// devPayloadKeyID is the id of the key dev generates.
	devPayloadKeyID = "dev1"
)

// registerPayloadFlags binds the payload key flag of dev, serve, worker,
// jobs and replay; the keys themselves are only read from the environment.
func (c *config) registerPayloadFlags(fs *flag.FlagSet) {
	// Not a flag: -h would print the secret.
	c.PayloadKeys = os.Getenv(envPayloadKeys)
	fs.StringVar(&c.PayloadKeyFile, "payload-key-file", os.Getenv("GATEWAY_PAYLOAD_KEY_FILE"),
		"file of the keys Temporal payloads are encrypted with, one id:base64 entry a line, the current key first; or set "+envPayloadKeys+" (dev default: a key generated once into <data-dir>/"+devPayloadKeyFile+") (env GATEWAY_PAYLOAD_KEY_FILE)")
}

// validatePayloadKeys checks GATEWAY_PAYLOAD_KEYS when given; its errors
// never echo a key.
func (c *config) validatePayloadKeys() []string {
	if c.PayloadKeys == "" || c.PayloadKeys == payloadKeysOff {
		return nil
	}
	var problems []string
	if c.PayloadKeyFile != "" {
		problems = append(problems, fmt.Sprintf("give the payload keys in %s or --payload-key-file, not both", envPayloadKeys))
	}
	if _, err := payloadcodec.ParseKeys(c.PayloadKeys); err != nil {
		problems = append(problems, fmt.Sprintf("%s: %v (or %s=%s)", envPayloadKeys, err, envPayloadKeys, payloadKeysOff))
	}
	return problems
}

// payloadKeys is the keyring the command encrypts Temporal payloads with;
// nil: none, payloads stay plaintext (said in a warning). dev without keys
// generates one into its data dir; jobs and replay read that file when
// the data dir has one.
func payloadKeys(cfg config, command string, logger *slog.Logger) (*payloadcodec.Keyring, error) {
	switch {
	case cfg.PayloadKeys == payloadKeysOff:
		logger.Warn("payload encryption is off (" + envPayloadKeys + "=" + payloadKeysOff + "): Temporal holds workflow inputs and results in plaintext")
		return nil, nil
	case cfg.PayloadKeys != "":
		return payloadcodec.ParseKeys(cfg.PayloadKeys)
	case cfg.PayloadKeyFile != "":
		return payloadcodec.LoadKeyFile(cfg.PayloadKeyFile)
	}
	path := filepath.Join(cfg.DataDir, devPayloadKeyFile)
	switch command {
	case "dev":
		return devPayloadKeys(path, logger)
	case "jobs", "replay":
		if _, err := os.Stat(path); err == nil {
			return payloadcodec.LoadKeyFile(path)
		}
	}
	logger.Warn("no payload keys: Temporal holds workflow inputs and results in plaintext; set " + envPayloadKeys + " or --payload-key-file (docs/operations.md, Payload encryption)")
	return nil, nil
}

// devPayloadKeys reads dev's key file, writing it (0600) with a new key
// first when there is none.
func devPayloadKeys(path string, logger *slog.Logger) (*payloadcodec.Keyring, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	switch {
	case errors.Is(err, fs.ErrExist):
		return payloadcodec.LoadKeyFile(path)
	case err != nil:
		return nil, fmt.Errorf("payload key file: %w", err)
	}
	text := "# gateway dev's payload key: Temporal payloads are encrypted with it.\n" +
		"# Losing it makes the embedded Temporal's histories unreadable.\n" +
		payloadcodec.FormatKey(devPayloadKeyID, payloadcodec.GenerateKey()) + "\n"
	if _, err := f.WriteString(text); err != nil {
		_ = f.Close()
		_ = os.Remove(path)
		return nil, fmt.Errorf("payload key file: %w", err)
	}
	if err := f.Close(); err != nil {
		_ = os.Remove(path)
		return nil, fmt.Errorf("payload key file: %w", err)
	}
	logger.Info("payload key generated", "file", path)
	return payloadcodec.LoadKeyFile(path)
}

// keyUse is what a command does with its payload keys; it decides whether
// the command may record a key id the store has never seen
// (docs/operations.md, Payload encryption).
type keyUse int

const (
	// encrypting: serve, worker, dev, and jobs retry and cancel (which
	// start workflows) encrypt payloads, so they record new key ids.
	encrypting keyUse = iota
	// decryptingOnly: jobs show and history, replay and webhooks only
	// read payloads; they record nothing, neither a key id an operator
	// merely tried nor a scope secret.
	decryptingOnly
)

// payloadEncryptor encrypts the command's Temporal payloads with keys and
// the store's scope secrets; nil keys: nil. The data converter and the
// codec server both use it. Every command that loads payload keys comes
// here, so here each key is checked against the check value the store
// recorded under its id: a process given another key under a known id
// refuses to start, naming the id (docs/operations.md, Payload
// encryption). A decryptingOnly command compares without recording and
// gets a ReadOnly encryptor, which makes no scope secret.
func payloadEncryptor(ctx context.Context, keys *payloadcodec.Keyring, st *store.Store, use keyUse, logger *slog.Logger) (*payloadcodec.Encryptor, error) {
	if keys == nil {
		return nil, nil
	}
	if use == encrypting {
		if err := keys.VerifyKeys(ctx, st.Keys); err != nil {
			return nil, keyCheckError(err)
		}
		return payloadcodec.New(keys, st.Keys.PayloadSecrets(), payloadcodec.Options{}), nil
	}
	unrecorded, err := keys.CheckKeys(ctx, st.Keys)
	if err != nil {
		return nil, keyCheckError(err)
	}
	for _, id := range unrecorded {
		logger.Info("payload key id not recorded by this command: the store has no check value for it yet; serve, worker or dev records it when it first encrypts with it", "key_id", id)
	}
	return payloadcodec.New(keys, st.Keys.PayloadSecrets(), payloadcodec.Options{}).ReadOnly(), nil
}

// keyCheckError says what to do about a store not migrated to hold key
// check values.
func keyCheckError(err error) error {
	if errors.Is(err, store.ErrNotMigrated) {
		return fmt.Errorf("payload key check values: %w (run `gateway migrate` first? a `gateway dev` data dir is migrated by starting gateway dev)", err)
	}
	return err
}

// payloadConverter is the data converter of the Temporal clients and
// workers: payloads encrypted with enc, each job's in its tenant's scope
// (the workflow id is the job id, or names it); strings, such as summaries, stay
// plaintext (payloadcodec.DataConverter). nil enc: nil, the SDK's default.
func payloadConverter(enc *payloadcodec.Encryptor, st *store.Store) converter.DataConverter {
	if enc == nil {
		return nil
	}
	return payloadcodec.DataConverter(converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), enc.WorkflowCodec(func(ctx context.Context, workflowID string) (string, error) {
		return st.Keys.JobTenant(ctx, workflows.JobOfWorkflow(workflowID))
	})))
}

// failureConverter encrypts failures' messages and stack traces with dc,
// as encoded attributes: they may quote customer content (a vendor's
// error about the input) (docs/operations.md, Payload encryption).
func failureConverter(dc converter.DataConverter) converter.FailureConverter {
	return temporal.NewDefaultFailureConverter(temporal.DefaultFailureConverterOptions{DataConverter: dc, EncodeCommonAttributes: true})
}

// encryptPayloads sets the data converter the command's Temporal clients
// are dialled with (cfg.temporal) and the codec server the API serves
// operators (cfg.codec; nil without keys).
func encryptPayloads(ctx context.Context, cfg *config, command string, use keyUse, st *store.Store, logger *slog.Logger) error {
	keys, err := payloadKeys(*cfg, command, logger)
	if err != nil {
		return err
	}
	enc, err := payloadEncryptor(ctx, keys, st, use, logger)
	if err != nil {
		return err
	}
	cfg.temporal.DataConverter = payloadConverter(enc, st)
	cfg.temporal.FailureConverter = nil
	cfg.codec = nil
	if enc != nil {
		cfg.temporal.FailureConverter = failureConverter(cfg.temporal.DataConverter)
		cfg.codec = enc.ReadOnly()
	}
	return nil
}

// parseOrigins splits a comma-separated list of browser origins
// (--temporal-ui-origin), each scheme://host[:port] with no path.
func parseOrigins(s string) ([]string, error) {
	var out []string
	for _, o := range strings.Split(s, ",") {
		o = strings.TrimSpace(o)
		if o == "" {
			continue
		}
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
			(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
			return nil, fmt.Errorf("%q is not an origin: give scheme://host[:port], such as https://temporal.example.com", o)
		}
		out = append(out, u.Scheme+"://"+u.Host)
	}
	return out, nil
}

// localOrigins are the browser origins of a UI served at addr: its own,
// and the localhost one for a loopback address. "" has none.
func localOrigins(addr string) []string {
	if addr == "" {
		return nil
	}
	out := []string{"http://" + addr}
	host, port, err := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); err == nil && ip != nil && ip.IsLoopback() {
		out = append(out, "http://"+net.JoinHostPort("localhost", port))
	}
	return out
}

// decryptHistory decrypts every payload of a history with the command's
// payload keys and the store's scope secrets, in place; without keys it
// leaves the history as it is.
func decryptHistory(ctx context.Context, cfg config, history *historypb.History, logger *slog.Logger) error {
	keys, err := payloadKeys(cfg, "jobs", logger)
	if err != nil || keys == nil {
		return err
	}
	decoder, closeStore, err := historyDecoder(ctx, cfg, keys, logger)
	if err != nil {
		return err
	}
	defer closeStore()
	return proxy.VisitPayloads(ctx, history, proxy.VisitPayloadsOptions{
		SkipSearchAttributes: true,
		Visitor: func(_ *proxy.VisitPayloadsContext, payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
			return decoder.Decode(payloads)
		},
	})
}

// historyDecoder decrypts histories' payloads with keys and the store's
// scope secrets, read-only; closeStore closes the store it reads them from.
func historyDecoder(ctx context.Context, cfg config, keys *payloadcodec.Keyring, logger *slog.Logger) (decoder converter.PayloadCodec, closeStore func(), err error) {
	st, err := openSecretsStore(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	enc, err := payloadEncryptor(ctx, keys, st, decryptingOnly, logger)
	if err != nil {
		_ = st.Close()
		return nil, nil, err
	}
	return enc.Decoder(), func() { _ = st.Close() }, nil
}

// openSecretsStore opens the store whose scope secrets decrypt histories
// (jobs history, replay); without one it says what to give, and creates
// nothing.
func openSecretsStore(ctx context.Context, cfg config) (*store.Store, error) {
	st, err := openJobStore(ctx, cfg)
	if errors.Is(err, errNoStore) {
		return nil, fmt.Errorf("decrypting payloads needs the gateway's store, which holds the tenants' payload secrets: %w", err)
	}
	return st, err
}

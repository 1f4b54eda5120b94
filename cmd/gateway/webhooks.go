package main

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"os"
	"time"

	"github.com/ai-job-gateway/gateway/activities"
	"github.com/ai-job-gateway/gateway/internal/netguard"
	"github.com/ai-job-gateway/gateway/internal/vendorcallback"
	"github.com/ai-job-gateway/gateway/internal/webhooksign"
	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/providers/builtin"
	"github.com/ai-job-gateway/gateway/store"
)

// envWebhookSigningKey holds the operator's webhook signing key.
const envWebhookSigningKey = "GATEWAY_WEBHOOK_SIGNING_KEY"

// mediaTimeout bounds a media request made through the network guard.
const mediaTimeout = 10 * time.Second

// registerNetworkFlags binds the webhook and outbound-network flags of dev,
// serve and worker.
func (c *config) registerNetworkFlags(fs *flag.FlagSet, command string) {
	// Not a flag default: -h would print the secret.
	fs.StringVar(&c.WebhookSigningKey, "webhook-signing-key", "",
		"webhook signing key, whsk_ + base64 of a 32-byte Ed25519 seed; prefer the environment variable (default: a key generated once and kept in the database) (env "+envWebhookSigningKey+")")
	c.WebhookSigningKey = os.Getenv(envWebhookSigningKey)
	if command == "dev" || command == "worker" {
		fs.StringVar(&c.CallbackURL, "callback-url", os.Getenv("GATEWAY_CALLBACK_URL"),
			"base URL at which vendors reach this gateway's API (https://gateway.example.com), for vendors that post results back (deepgram); unset: they are called synchronously (env GATEWAY_CALLBACK_URL)")
	}
	if command == "serve" || command == "worker" {
		allow := os.Getenv("GATEWAY_ALLOW_PRIVATE_NETWORKS") == "true"
		fs.BoolVar(&c.AllowPrivateNetworks, "allow-private-networks", allow, "allow webhook and media URLs on loopback, private and link-local addresses (env GATEWAY_ALLOW_PRIVATE_NETWORKS)")
	}
}

// checkSigningKey validates --webhook-signing-key when one is given.
func checkSigningKey(key string) error {
	if key == "" {
		return nil
	}
	if _, err := webhooksign.DecodeSecretKey(key); err != nil {
		return fmt.Errorf("--webhook-signing-key / %s: %v", envWebhookSigningKey, err)
	}
	return nil
}

// webhookSigner is the key webhooks are signed with: the operator's, else
// the one kept in the database, created by the first process that needs it.
// Every API and worker process must use the same key.
func webhookSigner(ctx context.Context, cfg config, st *store.Store) (*webhooksign.Signer, error) {
	if cfg.WebhookSigningKey != "" {
		seed, err := webhooksign.DecodeSecretKey(cfg.WebhookSigningKey)
		if err != nil {
			return nil, fmt.Errorf("--webhook-signing-key / %s: %w", envWebhookSigningKey, err)
		}
		return webhooksign.NewSigner(seed)
	}
	seed, err := st.Webhooks.SigningKey(ctx, webhooksign.GenerateSeed)
	if err != nil {
		return nil, fmt.Errorf("webhook signing key (run `gateway migrate` first?): %w", err)
	}
	return webhooksign.NewSigner(seed)
}

// adapterFactories are the built-in adapters; unless private networks are
// allowed, adapters that fetch media themselves do so through the network
// guard.
func adapterFactories(cfg config) map[string]providers.Factory {
	var opts []providers.Option
	if !cfg.AllowPrivateNetworks {
		opts = append(opts, providers.WithMediaClient(netguard.NewMediaClient(false, mediaTimeout)))
	}
	if cfg.CallbackURL != "" {
		opts = append(opts, providers.WithCallbacks())
	}
	factories := builtin.Factories(opts...)
	maps.Copy(factories, tagAdapters)
	return factories
}

// tagAdapters are adapters compiled in by build tags: the fixture of a
// fifth service (texttospeech_fixture.go) in its test.
var tagAdapters = map[string]providers.Factory{}

// workerNetwork is what a worker's activities need to call client URLs.
type workerNetwork struct {
	signer       *webhooksign.Signer
	allowPrivate bool
	// callbackURL is --callback-url: vendors post results back under it.
	callbackURL string
}

// workerNetwork is the worker's network settings of c, signing with signer.
func (c config) workerNetwork(signer *webhooksign.Signer) workerNetwork {
	return workerNetwork{signer: signer, allowPrivate: c.AllowPrivateNetworks, callbackURL: c.CallbackURL}
}

// wire gives the activities the webhook signer, client, delivery record and
// the jobs payloads are rendered from, and, unless private networks are allowed, a guarded client for media
// size checks.
func (n workerNetwork) wire(a *activities.Deps, st *store.Store) error {
	a.Signer = n.signer
	a.WebhookClient = netguard.NewClient(n.allowPrivate, activities.WebhookTimeout)
	a.Deliveries = st.Webhooks
	a.WebhookMessages = st.Webhooks
	a.Jobs = st.Jobs
	if !n.allowPrivate {
		a.HTTPClient = netguard.NewMediaClient(false, mediaTimeout)
	}
	if n.callbackURL == "" {
		return nil
	}
	tokens, err := vendorcallback.NewTokens(n.signer)
	if err != nil {
		return err
	}
	addresses, err := vendorcallback.NewAddresses(n.callbackURL, tokens)
	if err != nil {
		return fmt.Errorf("--callback-url: %w", err)
	}
	a.CallbackURLs, a.Callbacks = addresses, st.Jobs
	return nil
}

// Command gateway runs the asynchronous AI job gateway.
//
//	gateway dev         everything in one process, with an embedded Temporal
//	gateway serve       the API against an external Temporal and PostgreSQL
//	gateway worker      the Temporal worker
//	gateway migrate     apply the database schema and exit
//	gateway token       mint a token from the dev identity provider
//	gateway idp         the dev identity provider on its own
//	gateway jobs        list, show and retry jobs, download their histories (SREs)
//	gateway webhooks    resend and recover jobs' webhook events
//	gateway providers   the catalog's providers, statuses and circuit breakers
//	gateway usage       sum the usage ledger
//	gateway keys        create, list, revoke and rotate API keys
//	gateway replay      replay job histories against this binary
//	gateway healthcheck ask serve's or worker's /healthz (container health checks)
//	gateway version     print the version, VCS revision and Go version
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/ai-job-gateway/gateway/api/devidp"
	"github.com/ai-job-gateway/gateway/internal/buildinfo"
	"github.com/ai-job-gateway/gateway/store"
)

const usage = `gateway: an asynchronous AI job gateway on Temporal.

Usage:
  gateway dev      [flags]   API, worker, embedded Temporal + Web UI, dev identity provider
  gateway serve    [flags]   API only (needs TEMPORAL_ADDRESS, DATABASE_URL, OIDC_ISSUER_URL)
  gateway worker   [flags]   Temporal worker only (needs TEMPORAL_ADDRESS, DATABASE_URL)
  gateway migrate  [flags]   apply the database schema and exit
  gateway token    [flags]   print a token signed by the dev identity provider
  gateway idp      [flags]   the dev identity provider on its own, for trying serve and worker (any client secret: never in production)
  gateway jobs     list|show|history [flags]   jobs as the store and Temporal have them
  gateway webhooks resend|recover [flags]   send jobs' webhook events again (docs/webhooks.md)
  gateway providers [-o text|json]   the catalog's providers per service, with statuses and circuit breakers
  gateway usage    [--tenant T] [--from ..] [--to ..] [--group-by service,day] [-o text|json|csv]   the usage ledger's sums
  gateway keys     create|list|revoke|rotate --tenant T [flags]   the API keys the gateway issues (docs/api.md)
  gateway replay   [flags] [ID|FILE.json ...]  replay job histories against this binary's workflow code
  gateway healthcheck [--url URL]   exit 0 when serve's or worker's /healthz answers 200 (container health checks)
  gateway version            print the version, VCS revision and Go version (also gateway --version)

Run "gateway <command> -h" for a command's flags.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, usage)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	command := args[0]
	if command == "version" || command == "--version" || command == "-version" {
		if len(args) > 1 {
			fmt.Fprintf(stderr, "gateway version: unexpected argument %q\n", args[1])
			return 2
		}
		fmt.Fprintln(stdout, buildinfo.Read())
		return 0
	}
	var cfg config
	var tok tokenFlags
	var replay replayFlags
	var jf jobsFlags
	var wf webhooksFlags
	var uf usageFlags
	var kf keysFlags
	var healthcheck string
	var providersOutput string
	sub := ""
	if command == "jobs" || command == "webhooks" || command == "keys" {
		if len(args) < 2 || args[1] == "-h" || args[1] == "--help" {
			fmt.Fprint(stderr, map[string]string{"jobs": jobsUsage, "webhooks": webhooksUsage, "keys": keysUsage}[command])
			return 2
		}
		sub, args = args[1], args[1:]
	}
	fs := flag.NewFlagSet(strings.TrimSpace("gateway "+command+" "+sub), flag.ContinueOnError)
	fs.SetOutput(stderr)
	switch command {
	case "dev", "serve", "worker", "migrate", "token", "idp":
		cfg.registerFlags(fs, command)
	case "usage":
		cfg.registerFlags(fs, command)
		uf.register(fs)
	case "keys":
		cfg.registerFlags(fs, "usage") // the store's flags, as gateway usage has them
		kf.register(fs, sub)
	case "replay", "jobs":
		cfg.registerFlags(fs, command)
		if command == "replay" {
			fs.StringVar(&replay.Query, "query", defaultReplayQuery, "without ids or files: replay the job workflows this visibility query selects")
			fs.IntVar(&replay.Limit, "limit", 100, "without ids or files: replay at most this many, the most recent first")
		} else {
			jf.register(fs, sub)
		}
	case "webhooks":
		// The configuration of gateway jobs: serve's store and Temporal.
		cfg.registerFlags(fs, "jobs")
		wf.register(fs, sub)
	case "healthcheck":
		fs.StringVar(&healthcheck, "url", healthURL(), "the URL to ask (default: /healthz on GATEWAY_LISTEN)")
	case "providers":
		cfg.registerFlags(fs, command)
		fs.StringVar(&providersOutput, "o", "text", "output format: text or json")
		fs.StringVar(&providersOutput, "output", "text", "the same as -o")
	default:
		fmt.Fprintf(stderr, "gateway: unknown command %q\n\n%s", command, usage)
		return 2
	}
	if command == "token" {
		fs.StringVar(&tok.Tenant, "tenant", "", "tenant_id claim")
		fs.StringVar(&tok.Subject, "sub", "dev-user", "subject (user id)")
		fs.StringVar(&tok.Scope, "scope", "", "space-separated scopes")
		fs.BoolVar(&tok.SuperAdmin, "super-admin", false, "add the super-admin role")
		fs.DurationVar(&tok.TTL, "ttl", time.Hour, "lifetime of the token")
	}
	// Flags may come before or after the arguments: `jobs history ID --out f`.
	var positional []string
	for rest := args[1:]; ; {
		if err := fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return 0
			}
			return 2
		}
		if rest = fs.Args(); len(rest) == 0 {
			break
		}
		positional, rest = append(positional, rest[0]), rest[1:]
	}
	if len(positional) > 0 && command != "jobs" && command != "replay" && command != "webhooks" && command != "keys" {
		fmt.Fprintf(stderr, "gateway %s: unexpected argument %q\n", command, positional[0])
		return 2
	}
	if command == "healthcheck" {
		if err := runHealthcheck(context.Background(), healthcheck); err != nil {
			fmt.Fprintf(stderr, "gateway healthcheck: %v\n", err)
			return 1
		}
		return 0
	}
	validated := command
	if command == "webhooks" {
		validated = "jobs"
	}
	if err := cfg.validate(validated); err != nil {
		fmt.Fprintf(stderr, "gateway %s: %v\n", command, err)
		return 2
	}
	if command == "keys" {
		if err := kf.check(sub, positional, time.Now()); err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", fs.Name(), err)
			return 2
		}
	}
	level, _ := parseLevel(cfg.LogLevel)
	logger := newLogger(stderr, cfg.LogFormat, level)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	if command == "dev" || command == "serve" || command == "worker" {
		shutdown, err := startTracing(ctx, command)
		if err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", fs.Name(), err)
			return 1
		}
		defer func() { _ = shutdown(context.WithoutCancel(ctx)) }()
	}
	if command == "jobs" || command == "webhooks" || command == "keys" {
		// An operator's writes are theirs in the audit log.
		ctx = store.WithActor(ctx, store.Actor{Subject: operatorSubject()})
	}
	var err error
	switch command {
	case "dev":
		err = runDev(ctx, cfg, logger)
	case "serve":
		err = runServe(ctx, cfg, logger)
	case "worker":
		err = runWorker(ctx, cfg, logger)
	case "migrate":
		err = runMigrate(ctx, cfg, logger)
	case "token":
		err = runToken(cfg, tok, stdout)
	case "idp":
		err = runIdp(ctx, cfg, logger)
	case "replay":
		err = runReplay(ctx, cfg, replay, positional, stdout, logger)
	case "jobs":
		err = runJobs(ctx, cfg, sub, jf, positional, stdout, stderr, logger)
	case "webhooks":
		err = runWebhooks(ctx, cfg, sub, wf, positional, stdout, logger)
	case "providers":
		err = runProviders(ctx, cfg, providersOutput, stdout)
	case "usage":
		err = runUsage(ctx, cfg, uf, stdout)
	case "keys":
		err = runKeys(ctx, cfg, sub, kf, stdout, stderr)
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", fs.Name(), err)
		return 1
	}
	return 0
}

func runToken(cfg config, tok tokenFlags, stdout io.Writer) error {
	issuer, err := devidp.OpenExisting(cfg.DataDir)
	if err != nil {
		return err
	}
	req := devidp.TokenRequest{
		Tenant:   tok.Tenant,
		Subject:  tok.Subject,
		Scopes:   strings.Fields(tok.Scope),
		Audience: cfg.OIDCAudience,
		TTL:      tok.TTL,
	}
	if tok.SuperAdmin {
		req.Roles = []string{"super-admin"}
	}
	token, err := issuer.Mint(req)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, token)
	return err
}

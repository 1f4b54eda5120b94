package main

// The command line: one cobra command per command and subcommand, each
// with the same help (what it does, usage, its own flags, examples) and
// the same exit status: 0, 1 when the command failed, 2 for a usage
// mistake (docs/operations.md, The command line). Flags are registered on
// Go flag sets, as config.go and the commands' files have them, and
// handed to cobra's pflag.

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ai-job-gateway/gateway/internal/buildinfo"
	"github.com/ai-job-gateway/gateway/store"
)

// commandFailed is the error of a command that failed after its flags and
// arguments were accepted: exit 1. Every other error is a usage mistake.
type commandFailed struct{ err error }

func (e commandFailed) Error() string { return e.err.Error() }
func (e commandFailed) Unwrap() error { return e.err }

// usageMistake is a flag's value or an argument a command refused after
// parsing (docs/operations.md, The command line): exit 2, as a value that
// does not parse.
type usageMistake struct{ err error }

func (e usageMistake) Error() string { return e.err.Error() }
func (e usageMistake) Unwrap() error { return e.err }

// usageErrorf is a usage mistake, said as fmt.Errorf says it.
func usageErrorf(format string, a ...any) error {
	return usageMistake{fmt.Errorf(format, a...)}
}

// errUsageShown: the usage is on standard error already; exit 2.
var errUsageShown = errors.New("usage shown")

// execute runs the command line args and says how it ended: one line on
// stderr for a failure (exit 1) or a usage mistake (exit 2).
func execute(root *cobra.Command, args []string, stderr io.Writer) int {
	root.SetArgs(append([]string{}, args...)) // never nil: cobra would read os.Args
	cmd, err := root.ExecuteC()
	if cmd == nil {
		cmd = root
	}
	var failed commandFailed
	var mistake usageMistake
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errUsageShown):
		return 2
	case errors.As(err, &mistake):
		err = mistake.err
	case errors.As(err, &failed):
		fmt.Fprintf(stderr, "%s: %v\n", cmd.CommandPath(), failed.err)
		return 1
	}
	fmt.Fprintf(stderr, "%s: %s (run \"%s -h\")\n", cmd.CommandPath(), strings.ReplaceAll(err.Error(), "\n", " "), cmd.CommandPath())
	return 2
}

// usageTemplate is every command's help after what it does: usage, its
// subcommands, its own flags, examples.
const usageTemplate = `Usage:
  {{.UseLine}}{{if .HasAvailableSubCommands}}

Commands:{{range .Commands}}{{if (or .IsAvailableCommand (eq .Name "help"))}}
  {{rpad .Name .NamePadding}} {{.Short}}{{end}}{{end}}{{end}}{{if .HasAvailableLocalFlags}}

Flags:
{{.LocalFlags.FlagUsages | trimTrailingWhitespaces}}{{end}}{{if .HasExample}}

Examples:
{{.Example}}{{end}}{{if .HasAvailableSubCommands}}

Run "{{.CommandPath}} <command> -h" for a command's flags.{{end}}
`

// newCLI is the gateway's command tree, writing on stdout and stderr.
func newCLI(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "gateway <command>",
		Short: "An asynchronous AI job gateway on Temporal",
		Long: `gateway: an asynchronous AI job gateway on Temporal.

dev runs everything in one process; serve, worker and migrate are the
production processes; the other commands are an operator's tools on the
store and Temporal of serve. Every flag has an environment variable, named
in the command's help (docs/operations.md, Configuration).

Exit status: 0 done; 1 the command failed; 2 a usage mistake (an unknown
command or flag, a wrong argument, a setting missing or invalid).`,
		Example: `  gateway dev
  gateway serve -h
  gateway jobs list --status failed -o json`,
		Args: cobra.ArbitraryArgs,
		// gateway alone, -h, --version and unknown commands: holdsCommands.
		DisableFlagParsing:    true,
		DisableFlagsInUseLine: true,
		SilenceErrors:         true,
		SilenceUsage:          true,
		CompletionOptions:     cobra.CompletionOptions{DisableDefaultCmd: true},
		RunE:                  holdsCommands,
	}
	root.Flags().Bool("version", false, "print the version, as gateway version does")
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetUsageTemplate(usageTemplate)
	root.AddCommand(
		devCommand(), serveCommand(), workerCommand(), migrateCommand(), tokenCommand(), idpCommand(),
		jobsCommand(), webhooksCommand(), providersCommand(), usageCommand(), keysCommand(),
		replayCommand(), healthcheckCommand(), versionCommand(), completionCommand(root),
	)
	root.SetHelpCommand(helpCommand(root))
	return root
}

// holdsCommands runs the root and the commands that only hold others
// (jobs, webhooks, keys): their help when asked, else a usage mistake.
func holdsCommands(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		fmt.Fprintf(cmd.ErrOrStderr(), "%s\n\n%s", cmp.Or(cmd.Long, cmd.Short), cmd.UsageString())
		return errUsageShown
	}
	if slices.Contains(args, "-h") || slices.Contains(args, "--help") {
		return cmd.Help()
	}
	if !cmd.HasParent() && args[0] == "--version" {
		return printVersion(cmd, args[1:])
	}
	if strings.HasPrefix(args[0], "-") {
		return fmt.Errorf("unknown flag: %s", args[0])
	}
	cmd.SuggestionsMinimumDistance = 2
	if suggestions := cmd.SuggestionsFor(args[0]); len(suggestions) > 0 {
		// A command the name begins, else the nearest.
		i := max(0, slices.IndexFunc(suggestions, func(s string) bool { return strings.HasPrefix(s, args[0]) }))
		return fmt.Errorf("unknown command %q; did you mean %q?", args[0], suggestions[i])
	}
	return fmt.Errorf("unknown command %q", args[0])
}

// parentCommand is a command that only holds subcommands.
func parentCommand(use, short, long, example string, subcommands ...*cobra.Command) *cobra.Command {
	cmd := &cobra.Command{
		Use: use, Short: short, Long: long, Example: example,
		Args:                  cobra.ArbitraryArgs,
		DisableFlagParsing:    true,
		DisableFlagsInUseLine: true,
		RunE:                  holdsCommands,
	}
	cmd.AddCommand(subcommands...)
	return cmd
}

// withFlags adds to cmd the flags register binds on a Go flag set. Each
// keeps the default it was registered with, so that -h never shows a
// secret read from the environment afterwards (webhooks.go), and a URL's
// password shows as xxxxx; --output is also -o.
func withFlags(cmd *cobra.Command, register func(fs *flag.FlagSet)) *cobra.Command {
	fs := flag.NewFlagSet(cmd.Name(), flag.ContinueOnError)
	register(fs)
	fs.VisitAll(func(f *flag.Flag) {
		pf := pflag.PFlagFromGoFlag(f)
		pf.DefValue = f.DefValue
		if u, err := url.Parse(pf.DefValue); err == nil && u.User != nil {
			pf.DefValue = u.Redacted() // DATABASE_URL's password, say
		}
		if pf.DefValue == "0s" {
			pf.DefValue = "0" // a zero duration: no "(default 0s)" in -h
		}
		if pf.Name == "output" {
			pf.Shorthand = "o"
		}
		cmd.Flags().AddFlag(pf)
	})
	return cmd
}

// registerOutput binds --output (-o), the output format of a command that
// prints text for people or formats for scripts.
func registerOutput(fs *flag.FlagSet, p *string, usage string) {
	fs.StringVar(p, "output", "text", usage)
}

// noArgs refuses positional arguments.
func noArgs(_ *cobra.Command, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("unexpected argument %q", args[0])
	}
	return nil
}

// oneJobID takes exactly one job id.
func oneJobID(_ *cobra.Command, args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("give one job id, not %d", len(args))
	}
	return nil
}

// configured is the run of a command with the configuration of config.go:
// cfg validated as command (a usage mistake when it is not valid), then
// body with a logger and a context cancelled on SIGINT or SIGTERM.
func configured(cfg *config, command string, body func(ctx context.Context, cmd *cobra.Command, args []string, logger *slog.Logger) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if err := cfg.validate(command); err != nil {
			return err
		}
		level, _ := parseLevel(cfg.LogLevel)
		logger := newLogger(cmd.ErrOrStderr(), cfg.LogFormat, level)
		ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		switch command {
		case "dev", "serve", "worker":
			shutdown, err := startTracing(ctx, command)
			if err != nil {
				return commandFailed{err}
			}
			defer func() { _ = shutdown(context.WithoutCancel(ctx)) }()
		case "jobs", "keys":
			// An operator's writes are theirs in the audit log.
			ctx = store.WithActor(ctx, store.Actor{Subject: operatorSubject()})
		}
		if err := body(ctx, cmd, args, logger); err != nil {
			return commandFailed{err}
		}
		return nil
	}
}

// processCommand is dev, serve, worker, migrate or idp: a command whose
// flags are all the configuration's.
func processCommand(name, short, long, example string, run func(context.Context, config, *slog.Logger) error) *cobra.Command {
	var cfg config
	cmd := &cobra.Command{
		Use: name, Short: short, Long: long, Example: example, Args: noArgs,
		RunE: configured(&cfg, name, func(ctx context.Context, _ *cobra.Command, _ []string, logger *slog.Logger) error {
			return run(ctx, cfg, logger)
		}),
	}
	return withFlags(cmd, func(fs *flag.FlagSet) { cfg.registerFlags(fs, name) })
}

func devCommand() *cobra.Command {
	return processCommand("dev", "API, worker, embedded Temporal and Web UI, dev identity provider: everything in one process",
		`gateway dev runs the whole gateway in one process: the API and the console,
the worker, an embedded Temporal server and its Web UI, and the dev identity
provider, on a SQLite store in the data dir. It prints an API key to try the
API with (docs/operations.md, What gateway dev runs). Not in production
builds (-tags nodev).`,
		`  gateway dev
  gateway dev --local-engines --providers deploy/providers.example.yaml`, runDev)
}

func serveCommand() *cobra.Command {
	return processCommand("serve", "the API only, against an external Temporal, PostgreSQL and OIDC issuer",
		`gateway serve runs the API and the console against an external Temporal
(TEMPORAL_ADDRESS), database (DATABASE_URL) and OIDC issuer (OIDC_ISSUER_URL)
(docs/operations.md, Production shape).`,
		`  DATABASE_URL=postgres://gateway@db/gateway TEMPORAL_ADDRESS=temporal:7233 \
    OIDC_ISSUER_URL=https://login.example.com gateway serve --listen 0.0.0.0:8080`, runServe)
}

func workerCommand() *cobra.Command {
	return processCommand("worker", "the Temporal worker only (needs TEMPORAL_ADDRESS, DATABASE_URL)",
		`gateway worker runs the job workflows and their activities against an
external Temporal (TEMPORAL_ADDRESS) and database (DATABASE_URL), with health
endpoints on --listen (docs/operations.md, Sizing workers).`,
		`  DATABASE_URL=postgres://gateway@db/gateway TEMPORAL_ADDRESS=temporal:7233 \
    gateway worker --listen 0.0.0.0:8081 --providers /etc/gateway/providers.yaml`, runWorker)
}

func migrateCommand() *cobra.Command {
	return processCommand("migrate", "apply the database schema and exit",
		`gateway migrate applies the database schema and exits; with
--temporal-address it also registers the job workflows' search attributes in
that Temporal namespace (docs/operations.md, Finding jobs).`,
		`  DATABASE_URL=postgres://gateway@db/gateway gateway migrate
  gateway migrate --temporal-address temporal:7233 --temporal-namespace default`, runMigrate)
}

func idpCommand() *cobra.Command {
	return processCommand("idp", "the dev identity provider on its own, for trying serve and worker (never in production)",
		`gateway idp runs the dev identity provider on its own, for trying serve and
worker with tokens from gateway token. It accepts any client secret: never in
production. Not in production builds (-tags nodev).`,
		`  gateway idp --listen 127.0.0.1:9000 --data-dir ./.data
  gateway idp --issuer-url http://idp:9000/dev/oidc`, runIdp)
}

// register binds the flags of gateway token.
func (t *tokenFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&t.Tenant, "tenant", "", "tenant_id claim")
	fs.StringVar(&t.Subject, "sub", "dev-user", "subject (user id)")
	fs.StringVar(&t.Scope, "scope", "", "space-separated scopes")
	fs.BoolVar(&t.SuperAdmin, "super-admin", false, "add the super-admin role")
	fs.DurationVar(&t.TTL, "ttl", time.Hour, "lifetime of the token")
}

func tokenCommand() *cobra.Command {
	var cfg config
	var tok tokenFlags
	cmd := &cobra.Command{
		Use:   "token",
		Short: "print a token signed by the dev identity provider",
		Long: `gateway token prints a bearer token signed by the dev identity provider
whose keys are in the data dir (that of gateway dev or gateway idp).`,
		Example: `  gateway token --tenant acme --sub alice --scope "llm-tasks:write llm-tasks:read"
  gateway token --tenant ops --super-admin --ttl 24h`,
		Args: noArgs,
		RunE: configured(&cfg, "token", func(_ context.Context, cmd *cobra.Command, _ []string, _ *slog.Logger) error {
			return runToken(cfg, tok, cmd.OutOrStdout())
		}),
	}
	return withFlags(cmd, func(fs *flag.FlagSet) {
		cfg.registerFlags(fs, "token")
		tok.register(fs)
	})
}

func jobsCommand() *cobra.Command {
	sub := func(name, use, short, example string, args cobra.PositionalArgs) *cobra.Command {
		var cfg config
		var f jobsFlags
		cmd := &cobra.Command{
			Use: use, Short: short, Example: example, Args: args,
			RunE: configured(&cfg, "jobs", func(ctx context.Context, cmd *cobra.Command, args []string, logger *slog.Logger) error {
				return runJobs(ctx, cfg, name, f, args, cmd.OutOrStdout(), cmd.ErrOrStderr(), logger)
			}),
		}
		return withFlags(cmd, func(fs *flag.FlagSet) {
			cfg.registerFlags(fs, "jobs")
			f.register(fs, name)
		})
	}
	return parentCommand("jobs <command>", "list, show, retry and cancel jobs, download their histories (SREs)",
		`gateway jobs looks at jobs as the store and Temporal have them, with the
configuration of serve (without it, gateway dev's data dir and Temporal), and
retries and cancels them (docs/operations.md, Jobs from the command line). An
id that is not found is named on standard error, and the command exits 1.`,
		`  gateway jobs list --tenant acme --status failed --limit 20
  gateway jobs retry --provider openai --error-code PROVIDERS_EXHAUSTED --dry-run`,
		sub("list", "list", "list jobs, newest first, with the filters of GET /v1/jobs",
			`  gateway jobs list --tenant acme --status failed --provider openai --limit 20
  gateway jobs list --status failed --error-code PROVIDERS_EXHAUSTED -o json | jq -r '.[].id'`, noArgs),
		sub("show", "show ID", "show a job, its routing history and its workflow's steps",
			`  gateway jobs show 01936f2a-...
  gateway jobs show 01936f2a-... -o json`, oneJobID),
		sub("history", "history ID", "write a job's workflow history, as gateway replay reads it",
			`  gateway jobs history 01936f2a-... --out job.json`, oneJobID),
		sub("retry", "retry [ID...]", "retry failed jobs under their own ids: those named, or those the filters select",
			`  gateway jobs retry 01936f2a-...
  gateway jobs retry --tenant acme --error-code PROVIDERS_EXHAUSTED --rate 2 --limit 500`, cobra.ArbitraryArgs),
		sub("cancel", "cancel ID...", "cancel jobs, as POST /v1/{resource}/{id}/cancel does",
			`  gateway jobs cancel 01936f2a-... 01936f2b-...`, func(_ *cobra.Command, args []string) error {
				if len(args) == 0 {
					return errors.New("give one or more job ids")
				}
				return nil
			}),
	)
}

func webhooksCommand() *cobra.Command {
	sub := func(name, use, short, example string, args cobra.PositionalArgs) *cobra.Command {
		var cfg config
		var f webhooksFlags
		cmd := &cobra.Command{
			Use: use, Short: short, Example: example, Args: args,
			// The configuration of gateway jobs: serve's store and Temporal.
			RunE: configured(&cfg, "jobs", func(ctx context.Context, cmd *cobra.Command, args []string, logger *slog.Logger) error {
				return runWebhooks(ctx, cfg, name, f, args, cmd.OutOrStdout(), logger)
			}),
		}
		return withFlags(cmd, func(fs *flag.FlagSet) {
			cfg.registerFlags(fs, "jobs")
			f.register(fs, name)
		})
	}
	return parentCommand("webhooks <command>", "resend and recover jobs' webhook events",
		`gateway webhooks sends jobs' webhook events again, with the configuration of
serve (docs/webhooks.md, Resending and recovering events). Times are RFC 3339.`,
		`  gateway webhooks resend 01936f2a-...
  gateway webhooks recover --since 2026-11-26T00:00:00Z --dry-run`,
		sub("resend", "resend ID", "send every event a job's webhook was sent again, in order",
			`  gateway webhooks resend 01936f2a-...`, oneJobID),
		sub("recover", "recover --since TIME", "resend the deliveries given up in a window, in order per job",
			`  gateway webhooks recover --since 2026-11-26T00:00:00Z --until 2026-11-26T12:00:00Z --dry-run
  gateway webhooks recover --since 2026-11-26T00:00:00Z --tenant acme --url https://hooks.example.com/jobs`, noArgs),
	)
}

func providersCommand() *cobra.Command {
	var cfg config
	var output string
	cmd := &cobra.Command{
		Use:   "providers",
		Short: "the catalog's providers per service, with their statuses and circuit breakers",
		Long: `gateway providers prints each provider of the catalog per service, its status
in effect and its circuit breaker, as the store of serve has them
(docs/operations.md, Providers from the command line).`,
		Example: `  gateway providers --providers /etc/gateway/providers.yaml
  gateway providers -o json`,
		Args: noArgs,
		RunE: configured(&cfg, "providers", func(ctx context.Context, cmd *cobra.Command, _ []string, _ *slog.Logger) error {
			return runProviders(ctx, cfg, output, cmd.OutOrStdout())
		}),
	}
	return withFlags(cmd, func(fs *flag.FlagSet) {
		cfg.registerFlags(fs, "providers")
		registerOutput(fs, &output, "output format: text or json")
	})
}

func usageCommand() *cobra.Command {
	var cfg config
	var f usageFlags
	cmd := &cobra.Command{
		Use:   "usage",
		Short: "sum the usage ledger, as GET /v1/usage does",
		Long: `gateway usage prints the usage ledger's sums per tenant, service, provider,
application, unit or day, from the store of serve; it needs no Temporal
(docs/operations.md, Usage from the command line).`,
		Example: `  gateway usage --tenant acme --group-by service,day
  gateway usage --from 2026-10-01 --to 2026-11-01 --group-by tenant -o csv > october.csv`,
		Args: noArgs,
		RunE: configured(&cfg, "usage", func(ctx context.Context, cmd *cobra.Command, _ []string, _ *slog.Logger) error {
			return runUsage(ctx, cfg, f, cmd.OutOrStdout())
		}),
	}
	return withFlags(cmd, func(fs *flag.FlagSet) {
		cfg.registerFlags(fs, "usage")
		f.register(fs)
	})
}

func keysCommand() *cobra.Command {
	sub := func(name, use, short, example string) *cobra.Command {
		var cfg config
		var f keysFlags
		cmd := &cobra.Command{
			Use: use, Short: short, Example: example,
			Args: func(_ *cobra.Command, args []string) error { return f.check(name, args, time.Now()) },
			RunE: configured(&cfg, "keys", func(ctx context.Context, cmd *cobra.Command, _ []string, _ *slog.Logger) error {
				return runKeys(ctx, cfg, name, f, cmd.OutOrStdout(), cmd.ErrOrStderr())
			}),
		}
		return withFlags(cmd, func(fs *flag.FlagSet) {
			cfg.registerFlags(fs, "usage") // the store's flags, as gateway usage has them
			f.register(fs, name)
		})
	}
	return parentCommand("keys <command>", "create, list, revoke and rotate API keys",
		`gateway keys manages a tenant's API keys (docs/api.md, API keys) in the store
of serve, without a token, Temporal or a running API (docs/operations.md, API
keys from the command line). create and rotate print the key's secret this
once: alone on standard output (-o text; what the key is goes to standard
error), or as "secret" (-o json).`,
		`  gateway keys create --tenant acme --name ci-pipeline --scope transcriptions:write,transcriptions:read
  gateway keys list --tenant acme`,
		sub("create", "create --tenant T --name N --scope S", "create an API key and print its secret once",
			`  KEY=$(gateway keys create --tenant acme --name ci-pipeline --scope transcriptions:write --expires-in 2160h)
  gateway keys create --tenant acme --name billing-cron --scope llm-tasks:write --scope llm-tasks:read \
    --application billing --expires-at 2027-01-01 --requests-per-minute 100 -o json`),
		sub("list", "list --tenant T", "list a tenant's keys not revoked, newest first (never a secret)",
			`  gateway keys list --tenant acme
  gateway keys list --tenant acme -o json`),
		sub("revoke", "revoke --tenant T ID", "revoke a key: every API process refuses it within a second",
			`  gateway keys revoke --tenant acme kq3jx5zm7a2b4c6d`),
		sub("rotate", "rotate --tenant T ID", "give a key a new secret and print it once",
			`  gateway keys rotate --tenant acme --grace 1h kq3jx5zm7a2b4c6d`),
	)
}

func replayCommand() *cobra.Command {
	var cfg config
	var f replayFlags
	cmd := &cobra.Command{
		Use:   "replay [ID|FILE.json...]",
		Short: "replay job histories against this binary's workflow code",
		Long: `gateway replay replays job histories against this binary's workflow code
before it is deployed: the job ids and history files given, or else the most
recent job workflows the query selects. It exits 1 naming the first history
that no longer replays (docs/operations.md, Replaying histories).`,
		Example: `  gateway replay
  gateway replay --query "GatewayTenant = 'acme'" --limit 500
  gateway replay 01936f2a-... job.json`,
		Args: cobra.ArbitraryArgs,
		RunE: configured(&cfg, "replay", func(ctx context.Context, cmd *cobra.Command, args []string, logger *slog.Logger) error {
			return runReplay(ctx, cfg, f, args, cmd.OutOrStdout(), logger)
		}),
	}
	return withFlags(cmd, func(fs *flag.FlagSet) {
		cfg.registerFlags(fs, "replay")
		fs.StringVar(&f.Query, "query", defaultReplayQuery, "without ids or files: replay the job workflows this visibility query selects")
		fs.IntVar(&f.Limit, "limit", 100, "without ids or files: replay at most this many, the most recent first")
	})
}

func healthcheckCommand() *cobra.Command {
	var url string
	cmd := &cobra.Command{
		Use:   "healthcheck",
		Short: "exit 0 when serve's or worker's /healthz answers 200 (container health checks)",
		Long: `gateway healthcheck asks /healthz and exits 0 when it answers 200, 1
otherwise: the health check of an image with no shell or curl.`,
		Example: `  gateway healthcheck
  gateway healthcheck --url http://127.0.0.1:8081/healthz`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := runHealthcheck(cmd.Context(), url); err != nil {
				return commandFailed{err}
			}
			return nil
		},
	}
	return withFlags(cmd, func(fs *flag.FlagSet) {
		fs.StringVar(&url, "url", healthURL(), "the URL to ask (default: /healthz on GATEWAY_LISTEN)")
	})
}

func versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "print the version, VCS revision and Go version (also gateway --version)",
		Example: `  gateway version`,
		Args:    noArgs,
		RunE:    printVersion,
	}
}

// printVersion is gateway version and gateway --version.
func printVersion(cmd *cobra.Command, args []string) error {
	if err := noArgs(cmd, args); err != nil {
		return err
	}
	_, err := fmt.Fprintln(cmd.OutOrStdout(), buildinfo.Read())
	return err
}

// completionShells are the shells gateway completion writes scripts for.
var completionShells = []string{"bash", "zsh", "fish"}

func completionCommand(root *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:   "completion bash|zsh|fish",
		Short: "print the shell completion script for bash, zsh or fish",
		Long: `gateway completion prints the script that completes gateway's commands and
flags in bash, zsh or fish.`,
		Example: `  source <(gateway completion bash)
  gateway completion zsh > "${fpath[1]}/_gateway"
  gateway completion fish > ~/.config/fish/completions/gateway.fish`,
		ValidArgs: completionShells,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 || !slices.Contains(completionShells, args[0]) {
				return fmt.Errorf("give one shell: %s", strings.Join(completionShells, ", "))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			var err error
			switch out := cmd.OutOrStdout(); args[0] {
			case "bash":
				err = root.GenBashCompletionV2(out, true)
			case "zsh":
				err = root.GenZshCompletion(out)
			case "fish":
				err = root.GenFishCompletion(out, true)
			}
			if err != nil {
				return commandFailed{err}
			}
			return nil
		},
	}
}

// helpCommand is gateway help [command]: the command's -h.
func helpCommand(root *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "print a command's help, as gateway <command> -h does",
		Example: `  gateway help
  gateway help jobs retry`,
		Args: cobra.ArbitraryArgs,
		RunE: func(_ *cobra.Command, args []string) error {
			target, rest, err := root.Find(args)
			if err != nil || len(rest) > 0 {
				return fmt.Errorf("unknown command %q", strings.Join(args, " "))
			}
			target.InitDefaultHelpFlag() // in its flags, as its -h shows them
			return target.Help()
		},
	}
}

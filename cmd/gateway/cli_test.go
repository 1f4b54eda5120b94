package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"
)

// cliCommands are the commands of the command line a person can call:
// every path below gateway ("jobs", "jobs list", …), help included.
func cliCommands(t *testing.T) map[string]*cobra.Command {
	t.Helper()
	root := newCLI(io.Discard, io.Discard)
	root.InitDefaultHelpCmd()
	commands := map[string]*cobra.Command{}
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if sub.Hidden {
				continue
			}
			sub.InitDefaultHelpFlag() // as running it does
			commands[strings.TrimPrefix(sub.CommandPath(), "gateway ")] = sub
			walk(sub)
		}
	}
	walk(root)
	require.Contains(t, commands, "jobs list")
	return commands
}

// TestCLIHelp: every command's -h exits 0 and prints, on standard output,
// what it does, its usage, its own flags only and an example of it.
func TestCLIHelp(t *testing.T) {
	t.Parallel()
	flagName := regexp.MustCompile(`^\s+(?:-[a-z], )?--([a-z0-9-]+)`)
	for path, cmd := range cliCommands(t) {
		args := append(strings.Fields(path), "-h")
		var stdout, stderr strings.Builder
		require.Equal(t, 0, run(args, &stdout, &stderr), "%v: %s", args, stderr.String())
		require.Empty(t, stderr.String(), args)
		help := stdout.String()

		description, rest, ok := strings.Cut(help, "\n\nUsage:\n  gateway "+path)
		require.True(t, ok, "%v: what it does, then its usage:\n%s", args, help)
		require.NotEmpty(t, strings.TrimSpace(description), args)
		usage, rest, ok := strings.Cut(rest, "\n\nFlags:\n")
		require.True(t, ok, "%v: flags after the usage:\n%s", args, help)
		require.NotContains(t, usage, "Examples:", args)
		flags, examples, ok := strings.Cut(rest, "\n\nExamples:\n")
		require.True(t, ok, "%v: examples after the flags:\n%s", args, help)
		require.Contains(t, examples, "gateway "+path, "%v: an example of the command itself", args)

		require.False(t, cmd.InheritedFlags().HasFlags(), "%v: no flags but its own", args)
		var names []string
		for line := range strings.SplitSeq(flags, "\n") {
			if m := flagName.FindStringSubmatch(line); m != nil {
				names = append(names, m[1])
				require.NotNil(t, cmd.LocalFlags().Lookup(m[1]), "%v: --%s is not its flag", args, m[1])
			}
		}
		require.Contains(t, names, "help", args)

		var again strings.Builder
		require.Equal(t, 0, run(append([]string{"help"}, strings.Fields(path)...), &again, io.Discard), path)
		require.Equal(t, help, again.String(), "gateway help %s is its -h", path)
	}
}

// TestCLIHelpOfEachCommandIsItsOwn: a flag of dev alone is not in serve's
// help, and -o is --output.
func TestCLIHelpOfEachCommandIsItsOwn(t *testing.T) {
	t.Parallel()
	help := func(args ...string) string {
		var stdout strings.Builder
		require.Equal(t, 0, run(append(args, "--help"), &stdout, io.Discard), args)
		return stdout.String()
	}
	require.Contains(t, help("dev"), "--temporal-dev-listen")
	require.NotContains(t, help("serve"), "--temporal-dev-listen")
	require.NotContains(t, help("jobs", "show"), "--tenant")
	require.Contains(t, help("jobs", "list"), "-o, --output string")
	require.Contains(t, help("keys", "create"), "--scope scopes")
}

// TestCLIHelpShowsNoSecret: the webhook signing key taken from the
// environment is not a default -h prints.
func TestCLIHelpShowsNoSecret(t *testing.T) {
	// Not parallel: it sets environment variables.
	t.Setenv("GATEWAY_WEBHOOK_SIGNING_KEY", "whsk_not-to-be-printed")
	t.Setenv("DATABASE_URL", "postgres://gateway:s3cret@db.example:5432/gateway")
	var stdout strings.Builder
	require.Equal(t, 0, run([]string{"serve", "-h"}, &stdout, io.Discard))
	require.Contains(t, stdout.String(), "--webhook-signing-key")
	require.NotContains(t, stdout.String(), "not-to-be-printed")
	require.NotContains(t, stdout.String(), "s3cret", "a URL's password")
	require.Contains(t, stdout.String(), `(default "postgres://gateway:xxxxx@db.example:5432/gateway")`, "the environment's value is the default")
}

// TestCLIUsageMistakes: an unknown command or flag, a bad flag value or a
// wrong argument exits 2 with one line on standard error, saying what was
// wrong; gateway alone prints the usage and exits 2.
func TestCLIUsageMistakes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		line string
	}{
		{[]string{"nosuch"}, `gateway: unknown command "nosuch" (run "gateway -h")`},
		{[]string{"serv"}, `gateway: unknown command "serv"; did you mean "serve"? (run "gateway -h")`},
		{[]string{"--nosuch"}, `gateway: unknown flag: --nosuch (run "gateway -h")`},
		{[]string{"serve", "--nosuch"}, `gateway serve: unknown flag: --nosuch (run "gateway serve -h")`},
		{[]string{"serve", "-listen", ":8080"}, `gateway serve: unknown shorthand flag: 'l' in -listen (run "gateway serve -h")`},
		{[]string{"serve", "extra"}, `gateway serve: unexpected argument "extra" (run "gateway serve -h")`},
		{[]string{"jobs", "nosuch", "--tenant", "acme"}, `gateway jobs: unknown command "nosuch" (run "gateway jobs -h")`},
		{[]string{"jobs", "list", "--limit", "many"}, `gateway jobs list: invalid argument "many" for "--limit" flag: parse error (run "gateway jobs list -h")`},
		{[]string{"jobs", "show"}, `gateway jobs show: give one job id, not 0 (run "gateway jobs show -h")`},
		{[]string{"jobs", "history", "a", "b"}, `gateway jobs history: give one job id, not 2 (run "gateway jobs history -h")`},
		{[]string{"jobs", "cancel"}, `gateway jobs cancel: give one or more job ids (run "gateway jobs cancel -h")`},
		{[]string{"webhooks", "recover", "job-id"}, `gateway webhooks recover: unexpected argument "job-id" (run "gateway webhooks recover -h")`},
		{[]string{"completion", "tcsh"}, `gateway completion: give one shell: bash, zsh, fish (run "gateway completion -h")`},
		{[]string{"help", "nosuch"}, `gateway help: unknown command "nosuch" (run "gateway help -h")`},
		{[]string{"--version", "extra"}, `gateway: unexpected argument "extra" (run "gateway -h")`},
		{[]string{"serve", "--log-level", "loud", "--temporal-address", "127.0.0.1:1"}, `--log-level "loud": use debug, info, warn or error`},
	} {
		var stdout, stderr strings.Builder
		require.Equal(t, 2, run(c.args, &stdout, &stderr), "%v: %s", c.args, stderr.String())
		require.Empty(t, stdout.String(), c.args)
		require.Equal(t, 1, strings.Count(stderr.String(), "\n"), "%v: one line: %q", c.args, stderr.String())
		require.Contains(t, stderr.String(), c.line, c.args)
	}
	for _, args := range [][]string{nil, {"jobs"}, {"webhooks"}, {"keys"}} {
		var stdout, stderr strings.Builder
		require.Equal(t, 2, run(args, &stdout, &stderr), args)
		require.Empty(t, stdout.String(), args)
		require.Contains(t, stderr.String(), "\n\nUsage:\n  "+strings.Join(append([]string{"gateway"}, args...), " ")+" <command>", args)
	}
}

// TestCLIFlagsAfterArguments: flags may follow the arguments, and -o is
// --output.
func TestCLIFlagsAfterArguments(t *testing.T) {
	t.Parallel()
	var stdout, stderr strings.Builder
	require.Equal(t, 2, run([]string{"providers", "-o", "yaml"}, &stdout, &stderr), "a value the command refuses is a usage mistake")
	require.Equal(t, "gateway providers: -o \"yaml\": use text or json (run \"gateway providers -h\")\n", stderr.String())
	stderr.Reset()
	dir := t.TempDir()
	require.Equal(t, 1, run([]string{"jobs", "show", "01936f2a-0000-7000-8000-000000000000", "--data-dir", dir, "-o", "json"}, &stdout, &stderr))
	require.Contains(t, stderr.String(), "gateway jobs show: no store at "+filepath.Join(dir, "gateway.db"))
}

// TestCLICompletion: gateway completion prints cobra's script for each
// shell.
func TestCLICompletion(t *testing.T) {
	t.Parallel()
	for shell, says := range map[string]string{
		"bash": "complete -o default -F __start_gateway gateway",
		"zsh":  "#compdef gateway",
		"fish": "complete -c gateway",
	} {
		var stdout, stderr strings.Builder
		require.Equal(t, 0, run([]string{"completion", shell}, &stdout, &stderr), stderr.String())
		require.Contains(t, stdout.String(), says, shell)
		require.Empty(t, stderr.String())
	}
	// The scripts ask the binary; it completes subcommands and flags.
	var stdout strings.Builder
	require.Equal(t, 0, run([]string{"__complete", "jobs", "l"}, &stdout, io.Discard))
	require.Contains(t, stdout.String(), "list\t")
	stdout.Reset()
	require.Equal(t, 0, run([]string{"__complete", "jobs", "history", "--o"}, &stdout, io.Discard))
	require.Contains(t, stdout.String(), "--out\t")
}

// TestCLIReadmeCommands: README.md's table of commands names every
// command and subcommand, and none that does not exist.
func TestCLIReadmeCommands(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	require.NoError(t, err)
	_, table, ok := strings.Cut(string(data), "\n## Commands\n")
	require.True(t, ok, "README.md has a Commands section")
	table, _, _ = strings.Cut(table, "\n\n|")
	row := regexp.MustCompile("(?m)^\\| `gateway ([^`]+)` \\|")
	var listed []string
	for _, m := range row.FindAllStringSubmatch(table, -1) {
		words := strings.Fields(m[1])
		listed = append(listed, words[0])
		if len(words) > 1 {
			for sub := range strings.SplitSeq(words[1], "/") {
				listed = append(listed, words[0]+" "+sub)
			}
		}
		require.LessOrEqual(t, len(words), 2, "a row names a command and its subcommands: %q", m[1])
	}
	commands := cliCommands(t)
	for path := range commands {
		require.Contains(t, listed, path, "README.md's table of commands lacks gateway %s", path)
	}
	for _, path := range listed {
		require.Contains(t, commands, path, "README.md's table of commands names gateway %s, which does not exist", path)
	}
	require.Len(t, listed, len(commands), "no command twice: %v", slices.Sorted(slices.Values(listed)))
}

// TestCLIContractFlags: the command line of docs/operations.md,
// Configuration: each setting of `gateway dev` is a flag named with its
// environment variable, the environment wins over the default and a flag
// over the environment, through the CLI as it parses them.
func TestCLIContractFlags(t *testing.T) {
	// Not parallel: it sets environment variables.
	var help strings.Builder
	require.Equal(t, 0, run([]string{"dev", "-h"}, &help, io.Discard))
	for flagName, env := range map[string]string{
		"listen": "GATEWAY_LISTEN", "data-dir": "GATEWAY_DATA_DIR", "providers": "GATEWAY_PROVIDERS_FILE",
		"database-url": "DATABASE_URL", "temporal-address": "TEMPORAL_ADDRESS", "temporal-ui-listen": "TEMPORAL_UI_LISTEN",
		"oidc-issuer": "OIDC_ISSUER_URL", "oidc-audience": "OIDC_AUDIENCE",
	} {
		require.Regexp(t, `(?m)^\s+--`+flagName+` string\s.*\(env `+env+`\)`, help.String(), flagName)
	}

	healthy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer healthy.Close()
	t.Setenv("GATEWAY_LISTEN", strings.TrimPrefix(healthy.URL, "http://"))
	require.Equal(t, 0, run([]string{"healthcheck"}, io.Discard, io.Discard), "the environment over the default")
	var stderr strings.Builder
	require.Equal(t, 1, run([]string{"healthcheck", "--url", "http://127.0.0.1:1/healthz"}, io.Discard, &stderr), "the flag over the environment")
	require.Contains(t, stderr.String(), "127.0.0.1:1")
}

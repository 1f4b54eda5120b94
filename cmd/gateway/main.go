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
//	gateway completion  print the shell completion script (bash, zsh, fish)
//
// Every command's -h says what it does, its usage, flags and examples
// (cli.go).
package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/ai-job-gateway/gateway/api/devidp"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run runs the command line args (cli.go) and returns the exit status: 0,
// 1 when the command failed, 2 for a usage mistake.
func run(args []string, stdout, stderr io.Writer) int {
	return execute(newCLI(stdout, stderr), args, stderr)
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

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/ai-job-gateway/gateway/app/jobops"
	"github.com/ai-job-gateway/gateway/store"
)

// webhooksFlags are the flags of `gateway webhooks` (docs/webhooks.md,
// Resending and recovering events).
type webhooksFlags struct {
	since, until, url, tenant string
	dryRun                    bool
}

func (f *webhooksFlags) register(fs *flag.FlagSet, sub string) {
	if sub != "recover" {
		return
	}
	fs.StringVar(&f.since, "since", "", "recover deliveries given up at or after this time (RFC 3339; required)")
	fs.StringVar(&f.until, "until", "", "and before this time (RFC 3339; default: now)")
	fs.StringVar(&f.url, "url", "", "only deliveries to this webhook URL")
	fs.StringVar(&f.tenant, "tenant", "", "only this tenant's jobs (default: every tenant's)")
	fs.BoolVar(&f.dryRun, "dry-run", false, "print what would be resent, and send nothing")
}

// runWebhooks runs a `gateway webhooks` subcommand.
func runWebhooks(ctx context.Context, cfg config, sub string, f webhooksFlags, args []string, stdout io.Writer, logger *slog.Logger) error {
	var req jobops.RecoverRequest
	switch sub {
	case "resend":
		if len(args) != 1 {
			return errors.New("webhooks resend takes one job id")
		}
	case "recover":
		if len(args) > 0 {
			return errors.New("webhooks recover takes flags, not job ids")
		}
		var err error
		if req, err = f.request(); err != nil {
			return err
		}
	default:
		return fmt.Errorf("unknown command %q", sub)
	}
	st, err := openJobStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer st.Close()
	ops, done, err := webhookOperations(ctx, cfg, st, logger)
	if err != nil {
		return err
	}
	defer done()
	if sub == "resend" {
		job, err := st.Jobs.GetJob(ctx, strings.ToLower(args[0]))
		if errors.Is(err, store.ErrNotFound) {
			return jobNotFound(args[0])
		}
		if err != nil {
			return err
		}
		r, err := ops.ResendWebhooks(ctx, job)
		if err != nil {
			return err
		}
		printResend(stdout, *r, "resending")
		fmt.Fprintf(stdout, "%d events resent\n", len(r.MessageIDs))
		return nil
	}
	r, err := ops.RecoverWebhooks(ctx, req)
	if err != nil {
		return err
	}
	verb := "resending"
	if req.DryRun {
		verb = "would resend"
	}
	for _, j := range r.Jobs {
		printResend(stdout, j, verb)
	}
	for _, s := range r.Skipped {
		fmt.Fprintf(stdout, "%s  skipped: %s\n", s.JobID, s.Reason)
	}
	if req.DryRun {
		fmt.Fprintf(stdout, "%d events of %d jobs would be resent\n", r.Messages, len(r.Jobs))
	} else {
		fmt.Fprintf(stdout, "%d events of %d jobs resent\n", r.Messages, len(r.Jobs))
	}
	if r.Truncated {
		fmt.Fprintln(stdout, "more deliveries were given up in the window: run the command again for the rest")
	}
	return nil
}

// request is the recovery the flags ask for.
func (f webhooksFlags) request() (jobops.RecoverRequest, error) {
	req := jobops.RecoverRequest{URL: f.url, Tenant: f.tenant, DryRun: f.dryRun}
	if f.since == "" {
		return req, usageErrorf("webhooks recover needs --since")
	}
	var err error
	if req.Since, err = time.Parse(time.RFC3339, f.since); err != nil {
		return req, usageErrorf("--since %q: use RFC 3339, such as 2026-11-26T09:00:00Z", f.since)
	}
	if f.until != "" {
		if req.Until, err = time.Parse(time.RFC3339, f.until); err != nil {
			return req, usageErrorf("--until %q: use RFC 3339, such as 2026-11-26T09:00:00Z", f.until)
		}
		if !req.Until.After(req.Since) {
			return req, usageErrorf("--until must be after --since")
		}
	}
	return req, nil
}

// printResend prints one job's line: its resent message ids.
func printResend(w io.Writer, r jobops.WebhookResend, verb string) {
	fmt.Fprintf(w, "%s  %s %d events: %s\n", r.JobID, verb, len(r.MessageIDs), strings.Join(r.MessageIDs, " "))
	if len(r.Skipped) > 0 {
		fmt.Fprintf(w, "%s  cannot rebuild (sent before messages were recorded): %s\n", r.JobID, strings.Join(r.Skipped, " "))
	}
}

// webhookOperations is jobOperations with the store's webhook messages;
// it only decrypts histories.
func webhookOperations(ctx context.Context, cfg config, st *store.Store, logger *slog.Logger) (*jobops.Service, func(), error) {
	return jobOperationsWith(ctx, cfg, st, decryptingOnly, logger, func(c *jobops.Config) {
		c.Webhooks = st.Webhooks
		c.WebhookGiveUpAfter = cfg.WebhookGiveUpAfter
	})
}

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os/user"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/ai-job-gateway/gateway/api/auth"
	"github.com/ai-job-gateway/gateway/app/apikeys"
	"github.com/ai-job-gateway/gateway/store"
)

// Bounds of a key's attributes, as the API has them (docs/api.md, API
// keys).
const (
	maxKeyName              = 200
	maxKeyRequestsPerMinute = 1_000_000
	maxKeyInFlight          = 1_000_000
	maxKeyTokensPerMinute   = 1_000_000_000
)

// keysFlags are the flags of `gateway keys` (docs/operations.md, API keys
// from the command line).
type keysFlags struct {
	tenant, name, application string
	scopes                    scopeList
	expiresIn                 time.Duration
	expiresAt                 string
	requestsPerMinute         int
	maxInFlight               int
	tokensPerMinute           int
	grace                     time.Duration
	output                    string

	// check sets these from the flags and arguments.
	newKey apikeys.NewKey
	id     string
}

func (f *keysFlags) register(fs *flag.FlagSet, sub string) {
	fs.StringVar(&f.tenant, "tenant", "", "the tenant whose keys these are (required)")
	switch sub {
	case "create":
		fs.StringVar(&f.name, "name", "", "the key's name, 1 to 200 characters (required)")
		fs.Var(&f.scopes, "scope", "a scope the key gets, such as translations:write; repeat it or separate scopes with commas (required)")
		fs.StringVar(&f.application, "application", "", "the application the key's jobs belong to (default: none)")
		fs.DurationVar(&f.expiresIn, "expires-in", 0, "the key expires after this long, such as 720h (default: never)")
		fs.StringVar(&f.expiresAt, "expires-at", "", "the key expires at this time, RFC 3339 or YYYY-MM-DD in UTC (default: never)")
		fs.IntVar(&f.requestsPerMinute, "requests-per-minute", 0, "the key's requests in each clock minute, across every API process, at most (default: no limit)")
		fs.IntVar(&f.maxInFlight, "max-in-flight", 0, "the key's jobs pending or processing at once, at most (default: no limit)")
		fs.IntVar(&f.tokensPerMinute, "tokens-per-minute", 0, "the tokens of the key's llm-tasks in each clock minute, at most (default: no limit)")
	case "rotate":
		fs.DurationVar(&f.grace, "grace", 0, "how long the previous secret keeps working, 0 to 24h (default 0: not at all)")
	}
	switch sub {
	case "create", "list", "rotate":
		registerOutput(fs, &f.output, "output format: text or json")
	}
}

// check reads the flags and arguments of subcommand sub at now: an error
// is a usage mistake, naming its flag.
func (f *keysFlags) check(sub string, args []string, now time.Time) error {
	if !slices.Contains([]string{"create", "list", "revoke", "rotate"}, sub) {
		return fmt.Errorf("unknown command %q", sub)
	}
	switch {
	case f.tenant == "":
		return usageErrorf("--tenant is required: the tenant whose keys these are")
	case !auth.SlugPattern.MatchString(f.tenant):
		return usageErrorf("--tenant %q: must be a tenant slug: 2 to 63 lowercase letters, digits and hyphens, starting with a letter and not ending with a hyphen", f.tenant)
	case f.output != "" && f.output != "text" && f.output != "json":
		return usageErrorf("-o %q: use text or json", f.output)
	}
	switch sub {
	case "create", "list":
		if len(args) > 0 {
			return fmt.Errorf("unexpected argument %q", args[0])
		}
	default:
		if len(args) != 1 {
			return errors.New("give one key id, as gateway keys list shows it")
		}
		f.id = args[0]
	}
	if sub == "rotate" && (f.grace < 0 || f.grace > apikeys.MaxGrace) {
		return usageErrorf("--grace %s: use a duration from 0 to 24h", f.grace)
	}
	if sub != "create" {
		return nil
	}
	var err error
	f.newKey, err = f.key(now)
	return err
}

// key is the key create's flags ask for at now.
func (f *keysFlags) key(now time.Time) (apikeys.NewKey, error) {
	k := apikeys.NewKey{Name: f.name, Scopes: f.scopes, Tenant: f.tenant}
	switch {
	case strings.TrimSpace(f.name) == "":
		return k, usageErrorf("--name is required: what the key is for, such as ci-pipeline")
	case utf8.RuneCountInString(f.name) > maxKeyName:
		return k, usageErrorf("--name: must be at most %d characters", maxKeyName)
	case strings.IndexFunc(f.name, unicode.IsControl) >= 0:
		return k, usageErrorf("--name: must not contain control characters")
	case len(f.scopes) == 0:
		return k, usageErrorf("--scope is required: the scopes the key gets, such as --scope translations:write,translations:read")
	}
	for i, s := range f.scopes {
		if slices.Index(f.scopes, s) < i {
			return k, usageErrorf("--scope %q is given twice", s)
		}
	}
	if f.application != "" {
		if !auth.SlugPattern.MatchString(f.application) {
			return k, usageErrorf("--application %q: must be an application name: 2 to 63 lowercase letters, digits and hyphens, starting with a letter and not ending with a hyphen", f.application)
		}
		k.Application = &f.application
	}
	switch {
	case f.expiresIn != 0 && f.expiresAt != "":
		return k, errors.New("give --expires-in or --expires-at, not both")
	case f.expiresIn < 0:
		return k, usageErrorf("--expires-in %s: use a positive duration, such as 720h", f.expiresIn)
	case f.expiresIn > 0:
		at := now.Add(f.expiresIn).UTC().Truncate(time.Second)
		k.ExpiresAt = &at
	case f.expiresAt != "":
		at, err := time.Parse(time.DateOnly, f.expiresAt)
		if err != nil {
			if at, err = time.Parse(time.RFC3339, f.expiresAt); err != nil {
				return k, usageErrorf("--expires-at %q: use an RFC 3339 time, such as 2027-01-31T00:00:00Z, or YYYY-MM-DD", f.expiresAt)
			}
		}
		if !at.After(now) {
			return k, usageErrorf("--expires-at %s: must be in the future", f.expiresAt)
		}
		at = at.UTC()
		k.ExpiresAt = &at
	}
	if f.requestsPerMinute < 0 || f.requestsPerMinute > maxKeyRequestsPerMinute {
		return k, usageErrorf("--requests-per-minute %d: use a whole number from 1 to %d (or 0: no limit)", f.requestsPerMinute, maxKeyRequestsPerMinute)
	}
	k.Limits.RequestsPerMinute = f.requestsPerMinute
	if f.maxInFlight < 0 || f.maxInFlight > maxKeyInFlight {
		return k, usageErrorf("--max-in-flight %d: use a whole number from 1 to %d (or 0: no limit)", f.maxInFlight, maxKeyInFlight)
	}
	k.Limits.MaxInFlight = f.maxInFlight
	if f.tokensPerMinute < 0 || f.tokensPerMinute > maxKeyTokensPerMinute {
		return k, usageErrorf("--tokens-per-minute %d: use a whole number from 1 to %d (or 0: no limit)", f.tokensPerMinute, maxKeyTokensPerMinute)
	}
	k.Limits.TokensPerMinute = f.tokensPerMinute
	return k, nil
}

// scopeList is --scope: repeated, or scopes separated by commas (or
// spaces, as gateway token's --scope).
type scopeList []string

func (s *scopeList) String() string { return strings.Join(*s, ",") }

// Type names --scope's value in -h.
func (s *scopeList) Type() string { return "scopes" }

func (s *scopeList) Set(v string) error {
	*s = append(*s, strings.FieldsFunc(v, func(r rune) bool { return r == ',' || unicode.IsSpace(r) })...)
	return nil
}

// runKeys runs a `gateway keys` subcommand whose flags check accepted.
// The caller is an operator: a super-admin of the tenant, with the
// scopes the new key asks for (app/apikeys refuses those keys never hold).
func runKeys(ctx context.Context, cfg config, sub string, f keysFlags, stdout, stderr io.Writer) error {
	st, err := openJobStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer st.Close()
	keys, err := keyService(ctx, cfg, st)
	if err != nil {
		return err
	}
	by := apikeys.Creator{Subject: operatorSubject(), Tenant: f.tenant, Scopes: f.newKey.Scopes, SuperAdmin: true}
	notFound := func(err error) error {
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("tenant %s has no API key %q (or it was revoked)", f.tenant, f.id)
		}
		return err
	}
	switch sub {
	case "create":
		issued, err := keys.Issue(ctx, by, f.newKey)
		var reserved *apikeys.ReservedScopeError
		if errors.As(err, &reserved) {
			return usageErrorf("--scope: %w", err)
		}
		if err != nil {
			return err
		}
		return writeIssuedKey(stdout, stderr, f.output, issued, false)
	case "list":
		list, err := keys.List(ctx, f.tenant)
		if err != nil {
			return err
		}
		return writeKeys(stdout, f.output, list)
	case "revoke":
		if err := keys.Revoke(ctx, f.tenant, f.id); err != nil {
			return notFound(err)
		}
		_, err := fmt.Fprintf(stdout, "Revoked API key %s of tenant %s: every API process refuses it within a second\n", f.id, f.tenant)
		return err
	case "rotate":
		issued, err := keys.Rotate(ctx, by, f.tenant, f.id, f.grace)
		if err != nil {
			return notFound(err)
		}
		return writeIssuedKey(stdout, stderr, f.output, issued, true)
	}
	return fmt.Errorf("unknown subcommand %q", sub)
}

// keyService is the API keys of st, their ids tagged as every process of
// the deployment tags them (from the webhook signing key).
func keyService(ctx context.Context, cfg config, st *store.Store) (*apikeys.Service, error) {
	signer, err := webhookSigner(ctx, cfg, st)
	if err != nil {
		return nil, err
	}
	tags, err := apikeys.NewTags(signer)
	if err != nil {
		return nil, err
	}
	return apikeys.New(st.APIKeys, st.Routing, tags, nil, nil), nil
}

// operatorSubject is who the command's keys are created and rotated by:
// "cli:" and the OS user.
func operatorSubject() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return "cli:" + u.Username
	}
	return "cli:operator"
}

// keyJSON is a key in -o json, with the names of the API's attributes
// (docs/api.md, API keys); Secret only when created or rotated.
type keyJSON struct {
	ID     string `json:"id"`
	Secret string `json:"secret,omitempty"` // second, as docs/operations.md shows it
	apikeys.Attributes
}

// newKeyJSON is k at now, with secret ("" but when created or rotated).
func newKeyJSON(k store.APIKey, secret string, now time.Time) keyJSON {
	return keyJSON{ID: k.ID, Secret: secret, Attributes: apikeys.View(k, "", now)}
}

// writeIssuedKey shows a key created (or rotated): with -o text its
// secret alone on stdout, so that KEY=$(gateway keys create ...) takes
// it, and what the key is on stderr.
func writeIssuedKey(stdout, stderr io.Writer, output string, issued apikeys.Issued, rotated bool) error {
	now := time.Now()
	if output == "json" {
		return writeJSON(stdout, newKeyJSON(issued.Key, issued.Secret, now))
	}
	if _, err := fmt.Fprintln(stdout, issued.Secret); err != nil {
		return err
	}
	k := newKeyJSON(issued.Key, "", now)
	done := "Created"
	if rotated {
		done = "Rotated"
	}
	fmt.Fprintf(stderr, "%s API key %s %q of tenant %s: scopes %s", done, k.ID, k.Name, k.Tenant, strings.Join(k.Scopes, ","))
	if k.Application != nil {
		fmt.Fprintf(stderr, ", application %s", *k.Application)
	}
	if k.Limits.RequestsPerMinute > 0 {
		fmt.Fprintf(stderr, ", %d requests a minute", k.Limits.RequestsPerMinute)
	}
	if k.Limits.MaxInFlight > 0 {
		fmt.Fprintf(stderr, ", %d jobs in flight", k.Limits.MaxInFlight)
	}
	if k.Limits.TokensPerMinute > 0 {
		fmt.Fprintf(stderr, ", %d tokens a minute", k.Limits.TokensPerMinute)
	}
	fmt.Fprintf(stderr, ", expires %s.\n", keyTime(k.ExpiresAt, "never"))
	switch {
	case !rotated:
	case k.PreviousSecretExpiresAt != nil:
		fmt.Fprintf(stderr, "The previous secret works until %s.\n", keyTime(k.PreviousSecretExpiresAt, ""))
	default:
		fmt.Fprintln(stderr, "The previous secret no longer works (every API process refuses it within a second).")
	}
	_, err := fmt.Fprintln(stderr, "The secret is shown this once: the gateway keeps only its hash.")
	return err
}

// writeKeys lists keys, without their secrets, which the store does not
// have.
func writeKeys(stdout io.Writer, output string, keys []store.APIKey) error {
	now := time.Now()
	if output == "json" {
		out := make([]keyJSON, len(keys))
		for i, k := range keys {
			out[i] = newKeyJSON(k, "", now)
		}
		return writeJSON(stdout, out)
	}
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tNAME\tSCOPES\tAPPLICATION\tREQUESTS/MIN\tIN FLIGHT\tTOKENS/MIN\tCREATED BY\tCREATED\tEXPIRES\tLAST USED")
	for _, key := range keys {
		k := newKeyJSON(key, "", now)
		application, rate, inFlight, tokens := "-", "-", "-", "-"
		if k.Application != nil {
			application = *k.Application
		}
		if k.Limits.RequestsPerMinute > 0 {
			rate = fmt.Sprint(k.Limits.RequestsPerMinute)
		}
		if k.Limits.MaxInFlight > 0 {
			inFlight = fmt.Sprint(k.Limits.MaxInFlight)
		}
		if k.Limits.TokensPerMinute > 0 {
			tokens = fmt.Sprint(k.Limits.TokensPerMinute)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k.ID, k.Name, strings.Join(k.Scopes, ","), application, rate, inFlight, tokens,
			dash(k.CreatedBy), keyTime(&k.CreatedAt, ""), keyTime(k.ExpiresAt, "never"), keyTime(k.LastUsedAt, "never"))
	}
	return w.Flush()
}

// keyTime is t in RFC 3339 to the second, or none when t is nil.
func keyTime(t *time.Time, none string) string {
	if t == nil {
		return none
	}
	return t.UTC().Format(time.RFC3339)
}

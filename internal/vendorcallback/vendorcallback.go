// Package vendorcallback makes and checks the addresses vendors post their
// results back to (docs/providers.md, Vendor callbacks): one per attempt
// of a job, POST {base}/v1/provider-callbacks/{job_id}/{attempt}?token=,
// where token is an HMAC of the job id and attempt. The worker that
// submits and the API that receives share the key, so the API checks a
// post without a lookup and a forged or reused address is refused.
package vendorcallback

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// Path is the route callbacks are posted to, in gin's syntax.
const Path = "/v1/provider-callbacks/:job_id/:attempt"

// keyPurpose derives the HMAC key from the webhook signing key.
const keyPurpose = "ai-job-gateway provider callback v1"

// KeySource derives keys from the webhook signing key
// (*webhooksign.Signer is one).
type KeySource interface {
	DeriveKey(purpose string) ([]byte, error)
}

// Tokens makes and checks callback tokens.
type Tokens struct {
	key []byte
}

// NewTokens derives the token key from src.
func NewTokens(src KeySource) (*Tokens, error) {
	key, err := src.DeriveKey(keyPurpose)
	if err != nil {
		return nil, fmt.Errorf("vendorcallback: derive the token key: %w", err)
	}
	return &Tokens{key: key}, nil
}

// Token is the token of a job's attempt.
func (t *Tokens) Token(jobID string, attempt int) string {
	mac := hmac.New(sha256.New, t.key)
	mac.Write([]byte(jobID + "\x00" + strconv.Itoa(attempt)))
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// Valid reports whether token is the token of the job's attempt.
func (t *Tokens) Valid(jobID string, attempt int, token string) bool {
	want := t.Token(jobID, attempt)
	return hmac.Equal([]byte(token), []byte(want))
}

// Addresses makes callback URLs under a public base URL.
type Addresses struct {
	base   string
	tokens *Tokens
}

// NewAddresses checks base, the URL vendors reach the gateway's API at
// (https://gateway.example.com), and returns the maker of its callback
// URLs.
func NewAddresses(base string, tokens *Tokens) (*Addresses, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, errors.New("the callback base URL must be an http or https URL with a host and no query, such as https://gateway.example.com")
	}
	return &Addresses{base: strings.TrimRight(base, "/"), tokens: tokens}, nil
}

// URL is where the vendor posts about a job's attempt.
func (a *Addresses) URL(jobID string, attempt int) string {
	return fmt.Sprintf("%s/v1/provider-callbacks/%s/%d?token=%s",
		a.base, url.PathEscape(jobID), attempt, a.tokens.Token(jobID, attempt))
}

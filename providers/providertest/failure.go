package providertest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/providers"
)

// Failure is what a classified call failure must be.
type Failure struct {
	Kind providers.ErrorKind
	// Code is checked when not empty.
	Code string
	// Status is the provider's HTTP status (0 for none); RetryAfter the
	// wait it asked for.
	Status     int
	RetryAfter time.Duration
	// Says is part of the error's message.
	Says string
	// Secret, when not empty, is nowhere in the error's text.
	Secret string
}

// RequireError checks that err is a *providers.Error as want says, and
// returns it.
func RequireError(t testing.TB, err error, want Failure) *providers.Error {
	t.Helper()
	var pe *providers.Error
	require.ErrorAs(t, err, &pe)
	require.Equal(t, want.Kind, pe.Kind, "%v", err)
	if want.Code != "" {
		require.Equal(t, want.Code, pe.Code, "%v", err)
	}
	require.Equal(t, want.Status, pe.StatusCode, "%v", err)
	require.Equal(t, want.RetryAfter, pe.RetryAfter, "%v", err)
	require.Contains(t, pe.Message, want.Says)
	if want.Secret != "" {
		require.NotContains(t, pe.Error(), want.Secret)
	}
	return pe
}

// StatusCase is an answer of a vendor that is not a success, and how the
// adapter must classify it.
type StatusCase struct {
	Name   string
	Status int
	Body   string
	Header []string // name, value pairs
	// What the failure must be: its StatusCode is Status, 0 for a 2xx.
	Kind       providers.ErrorKind
	Code       string
	Says       string
	RetryAfter time.Duration
}

// RunStatusCases runs each case as a parallel subtest against a vendor
// that answers every request with the case's status, body and header:
// calls makes the adapter's calls to v, and each error they return must
// be the case's failure, without secret in its text.
func RunStatusCases(t *testing.T, secret string, cases []StatusCase, calls func(t *testing.T, v *Vendor) []error) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			want := Failure{Kind: tc.Kind, Code: tc.Code, Status: tc.Status, RetryAfter: tc.RetryAfter, Says: tc.Says, Secret: secret}
			if tc.Status/100 == 2 {
				want.Status = 0
			}
			v := NewVendor(t, nil).Answer(tc.Status, tc.Body, tc.Header...)
			for _, err := range calls(t, v) {
				RequireError(t, err, want)
			}
		})
	}
}

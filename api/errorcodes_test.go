package api_test

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/api"
	"github.com/ai-job-gateway/gateway/api/apierror"
	"github.com/ai-job-gateway/gateway/app/jobops"
)

// documentedErrorCodes is the enum of components.schemas.ErrorCode in
// api/openapi.yaml.
func documentedErrorCodes(t *testing.T) []string {
	t.Helper()
	raw, err := api.OpenAPIDocument("", "", "")
	require.NoError(t, err)
	var doc struct {
		Components struct {
			Schemas struct {
				ErrorCode struct {
					Enum []string `json:"enum"`
				} `json:"ErrorCode"`
			} `json:"schemas"`
		} `json:"components"`
	}
	require.NoError(t, json.Unmarshal(raw, &doc))
	require.NotEmpty(t, doc.Components.Schemas.ErrorCode.Enum)
	return doc.Components.Schemas.ErrorCode.Enum
}

// apierrorCodes are the string constants named Code* that api/apierror
// declares, by name; read from its source, since Go cannot list constants.
func apierrorCodes(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("apierror", "*.go"))
	require.NoError(t, err)
	codes := map[string]string{}
	fset := token.NewFileSet()
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, file, nil, 0)
		require.NoError(t, err)
		for _, decl := range f.Decls {
			gen, ok := decl.(*ast.GenDecl)
			if !ok || gen.Tok != token.CONST {
				continue
			}
			for _, spec := range gen.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !strings.HasPrefix(name.Name, "Code") || !ok || lit.Kind != token.STRING {
						continue
					}
					codes[name.Name], err = strconv.Unquote(lit.Value)
					require.NoError(t, err)
				}
			}
		}
	}
	require.NotEmpty(t, codes)
	return codes
}

// TestRefusalCodesAreDocumented: every code app/jobops answers a refusal
// with is in the ErrorCode enum (jobops writes them as strings, since app/
// cannot import api/apierror).
func TestRefusalCodesAreDocumented(t *testing.T) {
	t.Parallel()
	enum := documentedErrorCodes(t)
	codes := jobops.RefusalCodes()
	require.NotEmpty(t, codes)
	for _, code := range codes {
		require.Contains(t, enum, code, "jobops refusal code missing from components.schemas.ErrorCode in api/openapi.yaml")
	}
}

// TestRefusalCodesMatchAPIErrorCodes: a jobops refusal answers with the
// same code as the apierror constant for the same refusal.
func TestRefusalCodesMatchAPIErrorCodes(t *testing.T) {
	t.Parallel()
	for kind, want := range map[error]string{
		jobops.ErrServiceNotEnabled:    apierror.CodeServiceNotEnabled,
		jobops.ErrProviderNotEnabled:   apierror.CodeProviderNotEnabled,
		jobops.ErrServiceDisabled:      apierror.CodeServiceDisabled,
		jobops.ErrUnknownProvider:      apierror.CodeUnknownProvider,
		jobops.ErrUnsupportedOption:    apierror.CodeUnsupportedOption,
		jobops.ErrProviderDisabled:     apierror.CodeProviderDisabled,
		jobops.ErrUnknownPolicy:        apierror.CodeUnknownPolicy,
		jobops.ErrInvalid:              apierror.CodeValidation,
		jobops.ErrRateLimited:          apierror.CodeRateLimited,
		jobops.ErrBudgetExceeded:       apierror.CodeBudgetExceeded,
		jobops.ErrJobFinished:          apierror.CodeJobFinished,
		jobops.ErrNotRetryable:         apierror.CodeJobNotRetryable,
		jobops.ErrNoWebhook:            apierror.CodeJobHasNoWebhook,
		jobops.ErrNotResendable:        apierror.CodeWebhookNotResendable,
		jobops.ErrPayloadUndecryptable: apierror.CodePayloadUndecryptable,
		jobops.ErrUnknownJob:           apierror.CodeNotFound,
		jobops.ErrJobDeleted:           apierror.CodeJobDeleted,
		jobops.ErrCallbackToken:        apierror.CodeForbidden,
		jobops.ErrUnavailable:          apierror.CodeServiceUnavailable,
	} {
		require.Equal(t, want, (&jobops.Error{Kind: kind}).Code(), "code of jobops refusal %q", kind)
	}
}

// TestErrorCodeConstantsAreDocumented: every Code* constant of
// api/apierror is in the ErrorCode enum.
func TestErrorCodeConstantsAreDocumented(t *testing.T) {
	t.Parallel()
	enum := documentedErrorCodes(t)
	for name, code := range apierrorCodes(t) {
		require.Contains(t, enum, code, "apierror.%s missing from components.schemas.ErrorCode in api/openapi.yaml", name)
	}
}

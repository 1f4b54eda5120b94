package apertium_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/providers/apertium"
)

// server is one real APy server for the whole test binary: it takes
// seconds to start its pipelines.
var server struct {
	once sync.Once
	url  string
	err  error
	cmd  *exec.Cmd
}

func TestMain(m *testing.M) {
	code := m.Run()
	if server.cmd != nil {
		_ = server.cmd.Process.Kill()
		_ = server.cmd.Wait()
	}
	os.Exit(code)
}

// apy starts (once) `apertium-apy` with Debian's modes on a free port. It
// skips the test when APy is not installed, unless GATEWAY_REQUIRE_ENGINES=1
// (CI), in which case the test fails.
func apy(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("apertium-apy"); err != nil {
		msg := "apertium-apy is not installed: apt-get install apertium-apy apertium-eng-spa (or make engines)"
		if os.Getenv("GATEWAY_REQUIRE_ENGINES") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	server.once.Do(func() {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			server.err = err
			return
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		server.cmd = exec.Command("apertium-apy", "-p", fmt.Sprint(port), "/usr/share/apertium/modes")
		if server.err = server.cmd.Start(); server.err != nil {
			return
		}
		server.url = fmt.Sprintf("http://127.0.0.1:%d", port)
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			if _, err := apertium.Pairs(context.Background(), http.DefaultClient, server.url); err == nil {
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
		server.err = errors.New("apertium-apy did not answer /listPairs within 30 s")
	})
	require.NoError(t, server.err)
	return server.url
}

func adapter(t *testing.T, baseURL string) (*apertium.Adapter, *providers.Provider) {
	t.Helper()
	p := &providers.Provider{ID: "apertium-local", Settings: map[string]any{"base_url": baseURL},
		Services: map[jobs.ServiceID]*providers.Capability{jobs.Translations: {
			Pricing: providers.Pricing{Unit: providers.PerCharacter, Amount: 0, Currency: "USD"}}}}
	a, err := apertium.New(p)
	require.NoError(t, err)
	return a, p
}

func translate(t *testing.T, a *apertium.Adapter, p *providers.Provider, call providers.Call) (jobs.TranslationResult, error) {
	t.Helper()
	call.Service, call.Provider = jobs.Translations, p
	out, err := a.Run(context.Background(), call)
	var res jobs.TranslationResult
	if err == nil {
		require.NoError(t, json.Unmarshal(out, &res))
	}
	return res, err
}

func TestPairsComeFromTheServer(t *testing.T) {
	t.Parallel()
	pairs, err := apertium.Pairs(context.Background(), http.DefaultClient, apy(t))
	require.NoError(t, err)
	require.Contains(t, pairs, apertium.Pair{Source: "en", Target: "es"})
	require.Contains(t, pairs, apertium.Pair{Source: "es", Target: "en"})
	sources, targets, err := apertium.Languages(pairs)
	require.NoError(t, err)
	require.Contains(t, sources, "en")
	require.Contains(t, targets, "es")
}

func TestTranslatesText(t *testing.T) {
	t.Parallel()
	a, p := adapter(t, apy(t))
	res, err := translate(t, a, p, providers.Call{
		Input:   json.RawMessage(`{"type":"text","content":"Hello world. The house is big.","target_language":"es"}`),
		Options: json.RawMessage(`{"source_language":"en","include_usage":true}`),
	})
	require.NoError(t, err)
	require.Equal(t, "Hola Mundo. La casa es grande.", res.Content)
	require.Equal(t, 30, res.CharacterCount)
	require.Equal(t, "en", res.SourceLanguage)
	require.Equal(t, "es", res.TargetLanguage)
	require.NotNil(t, res.Usage)
	require.Zero(t, *res.Usage.Cost, "a local engine costs what its pricing says: nothing")

	back, err := translate(t, a, p, providers.Call{
		Input:   json.RawMessage(`{"type":"text","content":"La casa es grande.","target_language":"en"}`),
		Options: json.RawMessage(`{"source_language":"es"}`),
	})
	require.NoError(t, err)
	require.Equal(t, "The house is big.", back.Content)
}

func TestTranslatesADocument(t *testing.T) {
	t.Parallel()
	a, p := adapter(t, apy(t))
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "source"), filepath.Join(dir, "translation.txt")
	require.NoError(t, os.WriteFile(src, []byte("Hello world.\nThe house is big.\n"), 0o600))
	res, err := translate(t, a, p, providers.Call{
		Input:      json.RawMessage(`{"type":"document","url":"https://docs.test/a.txt","target_language":"es"}`),
		Options:    json.RawMessage(`{"source_language":"en"}`),
		Media:      &providers.Media{Path: src, ContentType: "text/plain", Size: 30},
		ResultFile: dst,
	})
	require.NoError(t, err)
	got, err := os.ReadFile(dst)
	require.NoError(t, err)
	require.Equal(t, "Hola Mundo.\nLa casa es grande.\n", string(got))
	require.Equal(t, 31, res.CharacterCount)
	require.Empty(t, res.Content, "a document's translation is the file")
}

func TestWhatItCannotDo(t *testing.T) {
	t.Parallel()
	a, p := adapter(t, apy(t))
	kind := func(err error) (providers.ErrorKind, string) {
		var perr *providers.Error
		require.True(t, errors.As(err, &perr), "%v", err)
		return perr.Kind, perr.Code
	}
	_, err := translate(t, a, p, providers.Call{
		Input:   json.RawMessage(`{"type":"text","content":"Hello","target_language":"de"}`),
		Options: json.RawMessage(`{"source_language":"en"}`)})
	k, code := kind(err)
	require.Equal(t, providers.KindPermanent, k, "a pair that is not installed: another provider may have it")
	require.Equal(t, jobs.CodeProviderRejected, code)
	require.ErrorContains(t, err, "That pair is not installed")

	_, err = translate(t, a, p, providers.Call{Input: json.RawMessage(`{"type":"text","content":"Hello","target_language":"es"}`)})
	k, code = kind(err)
	require.Equal(t, providers.KindPermanent, k)
	require.Equal(t, jobs.CodeUnsupportedOption, code, "no source language to translate from")

	_, err = translate(t, a, p, providers.Call{
		Input:   json.RawMessage(`{"type":"text","content":"Hello","target_language":"es"}`),
		Options: json.RawMessage(`{"source_language":"en","formality":"formal"}`)})
	_, code = kind(err)
	require.Equal(t, jobs.CodeUnsupportedOption, code)

	dir := t.TempDir()
	pdf := filepath.Join(dir, "source")
	require.NoError(t, os.WriteFile(pdf, []byte("%PDF-1.4 not really"), 0o600))
	_, err = translate(t, a, p, providers.Call{
		Input:   json.RawMessage(`{"type":"document","url":"https://docs.test/a.pdf","target_language":"es"}`),
		Options: json.RawMessage(`{"source_language":"en"}`),
		Media:   &providers.Media{Path: pdf, ContentType: "application/pdf"}, ResultFile: filepath.Join(dir, "out")})
	_, code = kind(err)
	require.Equal(t, jobs.CodeUnsupportedInput, code)
}

func TestStoppedServerIsRetryable(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	url := "http://" + l.Addr().String()
	require.NoError(t, l.Close())
	a, p := adapter(t, url)
	_, err = translate(t, a, p, providers.Call{
		Input:   json.RawMessage(`{"type":"text","content":"Hello","target_language":"es"}`),
		Options: json.RawMessage(`{"source_language":"en"}`)})
	var perr *providers.Error
	require.True(t, errors.As(err, &perr))
	require.Equal(t, providers.KindRetryable, perr.Kind)
}

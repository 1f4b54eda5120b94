package deepl_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/providers/deepl"
	"github.com/ai-job-gateway/gateway/providers/providertest"
)

const secret = "deepl-secret-key:fx"

const (
	documentID  = "04DE5AD98A02647D83285A36021911C6"
	documentKey = "0CB0054F1C132C1625B392EADDA41CB754A742822F6877173029A6C487E7F60A"
)

// fake speaks DeepL's v2 protocol for one job.
type fake struct {
	texts    []map[string]any // /translate bodies
	uploads  []*multipartUpload
	statuses []string // what successive status checks answer
	checks   int
}

type multipartUpload struct {
	fields map[string]string
	file   string
	name   string
}

func (f *fake) routes(t *testing.T) http.HandlerFunc {
	return providertest.Routes(t, map[string]http.HandlerFunc{
		"POST /v2/translate": func(w http.ResponseWriter, r *http.Request) {
			assert.Equal(t, "application/json", r.Header.Get("Content-Type"))
			var body map[string]any
			assert.NoError(t, json.NewDecoder(r.Body).Decode(&body))
			f.texts = append(f.texts, body)
			providertest.WriteJSON(w, `{"translations":[{"detected_source_language":"EN","text":"Hallo, Welt!"}]}`)
		},
		"POST /v2/document": func(w http.ResponseWriter, r *http.Request) {
			assert.NoError(t, r.ParseMultipartForm(1<<20))
			up := &multipartUpload{fields: map[string]string{}}
			for k, v := range r.MultipartForm.Value {
				up.fields[k] = v[0]
			}
			file, hdr, err := r.FormFile("file")
			if assert.NoError(t, err) {
				data, _ := io.ReadAll(file)
				up.file, up.name = string(data), hdr.Filename
			}
			f.uploads = append(f.uploads, up)
			providertest.WriteJSON(w, `{"document_id":"`+documentID+`","document_key":"`+documentKey+`"}`)
		},
		"POST /v2/document/" + documentID: func(w http.ResponseWriter, r *http.Request) {
			assert.NoError(t, r.ParseForm())
			assert.Equal(t, documentKey, r.PostForm.Get("document_key"))
			status := f.statuses[min(f.checks, len(f.statuses)-1)]
			f.checks++
			switch status {
			case "done":
				providertest.WriteJSON(w, `{"document_id":"`+documentID+`","status":"done","billed_characters":1337}`)
			case "error":
				providertest.WriteJSON(w, `{"document_id":"`+documentID+`","status":"error","error_message":"Source and target language are equal."}`)
			default:
				providertest.WriteJSON(w, `{"document_id":"`+documentID+`","status":"`+status+`","seconds_remaining":2}`)
			}
		},
		"POST /v2/document/" + documentID + "/result": func(w http.ResponseWriter, r *http.Request) {
			assert.NoError(t, r.ParseForm())
			assert.NotEmpty(t, r.PostForm.Get("document_key"))
			w.Header().Set("Content-Type", "text/plain")
			_, _ = io.WriteString(w, "Hallo, Welt!\n")
		},
	})
}

func newAdapter(t *testing.T, f *fake) (*deepl.Adapter, *providers.Provider) {
	t.Helper()
	return adapterOf(t, providertest.NewVendor(t, f.routes(t)))
}

func adapterOf(t *testing.T, v *providertest.Vendor) (*deepl.Adapter, *providers.Provider) {
	t.Helper()
	v.RequireAuth("Authorization", "DeepL-Auth-Key "+secret).Check(func(r *http.Request) {
		assert.Equal(t, http.MethodPost, r.Method)
	})
	p := providertest.Provider("deepl", map[string]any{"base_url": v.URL + "/v2", "api_key_env": "DEEPL_KEY"},
		jobs.Translations, providers.Capability{Pricing: providers.Pricing{Unit: providers.PerCharacter, Amount: 0.00002, Currency: "USD"}})
	a, err := deepl.New(p, providertest.Env("DEEPL_KEY", secret), providers.WithPollInterval(time.Millisecond))
	require.NoError(t, err)
	return a, p
}

func run(t *testing.T, a *deepl.Adapter, p *providers.Provider, call providers.Call) (jobs.TranslationResult, []int, error) {
	t.Helper()
	call.Service, call.Provider = jobs.Translations, p
	return providertest.Run[jobs.TranslationResult](context.Background(), t, a, call)
}

func TestTranslatesText(t *testing.T) {
	t.Parallel()
	f := &fake{}
	a, p := newAdapter(t, f)
	res, _, err := run(t, a, p, providers.Call{
		Input:   json.RawMessage(`{"type":"text","content":"Hello, world!","target_language":"de"}`),
		Options: json.RawMessage(`{"formality":"formal","include_usage":true}`)})
	require.NoError(t, err)
	require.Equal(t, map[string]any{"text": []any{"Hello, world!"}, "target_lang": "DE", "formality": "prefer_more"}, f.texts[0],
		"no source_lang: DeepL detects it")
	require.Equal(t, "Hallo, Welt!", res.Content)
	require.Equal(t, "en", res.SourceLanguage, "the detected language")
	require.Equal(t, 13, res.CharacterCount)
	require.InDelta(t, 0.00026, *res.Usage.Cost, 1e-12)

	for _, tc := range []struct{ options, target, source, formality string }{
		{`{"source_language":"en-GB"}`, "en", "EN", ""},
		{`{"formality":"informal","source_language":"auto"}`, "pt-BR", "", "prefer_less"},
		{`{"formality":"default"}`, "pt", "", ""},
	} {
		_, _, err := run(t, a, p, providers.Call{
			Input:   json.RawMessage(`{"type":"text","content":"x","target_language":"` + tc.target + `"}`),
			Options: json.RawMessage(tc.options)})
		require.NoError(t, err)
		body := f.texts[len(f.texts)-1]
		require.Equal(t, map[string]string{"en": "EN-US", "pt-BR": "PT-BR", "pt": "PT-PT"}[tc.target], body["target_lang"])
		if tc.source == "" {
			require.NotContains(t, body, "source_lang")
		} else {
			require.Equal(t, tc.source, body["source_lang"])
		}
		if tc.formality == "" {
			require.NotContains(t, body, "formality")
		} else {
			require.Equal(t, tc.formality, body["formality"])
		}
	}
}

func TestTranslatesADocument(t *testing.T) {
	t.Parallel()
	f := &fake{statuses: []string{"queued", "translating", "done"}}
	a, p := newAdapter(t, f)
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "source"), filepath.Join(dir, "translation.txt")
	require.NoError(t, os.WriteFile(src, []byte("Hello, world!\n"), 0o600))
	res, progress, err := run(t, a, p, providers.Call{
		Input:   json.RawMessage(`{"type":"document","url":"https://docs.test/letter.TXT?sig=1","target_language":"de"}`),
		Options: json.RawMessage(`{"source_language":"en","formality":"informal"}`),
		Media:   &providers.Media{Path: src, ContentType: "text/plain", Size: 14}, ResultFile: dst})
	require.NoError(t, err)
	up := f.uploads[0]
	require.Equal(t, map[string]string{"target_lang": "DE", "source_lang": "EN", "formality": "prefer_less"}, up.fields)
	require.Equal(t, "Hello, world!\n", up.file)
	require.Equal(t, "document.txt", up.name, "DeepL reads the format from the extension")
	require.Equal(t, 3, f.checks)
	got, err := os.ReadFile(dst)
	require.NoError(t, err)
	require.Equal(t, "Hallo, Welt!\n", string(got))
	require.Equal(t, 1337, res.CharacterCount, "DeepL's billed characters")
	require.Equal(t, []int{0, 10, 50, 100}, progress)

	f.statuses, f.checks = []string{"error"}, 0
	_, _, err = run(t, a, p, providers.Call{
		Input: json.RawMessage(`{"type":"document","url":"https://docs.test/a.txt","target_language":"de"}`),
		Media: &providers.Media{Path: src}, ResultFile: dst})
	providertest.RequireError(t, err, providertest.Failure{Kind: providers.KindPermanent, Says: "Source and target language are equal.", Secret: secret})

	_, _, err = run(t, a, p, providers.Call{Input: json.RawMessage(`{"type":"document","url":"https://docs.test/a.txt","target_language":"de"}`)})
	providertest.RequireError(t, err, providertest.Failure{Kind: providers.KindPermanent, Says: "media stage", Secret: secret})
}

func TestErrorsAreClassified(t *testing.T) {
	t.Parallel()
	retry := []string{"Retry-After", "3"}
	providertest.RunStatusCases(t, secret, []providertest.StatusCase{
		{Name: "rate limited", Status: 429, Body: `{"message":"Too many requests"}`, Header: retry, Kind: providers.KindRetryable, Says: "Too many requests", RetryAfter: 3 * time.Second},
		{Name: "quota", Status: 456, Body: `{"message":"Quota exceeded"}`, Header: retry, Kind: providers.KindPermanent, Says: "quota is used up"},
		{Name: "server error", Status: 500, Body: ``, Header: retry, Kind: providers.KindRetryable, Says: "answered 500", RetryAfter: 3 * time.Second},
		{Name: "wrong endpoint", Status: 403, Body: `{"message":"Wrong endpoint. Use https://api-free.deepl.com"}`, Header: retry, Kind: providers.KindPermanent, Says: "Wrong endpoint"},
		{Name: "bad request", Status: 400, Body: `{"message":"Value for 'target_lang' not supported."}`, Header: retry, Kind: providers.KindPermanent, Says: "target_lang"},
	}, func(t *testing.T, v *providertest.Vendor) []error {
		a, p := adapterOf(t, v)
		_, _, err := run(t, a, p, providers.Call{Input: json.RawMessage(`{"type":"text","content":"x","target_language":"de"}`)})
		return []error{err}
	})

	_, err := deepl.New(&providers.Provider{ID: "d", Settings: map[string]any{"api_key_env": "NOPE"}}, providertest.NoEnv())
	require.ErrorContains(t, err, "NOPE, but that environment variable is not set")
}

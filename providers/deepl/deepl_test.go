package deepl_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/providers/deepl"
)

const secret = "deepl-secret-key:fx"

// fake speaks DeepL's v2 protocol for one job.
type fake struct {
	mu       sync.Mutex
	texts    []map[string]any // /translate bodies
	uploads  []*multipartUpload
	statuses []string // what successive status checks answer
	checks   int
	fail     int    // status code every request answers, when set
	failBody string // its body
	header   http.Header
}

type multipartUpload struct {
	fields map[string]string
	file   string
	name   string
}

func (f *fake) serve(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		assert.Equal(t, "DeepL-Auth-Key "+secret, r.Header.Get("Authorization"))
		assert.Equal(t, http.MethodPost, r.Method)
		if f.fail != 0 {
			for k, v := range f.header {
				w.Header()[k] = v
			}
			w.WriteHeader(f.fail)
			_, _ = io.WriteString(w, f.failBody)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/v2/translate":
			assert.Equal(t, "application/json", r.Header.Get("Content-Type"))
			var body map[string]any
			assert.NoError(t, json.NewDecoder(r.Body).Decode(&body))
			f.texts = append(f.texts, body)
			_, _ = io.WriteString(w, `{"translations":[{"detected_source_language":"EN","text":"Hallo, Welt!"}]}`)
		case r.URL.Path == "/v2/document":
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
			_, _ = io.WriteString(w, `{"document_id":"04DE5AD98A02647D83285A36021911C6","document_key":"0CB0054F1C132C1625B392EADDA41CB754A742822F6877173029A6C487E7F60A"}`)
		case r.URL.Path == "/v2/document/04DE5AD98A02647D83285A36021911C6":
			assert.NoError(t, r.ParseForm())
			assert.Equal(t, "0CB0054F1C132C1625B392EADDA41CB754A742822F6877173029A6C487E7F60A", r.PostForm.Get("document_key"))
			status := f.statuses[min(f.checks, len(f.statuses)-1)]
			f.checks++
			switch status {
			case "done":
				_, _ = io.WriteString(w, `{"document_id":"04DE5AD98A02647D83285A36021911C6","status":"done","billed_characters":1337}`)
			case "error":
				_, _ = io.WriteString(w, `{"document_id":"04DE5AD98A02647D83285A36021911C6","status":"error","error_message":"Source and target language are equal."}`)
			default:
				_, _ = io.WriteString(w, `{"document_id":"04DE5AD98A02647D83285A36021911C6","status":"`+status+`","seconds_remaining":2}`)
			}
		case r.URL.Path == "/v2/document/04DE5AD98A02647D83285A36021911C6/result":
			assert.NoError(t, r.ParseForm())
			assert.NotEmpty(t, r.PostForm.Get("document_key"))
			w.Header().Set("Content-Type", "text/plain")
			_, _ = io.WriteString(w, "Hallo, Welt!\n")
		default:
			t.Errorf("unexpected request %s %s", r.Method, r.URL)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func newAdapter(t *testing.T, f *fake) (*deepl.Adapter, *providers.Provider) {
	t.Helper()
	srv := f.serve(t)
	p := &providers.Provider{ID: "deepl", Settings: map[string]any{"base_url": srv.URL + "/v2", "api_key_env": "DEEPL_KEY"},
		Services: map[jobs.ServiceID]*providers.Capability{jobs.Translations: {
			Pricing: providers.Pricing{Unit: providers.PerCharacter, Amount: 0.00002, Currency: "USD"}}}}
	a, err := deepl.New(p, providers.WithLookupEnv(func(name string) (string, bool) { return secret, name == "DEEPL_KEY" }), providers.WithPollInterval(time.Millisecond))
	require.NoError(t, err)
	return a, p
}

func run(t *testing.T, a *deepl.Adapter, p *providers.Provider, call providers.Call) (jobs.TranslationResult, []int, error) {
	t.Helper()
	var progress []int
	call.Service, call.Provider = jobs.Translations, p
	call.Report = func(v int) { progress = append(progress, v) }
	out, err := a.Run(context.Background(), call)
	var res jobs.TranslationResult
	if err == nil {
		require.NoError(t, json.Unmarshal(out, &res))
	}
	return res, progress, err
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
	requireKind(t, err, providers.KindPermanent, 0, "Source and target language are equal.")

	_, _, err = run(t, a, p, providers.Call{Input: json.RawMessage(`{"type":"document","url":"https://docs.test/a.txt","target_language":"de"}`)})
	requireKind(t, err, providers.KindPermanent, 0, "media stage")
}

func requireKind(t *testing.T, err error, kind providers.ErrorKind, status int, want string) *providers.Error {
	t.Helper()
	var perr *providers.Error
	require.True(t, errors.As(err, &perr), "%v", err)
	require.Equal(t, kind, perr.Kind, "%v", err)
	require.Equal(t, status, perr.StatusCode)
	require.Contains(t, perr.Error(), want)
	require.NotContains(t, perr.Error(), secret)
	return perr
}

func TestErrorsAreClassified(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status int
		body   string
		kind   providers.ErrorKind
		want   string
		after  time.Duration
	}{
		{429, `{"message":"Too many requests"}`, providers.KindRetryable, "Too many requests", 3 * time.Second},
		{456, `{"message":"Quota exceeded"}`, providers.KindPermanent, "quota is used up", 0},
		{500, ``, providers.KindRetryable, "answered 500", 3 * time.Second},
		{403, `{"message":"Wrong endpoint. Use https://api-free.deepl.com"}`, providers.KindPermanent, "Wrong endpoint", 0},
		{400, `{"message":"Value for 'target_lang' not supported."}`, providers.KindPermanent, "target_lang", 0},
	} {
		f := &fake{fail: tc.status, failBody: tc.body, header: http.Header{"Retry-After": {"3"}}}
		a, p := newAdapter(t, f)
		_, _, err := run(t, a, p, providers.Call{Input: json.RawMessage(`{"type":"text","content":"x","target_language":"de"}`)})
		perr := requireKind(t, err, tc.kind, tc.status, tc.want)
		require.Equal(t, tc.after, perr.RetryAfter, "%d", tc.status)
	}
	_, err := deepl.New(&providers.Provider{ID: "d", Settings: map[string]any{"api_key_env": "NOPE"}}, providers.WithLookupEnv(func(string) (string, bool) { return "", false }))
	require.ErrorContains(t, err, "NOPE, but that environment variable is not set")
}

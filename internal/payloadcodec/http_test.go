package payloadcodec_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/ai-job-gateway/gateway/internal/payloadcodec"
)

// remote is the SDK's client of a codec server at srv's /codec, sending
// scope (when set) in the scope header.
func remote(srv *httptest.Server, scope string) converter.PayloadCodec {
	return converter.NewRemotePayloadCodec(converter.RemotePayloadCodecOptions{
		Endpoint: srv.URL + "/codec",
		Client:   *srv.Client(),
		ModifyRequest: func(r *http.Request) error {
			if scope != "" {
				r.Header.Set(payloadcodec.ScopeHeader, scope)
			}
			return nil
		},
	})
}

func post(t *testing.T, srv *httptest.Server, path string, payloads ...*commonpb.Payload) (int, string) {
	t.Helper()
	body, err := protojson.Marshal(&commonpb.Payloads{Payloads: payloads})
	require.NoError(t, err)
	resp, err := srv.Client().Post(srv.URL+path, "application/json", strings.NewReader(string(body)))
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	text, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(text)
}

func TestHandler(t *testing.T) {
	t.Parallel()
	s := newSetup(t, "k1", map[string][]byte{"k1": key1})
	mux := http.NewServeMux()
	mux.Handle("/codec/", s.enc.Handler())
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	originals := []*commonpb.Payload{plain(t, "shown in the UI"), plain(t, 42)}
	encrypted, err := remote(srv, "acme").Encode(originals)
	require.NoError(t, err)
	for i, p := range encrypted {
		require.Equal(t, "acme", meta(p, payloadcodec.MetadataScope))
		requireDecodes(t, s.enc.Codec("acme"), p, originals[i])
	}

	// Decoding needs no scope; what was never encrypted comes back as is.
	local := encode(t, s.enc.Codec("globex"), originals[0])[0]
	decoded, err := remote(srv, "").Decode([]*commonpb.Payload{encrypted[0], local, originals[1]})
	require.NoError(t, err)
	for i, want := range []*commonpb.Payload{originals[0], originals[0], originals[1]} {
		require.Equal(t, want.Data, decoded[i].Data)
		require.Equal(t, want.Metadata, decoded[i].Metadata)
	}

	t.Run("encode without a scope", func(t *testing.T) {
		status, body := post(t, srv, "/codec/encode", originals[0])
		require.Equal(t, http.StatusBadRequest, status)
		require.Contains(t, body, payloadcodec.ScopeHeader)
	})
	t.Run("undecodable payload", func(t *testing.T) {
		s.secrets.Delete("globex")
		s.enc.Forget("globex")
		status, body := post(t, srv, "/codec/decode", local)
		require.Equal(t, http.StatusBadRequest, status)
		require.Contains(t, body, "scope secret deleted")
		require.NotContains(t, body, "shown in the UI")
	})
	t.Run("not POST", func(t *testing.T) {
		resp, err := srv.Client().Get(srv.URL + "/codec/decode")
		require.NoError(t, err)
		_ = resp.Body.Close()
		require.Equal(t, http.StatusNotFound, resp.StatusCode)
	})
	t.Run("unknown path", func(t *testing.T) {
		status, _ := post(t, srv, "/codec/other", originals[0])
		require.Equal(t, http.StatusNotFound, status)
	})
}

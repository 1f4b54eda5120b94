package builtin

import (
	"net/http"

	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/providers/openai"
	"github.com/ai-job-gateway/gateway/providers/sandbox"
)

// FactoriesWithMediaClient is Factories with adapters fetching media
// through client (a netguard client, so media on internal addresses is
// refused). The openai adapter keeps its own client for the provider's API,
// which may well be on a private network.
func FactoriesWithMediaClient(client *http.Client) map[string]providers.Factory {
	f := Factories()
	f["sandbox"] = func(p *providers.Provider) (providers.Adapter, error) {
		a, err := sandbox.New(p, sandbox.WithHTTPClient(client))
		if err != nil {
			return nil, err
		}
		return a, nil
	}
	f["openai"] = func(p *providers.Provider) (providers.Adapter, error) {
		return openai.New(p, openai.WithMediaClient(client))
	}
	return f
}

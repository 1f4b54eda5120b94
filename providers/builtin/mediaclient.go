package builtin

import (
	"net/http"

	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/providers/sandbox"
)

// FactoriesWithMediaClient is Factories with sandbox adapters fetching
// media through client (a netguard client, so media on internal addresses
// is refused). The openai adapter keeps its own client: it uses one client
// for the provider's API, which may well be on a private network, and for
// media.
func FactoriesWithMediaClient(client *http.Client) map[string]providers.Factory {
	f := Factories()
	f["sandbox"] = func(p *providers.Provider) (providers.Adapter, error) {
		a, err := sandbox.New(p, sandbox.WithHTTPClient(client))
		if err != nil {
			return nil, err
		}
		return a, nil
	}
	return f
}

// Package builtin lists the adapters that ship with the gateway.
package builtin

import (
	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/providers/anthropic"
	"github.com/ai-job-gateway/gateway/providers/apertium"
	"github.com/ai-job-gateway/gateway/providers/assemblyai"
	"github.com/ai-job-gateway/gateway/providers/deepgram"
	"github.com/ai-job-gateway/gateway/providers/deepl"
	"github.com/ai-job-gateway/gateway/providers/mediaengine"
	"github.com/ai-job-gateway/gateway/providers/openai"
	"github.com/ai-job-gateway/gateway/providers/sandbox"
)

// Factories returns the built-in adapter factories keyed by adapter name.
func Factories() map[string]providers.Factory {
	return map[string]providers.Factory{
		"sandbox": func(p *providers.Provider) (providers.Adapter, error) {
			a, err := sandbox.New(p)
			if err != nil {
				return nil, err
			}
			return a, nil
		},
		"anthropic": func(p *providers.Provider) (providers.Adapter, error) {
			a, err := anthropic.New(p)
			if err != nil {
				return nil, err
			}
			return a, nil
		},
		"assemblyai": func(p *providers.Provider) (providers.Adapter, error) {
			a, err := assemblyai.New(p, nil)
			if err != nil {
				return nil, err
			}
			return a, nil
		},
		"apertium": func(p *providers.Provider) (providers.Adapter, error) {
			a, err := apertium.New(p)
			if err != nil {
				return nil, err
			}
			return a, nil
		},
		"deepgram": func(p *providers.Provider) (providers.Adapter, error) {
			a, err := deepgram.New(p, nil)
			if err != nil {
				return nil, err
			}
			return a, nil
		},
		"deepl": func(p *providers.Provider) (providers.Adapter, error) {
			a, err := deepl.New(p, nil)
			if err != nil {
				return nil, err
			}
			return a, nil
		},
		"media": func(p *providers.Provider) (providers.Adapter, error) {
			a, err := mediaengine.New(p)
			if err != nil {
				return nil, err
			}
			return a, nil
		},
		"openai": func(p *providers.Provider) (providers.Adapter, error) {
			a, err := openai.New(p)
			if err != nil {
				return nil, err
			}
			return a, nil
		},
	}
}

// WithCallbacks switches the adapters whose vendors can post results back
// (deepgram) to that mode, for a gateway that takes vendor callbacks
// (docs/providers.md, Vendor callbacks).
func WithCallbacks(f map[string]providers.Factory) map[string]providers.Factory {
	f["deepgram"] = func(p *providers.Provider) (providers.Adapter, error) {
		a, err := deepgram.NewWithCallbacks(p, nil)
		if err != nil {
			return nil, err
		}
		return a, nil
	}
	return f
}

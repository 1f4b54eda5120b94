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
	"github.com/ai-job-gateway/gateway/providers/sphinx"
)

// Factories returns the built-in adapter factories keyed by adapter name;
// every adapter's New gets opts (see providers.Option). With
// providers.WithCallbacks, deepgram is built in callback mode
// (docs/providers.md, Vendor callbacks).
func Factories(opts ...providers.Option) map[string]providers.Factory {
	deepgramFactory := factory(deepgram.New, opts)
	if providers.NewOptions(opts...).Callbacks {
		deepgramFactory = factory(deepgram.NewWithCallbacks, opts)
	}
	return map[string]providers.Factory{
		"sandbox":    factory(sandbox.New, opts),
		"anthropic":  factory(anthropic.New, opts),
		"assemblyai": factory(assemblyai.New, opts),
		"apertium":   factory(apertium.New, opts),
		"deepgram":   deepgramFactory,
		"deepl":      factory(deepl.New, opts),
		"media":      factory(mediaengine.New, opts),
		"openai":     factory(openai.New, opts),
		"sphinx":     factory(sphinx.New, opts),
	}
}

// factory turns an adapter's New into a Factory.
func factory[A providers.Adapter](newAdapter func(*providers.Provider, ...providers.Option) (A, error), opts []providers.Option) providers.Factory {
	return func(p *providers.Provider) (providers.Adapter, error) {
		a, err := newAdapter(p, opts...)
		if err != nil {
			return nil, err // not a typed nil in the interface
		}
		return a, nil
	}
}

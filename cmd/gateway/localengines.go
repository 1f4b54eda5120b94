//go:build !nodev

package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ai-job-gateway/gateway/cmd/gateway/internal/devtemporal"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/providers/apertium"
	"github.com/ai-job-gateway/gateway/providers/mediaengine"
	"github.com/ai-job-gateway/gateway/providers/sphinx"
)

// Local engines in dev (docs/providers.md, Local engines in dev):
// `gateway dev --local-engines` adds to the catalog each engine the gateway
// can run on this machine, starting its server when it has one; the ones
// this machine lacks are listed as disabled, with what is missing.

// Provider ids of the local engines.
const (
	apertiumLocalID = "apertium-local"
	mediaLocalID    = "media-local"
	sphinxLocalID   = "sphinx-local"
)

// apertiumModes is where Debian's Apertium packages install their modes.
const apertiumModes = "/usr/share/apertium/modes"

// localEngines is what dev found, and the servers it started.
type localEngines struct {
	providers []*providers.Provider
	apy       *exec.Cmd
}

// startLocalEngines finds the local engines and starts the servers they
// need; stop ends them. Nothing found is not an error: each engine missing
// is a disabled provider and a line in the log.
func startLocalEngines(ctx context.Context, dataDir string, logger *slog.Logger) (*localEngines, error) {
	e := &localEngines{}
	var found, missing []string
	note := func(p *providers.Provider) {
		if p.Status == providers.StatusDisabled {
			missing = append(missing, p.ID+" ("+p.StatusReason+")")
		} else {
			found = append(found, p.ID)
		}
		e.providers = append(e.providers, p)
	}
	speech := sphinxEngine()
	note(speech)
	note(mediaEngine(speech.Status == providers.StatusActive))
	apy, err := e.startApertium(ctx, dataDir, logger)
	if err != nil {
		return nil, err
	}
	note(apy)
	logger.Info("local engines", "found", strings.Join(found, ", "), "missing", strings.Join(missing, "; "))
	return e, nil
}

// catalogEntries are the providers to add to the catalog; none when e is
// nil (--local-engines not given).
func (e *localEngines) catalogEntries() []*providers.Provider {
	if e == nil {
		return nil
	}
	return e.providers
}

// stop ends the servers dev started.
func (e *localEngines) stop() {
	if e == nil || e.apy == nil || e.apy.Process == nil {
		return
	}
	_ = e.apy.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = e.apy.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = e.apy.Process.Kill()
		<-done
	}
}

// sphinxEngine is the sphinx-local provider: English transcriptions with
// PocketSphinx, one recognizer process per chunk of audio.
func sphinxEngine() *providers.Provider {
	p := &providers.Provider{ID: sphinxLocalID, Name: "PocketSphinx (local, English)", Adapter: "sphinx", Quality: 0.4,
		Status: providers.StatusActive,
		Services: map[jobs.ServiceID]*providers.Capability{jobs.Transcriptions: {
			Features:  []string{"timestamps"},
			Languages: []string{"en"},
			Limits:    providers.Limits{RequestsPerMinute: 60, RequestsPerDay: 10000, MaxFileSizeMB: 500, MaxDurationSeconds: 7200},
			Pricing:   providers.Pricing{Unit: providers.PerMinute, Amount: 0, Currency: "USD"},
			Status:    providers.StatusActive,
		}}}
	if _, err := sphinx.Find(sphinx.DefaultModelDir); err != nil {
		p.Status, p.StatusReason = providers.StatusDisabled, err.Error()
	}
	return p
}

// mediaEngine is the media-local provider: scenes and OCR with ffmpeg and
// tesseract, and speech_to_text by sphinx-local when it runs here.
func mediaEngine(speech bool) *providers.Provider {
	features := mediaengine.Features
	if speech {
		features = append(slices.Clone(features), mediaengine.SpeechToText)
	}
	p := &providers.Provider{ID: mediaLocalID, Name: "Local media engine (ffmpeg, tesseract)", Adapter: "media", Quality: 0.6,
		Status: providers.StatusActive,
		Services: map[jobs.ServiceID]*providers.Capability{jobs.VideoAnalyses: {
			Features: features,
			Limits:   providers.Limits{RequestsPerMinute: 60, RequestsPerDay: 10000, MaxFileSizeMB: 2000, MaxDurationSeconds: 7200},
			Pricing:  providers.Pricing{Unit: providers.PerMinute, Amount: 0, Currency: "USD"},
			Status:   providers.StatusActive,
		}}}
	if speech {
		p.Name = "Local media engine (ffmpeg, tesseract, PocketSphinx)"
		p.Settings = map[string]any{"speech_provider": sphinxLocalID, "speech_provider_keeps_nothing": true}
	}
	if _, _, err := mediaengine.Find(); err != nil {
		p.Status, p.StatusReason = providers.StatusDisabled, err.Error()
	}
	return p
}

// startApertium starts apertium-apy on a free loopback port and waits
// until it lists its pairs: the provider's languages are those pairs.
func (e *localEngines) startApertium(ctx context.Context, dataDir string, logger *slog.Logger) (*providers.Provider, error) {
	p := &providers.Provider{ID: apertiumLocalID, Name: "Apertium (local)", Adapter: "apertium", Quality: 0.6, LatencyMSHint: 300,
		Status: providers.StatusActive,
		Services: map[jobs.ServiceID]*providers.Capability{jobs.Translations: {
			Limits:  providers.Limits{RequestsPerMinute: 600, RequestsPerDay: 100000, MaxFileSizeMB: 10, MaxDurationSeconds: 600},
			Pricing: providers.Pricing{Unit: providers.PerCharacter, Amount: 0, Currency: "USD"},
			Status:  providers.StatusActive,
		}}}
	disabled := func(reason string) (*providers.Provider, error) {
		p.Status, p.StatusReason = providers.StatusDisabled, reason
		p.Settings = map[string]any{"base_url": "http://127.0.0.1:2737"}
		return p, nil
	}
	bin, err := exec.LookPath("apertium-apy")
	if err != nil {
		return disabled("apertium-apy not found on PATH: install it (Debian or Ubuntu: apt-get install apertium-apy apertium-eng-spa, or make engines)")
	}
	if _, err := os.Stat(apertiumModes); err != nil {
		return disabled("no Apertium language pair is installed (" + apertiumModes + " is missing): apt-get install apertium-eng-spa, or make engines")
	}
	port, err := devtemporal.FreePort("127.0.0.1")
	if err != nil {
		return nil, err
	}
	baseURL := "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	logFile, err := os.Create(filepath.Join(dataDir, "apertium-apy.log"))
	if err != nil {
		return nil, fmt.Errorf("local engines: %w", err)
	}
	defer logFile.Close()
	cmd := exec.Command(bin, "-p", strconv.Itoa(port), apertiumModes)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return disabled("apertium-apy did not start: " + err.Error())
	}
	e.apy = cmd
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for {
		pairs, err := apertium.Pairs(ctx, client, baseURL)
		if err == nil {
			sources, targets, err := apertium.Languages(pairs)
			if err != nil {
				return disabled(err.Error())
			}
			capab := p.Services[jobs.Translations]
			capab.SourceLanguages, capab.TargetLanguages = sources, targets
			p.Settings = map[string]any{"base_url": baseURL}
			logger.Debug("apertium-apy started", "url", baseURL, "log", logFile.Name())
			return p, nil
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return disabled(fmt.Sprintf("apertium-apy did not answer within 30 s (see %s): %v", logFile.Name(), errors.Join(err, ctx.Err())))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

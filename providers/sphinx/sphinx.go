// Package sphinx is the "sphinx" adapter: English transcriptions on the
// worker itself with CMU PocketSphinx (pocketsphinx_continuous and its
// US English model, Debian's pocketsphinx and pocketsphinx-en-us), no
// account and no network (docs/providers.md, sphinx). It reads the 16 kHz
// mono audio the media stage extracted, in chunks cut at pauses, one
// recognizer process per chunk, so memory stays flat whatever the length.
package sphinx

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/text/language"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/providers/internal/settings"
	"github.com/ai-job-gateway/gateway/providers/internal/usage"
)

// Recognizer is the program the adapter runs.
const Recognizer = "pocketsphinx_continuous"

// DefaultModelDir is where Debian's pocketsphinx-en-us installs the model.
const DefaultModelDir = "/usr/share/pocketsphinx/model/en-us"

// install says how to get the engine.
const install = "Debian or Ubuntu: apt-get install pocketsphinx pocketsphinx-en-us, or make engines"

// Settings are the sphinx adapter's provider settings.
type Settings struct {
	// ModelDir holds the acoustic model (en-us/), the language model
	// (en-us.lm.bin) and the dictionary (cmudict-en-us.dict); default
	// DefaultModelDir.
	ModelDir string `json:"model_dir"`
	// MaxChunkSeconds is the longest audio one recognizer process is
	// given (default 30, at most maxChunkSeconds); a chunk ends at the
	// quietest point of its second half.
	MaxChunkSeconds float64 `json:"max_chunk_seconds"`
}

// maxChunkSeconds bounds max_chunk_seconds: the cut-point search reads
// half a chunk into memory (docs/providers.md, sphinx).
const maxChunkSeconds = 120

// model is the files of an acoustic and language model.
type model struct{ hmm, lm, dict string }

// Adapter transcribes English speech with local recognizer processes.
type Adapter struct {
	provider *providers.Provider
	bin      string
	model    model
	maxChunk int64 // samples
	// timeoutFloor is the least time a chunk's recognizer is given
	// (zero: defaultTimeoutFloor); tests make it small.
	timeoutFloor time.Duration
	// observe, when set (tests), sees each finished recognizer process.
	observe func(*os.ProcessState)
}

// Find reports whether the recognizer and its model are installed: the
// program's path, or an error that says what is missing and how to
// install it.
func Find(modelDir string) (string, error) {
	bin, err := exec.LookPath(Recognizer)
	if err != nil {
		return "", fmt.Errorf("%s not found on PATH: install it (%s)", Recognizer, install)
	}
	for _, f := range modelFiles(modelDir) {
		if _, err := os.Stat(f); err != nil {
			return "", fmt.Errorf("the PocketSphinx English model is missing (%s): install it (%s)", f, install)
		}
	}
	return bin, nil
}

func modelFiles(dir string) []string {
	m := modelIn(dir)
	return []string{m.hmm, m.lm, m.dict}
}

func modelIn(dir string) model {
	return model{hmm: filepath.Join(dir, "en-us"), lm: filepath.Join(dir, "en-us.lm.bin"), dict: filepath.Join(dir, "cmudict-en-us.dict")}
}

// New builds the adapter of p; it fails when the recognizer or its model
// is missing. It calls no API, so it has no use for options.
func New(p *providers.Provider, _ ...providers.Option) (*Adapter, error) {
	s := Settings{ModelDir: DefaultModelDir, MaxChunkSeconds: 30}
	if err := settings.Decode(p.Settings, &s); err != nil {
		return nil, err
	}
	if s.MaxChunkSeconds < 2 || s.MaxChunkSeconds > maxChunkSeconds {
		return nil, fmt.Errorf("settings: max_chunk_seconds %g must be from 2 to %d (the default, 30, suits any length of audio)", s.MaxChunkSeconds, maxChunkSeconds)
	}
	bin, err := Find(s.ModelDir)
	if err != nil {
		return nil, err
	}
	return &Adapter{provider: p, bin: bin, model: modelIn(s.ModelDir), maxChunk: int64(s.MaxChunkSeconds * sampleRate)}, nil
}

// Services are transcriptions.
func (a *Adapter) Services() []jobs.ServiceID { return []jobs.ServiceID{jobs.Transcriptions} }

// VendorRetention is PurgeNotRetained: the recognizer keeps nothing of a
// call (docs/providers.md, Deleting a job's vendor copy).
func (a *Adapter) VendorRetention() providers.PurgeOutcome { return providers.PurgeNotRetained }

// Run transcribes the audio the media stage extracted.
func (a *Adapter) Run(ctx context.Context, call providers.Call) (json.RawMessage, error) {
	var in jobs.TranscriptionInput
	var opts jobs.TranscriptionOptions
	if err := call.Decode(&in, &opts); err != nil {
		return nil, err
	}
	if opts.WantsDiarization() {
		return nil, providers.Permanent(jobs.CodeUnsupportedOption,
			fmt.Sprintf("provider %q cannot label speakers (diarization)", a.provider.ID), nil)
	}
	if !english(opts.Language) {
		return nil, providers.Permanent(jobs.CodeUnsupportedOption,
			fmt.Sprintf("provider %q transcribes English only, not %s", a.provider.ID, opts.Language), nil)
	}
	if call.Media == nil {
		return nil, providers.Permanent(jobs.CodeUnsupportedInput,
			"the sphinx adapter reads the audio the gateway's media stage extracted, and this job has none", nil)
	}
	for _, f := range []string{a.bin, a.model.hmm, a.model.lm, a.model.dict} {
		if _, err := os.Stat(f); err != nil {
			return nil, a.gone(f, err)
		}
	}
	audio, err := openPCM(call.Media.Path)
	switch {
	case errors.Is(err, errNotWAV):
		return nil, providers.InputError(jobs.CodeAudioUnreadable, "the audio cannot be read: "+err.Error(), err)
	case errors.Is(err, errNotPCM):
		// The media stage writes 16 kHz mono: another format is the
		// gateway's mismatch, not the job's, and another provider may
		// read it.
		return nil, providers.Permanent(jobs.CodeUnsupportedInput,
			fmt.Sprintf("provider %q reads the 16 kHz mono audio the media stage writes: %v", a.provider.ID, err), err)
	case err != nil:
		return nil, fmt.Errorf("sphinx: %w", err)
	}
	defer audio.Close()

	call.Progress(0)
	var utterances [][]word
	cmn := ""
	for start := int64(0); start < audio.samples; {
		end, err := audio.nextCut(start, a.maxChunk)
		if err != nil {
			return nil, fmt.Errorf("sphinx: read the audio: %w", err)
		}
		chunk, chunkCMN, err := a.recognize(ctx, audio.section(start, end), seconds(start), seconds(end-start), cmn)
		if err != nil {
			return nil, err
		}
		if chunkCMN != "" { // a chunk with no speech reports none: keep the one before
			cmn = chunkCMN
		}
		utterances = append(utterances, chunk...)
		start = end
		call.Progress(int(100 * start / audio.samples))
	}

	duration := call.Media.Duration
	if duration <= 0 {
		duration = round(seconds(audio.samples))
	}
	res := jobs.TranscriptionResult{Format: opts.EffectiveFormat(), Duration: duration, Language: "en"}
	segs := segments(utterances)
	texts := make([]string, len(segs))
	for i, s := range segs {
		texts[i] = s.Text
	}
	res.Text = strings.Join(texts, " ")
	if opts.WantsTimestamps() {
		res.Segments = segs
	}
	if opts.IncludeUsage {
		res.Usage = usage.New(-1, -1, usage.Cost(call.Capability().Pricing, usage.Metered{Minutes: duration / 60}))
	}
	return json.Marshal(res)
}

// english reports whether a job's language is English, or not given.
func english(code string) bool {
	if code == "" || code == "auto" {
		return true
	}
	tag, err := language.Parse(code)
	if err != nil {
		return false
	}
	base, _ := tag.Base()
	return base.String() == "en"
}

// gone is the error of a call that finds the recognizer or its model
// (missing) uninstalled since the worker started: another provider may
// do the job.
func (a *Adapter) gone(missing string, err error) error {
	return providers.Permanent(jobs.CodeProviderRejected,
		fmt.Sprintf("provider %q cannot run: %s is no longer installed (%s)", a.provider.ID, missing, install), err)
}

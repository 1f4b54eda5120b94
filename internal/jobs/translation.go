package jobs

import (
	"encoding/json"
)

// Translations is the service id.
const Translations ServiceID = "translations"

// TranslationFeatures are the capability features of translations.
var TranslationFeatures = []string{"language_detection", "formality"}

func init() {
	Register[Translation](Service{
		ID:              Translations,
		Order:           2,
		Name:            "Translations",
		Description:     "Text or document translation.",
		JobType:         "translation-job",
		EventPrefix:     "translation",
		SendsProgress:   true,
		Features:        TranslationFeatures,
		CapabilityLists: []string{"source_languages", "target_languages"},
		Media:           MediaSteps{Fetch: true, DocumentsOnly: true, UnreadableCode: CodeInputUnreadable},
		Results:         ResultFinishing{WrittenFile: "translation", WrittenNoun: "translated document"},
		Usage:           UsageCharacters,
	})
}

// Translation is a translation job's input and options.
type Translation struct {
	Input   TranslationInput
	Options TranslationOptions
}

func (t *Translation) Parts() (input, options any) { return &t.Input, &t.Options }

func (t *Translation) Validate() error {
	in, opts := t.Input, t.Options
	return firstError(
		oneOf(in.Type, ptrInput+"/type", true, "text", "document"),
		requiredWhen(in.Type == "text", in.Content, ptrInput+"/content", "when type is text"),
		forbiddenWhen(in.Type == "text", in.URL, ptrInput+"/url", "when type is text; use content"),
		requiredWhen(in.Type == "document", in.URL, ptrInput+"/url", "when type is document"),
		forbiddenWhen(in.Type == "document", in.Content, ptrInput+"/content", "when type is document; use url"),
		mediaURL(in.URL, ptrInput+"/url", false),
		required(in.TargetLanguage, ptrInput+"/target_language"),
		languageCode(in.TargetLanguage, ptrInput+"/target_language", false),
		languageCode(opts.SourceLanguage, ptrOptions+"/source_language", true),
		oneOf(opts.Formality, ptrOptions+"/formality", false, "default", "formal", "informal"),
		priority(opts.Priority),
	)
}

// Requirements asks for the target language, the source language or its
// detection, and formality unless it is the default.
func (t *Translation) Requirements() Requirements {
	req := Requirements{Service: Translations, TargetLanguage: t.Input.TargetLanguage}
	if t.Options.SourceLanguage == "" || t.Options.SourceLanguage == "auto" {
		req.Features = append(req.Features, "language_detection")
	} else {
		req.SourceLanguage = t.Options.SourceLanguage
	}
	if t.Options.Formality != "" && t.Options.Formality != "default" {
		req.Features = append(req.Features, "formality")
	}
	return req
}

func (t *Translation) Priority() int { return taskPriority(t.Options.Priority) }

// ResultTypes offers a translated text also as plain text.
func (t *Translation) ResultTypes() (offered []string, preferred string) {
	if t.Input.Type == "text" {
		return []string{MediaJSON, MediaText}, MediaJSON
	}
	return jsonOnly()
}

func (t *Translation) Render(mediaType string, result []byte) ([]byte, error) {
	switch {
	case mediaType == MediaJSON:
		return result, nil
	case mediaType == MediaText && t.Input.Type == "text":
		var r TranslationResult
		if err := json.Unmarshal(result, &r); err != nil {
			return nil, err
		}
		return []byte(r.Content), nil
	}
	return nil, notOffered(Translations, mediaType)
}

// TranslationInput is the input of a translation job.
type TranslationInput struct {
	Type           string `json:"type"` // text or document
	Content        string `json:"content,omitempty"`
	URL            string `json:"url,omitempty"`
	TargetLanguage string `json:"target_language"`
}

// TranslationOptions are the options of a translation job.
type TranslationOptions struct {
	SourceLanguage string `json:"source_language,omitempty"` // a language code or "auto"
	Formality      string `json:"formality,omitempty"`
	Priority       string `json:"priority,omitempty"`
	IncludeUsage   bool   `json:"include_usage,omitempty"`
}

// TranslationResult is the result of a translation job.
type TranslationResult struct {
	SourceLanguage string `json:"source_language"`
	TargetLanguage string `json:"target_language"`
	Content        string `json:"content,omitempty"`
	DownloadURL    string `json:"download_url,omitempty"`
	CharacterCount int    `json:"character_count"`
	Usage          *Usage `json:"usage,omitempty"`
}
